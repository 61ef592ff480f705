"""Command line of mcp-server-shell-exec: the shared guard flags plus the sandbox's, then serve."""

from __future__ import annotations

import enum
import os
import signal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from mcp_server_guard import within
from mcp_server_guard.serving import (
    STOP_SIGNALS,
    HistoryDirOpt,
    Mode,
    ServerConfig,
    Tools,
    option,
    resolve_history_dir,
    server_cli,
    state_hidden,
    state_in_use,
    usage_error,
)
from mcp_server_guard.shell.sandbox import NetworkMode, ReadScope, SandboxMode, SandboxUnavailable

if TYPE_CHECKING:
    from mcp_server_guard import Policy
    from mcp_server_guard.changes import CopyArea
    from mcp_server_guard.shell.sandbox import SandboxPlan

PROG = "mcp-server-shell-exec"

SandboxOpt = Annotated[
    SandboxMode | None,
    option(
        "--sandbox",
        help="auto: confine commands with Landlock where the kernel can (and say so where not); "
        "required: refuse to start without it; off: policy and jail only. [default: auto; off with --mode "
        "full-access]",
        show_default=False,
    ),
]
SandboxReadOpt = Annotated[
    ReadScope,
    option("--sandbox-read", help="all: commands may read the whole system; jail: only the jail and /usr, /etc …"),
]
NetworkOpt = Annotated[
    NetworkMode | None,
    option(
        "--network",
        help="policy: only through the server's egress proxy, to the hosts the policy's [network] section allows "
        "(others are asked about); deny: no network at all, loopback included; allow: as the server does. "
        "[default: policy; deny where the box (bubblewrap) is missing; allow with --sandbox off]",
        show_default=False,
    ),
]
ApprovalsOpt = Annotated[
    Path | None,
    option(
        "--approvals-file",
        help="Keep the approvals given 'for this session' (command lines, prefixes, hosts) in this file, to be "
        "read back at the next start. Must be outside the allowed directories. [default: memory only]",
        show_default=False,
    ),
]


class TransactionsMode(enum.StrEnum):
    AUTO = "auto"
    REQUIRED = "required"
    OFF = "off"


TransactionsOpt = Annotated[
    TransactionsMode,
    option(
        "--transactions",
        help="auto: commands work on a copy of the writable directories, and their changes are judged, applied "
        "and undoable (where the box and overlayfs allow; said at start-up where not); required: refuse to start "
        "without that; off: commands write the files directly.",
    ),
]


def _chosen(sandbox: object, mode: object) -> SandboxMode:
    """The box asked for: ``--sandbox``, or by default none in full-access and the box elsewhere."""
    if isinstance(sandbox, SandboxMode):
        return sandbox
    return SandboxMode.OFF if mode is Mode.FULL_ACCESS else SandboxMode.AUTO


def _ahead(options: Mapping[str, Any]) -> Callable[[], None]:
    """Before the configuration is read: as root, the server's move into its pids cgroup begun, which waits for the
    kernel (issue 44: ~10 ms it waited on the way to the first result); given up if the start fails. Until the
    server's own stop handlers are in place, a stop signal unwinds the start as SIGINT does, so that what it began is
    given up (red team 185 F1: SIGTERM or SIGHUP while the policy was read left the cgroup behind)."""
    from mcp_server_guard.shell.sandbox import give_up_pids_cgroup, pids_cgroup_ahead  # noqa: PLC0415

    if _chosen(options.get("sandbox"), options.get("mode")) is not SandboxMode.OFF:
        for stop in STOP_SIGNALS:
            signal.signal(stop, _unwind)
        pids_cgroup_ahead()
    return give_up_pids_cgroup


def _unwind(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # (the start's clean-up runs on the way out: ``server_cli``, ``main``)


@server_cli(prog=PROG, name="shell_exec", ahead=_ahead)
def main(
    config: ServerConfig,
    sandbox: SandboxOpt = None,
    sandbox_read: SandboxReadOpt = ReadScope.ALL,
    network: NetworkOpt = None,
    approvals_file: ApprovalsOpt = None,
    transactions: TransactionsOpt = TransactionsMode.AUTO,
    history_dir: HistoryDirOpt = None,
) -> Tools:
    """Serve the shell_exec tool over stdio: commands are checked against the policy and run confined."""
    # Lazy for start-up time: --help and --version need neither the tool nor the MCP SDK.
    from mcp_server_guard.shell.sandbox import give_up_pids_cgroup, pids_cgroup_ahead  # noqa: PLC0415

    chosen = _chosen(sandbox, config.mode)
    if chosen is SandboxMode.OFF:
        give_up_pids_cgroup()  # (a move ``_ahead`` began: no box, no budget to keep)
    else:
        pids_cgroup_ahead()  # (as root) while the rest goes on; begun already by ``_ahead``
    try:
        return _started(config, sandbox, chosen, sandbox_read, network, approvals_file, transactions, history_dir)
    except BaseException:
        # A start refused or failed after all (a usage error, a signal, a module that cannot load): the cgroup begun
        # for it goes too (red team 46).
        give_up_pids_cgroup()
        raise
    finally:
        for stop in STOP_SIGNALS:  # (from here as before: the server's own handlers come with its loop)
            if signal.getsignal(stop) is _unwind:
                signal.signal(stop, signal.SIG_DFL)


def _started(
    config: ServerConfig,
    sandbox: SandboxMode | None,
    chosen: SandboxMode,
    sandbox_read: ReadScope,
    network: NetworkMode | None,
    approvals_file: Path | None,
    transactions: TransactionsMode,
    history_dir: Path | None,
) -> Tools:
    """``main`` once the cgroup's move has begun: the checks, the copies' area, the box begun before the tool's
    modules load and waited for after, the tools."""
    from mcp_server_guard import protection_for  # noqa: PLC0415
    from mcp_server_guard.shell import limits_of  # noqa: PLC0415
    from mcp_server_guard.shell.sandbox import begin  # noqa: PLC0415

    if config.policy.own_rules:
        # A rule of the policy file that does not match its own examples (or matches a line it says it does not)
        # means something else than its author thinks: refused at start, not found out on a command.
        from mcp_server_guard import PolicyError  # noqa: PLC0415
        from mcp_server_guard.shell import check_examples  # noqa: PLC0415

        try:
            check_examples(config.policy.shell_exec, config.policy.own_rules)
        except PolicyError as exc:
            usage_error(PROG, f"{exc} (in {config.policy.source[-1]})")
    if config.mode is Mode.FULL_ACCESS and sandbox not in (None, SandboxMode.OFF):
        usage_error(PROG, f"--sandbox {sandbox.value} contradicts --mode full-access (which runs commands unboxed)")
    required = transactions is TransactionsMode.REQUIRED
    if required and config.mode is not Mode.WORKSPACE_WRITE:
        usage_error(PROG, f"--transactions required needs --mode workspace-write (not {config.mode.value})")
    history = resolve_history_dir(PROG, history_dir, config)
    approvals = _approvals_path(approvals_file, config) if approvals_file is not None else None
    roots = [root.path for root in config.jail.allowed]
    area = _copy_area(roots) if transactions is not TransactionsMode.OFF else None
    wanted = config.mode is Mode.WORKSPACE_WRITE
    try:
        # Here, on the thread that runs the event loop: bubblewrap's parent-death signal follows that thread.
        deciding = begin(
            chosen,
            sandbox_read,
            network or (NetworkMode.ALLOW if chosen is SandboxMode.OFF else NetworkMode.POLICY),
            limits_of(config.policy.shell_exec),
            # A root inside another is in the box with it (red team 68 F1: given after it, its own bind and overlay
            # were refused by the kernel, and the copy was off for the whole server).
            roots=[r for r in roots if not any(o != r and within(r, o) for o in roots)],
            copies=area.overlays() if area is not None and wanted else (),
            jail_writable=config.mode is not Mode.READ_ONLY,
            network_chosen=network is not None,
        )
        try:
            # Dead servers' applies are finished, the protected paths read and the tool's own modules load while
            # bubblewrap and the box's supervisor start (on another CPU); no call reaches the box before ``finish``.
            if area is not None:
                _recovered(area, roots, history, config.policy)
            others = [approvals] if approvals else []
            protection = protection_for(config.policy, audit_path=config.audit.path, history_dir=history, others=others)
            protection.look_ahead([root.path for root in config.jail.roots])
            from mcp_server_shell_exec.server import build_tools  # noqa: PLC0415
        except BaseException:
            deciding.abandon()  # (and the copies' area goes: red team 46 F2)
            raise
        decided, why = deciding.finish()
        if area is not None and area.why:
            why = area.why
        notes = list(decided.notes)
        if wanted and transactions is not TransactionsMode.OFF and not decided.copies:
            if required:
                raise SandboxUnavailable(f"--transactions required: commands cannot work on a copy: {why}")
            notes.append(f"commands write the files directly (transaction: none): {why or 'no copy could be made'}")
    except BaseException as exc:
        if area is not None:
            area.close()
        if isinstance(exc, SandboxUnavailable):
            usage_error(PROG, str(exc))
        raise
    # A read-only session works on no copy; a workspace-write one of this server would (what its refusals say).
    copies_here = area is not None and "bwrap" in decided.label
    if area is not None and not decided.copies:
        area.close()
        area = None
    # Every start says, last, which guard is in force for commands (issue 45 item 5).
    for note in [*notes, guard_line(config.mode, decided, transactions, why)]:
        sys.stderr.write(f"{PROG}: {note}\n")
    sys.stderr.flush()
    return build_tools(
        config, decided, approvals, history_dir=history, area=area, copies_here=copies_here, protection=protection
    )


def guard_line(mode: Mode, decided: SandboxPlan, transactions: TransactionsMode, why: str) -> str:
    """The start-up's line on what guards commands: the box (with copies and undo, read-only by the kernel, or writing
    the files directly) and the command rules, or the command rules alone and why there is no box."""
    if decided.box is not None:
        said = f"guard: box (bubblewrap: {decided.label})"
        if mode is Mode.READ_ONLY:
            return f"{said}, read-only (the kernel refuses every write to the project) + command rules"
        if decided.copies:
            return f"{said} + copies with undo + command rules"
        direct = "--transactions off" if transactions is TransactionsMode.OFF else f"no copy: {why or 'none made'}"
        return f"{said} + command rules; commands write the files directly ({direct}); nothing can be undone"
    if decided.mode is SandboxMode.OFF:
        reason = "--mode full-access" if mode is Mode.FULL_ACCESS else "--sandbox off"
    else:
        reason = decided.no_box or "it could not start"
    said = f"guard: command rules only (no box: {reason})"
    if decided.landlock:
        said += f", with Landlock v{decided.abi} and rlimits"
    if mode is Mode.READ_ONLY:
        keeps = "Landlock refuses writes" if decided.landlock else "nothing else keeps commands from writing"
        return f"{said}; read-only by the allow-list of reading programs ({keeps})"
    return f"{said}; commands write the files directly; nothing can be undone"


def _copy_area(roots: list[str]) -> CopyArea:
    """This server's part of the copies' areas (what the box mounts the copies from), hidden from every other server
    of the user."""
    from mcp_server_guard import state_dir  # noqa: PLC0415 - lazy for start-up time
    from mcp_server_guard.changes import CopyArea  # noqa: PLC0415

    area = CopyArea(roots, state_dir())
    for part in area.parts:
        state_hidden(part.directory)  # every other server of the user hides this server's copies
    return area


def _recovered(area: CopyArea, roots: list[str], history: Path, policy: Policy) -> None:
    """Before the first call: finish what dead servers left half applied (their steps left judged against the tree
    now: ``undo_judged.Rechecks``), then remove the rest of what they left in the areas."""
    from mcp_server_guard import changes, state_dir  # noqa: PLC0415 - lazy for start-up time
    from mcp_server_guard.files import HistoryStore  # noqa: PLC0415

    # Unbounded here: finishing a dead server's apply never evicts anything (the writer's start applies the bounds,
    # and a call never evicts its own pre-images).
    store = HistoryStore(history, max_bytes=1 << 62, max_entries=1 << 62)

    try:
        # (``changes.rechecks_for``, and what judges, load only with a journal to finish: issue 44)
        changes.recover(
            store, roots, changes.possible_areas(roots, state_dir()), lambda: changes.rechecks_for(store, roots, policy)
        )
    finally:
        store.close()
    area.sweep()


def _approvals_path(path: Path, config: ServerConfig) -> Path:
    """Threat: a command (or file_write) rewriting the approvals to grant itself anything at the next start:
    the file must lie outside every allowed directory (and the box keeps it read-only besides)."""
    from mcp_server_guard.shell import SessionApprovals  # noqa: PLC0415

    real = Path(os.path.realpath(path.expanduser()))
    for root in config.jail.allowed:
        if within(str(real), root.path):
            usage_error(PROG, f"--approvals-file {path} is inside the allowed directory {root.path}; put it outside")
    if not real.parent.is_dir():
        usage_error(PROG, f"--approvals-file {path}: the directory {real.parent} does not exist")
    try:
        SessionApprovals(real)
    except ValueError as exc:
        usage_error(PROG, f"--approvals-file: {exc}")
    state_in_use(PROG, real)  # outside every other running server's directories too, and hidden from them
    return real
