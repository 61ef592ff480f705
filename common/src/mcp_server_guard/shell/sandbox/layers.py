"""Deciding the box at start-up, and each call's confinement inside it.

The layers, outermost first: bubblewrap's namespaces (user, PID, IPC, UTS, cgroup, network with
``--network deny``) around a read-only view of the file system with only the jail roots writable, a fresh
``/dev`` and a private ``/tmp``; per call, the supervisor's own PID and mount namespaces (fresh ``/proc``,
private ``/tmp`` and ``/dev/shm``), resource limits, Landlock, no capabilities, ``no_new_privs`` and the
seccomp filter. What the machine cannot give is said once on stderr; ``--sandbox required`` refuses to
start without the whole box.
"""

from __future__ import annotations

import json
import os
import resource
from collections.abc import Sequence
from dataclasses import replace

from mcp_server_guard.paths import program_outside, within, within_any
from mcp_server_guard.shell.sandbox import seccomp
from mcp_server_guard.shell.sandbox.box import Box, BoxSpec, BoxUnavailable
from mcp_server_guard.shell.sandbox.landlock import SYSTEM_READ_DIRS
from mcp_server_guard.shell.sandbox.planning import (
    Limits,
    NetworkMode,
    ReadScope,
    SandboxMode,
    SandboxPlan,
    SandboxUnavailable,
    fall_back_from_policy,
    plan,
)
from mcp_server_guard.shell.sandbox.sockets import SocketScan, outside
from mcp_server_guard.shell.sandbox.wire import CallOptions, LandlockRules

__all__ = ["Deciding", "begin", "call_options", "close_box", "open_box", "outside_sockets"]


def begin(
    mode: SandboxMode,
    read_scope: ReadScope,
    network: NetworkMode,
    limits: Limits,
    *,
    roots: Sequence[str],
    copies: Sequence[tuple[str, str]] = (),
    jail_writable: bool = True,
    network_chosen: bool = True,
) -> Deciding:
    """The whole start-up decision, in one place: what the kernel gives (``plan``) and bubblewrap started now, the box
    waited for by ``Deciding.finish`` (which returns the frozen plan, and "" when commands see ``copies`` as copies,
    else why not) — the server loads the rest meanwhile (the box's start is mostly bubblewrap's and its
    supervisor's, on another CPU)."""
    planned = plan(mode, read_scope, network, limits, jail_writable=jail_writable, network_chosen=network_chosen)
    return Deciding(planned, tuple(roots), tuple(copies))


def open_box(
    decided: SandboxPlan, roots: Sequence[str], copies: Sequence[tuple[str, str]] = ()
) -> tuple[SandboxPlan, str]:
    """Start the box for ``decided`` (from the thread that runs the event loop): the plan with its box; with
    ``--sandbox auto`` a box that cannot start gives the plan without one, with a note saying why.

    ``copies``: the (root, area) pairs whose root commands should see as a copy. Returns, beside the plan, ""
    when they do (the plan's ``copies``), else why they cannot (commands then write the real tree)."""
    return Deciding(decided, tuple(roots), tuple(copies)).finish()


class Deciding:
    """A box on its way up (``open_box`` in two steps): made from the thread that runs the event loop (bubblewrap's
    parent-death signal follows that thread), bubblewrap starts at once; ``finish`` waits for the supervisor and
    decides what the server runs with, once."""

    def __init__(self, decided: SandboxPlan, roots: tuple[str, ...], copies: tuple[tuple[str, str], ...]) -> None:
        self._decided, self._roots, self._copies = decided, roots, copies
        self._box: Box | None = None
        self._reason: str | None = None
        self._bwrap: tuple[str, seccomp.Arch] | None = None
        if decided.mode is SandboxMode.OFF:
            return
        bwrap = program_outside("bwrap", roots)
        arch = seccomp.native_arch()
        if bwrap is None:
            self._reason = "bubblewrap is not installed (Debian/Ubuntu: apt install bubblewrap)"
        elif arch is None:
            self._reason = f"no seccomp filter for this CPU ({os.uname().machine})"
        self._decided = replace(decided, sockets=SocketScan([*roots, *_separate_areas(copies, roots)]))
        if self._reason is None:
            assert bwrap is not None and arch is not None
            self._bwrap = bwrap, arch
            self._box, self._reason = _launch(self._decided, roots, copies, bwrap, arch)

    def finish(self) -> tuple[SandboxPlan, str]:
        """The plan with its box (or without one, and why, as ``open_box`` says)."""
        decided, roots, copies = self._decided, self._roots, self._copies
        if decided.mode is SandboxMode.OFF:
            if decided.network is NetworkMode.POLICY:
                raise SandboxUnavailable("--network policy needs the box; it cannot go with --sandbox off")
            return decided, "the sandbox is off" if copies else ""
        box, reason = self._box, self._reason
        why_no_copy = "" if copies else "not asked for"
        if box is not None:
            box, reason, why_no_copy = _ready(box)
        if box is not None and why_no_copy and copies:
            assert self._bwrap is not None
            box.close()  # the copy cannot be made here: a box without it
            box, reason = _launch(decided, roots, (), *self._bwrap)
            if box is not None:
                box, reason, _ = _ready(box)
        self._box = None
        if box is None:
            return _without_box(decided, reason or "", bool(copies))
        made = tuple(copies) if copies and not why_no_copy else ()
        return replace(decided, box=box, copies=made), why_no_copy if copies else ""

    def abandon(self) -> None:
        """The server will not start after all: the box started for it ends."""
        if self._box is not None:
            self._box.close()
            self._box = None


def _without_box(decided: SandboxPlan, reason: str, copies: bool) -> tuple[SandboxPlan, str]:
    if decided.mode is SandboxMode.REQUIRED:
        raise SandboxUnavailable(f"--sandbox required: no box: {reason}")
    if decided.network is NetworkMode.POLICY and decided.network_chosen:
        # Fail closed: without the box's network namespace nothing forces traffic through the proxy.
        raise SandboxUnavailable(
            f"--network policy needs the box (bubblewrap) and there is none: {reason}; "
            "choose --network deny, or --network allow knowingly"
        )
    # One line says all that changes: what confines commands now, what they can see that the box hid, and the
    # network mode in force.
    said = (
        f"no box: {reason}; commands run with Landlock and rlimits only, and the hidden paths (credentials) are "
        "not hidden from them"
    )
    if decided.network is NetworkMode.POLICY:
        network, netns, words = fall_back_from_policy(decided)
        said += f"; {words}"
        decided = replace(decided, network=network, netns=netns)
    decided = replace(decided, notes=(*decided.notes, said), no_box=reason)
    return decided, f"there is no box ({reason})" if copies else ""


def _launch(
    plan: SandboxPlan, roots: Sequence[str], copies: Sequence[tuple[str, str]], bwrap: str, arch: seccomp.Arch
) -> tuple[Box | None, str | None]:
    """A box whose bubblewrap has started (or None and why not); ``_ready`` waits for it."""
    # A command may make and use UNIX sockets of its own (test suites, servers, tmux) once those outside are out of
    # its reach: pathname ones are masked in every call's view, abstract ones are in another network namespace or
    # scoped by Landlock (ABI 6). Otherwise it may make none (socketpair stays).
    unix_sockets = plan.netns or plan.network is NetworkMode.POLICY or plan.abi >= 6
    spec = BoxSpec(
        bwrap=bwrap,
        namespaces=True,
        network_isolated=plan.netns,
        egress=plan.network is NetworkMode.POLICY,
        read_all=plan.read_scope is ReadScope.ALL,
        roots=tuple(roots),
        readable=(),
        seccomp=(
            seccomp.build_filter(arch, part="early", unix_sockets=unix_sockets),
            seccomp.build_filter(arch, part="late", unix_sockets=unix_sockets),
            seccomp.build_filter(arch, part="late", notify=True, unix_sockets=unix_sockets),
        ),
        usual=json.dumps(call_options(plan, roots, overlays=copies)),
        reading=json.dumps(call_options(plan, roots, overlays=copies, reading=True)) if copies else "",
        areas=_separate_areas(copies, roots),
        copies=bool(copies) and plan.jail_writable,
    )
    box = Box(spec)
    try:
        box.start()
    except (BoxUnavailable, OSError) as exc:
        box.close()
        return None, _could_not(exc)
    return box, None


def _ready(box: Box) -> tuple[Box | None, str | None, str]:
    """The started box once ready (or None and why not), and why its commands cannot work on a copy ("" when they
    can)."""
    try:
        box.wait_ready()
    except (BoxUnavailable, OSError) as exc:
        box.close()
        return None, _could_not(exc), ""
    return box, None, (f"overlayfs refused the copy: {box.copy_error}" if box.copy_error else "")


def _could_not(exc: BaseException) -> str:
    return f"bubblewrap could not build the box ({exc}); {_likely_cause(str(exc))}"


def outside_sockets(plan: SandboxPlan, roots: Sequence[str]) -> list[str]:
    """The UNIX sockets a call with these ``roots`` must not reach (see ``sockets``); scans at most every few
    seconds, in the caller's thread. Raises TooManySockets when they are too many to hide."""
    return outside(plan.sockets.current(), [*roots, *_separate_areas(plan.copies, roots)])


def _likely_cause(said: str) -> str:
    """The real cause, from bubblewrap's own words."""
    if "execvp" in said or "No such file or directory" in said:
        return (
            "a path the box needs is not visible in it (the server's Python or a root hidden by the box's own "
            "/tmp?); please report it with this line"
        )
    if "uid map" in said or "Permission denied" in said or "namespace" in said or "Operation not permitted" in said:
        return (
            "unprivileged user namespaces are refused here (Ubuntu 24.04's AppArmor: sysctl "
            "kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for bwrap; a container: allow "
            "user namespaces)"
        )
    return "bubblewrap's own words are above"


def _separate_areas(overlays: Sequence[tuple[str, str]], roots: Sequence[str]) -> tuple[str, ...]:
    """The copy areas that need a mount of their own: those outside every root. One inside a root (its own
    ``.mcp-guard``) is reached through the root's; a mount of its own there would sit below the root, and
    overlayfs refuses a lower layer with a mount below it that the box's user namespace cannot see past."""
    return tuple(dict.fromkeys(area for _, area in overlays if not within_any(area, roots)))


def call_options(
    plan: SandboxPlan,
    roots: Sequence[str],
    read_only: Sequence[str] = (),
    masked: Sequence[str] = (),
    overlays: Sequence[tuple[str, str]] = (),
    sockets: Sequence[str] = (),
    proxy: str = "",
    reading: bool = False,
    room: int = 0,
) -> CallOptions:
    """One call's confinement inside the box, as the supervisor reads it: ``roots`` are the writable roots of
    this call (client roots may have narrowed them), ``read_only`` the protected paths inside them, ``overlays``
    the (root, area) pairs whose root the command sees as a copy (see ``changes.area``), ``sockets`` the UNIX sockets
    outside them, masked (see ``sockets``), ``proxy`` the call's egress token. ``reading``: a line that only reads
    (``shell.strings.reading``) sees the roots read-only instead of as copies (their areas masked all the same).
    ``room``: on a copy, what its disk may take before the floor the call is stopped at (0: not known)."""
    rlimits = [
        [resource.RLIMIT_CORE, 0, 0],
        [resource.RLIMIT_DATA, plan.limits.memory_bytes, plan.limits.memory_bytes],
        [resource.RLIMIT_CPU, plan.limits.cpu_seconds, plan.limits.cpu_seconds + 5],
    ]
    on_copy = bool(overlays) and plan.jail_writable and not reading
    if not on_copy:
        # On a copy the limit would be the kernel's, not the command's: overlayfs copies a real file up in whole
        # under the caller's RLIMIT_FSIZE when the command only re-modes, touches, links or renames it, so a
        # `chmod` of a file over the limit died of SIGXFSZ (and git left its index.lock). There the run is stopped
        # when the copy's disk runs low instead (``shell.in_box.DiskWatch``). (A size check on what lands, tried
        # first, refused one end of a move while the other applied.)
        rlimits.append([resource.RLIMIT_FSIZE, plan.limits.file_size_bytes, plan.limits.file_size_bytes])
    elif room > 0:
        # ... and no one file may take the disk past that floor at once (an `fallocate` between two looks).
        rlimits.append([resource.RLIMIT_FSIZE, room, room])
    if os.geteuid() != 0:
        # As root the pids cgroup bounds processes: RLIMIT_NPROC would count every root process of the
        # machine once the command has no capability left.
        rlimits.append([resource.RLIMIT_NPROC, plan.limits.processes, plan.limits.processes])
    areas = _separate_areas(overlays, roots)
    writes_roots = plan.jail_writable and not reading
    if reading:
        masked = [*masked, *areas]  # other calls' copies: the copy's own mount would have hidden them
        overlays = ()
    if not writes_roots:
        # --mode read-only, or a line that only reads: every root is bound read-only for the call (and Landlock
        # grants it no write below). Threat: a write the line's spelling did not show (a git hook, LD_PRELOAD)
        # reaching the real files: the kernel refuses it (EROFS).
        read_only = [*roots, *read_only]
    rules: LandlockRules | None = None
    if plan.abi > 0:
        rules = {
            "abi": plan.abi,
            "read_all": plan.read_scope is ReadScope.ALL,
            # The call's own /tmp and /dev/shm, and the box's own devpts instance (bwrap --dev mounts a new
            # one): a command may open a pty (script, expect, test runners) but never the host's terminals.
            "writable": [*(roots if writes_roots else ()), "/tmp", "/dev/shm", "/dev/pts"],  # noqa: S108
            "deny_tcp": False,
            "readable": list(SYSTEM_READ_DIRS) if plan.read_scope is not ReadScope.ALL else [],
        }
    return {
        "namespaces": True,
        "private_tmp": True,
        # re-bound over the call's /tmp
        "tmp_binds": [path for path in (*roots, *areas) if within(path, "/tmp")],  # noqa: S108
        # Threat: the call's /tmp and /dev/shm are memory: one file there could take half the host's (no per-file
        # limit binds a command on a copy, and its /tmp is not on the disk the copy's watch looks at).
        "tmp_bytes": plan.limits.memory_bytes,
        "read_only": list(read_only),
        "masked": list(masked),
        "roots": list(roots),  # the call's writable roots (hidden paths' parents in them are pinned)
        "sockets": list(sockets),
        "rlimits": rlimits,
        "overlays": [{"root": root, "area": area} for root, area in overlays] if plan.jail_writable else [],
        "landlock": rules,
        "proxy": proxy,
    }


def close_box(plan: SandboxPlan) -> None:
    """At server exit: closing the supervisor's socket ends every call and the box."""
    if plan.box is not None:
        plan.box.close()
