"""Kernel confinement for commands: Landlock, a private network namespace, resource limits.

The string policy advises; this is the boundary. Each shell_exec child, between fork and exec:

* leaves the network (``--network deny``): a fresh network namespace (through an unprivileged user
  namespace when not root) where not even loopback is up, plus Landlock's TCP bind/connect rights
  handled with no port allowed, where the ABI has them;
* gets resource limits: data segment (memory), file size, CPU seconds, processes (RLIMIT_NPROC, and a
  pids cgroup when running as root, whom RLIMIT_NPROC does not bind), no core dumps;
* restricts itself with a Landlock ruleset built by the server: write only inside the jail roots,
  a private per-call temporary directory and a few character devices; read and execute the rest of the
  system (or, with ``--sandbox-read jail``, only the jail and the system directories), scoped signals
  and abstract sockets (it cannot signal or connect to anything outside its own domain).

The ruleset uses the highest ABI the kernel offers and says what it left out; nothing degrades silently.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_server_guard import linux
from mcp_server_guard.shell.sandbox import landlock
from mcp_server_guard.shell.sandbox.sockets import SocketScan

if TYPE_CHECKING:
    from mcp_server_guard.shell.sandbox.box import Box

log = logging.getLogger("mcp_server_guard.shell.sandbox.planning")

_PR_SET_NO_NEW_PRIVS = 38

# Where a command may write besides the jail: per-process shared memory and pseudo-terminals.
WRITABLE_DIRS = ("/dev/shm", "/dev/pts")  # noqa: S108 - allowed to the sandboxed child, not used here


class SandboxMode(enum.StrEnum):
    AUTO = "auto"  # confine when the kernel can; say so when it cannot
    REQUIRED = "required"  # refuse to start without Landlock
    OFF = "off"


class ReadScope(enum.StrEnum):
    ALL = "all"  # read and execute the whole system
    JAIL = "jail"  # read only the jail roots and the system directories


class NetworkMode(enum.StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    POLICY = "policy"  # the box's empty network namespace; the only way out is the server's egress proxy


class SandboxUnavailable(Exception):
    """Confinement was required and the kernel cannot give it."""


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when it has none (capped by ``MCP_GUARD_LANDLOCK_MAX_ABI``)."""
    return landlock.abi()


@dataclass(frozen=True)
class Limits:
    memory_bytes: int  # RLIMIT_DATA: heap and private mappings (JIT reservations are not counted)
    file_size_bytes: int
    cpu_seconds: int
    processes: int


@dataclass(frozen=True)
class SandboxPlan:
    """What the server decided at start-up: the parts that apply, and the words for the result. Frozen: decided
    once (``plan``, then ``layers.decide`` with the box), never edited after."""

    mode: SandboxMode
    read_scope: ReadScope
    network: NetworkMode
    limits: Limits
    abi: int = 0
    netns: bool = False
    network_chosen: bool = True  # False: --network was not given (policy by default, with a fall-back)
    notes: tuple[str, ...] = ()  # what the machine could not give, said once on stderr
    pids_cgroup: Path | None = None
    box: Box | None = None  # the box every command runs in (see layers.open_box), when the machine allows it
    jail_writable: bool = True  # False in --mode read-only: commands may write only their private /tmp
    # (root, area) for every writable root commands see as a copy (its changes judged and applied afterwards);
    # empty: commands write the real tree directly (transaction: none)
    copies: tuple[tuple[str, str], ...] = ()
    sockets: SocketScan = field(default_factory=lambda: SocketScan(()))  # outside UNIX sockets, masked in the box

    @property
    def landlock(self) -> bool:
        return self.abi > 0 and self.mode is not SandboxMode.OFF

    @property
    def label(self) -> str:
        """What the ``sandbox`` result field says: every layer that applies, e.g.
        ``bwrap+pidns+mountns+nocaps+seccomp+landlock-v7+netns``; ``none`` when only the policy and jail do."""
        if not self.landlock and not self.netns and self.box is None:
            return "none"
        parts = ["bwrap", "pidns", "mountns", "nocaps", "seccomp"] if self.box is not None else []
        if self.landlock:
            parts.append(f"landlock-v{self.abi}")
        proxied = self.network is NetworkMode.POLICY and self.box is not None
        if self.netns or proxied:
            parts.append("netns")
        elif self.network is NetworkMode.DENY and self.landlock and self.abi >= 4:
            parts.append("tcp-deny")
        if proxied:
            parts.append("egress-proxy")
        return "+".join(parts)


def _probe_netns() -> bool:
    """Can a child leave the network? Try it once, in a throwaway process."""

    try:
        done = subprocess.run(
            [sys.executable, "-c", "import mcp_server_guard.shell.sandbox.planning as s; s._enter_netns()"],
            capture_output=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _make_pids_cgroup(limit: int) -> Path | None:
    """As root, RLIMIT_NPROC binds nobody: the server moves itself into a pids cgroup, once.

    Its commands are then born inside it (no per-call migration: moving a process between cgroups can
    wait for an RCU grace period, milliseconds on an idle machine). The budget is shared by the server's
    own threads and every command it runs; a fork bomb exhausts it, not the machine.
    """
    if os.geteuid() != 0:
        return None
    for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        if not (base / "cgroup.procs").exists() or not os.access(base, os.W_OK):
            continue
        if base == Path("/sys/fs/cgroup") and "pids" not in _read(base / "cgroup.controllers"):
            continue
        _sweep_stale(base)
        group = base / f"mcp-guard-{os.getpid()}"
        try:
            group.mkdir(exist_ok=True)
            (group / "pids.max").write_text(str(limit + _SERVER_PIDS), encoding="ascii")
            (group / "cgroup.procs").write_text(str(os.getpid()), encoding="ascii")
        except OSError:
            with contextlib.suppress(OSError):
                group.rmdir()
            continue
        _CREATED_CGROUPS.append(group)
        return group
    return None


def _sweep_stale(base: Path) -> None:
    """Remove the cgroups of servers that died without cleaning up (SIGKILL), killing what still runs there."""
    for group in base.glob("mcp-guard-*"):
        pid = group.name.removeprefix("mcp-guard-")
        if not pid.isdigit() or _alive(int(pid)):
            continue
        for child in [*group.glob("run-*"), group]:
            # Commands the dead server left running must not outlive it.
            _kill_cgroup(child)
        for child in group.glob("run-*"):
            _remove_cgroup(child)
        _remove_cgroup(group)


def _kill_cgroup(group: Path) -> None:
    """SIGKILL every process in a cgroup: cgroup.kill on v2, each listed pid (until none is left) on v1."""
    with contextlib.suppress(OSError):
        (group / "cgroup.kill").write_text("1", encoding="ascii")
        return
    deadline = time.monotonic() + 1.0
    while (pids := _read(group / "cgroup.procs").split()) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        time.sleep(0.01)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii")
    except OSError:
        return ""


def plan(
    mode: SandboxMode,
    read_scope: ReadScope,
    network: NetworkMode,
    limits: Limits,
    *,
    jail_writable: bool = True,
    network_chosen: bool = True,
) -> SandboxPlan:
    """Decide at start-up what confinement applies, short of the box (``layers.decide`` adds it); raise
    SandboxUnavailable when required and missing."""
    notes: list[str] = []
    abi = 0
    if mode is SandboxMode.OFF:
        notes.append("sandbox off: commands run with the policy and the jail only")
    else:
        abi = landlock_abi()
        if abi == 0:
            if mode is SandboxMode.REQUIRED:
                raise SandboxUnavailable(
                    "--sandbox required: this kernel has no Landlock (needs Linux 5.13+ with landlock in the LSM list)"
                )
            notes.append("no Landlock on this kernel: commands run unconfined (sandbox: none)")
        else:
            # TCP is the network namespace's business here (--network deny), not a missing right.
            missing = [right for right in landlock.missing_rights(abi) if not right.startswith("TCP")]
            if missing:
                notes.append(f"Landlock ABI {abi} cannot restrict: {', '.join(missing)}")
    landlocked = abi > 0 and mode is not SandboxMode.OFF
    netns = False
    if network is NetworkMode.DENY:
        netns = _probe_netns()
        if not netns:
            if mode is SandboxMode.REQUIRED or not (landlocked and abi >= 4):
                raise SandboxUnavailable(
                    "--network deny: no network namespace can be created here "
                    "(unprivileged user namespaces are disabled?)"
                )
            notes.append("no network namespace: only TCP is denied (Landlock), UDP is not")
    if not jail_writable and not landlocked:
        notes.append("read-only mode without Landlock: only the read-only policy keeps commands from writing")
    _become_subreaper()
    sweep_stale_tmpdirs()
    pids_cgroup = None
    if mode is not SandboxMode.OFF:
        pids_cgroup = _make_pids_cgroup(limits.processes)
        if os.geteuid() == 0 and pids_cgroup is None:
            notes.append("running as root without a pids cgroup: the process limit does not apply")
    return SandboxPlan(
        mode,
        read_scope,
        network,
        limits,
        abi=abi,
        netns=netns,
        network_chosen=network_chosen,
        notes=tuple(notes),
        pids_cgroup=pids_cgroup,
        jail_writable=jail_writable,
    )


def fall_back_from_policy(plan_: SandboxPlan) -> tuple[NetworkMode, bool, str]:
    """The default ``--network policy`` cannot hold (no box): deny the network instead, as far as this machine
    can: the network mode, whether commands get a network namespace, and the note that says so. (An explicit
    ``--network policy`` refuses to start instead: ``layers.open_box``.)"""
    why = "the default, policy, needs the box; install bubblewrap for it, or pass --network allow"
    if _probe_netns():
        return NetworkMode.DENY, True, f"network: deny ({why})"
    if plan_.landlock and plan_.abi >= 4:
        return NetworkMode.DENY, False, f"network: deny, TCP only ({why})"
    return (
        NetworkMode.ALLOW,
        False,
        "network: ALLOW — the default, policy, needs the box and this machine cannot deny the network either; "
        "pass --network deny to refuse to start instead",
    )


def build_ruleset(plan_: SandboxPlan, writable: Sequence[str]) -> int:
    """A Landlock ruleset fd for one run: read per the plan, write only to ``writable`` (and the devices)."""
    rules = landlock.Rules(
        abi=plan_.abi,
        read_all=plan_.read_scope is ReadScope.ALL,
        writable=(*WRITABLE_DIRS, *writable),
        deny_tcp=plan_.network is NetworkMode.DENY,
    )
    return landlock.build(rules)


def _enter_netns() -> None:
    """Leave the network: a new network namespace (in a new user namespace unless root)."""
    uid, gid = os.geteuid(), os.getegid()
    linux.unshare(linux.CLONE_NEWNET if uid == 0 else linux.CLONE_NEWUSER | linux.CLONE_NEWNET)
    if uid != 0:
        # Keep our own ids inside the new user namespace, so files keep their owner.
        with open("/proc/self/setgroups", "w", encoding="ascii") as fh:
            fh.write("deny")
        with open("/proc/self/uid_map", "w", encoding="ascii") as fh:
            fh.write(f"{uid} {uid} 1")
        with open("/proc/self/gid_map", "w", encoding="ascii") as fh:
            fh.write(f"{gid} {gid} 1")


def _unshare_net_thread() -> None:
    """Root: move the calling thread (only) into a new network namespace; its children are born there."""
    linux.unshare(linux.CLONE_NEWNET)


def _restrict_thread(ruleset: int) -> None:
    """Landlock the calling thread; a process it spawns inherits the domain. The thread is never reused."""
    landlock.restrict_self(ruleset)


def _rlimits(limits: Limits) -> list[tuple[int, tuple[int, int]]]:
    return [
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_DATA, (limits.memory_bytes, limits.memory_bytes)),
        (resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes)),
        (resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 5)),
        (resource.RLIMIT_NPROC, (limits.processes, limits.processes)),
    ]


@dataclass
class Confinement:
    """One run's confinement: its private TMPDIR, its ruleset, how it applies to the spawn.

    The fast path keeps vfork: Landlock (and, as root, a new network namespace) is applied to a fresh
    thread that then spawns the command, and the rlimits are set on the child with prlimit right after
    it starts. Only a non-root ``--network deny`` needs a user namespace, which a multi-threaded process
    cannot enter: that case sets everything up in the child between fork and exec (``preexec``).
    """

    tmpdir: str
    ruleset: int | None
    label: str
    limits: Limits
    netns: bool = False

    @property
    def in_child(self) -> bool:
        return self.netns and os.geteuid() != 0

    @property
    def in_thread(self) -> bool:
        return not self.in_child and (self.ruleset is not None or self.netns)

    def enter_thread(self) -> None:
        """Run in the fresh spawning thread, before it spawns."""
        if self.netns:
            _unshare_net_thread()
        if self.ruleset is not None:
            _restrict_thread(self.ruleset)

    def preexec(self) -> None:
        """Run in the child between fork and exec (the non-root --network deny case only)."""
        for which, value in _rlimits(self.limits):
            resource.setrlimit(which, value)
        _enter_netns()
        if self.ruleset is not None:
            _restrict_thread(self.ruleset)

    def limit(self, pid: int) -> None:
        """Apply the resource limits to a child that has just started."""
        if self.in_child:
            return  # already set before exec
        for which, value in _rlimits(self.limits):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                resource.prlimit(pid, which, value)

    def close(self) -> None:
        if self.ruleset is not None:
            os.close(self.ruleset)
            self.ruleset = None
        _remove_tmpdir(self.tmpdir)


# Per-call temporary directories: named after the server's pid, so that those of a server that died
# without cleaning up (SIGKILL) are recognised and removed by the next server to start.
_TMPDIR_PREFIX = "mcp-guard-run-"
_LIVE_TMPDIRS: set[str] = set()


def _make_tmpdir() -> str:
    tmpdir = tempfile.mkdtemp(prefix=f"{_TMPDIR_PREFIX}{os.getpid()}-")
    _LIVE_TMPDIRS.add(tmpdir)
    return tmpdir


def _remove_tmpdir(tmpdir: str) -> None:
    shutil.rmtree(tmpdir, ignore_errors=True)
    _LIVE_TMPDIRS.discard(tmpdir)


def sweep_stale_tmpdirs(base: str | None = None) -> int:
    """Remove the per-call temporary directories of servers that are no longer running. Returns how many."""
    base = base or tempfile.gettempdir()
    removed = 0
    try:
        names = os.listdir(base)
    except OSError:
        return 0
    for name in names:
        pid = name.removeprefix(_TMPDIR_PREFIX).partition("-")[0]
        if not name.startswith(_TMPDIR_PREFIX) or not pid.isdigit() or _alive(int(pid)):
            continue
        path = os.path.join(base, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        # Only real directories of our own (never follow a planted symlink, never another user's).
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def confine(plan_: SandboxPlan, roots: Iterable[str]) -> Confinement:
    """Prepare one run: a fresh private temporary directory and a ruleset naming it and the roots."""
    tmpdir = _make_tmpdir()
    ruleset: int | None = None
    try:
        if plan_.landlock:
            ruleset = build_ruleset(plan_, [*roots, tmpdir] if plan_.jail_writable else [tmpdir])
    except OSError:
        _remove_tmpdir(tmpdir)
        raise
    netns = plan_.netns and plan_.network is NetworkMode.DENY
    return Confinement(tmpdir, ruleset, plan_.label, plan_.limits, netns)


_CREATED_CGROUPS: list[Path] = []
_SERVER_PIDS = 64  # headroom in the pids budget for the server's own threads


def _become_subreaper() -> None:
    """Orphans of our commands (a daemon that double-forked or called setsid) are reparented to us,
    so they can be found and killed when their call ends instead of living on."""
    with contextlib.suppress(OSError):
        linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)


def reap_orphans(active_groups: Iterable[int]) -> int:
    """Kill and reap our children outside ``active_groups`` (orphans reparented to us). Returns how many.

    The caller guarantees that no command of a running call is among them (see ProcessRegistry.sweep).
    """

    active = set(active_groups)
    count = 0
    for pid in children():
        try:
            if os.getpgid(pid) in active:
                continue
        except ProcessLookupError:
            pass
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        count += 1
    return count


def children() -> list[int]:
    """Our direct children (including orphans reparented to us), from /proc."""
    pids: list[int] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for tid in tasks:
        pids.extend(int(p) for p in _read(Path(f"/proc/self/task/{tid}/children")).split() if p.isdigit())
    return pids


def release(plan_: SandboxPlan) -> None:
    """At server exit: remove the temporary directories and leave and remove the pids cgroup."""
    release_all()


def release_all() -> None:
    """At server exit, however it exits: remove every per-call temporary directory and our pids cgroup.

    The commands must have been killed first (ProcessRegistry.kill_all).
    """
    for tmpdir in list(_LIVE_TMPDIRS):
        _remove_tmpdir(tmpdir)
    for group in list(_CREATED_CGROUPS):
        # A cgroup with a member cannot be removed, and the server itself is one: leave it first.
        with contextlib.suppress(OSError):
            (group.parent / "cgroup.procs").write_text(str(os.getpid()), encoding="ascii")
        _remove_cgroup(group)


def _remove_cgroup(group: Path) -> None:

    deadline = time.monotonic() + 2.0
    while True:
        try:
            group.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            if time.monotonic() < deadline:
                time.sleep(0.02)
                continue
            log.warning("could not remove %s", group)
        if group in _CREATED_CGROUPS:
            _CREATED_CGROUPS.remove(group)
        return
