"""Readable forms of what the servers record, for the ``mcp-guard`` app and the demo."""

from __future__ import annotations

from typing import Any

__all__ = ["format_entry"]


def format_entry(entry: dict[str, Any]) -> str:
    """One call (intent and outcome merged, see ``audit.read_entries``) as one readable line."""
    args = entry.get("arguments") or {}
    shown = ", ".join(f"{k}={v!r}" if not isinstance(v, dict) else f"{k}=<{_short(v)}>" for k, v in args.items())
    status = entry.get("status", "done")
    if status == "interrupted":
        outcome = "INTERRUPTED (server died mid-call)"
    elif status == "running":
        outcome = "RUNNING (no outcome yet)"
    else:
        outcome = entry.get("decision", "?") + (f" {entry['code']}" if entry.get("code") else "")
    size = f"{entry['bytes']}B" if entry.get("bytes") is not None else "-"
    duration = f"{entry['durationMs']:>8.1f}ms" if isinstance(entry.get("durationMs"), int | float) else f"{'-':>10}"
    return f"{entry.get('time', '?')[:23]}  {entry.get('server', '?'):<10} {outcome:<28} {size:>9} {duration}  {shown}"


def _short(value: dict[str, Any]) -> str:
    if "sha256" in value:
        return f"sha256:{str(value['sha256'])[:12]}… {value.get('bytes', value.get('items', '?'))}"
    return ", ".join(f"{k}={v}" for k, v in value.items())
