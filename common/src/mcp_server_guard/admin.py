"""``mcp-guard``: the companion CLI that explains and administers the guarded servers.

    mcp-guard demo     spawn the servers through a real MCP stdio client and show allowed and refused calls
    mcp-guard audit    show the last audit-log entries readably

This is not a server: it may print to stdout.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from mcp_server_guard.audit import default_audit_path, read_entries
from mcp_server_guard.cli import run_app

PROG = "mcp-guard"
app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="Explain and administer the guarded MCP servers (file_read, file_write, shell_exec).",
)


@app.command(
    help="Spawn the servers in a temporary workspace through a real MCP client; show allowed and refused calls."
)
def demo(
    mode: Annotated[
        str, typer.Option("--mode", help="Protocol era: auto (2026-07-28) or legacy (2025-11-25).")
    ] = "auto",
) -> None:
    from mcp_server_guard.demo import run_demo

    raise typer.Exit(run_demo(mode))


def format_entry(entry: dict[str, Any]) -> str:
    args = entry.get("arguments") or {}
    shown = ", ".join(f"{k}={v!r}" if not isinstance(v, dict) else f"{k}=<{_short(v)}>" for k, v in args.items())
    outcome = entry.get("decision", "?") + (f" {entry['code']}" if entry.get("code") else "")
    size = f"{entry['bytes']}B" if entry.get("bytes") is not None else "-"
    return (
        f"{entry.get('time', '?')[:23]}  {entry.get('server', '?'):<10} {outcome:<28} {size:>9} "
        f"{entry.get('durationMs', 0):>8.1f}ms  {shown}"
    )


def _short(value: dict[str, Any]) -> str:
    if "sha256" in value:
        return f"sha256:{str(value['sha256'])[:12]}… {value.get('bytes', value.get('items', '?'))}"
    return ", ".join(f"{k}={v}" for k, v in value.items())


@app.command(help="Show the last N audit-log entries, oldest first.")
def audit(
    last: Annotated[int, typer.Option("-n", "--last", min=1, help="How many entries.")] = 20,
    audit_log: Annotated[Path | None, typer.Option("--audit-log", metavar="FILE", help="Log to read.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw JSON lines.")] = False,
) -> None:
    import json

    path = audit_log or default_audit_path([])
    entries = list(read_entries(path, last))
    if not entries:
        typer.echo(f"no audit entries in {path}", err=True)
        return
    for entry in entries:
        typer.echo(json.dumps(entry, ensure_ascii=False) if as_json else format_entry(entry))


def main(argv: Sequence[str] | None = None) -> None:
    run_app(app, PROG, argv)
