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

import enum
import logging
import os
import resource
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_server_guard import linux
from mcp_server_guard.shell.sandbox import landlock
from mcp_server_guard.shell.sandbox.lifetime import (
    become_subreaper,
    make_pids_cgroup,
    make_tmpdir,
    remove_tmpdir,
    sweep_stale_tmpdirs,
)
from mcp_server_guard.shell.sandbox.sockets import SocketScan

if TYPE_CHECKING:
    from mcp_server_guard.policy import ShellPolicy
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
    file_size_bytes: int  # RLIMIT_FSIZE, where the command works on no copy (see ``layers.call_options``)
    cpu_seconds: int
    processes: int
    disk_floor_bytes: int = 0  # on a copy: the free bytes its disk keeps (see ``shell.in_box.DiskWatch``)


def limits_of(policy: ShellPolicy) -> Limits:
    """The resource limits of every run, from the policy's [shell_exec] section (here: the box starts before the
    shell's modules load)."""
    return Limits(
        memory_bytes=policy.max_memory_bytes,
        file_size_bytes=policy.max_file_size_bytes,
        disk_floor_bytes=policy.min_free_disk_bytes,
        cpu_seconds=policy.max_cpu_seconds,
        processes=policy.max_processes,
    )


@dataclass(frozen=True)
class SandboxPlan:
    """What the server decided at start-up: the parts that apply, and the words for the result. Frozen: decided
    once (``plan``, then ``layers.begin`` with the box), never edited after."""

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
    no_box: str = ""  # why there is no box where the sandbox is not off (said in the start-up's guard line)

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


def plan(
    mode: SandboxMode,
    read_scope: ReadScope,
    network: NetworkMode,
    limits: Limits,
    *,
    jail_writable: bool = True,
    network_chosen: bool = True,
) -> SandboxPlan:
    """Decide at start-up what confinement applies, short of the box (``layers.begin`` adds it); raise
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
    become_subreaper()
    sweep_stale_tmpdirs()
    pids_cgroup = None
    if mode is not SandboxMode.OFF:
        pids_cgroup = make_pids_cgroup(limits.processes)
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
    can: the network mode, whether commands get a network namespace, and the words that say so. (An explicit
    ``--network policy`` refuses to start instead: ``layers.open_box``.)"""
    fix = "install bubblewrap for policy, or pass --network allow"
    if _probe_netns():
        return NetworkMode.DENY, True, f"the network is deny instead of policy (the default needs the box; {fix})"
    if plan_.landlock and plan_.abi >= 4:
        return NetworkMode.DENY, False, f"the network is deny, TCP only, instead of policy ({fix})"
    return (
        NetworkMode.ALLOW,
        False,
        "the network is ALLOW instead of policy (the default needs the box and this machine cannot deny the "
        "network either; pass --network deny to refuse to start instead)",
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

    Landlock (and, as root, a new network namespace) is applied to a fresh thread that then spawns the command;
    the rlimits are set in the child between fork and exec (``preexec``). Threat: limits set on the child after it
    started (prlimit) missed whatever the command wrote or forked first — a fast ``head -c 5M > f`` finished
    unbounded, and a child forked before them kept none. A non-root ``--network deny`` needs a user namespace,
    which a multi-threaded process cannot enter: that case enters it, and Landlock, there too.
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
        """Run in the child between fork and exec: the resource limits; the network namespace and Landlock too in
        the non-root --network deny case."""
        for which, value in _rlimits(self.limits):
            linux.set_limit(which, *value)
        if self.in_child:
            _enter_netns()
            if self.ruleset is not None:
                _restrict_thread(self.ruleset)

    def close(self) -> None:
        if self.ruleset is not None:
            os.close(self.ruleset)
            self.ruleset = None
        remove_tmpdir(self.tmpdir)


def confine(plan_: SandboxPlan, roots: Iterable[str]) -> Confinement:
    """Prepare one run: a fresh private temporary directory and a ruleset naming it and the roots."""
    tmpdir = make_tmpdir()
    ruleset: int | None = None
    try:
        if plan_.landlock:
            ruleset = build_ruleset(plan_, [*roots, tmpdir] if plan_.jail_writable else [tmpdir])
    except OSError:
        remove_tmpdir(tmpdir)
        raise
    netns = plan_.netns and plan_.network is NetworkMode.DENY
    return Confinement(tmpdir, ruleset, plan_.label, plan_.limits, netns)
