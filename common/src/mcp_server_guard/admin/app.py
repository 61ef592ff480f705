"""``mcp-guard``: the companion CLI that explains and administers the guarded servers.

    mcp-guard demo     spawn the servers through a real MCP stdio client and show allowed and refused calls
    mcp-guard audit    show the last audit-log entries readably
    mcp-guard history  list and restore previous contents of replaced files
    mcp-guard check    how the shell_exec policy judges a command line
    mcp-guard config   host configuration for the three servers

This is not a server: it may print to stdout.
"""

from __future__ import annotations

import contextlib
import enum
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from mcp_server_guard.admin.check import CHECK_HELP, check
from mcp_server_guard.admin.format import format_entry, undo_refusal
from mcp_server_guard.admin.options import AllowPathOpt, AuditLogOpt, HistoryDirOpt, PolicyOpt
from mcp_server_guard.audit import (
    POLICY_RESULTS,
    AuditRecord,
    default_audit_path,
    follow_entries,
    is_own_dir,
    log_size,
    read_entries,
    state_dirs,
)
from mcp_server_guard.errors import GuardError
from mcp_server_guard.files.calls import UNSEALED
from mcp_server_guard.files.history import CALLS, HistoryError, HistoryStore
from mcp_server_guard.files.jail import SymlinkMode
from mcp_server_guard.files.kept import noted_bounds
from mcp_server_guard.files.treelock import TreeBusy
from mcp_server_guard.files.trees import remove_dead
from mcp_server_guard.files.writing import open_writer
from mcp_server_guard.paths import json_text, printable, within
from mcp_server_guard.policy import load_policy
from mcp_server_guard.serving.config import Mode
from mcp_server_guard.serving.launch import (
    LogLevel,
    build_config,
    resolve_history_dir,
    run_app,
    usage_error,
    version_callback,
)
from mcp_server_guard.shell.sandbox.planning import NetworkMode, ReadScope, SandboxMode

PROG = "mcp-guard"
app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="Explain and administer the guarded MCP servers (file_read, file_write, shell_exec).",
)
AUDITED_SERVERS = ("file_read", "file_write", "shell_exec", "mcp-guard")  # the names audit records carry


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=version_callback("mcp-server-guard", PROG), is_eager=True, help="Show the version."
        ),
    ] = False,
) -> None:
    """Explain and administer the guarded MCP servers (file_read, file_write, shell_exec)."""


@app.command(
    help="Spawn the servers in a temporary workspace through a real MCP client; show allowed and refused calls."
)
def demo(
    protocol: Annotated[
        str,
        typer.Option("--protocol", help="Protocol era the client speaks: auto (2026-07-28) or legacy (2025-11-25)."),
    ] = "auto",
) -> None:
    # Lazy for start-up time: the demo pulls in the MCP client; the other commands never need it.
    from mcp_server_guard.admin.demo import run_demo  # noqa: PLC0415

    raise typer.Exit(run_demo(protocol))


@app.command(
    help="Show the last N calls in the audit log, oldest first: one line per call (its intent and outcome "
    "records paired by audit_id); a call whose server died before it ended shows as INTERRUPTED. Filters narrow "
    "the calls shown (all must hold); --follow keeps printing calls as they end."
)
def audit(
    last: Annotated[int, typer.Option("-n", "--last", min=1, help="How many calls.")] = 20,
    audit_log: Annotated[Path | None, typer.Option("--audit-log", metavar="FILE", help="Log to read.")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print each call as one JSON object (intent and outcome merged, + status).")
    ] = False,
    server: Annotated[
        str | None, typer.Option("--server", help=f"Only this server ({', '.join(AUDITED_SERVERS)}).")
    ] = None,
    decision: Annotated[
        str | None, typer.Option("--decision", help=f"Only this policy result ({', '.join(POLICY_RESULTS)}).")
    ] = None,
    actor: Annotated[str | None, typer.Option("--actor", help="Only calls from clients whose name has this.")] = None,
    project: Annotated[
        Path | None,
        typer.Option("--project", metavar="DIR", help="Only calls whose launch directory or roots hold DIR."),
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only calls from this time on: ISO 8601, or an age like 10m, 2h, 1d.")
    ] = None,
    follow: Annotated[
        bool, typer.Option("-f", "--follow", help="Keep printing calls as they end (Ctrl-C stops).")
    ] = False,
) -> None:
    path = audit_log or default_audit_path([])
    try:
        keep = _audit_filter(server, decision, actor, project, since)
    except ValueError as exc:
        usage_error(PROG, str(exc))
    filtering = any(v is not None for v in (server, decision, actor, project, since))
    # A filter looks further back than the last N records: what matches may be older.
    # --follow goes on from where the listing began to read: a call that ends in between is not missed (one the
    # listing showed finished is not shown twice).
    start = log_size(path)
    entries = [e for e in read_entries(path, AUDIT_SCAN if filtering else last) if keep(e)][-last:]
    show = json_text if as_json else format_entry
    for entry in entries:
        typer.echo(show(entry))
    if follow:
        shown = {e.get("audit_id") for e in entries if e.get("status") == "done"}
        try:
            for entry in follow_entries(path, start=start):
                if keep(entry) and entry.get("audit_id") not in shown:
                    typer.echo(show(entry))
        except KeyboardInterrupt:
            return
    elif not entries:
        typer.echo(f"no {'matching ' if filtering else ''}audit entries in {path}", err=True)


AUDIT_SCAN = 100_000  # records a filtered view reads back at most


def _audit_filter(
    server: str | None, decision: str | None, actor: str | None, project: Path | None, since: str | None
) -> Callable[[dict[str, Any]], bool]:
    start = _since(since) if since is not None else None
    where = os.path.realpath(project) if project is not None else None
    if decision is not None and decision not in POLICY_RESULTS:
        raise ValueError(f"--decision {decision!r}: not a policy result; one of {', '.join(POLICY_RESULTS)}")
    if server is not None and server not in AUDITED_SERVERS:
        raise ValueError(f"--server {server!r}: no server writes that name; one of {', '.join(AUDITED_SERVERS)}")

    def keep(entry: dict[str, Any]) -> bool:
        if server is not None and entry.get("server") != server:
            return False
        if decision is not None and entry.get("policy_result", entry.get("decision")) != decision:
            return False
        if actor is not None and actor.lower() not in str(entry.get("actor") or "").lower():
            return False
        if where is not None:
            places = [entry.get("launch_dir"), *(entry.get("roots") or [])]
            if not any(isinstance(p, str) and (within(where, p) or within(p, where)) for p in places):
                return False
        if start is not None:
            try:
                when = datetime.fromisoformat(str(entry.get("time")))
            except ValueError:
                return False
            if when < start:
                return False
        return True

    return keep


def _since(text: str) -> datetime:
    """An ISO 8601 time (UTC when it names no zone) or an age: 30s, 10m, 2h, 1d."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    if text[-1:] in units and text[:-1].isdigit():
        return datetime.now(UTC) - timedelta(seconds=int(text[:-1]) * units[text[-1]])
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"--since {text!r}: give an ISO 8601 time (2026-11-27T10:00) or an age (10m, 2h, 1d)"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


SERVERS = (
    ("file_read", "mcp-server-file-read"),
    ("file_write", "mcp-server-file-write"),
    ("shell_exec", "mcp-server-shell-exec"),
)


class Host(enum.StrEnum):
    GENERIC = "generic"
    CLAUDE_DESKTOP = "claude-desktop"
    VSCODE = "vscode"
    CURSOR = "cursor"


def _installed(script: str) -> str:
    beside = Path(sys.executable).parent / script
    found = str(beside) if beside.exists() else shutil.which(script)
    if found is None:
        usage_error(PROG, f"{script} is not installed (run `uv sync`, or install the package)")
    return os.path.abspath(found)


@app.command(
    help="Print ready-to-paste host configuration for the three servers, with absolute paths to the installed "
    "console scripts. The first --allow-path becomes each server's launch directory."
)
def config(
    allow_path: AllowPathOpt = None,
    host: Annotated[Host, typer.Option("--host", help="The host's config shape.")] = Host.GENERIC,
    policy: PolicyOpt = None,
    symlinks: Annotated[SymlinkMode | None, typer.Option("--symlinks", help="Passed to every server.")] = None,
    mode: Annotated[Mode | None, typer.Option("--mode", help="Permission mode, passed to every server.")] = None,
    sandbox: Annotated[SandboxMode | None, typer.Option("--sandbox", help="Passed to shell_exec.")] = None,
    sandbox_read: Annotated[ReadScope | None, typer.Option("--sandbox-read", help="Passed to shell_exec.")] = None,
    network: Annotated[NetworkMode | None, typer.Option("--network", help="Passed to shell_exec.")] = None,
    audit_log: AuditLogOpt = None,
    history_dir: HistoryDirOpt = None,
) -> None:
    dirs = [p.absolute() for p in (allow_path or [Path.cwd()])]
    # Printed whatever it is: hosts differ in the mode they assume (the agent CLI we serve defaults to read-only).
    chosen = mode or Mode.WORKSPACE_WRITE
    # What is printed must start: checked by the very code the servers run at start-up (exit 2, one line).
    checked = build_config(
        prog=f"{PROG} config",
        name="config",
        distribution="mcp-server-guard",
        allow_path=dirs[1:],
        launch_dir=dirs[0],
        symlinks=symlinks or SymlinkMode.FOLLOW,
        policy=policy,
        audit_log=audit_log.absolute() if audit_log is not None else None,
        log_level=LogLevel.WARNING,
        mode=chosen,
    )
    history = resolve_history_dir(f"{PROG} config", history_dir, checked)
    checked.audit.close()
    common = ["--launch-dir", str(dirs[0])]
    for directory in dirs[1:]:
        common += ["--allow-path", str(directory)]
    if policy is not None:
        common += ["--policy", str(policy if not policy.exists() else policy.absolute())]
    if symlinks is not None:
        common += ["--symlinks", symlinks.value]
    common += ["--mode", chosen.value]
    if audit_log is not None:
        common += ["--audit-log", str(audit_log.absolute())]
    shell_only = []
    for flag, value in (("--sandbox", sandbox), ("--sandbox-read", sandbox_read), ("--network", network)):
        if value is not None:
            shell_only += [flag, value.value]
    entries: dict[str, dict[str, object]] = {}
    for name, script in SERVERS:
        own = ["--history-dir", str(history)] if history_dir is not None and name != "file_read" else []
        entry: dict[str, object] = {
            "command": _installed(script),
            "args": common + own + (shell_only if name == "shell_exec" else []),
        }
        if host is Host.VSCODE:
            entry = {"type": "stdio", **entry}
        entries[name] = entry
    key = "servers" if host is Host.VSCODE else "mcpServers"
    typer.echo(json_text({key: entries}, indent=2))


# `mcp-guard check`: admin/check.py
app.command(
    help=CHECK_HELP,
)(check)


history_app = typer.Typer(
    invoke_without_command=True,
    help="The calls that changed files (each undoable with `mcp-guard undo`), and the previous contents of replaced "
    "files (list, restore).",
)
app.add_typer(history_app, name="history")


@history_app.callback()
def history_calls(
    ctx: typer.Context,
    history_dir: HistoryDirOpt = None,
) -> None:
    """Without a subcommand: the calls that changed files, oldest first, with what each changed."""
    if ctx.invoked_subcommand is not None:
        return
    stores = _history_stores(history_dir)
    calls = sorted((call for store in stores for call in store.calls.all()), key=lambda c: str(c.get("time", "")))
    for call in calls:
        changes = call.get("changes", [])
        counts: dict[str, int] = {}
        for change in changes:
            counts[str(change.get("action"))] = counts.get(str(change.get("action")), 0) + 1
        words = {"create": "created", "modify": "modified", "delete": "deleted", "meta": "mode changed"}
        shown = ", ".join(f"{n} {words.get(action, action)}" for action, n in sorted(counts.items()))
        if call.get("summary"):
            shown = str(call["summary"])  # what the call's result said it changed, in the same words
        conflicts = len(call.get("conflicts", []))
        state = f"  (undone by {call['undone_by']})" if call.get("undone_by") else ""
        state += "".join(store.marked(str(call.get("audit_id"))) for store in stores)
        what = call.get("command") or call.get("tool", "")
        typer.echo(printable(
            f"{call.get('audit_id')}  {str(call.get('time', ''))[:19]}  {call.get('tool', '?'):<10}  "
            f"{shown or 'nothing'}{f', {conflicts} conflicts' if conflicts else ''}{state}  {what}"
        ))  # fmt: skip
    evicted = sorted((e for store in stores for e in store.calls.evicted()), key=lambda e: str(e.get("evicted", "")))
    for gone in evicted:
        typer.echo(printable(  # (every field: a history a command shaped may hold any text: red team 96 F4)
            f"{gone.get('audit_id')}  {str(gone.get('time', ''))[:19]}  {gone.get('tool', '?'):<10}  evicted "
            f"{str(gone.get('evicted', ''))[:19]} to keep the history within its bounds (cannot be undone)  "
            f"{gone.get('command', '')}"
        ))  # fmt: skip
    if not calls and not evicted:
        typer.echo(f"no recorded calls in {' or '.join(str(store.directory) for store in stores)}", err=True)


@app.command(
    help="Put back what one call changed (its audit id, from a shell_exec or file_write result or `mcp-guard "
    "history`): files it created are removed, files it modified or deleted come back byte for byte with their "
    "modes. What is removed or replaced is kept in the history (the undo can itself be undone). Refused when a "
    "path changed after that call, unless --force. Exit code: 0 undone (every path back exactly), 1 not undone (no "
    "such call, its previous contents gone, too little room, or a step failed: what was done is put back), 2 "
    "refused (UNDO_CONFLICT, UNDO_REFUSED; UNDO_ASKS: --yes puts it back all the same).",
)
def undo(
    audit_id: Annotated[str, typer.Argument(metavar="AUDIT_ID", help="The call to undo.")],
    force: Annotated[
        bool, typer.Option("--force", help="Undo even over later changes (they go to the history).")
    ] = False,
    yes: Annotated[
        bool,
        typer.Option("--yes", help="Put back even what a command's write of it would be asked about now (UNDO_ASKS)."),
    ] = False,
    audit_log: AuditLogOpt = None,
    history_dir: HistoryDirOpt = None,
) -> None:
    from mcp_server_guard.audit import AuditLog, new_audit_id  # noqa: PLC0415 - only for this command
    from mcp_server_guard.changes.apply import Applier, NotApplied, UndoConflict  # noqa: PLC0415
    from mcp_server_guard.changes.journal import JOURNALS  # noqa: PLC0415
    from mcp_server_guard.changes.recovery import recover  # noqa: PLC0415
    from mcp_server_guard.changes.undo_judged import Judged, UndoAsks, UndoRefused, rechecks_for  # noqa: PLC0415
    from mcp_server_guard.protected import protection_for  # noqa: PLC0415

    stores = _history_stores(history_dir)
    store = next((s for s in stores if (s.directory / CALLS / f"{audit_id}.json").exists()), stores[0])
    try:
        manifest = store.calls.read(audit_id)
    except HistoryError as exc:
        _history_error(exc)
    if (unsealed := store.unsealed(audit_id)) and not yes:  # (`mcp-guard history` shows what it changed)
        usage_error(PROG, f"UNDO_ASKS: {unsealed}; --yes undoes it all the same")
    roots = [str(r) for r in manifest.get("roots", [])]
    # An undo of these directories a kill interrupted (this one's, tried before): finished here first. Only plans
    # that take nothing from a copy (an undo's): an apply's is left for shell_exec, which knows its copies.
    interrupted = {p.name[len("apply-") : -len(".json")] for p in (store.directory / JOURNALS).glob("apply-*.json")}
    if recover(store, roots, [], lambda: rechecks_for(store, roots)):  # (what it finishes, judged now)
        with contextlib.suppress(HistoryError):
            undone_by = store.calls.read(audit_id).get("undone_by")
            if undone_by in interrupted:
                typer.echo(f"finished the interrupted undo of call {audit_id}: undid call {audit_id} (as call "
                           f"{undone_by}; `mcp-guard undo {undone_by}` redoes it)")  # fmt: skip
                return
    if (store.directory / JOURNALS / f"apply-{audit_id}.json").exists():
        # A dead server's apply of this call is half done: the next start of shell_exec finishes it (only a
        # server knows its directories well enough to trust the journal).
        typer.echo(f"{PROG}: error: the apply of call {audit_id} was interrupted; start shell_exec in the same "
                   "directories once (it finishes the apply), then undo", err=True)  # fmt: skip
        raise typer.Exit(1)
    log = AuditLog(audit_log or default_audit_path(roots))
    record = AuditRecord(server="mcp-guard", tool="undo", arguments={"audit_id": audit_id, "force": force, "yes": yes})
    record.action, record.target = "write", f"undo {audit_id}"
    undo_id = record.audit_id or new_audit_id()
    with log.call(record):
        log.intent()  # no record, no action
        try:
            policy = load_policy()  # (what it puts back is judged as a write of it now would be)
            judged = Judged(store, protection_for(policy), policy.effects, roots, yes=yes)
            outcome = Applier(store).undo(audit_id, undo_id, roots, force=force, judged=judged)
        except (UndoConflict, UndoRefused, UndoAsks) as exc:
            record.decision, record.code = "deny", undo_refusal(audit_id, exc)[0]
            usage_error(PROG, undo_refusal(audit_id, exc)[1])
        except HistoryError as exc:
            record.decision, record.code = "error", exc.code
            _history_error(exc)
        except TreeBusy as exc:
            record.decision, record.code = "error", "FILE_BUSY"
            typer.echo(f"{PROG}: error: FILE_BUSY: {exc}; nothing was undone, try again", err=True)
            raise typer.Exit(1) from None
        except NotApplied as exc:
            # Honest: success only when every path is back; else what was done is put back and the call stays as
            # it was (not marked undone: it can be tried again).
            record.decision, record.code = "error", "UNDO_FAILED"
            for conflict in exc.left:
                typer.echo(f"{PROG}: not put back: {printable(conflict.path)}: {printable(conflict.what)}", err=True)
            done = (f"; {len(exc.left)} path(s) above are as the undo left them: `mcp-guard undo {undo_id}` puts them "
                    "back" if exc.left else "; nothing was changed")  # fmt: skip
            if exc.kept:  # stopped midway, its journal kept (red team 75 F3)
                done = f"; it stopped midway: `mcp-guard undo {audit_id}` again, with room, finishes or reverses it"
            typer.echo(f"{PROG}: error: UNDO_FAILED: call {audit_id} was not undone: {printable(exc.why)}{done}",
                       err=True)  # fmt: skip
            raise typer.Exit(1) from None
    for applied in outcome.applied:
        what = {"delete": "removed", "create": "restored", "meta": "mode restored"}.get(applied.action, applied.action)
        typer.echo(f"{what:<14} {printable(applied.path)}")
    typer.echo(f"undid call {audit_id} (as call {undo_id}; `mcp-guard undo {undo_id}` redoes it)")


def _history_stores(history_dir: Path | None) -> list[HistoryStore]:
    """The history store given, or each default one (the state directory's, or the temp one a server uses when
    the state directory lies inside its jail): the ones that exist, the first default when none does."""
    policy = load_policy().file_write
    if history_dir is not None:
        directories = [history_dir]
    else:
        defaults = [directory / "history" for directory in state_dirs()]
        # Only a state directory of this user's own (another user may have made /tmp/mcp-guard-<uid>).
        directories = [d for d in defaults if is_own_dir(d.parent) and d.is_dir()] or defaults[:1]
    # Within the bounds the server noted in its store (its --policy's), else this policy's.
    return [
        HistoryStore(d, *noted_bounds(d, policy.history_max_bytes, policy.history_max_entries)) for d in directories
    ]


def _holds(store: HistoryStore, entry_id: str) -> bool:
    try:
        store.metadata(entry_id)
    except (HistoryError, OSError, ValueError):
        return False
    return True


def _call_roots(store: HistoryStore, audit_id: str) -> list[str]:
    """The roots the call ``audit_id`` recorded (empty when it recorded none: a file_write's entry)."""
    if not audit_id:
        return []
    try:
        return [str(r) for r in store.calls.read(audit_id).get("roots", []) if isinstance(r, str) and r.startswith("/")]
    except (HistoryError, OSError, ValueError):
        return []


def _history_error(exc: HistoryError) -> NoReturn:
    typer.echo(printable(f"{PROG}: error: {exc.code}: {exc.message}"), err=True)
    raise typer.Exit(1)


@history_app.command(
    "list",
    help="Saved versions, oldest first; only those of PATH (a file or directory) if given. Entries that can no "
    "longer be restored (their data is gone or damaged) are reported on stderr as HISTORY_BROKEN.",
)
def history_list(
    path: Annotated[Path | None, typer.Argument(help="Show only versions of this file or directory.")] = None,
    history_dir: HistoryDirOpt = None,
) -> None:
    store = _history_stores(history_dir)[0]
    wanted = os.path.realpath(path) if path is not None else None

    def selected(original: str | None) -> bool:
        if wanted is None:
            return True
        return original is not None and within(original, wanted)

    entries, broken = store.inventory()
    shown = 0
    for entry in entries:
        if not selected(entry.path):
            continue
        typer.echo(
            printable(f"{entry.id}  {entry.time[:23]}  {entry.size:>9}B  sha256:{entry.sha256[:12]}…  {entry.path}")
        )
        shown += 1
    for bad in broken:
        if selected(bad.path) or bad.path is None:
            typer.echo(printable(f"{PROG}: HISTORY_BROKEN: {bad.problem}"), err=True)
    if not shown:
        typer.echo(f"no saved versions in {store.directory}", err=True)


@history_app.command(
    "prune",
    help="Remove what dead servers left (data of saves they never finished, their output spools) and bring each "
    "history store within its bounds. Servers do this at start-up; it is safe while others run (a live server's "
    "files are told by its lock, never by age).",
)
def history_prune(history_dir: HistoryDirOpt = None) -> None:
    for store in _history_stores(history_dir):
        before = store.usage()
        orphans = store.sweep()
        after = store.usage()
        store.close()
        typer.echo(
            f"{store.directory}: {orphans} orphan(s) removed; {before[0] - after[0]} bytes and "
            f"{before[1] - after[1]} entries freed; now {after[0]} bytes in {after[1]} entries"
        )
    if history_dir is None:
        for directory in filter(is_own_dir, state_dirs()):
            spools = remove_dead(directory / "spool", unlocked_legacy=True)
            if spools:
                typer.echo(f"{directory / 'spool'}: {spools} dead server spool(s) removed")


@history_app.command(
    "restore",
    help="Put a saved version back at its original path, through the same guards. Exit code: 0 restored, "
    "1 no such entry or a broken one (HISTORY_NOT_FOUND, HISTORY_BROKEN), 2 refused by a guard or bad usage.",
)
def history_restore(
    entry_id: Annotated[str, typer.Argument(metavar="ID", help="A history id from `mcp-guard history list`.")],
    allow_path: AllowPathOpt = None,
    policy: PolicyOpt = None,
    audit_log: AuditLogOpt = None,
    history_dir: HistoryDirOpt = None,
    yes: Annotated[bool, typer.Option("--yes", help="Restore one not sealed by your servers' key too.")] = False,
) -> None:
    # Like undo, from any directory: the store that holds the entry, and the directories the call that kept it
    # was allowed (its record's roots; else the entry's own directory) unless --allow-path says otherwise.
    stores = _history_stores(history_dir)
    store = next((s for s in stores if _holds(s, entry_id)), stores[0])
    try:
        kept = store.metadata(entry_id)
    except HistoryError as exc:
        _history_error(exc)
    if (store.entry_unsealed(entry_id) or store.changed_since(entry_id)) and not yes:  # (red team 103 F2, 105 F5)
        usage_error(PROG, f"UNDO_ASKS: the saved version {entry_id} is {UNSEALED}; --yes restores it all the same")
    if not allow_path:
        roots = _call_roots(store, kept.audit_id) or [os.path.dirname(kept.path)]
        # Threat: a recorded directory replaced by a symlink since: the restore would land wherever it points.
        allow_path = [Path(r) for r in roots if os.path.isdir(r) and os.path.realpath(r) == os.path.normpath(r)]
        if not allow_path:
            gone = ", ".join(map(printable, roots))  # (a newline in a kept path adds no line: red team 139 F1)
            usage_error(PROG, f"the directories {gone} that {printable(kept.path)} lay in are gone; pass --allow-path")
    config = build_config(
        prog=f"{PROG} history restore",
        name="mcp-guard",
        distribution="mcp-server-guard",
        allow_path=allow_path,
        symlinks=SymlinkMode.FOLLOW,
        policy=policy,
        audit_log=audit_log,
        log_level=LogLevel.WARNING,
        launch_dir=allow_path[0],
    )
    directory = resolve_history_dir(PROG, store.directory, config)
    writer = open_writer(config.jail, config.policy, config.audit.path, directory, serving=False)
    try:
        try:
            entry, data = writer.history.read(entry_id)
        except HistoryError as exc:
            _history_error(exc)
        arguments = {"id": entry_id, "path": entry.path}
        record = AuditRecord(server="mcp-guard", tool="history.restore", arguments=arguments, action="write",
                             target=entry.path, actor=f"{PROG} (the user)")  # fmt: skip
        with config.audit.call(record):
            try:
                config.audit.intent()  # no record, no action
                outcome = writer.write(entry.path, data, overwrite=True)
            except GuardError as exc:
                record.decision, record.code = "deny", exc.code
                usage_error(PROG, f"{exc.code}: {exc.message} {exc.suggestion}")
            record.bytes = outcome.bytes_written
    finally:
        writer.close()
    saved = f"; the content it replaced is saved as {outcome.backup}" if outcome.backup else ""
    typer.echo(
        printable(f"restored {entry.path} ({outcome.bytes_written} bytes, sha256 {outcome.sha256[:12]}…){saved}")
    )


def main(argv: Sequence[str] | None = None) -> None:
    try:
        run_app(app, PROG, argv)
    except OSError as exc:
        # A path given that is not what it must be (a directory for --audit-log, a file for --history-dir): one
        # line, not a traceback.
        where = f": {printable(str(exc.filename))}" if exc.filename else ""
        print(f"{PROG}: {exc.strerror or exc}{where}", file=sys.stderr)
        raise SystemExit(1) from None
