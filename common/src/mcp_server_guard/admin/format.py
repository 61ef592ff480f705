"""Readable forms of what the servers record, for the ``mcp-guard`` app and the demo."""

from __future__ import annotations

from typing import Any

from mcp_server_guard.paths import printable

__all__ = ["format_entry"]


def format_entry(entry: dict[str, Any]) -> str:
    """One call (intent and outcome merged, see ``audit.read_entries``) as one readable line: when, which server,
    the policy result and code, size, duration, the audit id, who asked (actor), who approved, what (target or
    arguments) and why."""
    args = entry.get("arguments") or {}
    shown = ", ".join(f"{k}={v!r}" if not isinstance(v, dict) else f"{k}=<{_short(v)}>" for k, v in args.items())
    if entry.get("target") is not None:
        shown = f"{entry.get('action') or entry.get('tool', '?')} {entry['target']!r}"
    status = entry.get("status", "done")
    if status == "interrupted":
        outcome = "INTERRUPTED (server died mid-call)"
    elif status == "running":
        outcome = "RUNNING (no outcome yet)"
    else:
        # Logs written before policy_result was named call it decision.
        result = entry.get("policy_result", entry.get("decision", "?"))
        outcome = str(result) + (f" {entry['code']}" if entry.get("code") else "")
    size = f"{entry['bytes']}B" if entry.get("bytes") is not None else "-"
    duration = f"{entry['durationMs']:>8.1f}ms" if isinstance(entry.get("durationMs"), int | float) else f"{'-':>10}"
    who = f"  id={entry['audit_id']}" if entry.get("audit_id") else ""
    if entry.get("actor"):
        who += f" by={entry['actor']}"
    if entry.get("approved_by"):
        who += f" approved_by={entry['approved_by']}"
    why = f"  ({entry['reason']})" if entry.get("reason") else ""
    line = f"{entry.get('time', '?')[:23]}  {entry.get('server', '?'):<10} {outcome:<28} {size:>9} {duration}"
    return printable(f"{line}{who}  {shown}{why}")  # one line: a newline the model or a client wrote shown as \n


def _short(value: dict[str, Any]) -> str:
    if "sha256" in value:
        return f"sha256:{str(value['sha256'])[:12]}… {value.get('bytes', value.get('items', '?'))}"
    return ", ".join(f"{k}={v}" for k, v in value.items())


def undo_refusal(audit_id: str, exc: Exception) -> tuple[str, str]:
    """The code and the words of an undo refused before it changed anything: paths changed after the call
    (``UndoConflict``: ``--force`` undoes anyway), or what it puts back may not be written where it lands now
    (``UndoRefused``: no tool may write it there; the person can, by hand), or would be asked about (``UndoAsks``:
    ``--yes`` puts it back all the same)."""
    paths = list(getattr(exc, "paths", None) or getattr(exc, "reasons", None) or getattr(exc, "asks", []))
    shown = f"{', '.join(printable(p) for p in paths[:10])}{' …' if len(paths) > 10 else ''}"
    if hasattr(exc, "asks"):  # (UndoAsks: a question the person running it answers with --yes)
        words = f"call {audit_id} would put back what a command's write would be asked about now, so nothing was undone"
        return "UNDO_ASKS", f"UNDO_ASKS: {words}: {shown}; pass --yes to put it back all the same"
    if hasattr(exc, "paths"):
        words = f"these paths changed after call {audit_id}, so nothing was undone: {shown}; pass --force to undo"
        return "UNDO_CONFLICT", f"UNDO_CONFLICT: {words} anyway (what is there now is kept in the history)"
    words = f"call {audit_id} would put back what no tool may write where it lands now, so nothing was undone"
    return "UNDO_REFUSED", f"UNDO_REFUSED: {words}: {shown}"
