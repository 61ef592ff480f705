"""Command line of mcp-server-file-write: the shared guard flags plus --history-dir, then serve."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer
from mcp_server_guard.cli import (
    AllowPathOpt,
    AuditLogOpt,
    HistoryDirOpt,
    LogLevel,
    LogLevelOpt,
    PolicyOpt,
    SymlinksOpt,
    build_config,
    resolve_history_dir,
    run_app,
    serve,
    version_callback,
)
from mcp_server_guard.jail import SymlinkMode

PROG = "mcp-server-file-write"
DIST = "mcp-server-file-write"

app = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False)


@app.command(help="Serve the file_write tool over stdio, confined to the launch directory and --allow-path dirs.")
def run(
    allow_path: AllowPathOpt = None,
    symlinks: SymlinksOpt = SymlinkMode.FOLLOW,
    policy: PolicyOpt = None,
    audit_log: AuditLogOpt = None,
    history_dir: HistoryDirOpt = None,
    log_level: LogLevelOpt = LogLevel.WARNING,
    version: Annotated[
        bool, typer.Option("--version", callback=version_callback(DIST), is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    from mcp_server_file_write.server import build_server

    config = build_config(
        prog=PROG,
        name="file_write",
        distribution=DIST,
        allow_path=allow_path,
        symlinks=symlinks,
        policy=policy,
        audit_log=audit_log,
        log_level=log_level,
    )
    serve(build_server(config, resolve_history_dir(PROG, history_dir, config)))


def main(argv: Sequence[str] | None = None) -> None:
    run_app(app, PROG, argv)
