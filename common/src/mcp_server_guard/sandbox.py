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
import ctypes
import enum
import errno
import logging
import os
import resource
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("mcp_server_guard.sandbox")

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000

# Filesystem access rights, by the ABI that introduced them.
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

_FS_V1 = (1 << 13) - 1
_FS_BY_ABI = {1: _FS_V1, 2: _FS_V1 | FS_REFER, 3: _FS_V1 | FS_REFER | FS_TRUNCATE}
_FS_BY_ABI[4] = _FS_BY_ABI[3]
_FS_BY_ABI[5] = _FS_BY_ABI[4] | FS_IOCTL_DEV
_FS_READ = FS_READ_FILE | FS_READ_DIR | FS_EXECUTE
_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
# Read-only system locations for --sandbox-read jail (whatever of them exists).
SYSTEM_READ_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys",
                    "/dev", "/run", "/var/lib", "/nix", "/snap")  # fmt: skip
# Character devices a command may read and write wherever it runs.
WRITABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom", "/dev/ptmx")
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


class SandboxUnavailable(Exception):
    """Confinement was required and the kernel cannot give it."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = (("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64))  # fmt: skip


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _syscall(number: int, *args: object) -> int:
    assert _LIBC is not None
    result = int(_LIBC.syscall(number, *args))
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when it has none.

    ``MCP_GUARD_LANDLOCK_MAX_ABI`` caps the answer, to see how the server behaves on an older kernel.
    """
    if _LIBC is None or os.uname().machine not in ("x86_64", "aarch64", "arm64", "riscv64"):
        return 0
    try:
        abi = _syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except OSError:
        return 0
    cap = os.environ.get("MCP_GUARD_LANDLOCK_MAX_ABI")
    if cap is not None and cap.strip().isdigit():
        abi = min(abi, int(cap))
    return abi


@dataclass(frozen=True)
class Limits:
    memory_bytes: int  # RLIMIT_DATA: heap and private mappings (JIT reservations are not counted)
    file_size_bytes: int
    cpu_seconds: int
    processes: int


@dataclass
class SandboxPlan:
    """What the server decided at start-up: the parts that apply, and the words for the result."""

    mode: SandboxMode
    read_scope: ReadScope
    network: NetworkMode
    limits: Limits
    abi: int = 0
    netns: bool = False
    notes: list[str] = field(default_factory=list)
    pids_cgroup: Path | None = None

    @property
    def landlock(self) -> bool:
        return self.abi > 0 and self.mode is not SandboxMode.OFF

    @property
    def label(self) -> str:
        """What the ``sandbox`` result field says, e.g. ``landlock-v7+netns``."""
        if not self.landlock and not self.netns:
            return "none"
        parts = [f"landlock-v{self.abi}"] if self.landlock else []
        if self.netns:
            parts.append("netns")
        elif self.network is NetworkMode.DENY and self.landlock and self.abi >= 4:
            parts.append("tcp-deny")
        return "+".join(parts)


def _probe_netns() -> bool:
    """Can a child leave the network? Try it once, in a throwaway process."""
    import subprocess

    try:
        done = subprocess.run(
            [sys.executable, "-c", "import mcp_server_guard.sandbox as s; s._enter_netns()"],
            capture_output=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _make_pids_cgroup() -> Path | None:
    """As root, RLIMIT_NPROC binds nobody: the server's runs get pids cgroups (one each) below this one."""
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
        except OSError:
            continue
        _CREATED_CGROUPS.append(group)
        return group
    return None


def _sweep_stale(base: Path) -> None:
    """Remove the empty cgroups of servers that died without cleaning up (SIGKILL)."""
    for group in base.glob("mcp-guard-*"):
        pid = group.name.removeprefix("mcp-guard-")
        if not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        for child in group.glob("run-*"):
            with contextlib.suppress(OSError):
                child.rmdir()
        with contextlib.suppress(OSError):
            group.rmdir()


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii")
    except OSError:
        return ""


def plan(mode: SandboxMode, read_scope: ReadScope, network: NetworkMode, limits: Limits) -> SandboxPlan:
    """Decide at start-up what confinement applies; raise SandboxUnavailable when required and missing."""
    result = SandboxPlan(mode, read_scope, network, limits)
    if mode is SandboxMode.OFF:
        result.notes.append("sandbox off: commands run with the policy and the jail only")
    else:
        result.abi = landlock_abi()
        if result.abi == 0:
            if mode is SandboxMode.REQUIRED:
                raise SandboxUnavailable(
                    "--sandbox required: this kernel has no Landlock (needs Linux 5.13+ with landlock in the LSM list)"
                )
            result.notes.append("no Landlock on this kernel: commands run unconfined (sandbox: none)")
        else:
            missing = []
            if result.abi < 2:
                missing.append("refer (cross-directory links and renames)")
            if result.abi < 3:
                missing.append("truncate")
            if result.abi < 5:
                missing.append("device ioctls")
            if result.abi < 6:
                missing.append("signal and abstract-socket scoping")
            if missing:
                result.notes.append(f"Landlock ABI {result.abi} cannot restrict: {', '.join(missing)}")
    if network is NetworkMode.DENY:
        result.netns = _probe_netns()
        if not result.netns:
            if mode is SandboxMode.REQUIRED or not (result.landlock and result.abi >= 4):
                raise SandboxUnavailable(
                    "--network deny: no network namespace can be created here "
                    "(unprivileged user namespaces are disabled?)"
                )
            result.notes.append("no network namespace: only TCP is denied (Landlock), UDP is not")
    if mode is not SandboxMode.OFF:
        result.pids_cgroup = _make_pids_cgroup()
        if os.geteuid() == 0 and result.pids_cgroup is None:
            result.notes.append("running as root without a pids cgroup: the process limit does not apply")
    return result


def _add_path(ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # absent on this system: nothing to allow
    try:
        if not os.path.isdir(path):
            access &= _FILE_RIGHTS
        if access:
            attr = _PathBeneathAttr(access, fd)
            _syscall(
                _SYS_ADD_RULE,
                ctypes.c_int(ruleset),
                ctypes.c_int(_RULE_PATH_BENEATH),
                ctypes.byref(attr),
                ctypes.c_uint32(0),
            )
    finally:
        os.close(fd)


def build_ruleset(plan_: SandboxPlan, writable: Sequence[str]) -> int:
    """A Landlock ruleset fd for one run: read per the plan, write only to ``writable``."""
    abi = plan_.abi
    handled_fs = _FS_BY_ABI.get(abi, _FS_BY_ABI[5])
    handled_net = (NET_BIND_TCP | NET_CONNECT_TCP) if plan_.network is NetworkMode.DENY and abi >= 4 else 0
    scoped = (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0
    attr = _RulesetAttr(handled_fs, handled_net, scoped)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = _syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        read = _FS_READ & handled_fs
        if plan_.read_scope is ReadScope.ALL:
            _add_path(ruleset, "/", read)
        else:
            for directory in SYSTEM_READ_DIRS:
                _add_path(ruleset, directory, read)
        for device in WRITABLE_DEVICES:
            _add_path(ruleset, device, (FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV) & handled_fs)
        for directory in (*WRITABLE_DIRS, *writable):
            _add_path(ruleset, directory, handled_fs)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def _enter_netns() -> None:
    """Leave the network: a new network namespace (in a new user namespace unless root)."""
    assert _LIBC is not None
    uid, gid = os.geteuid(), os.getegid()
    flags = _CLONE_NEWNET if uid == 0 else _CLONE_NEWUSER | _CLONE_NEWNET
    if _LIBC.unshare(ctypes.c_int(flags)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    if uid != 0:
        # Keep our own ids inside the new user namespace, so files keep their owner.
        with open("/proc/self/setgroups", "w", encoding="ascii") as fh:
            fh.write("deny")
        with open("/proc/self/uid_map", "w", encoding="ascii") as fh:
            fh.write(f"{uid} {uid} 1")
        with open("/proc/self/gid_map", "w", encoding="ascii") as fh:
            fh.write(f"{gid} {gid} 1")


def child_setup(plan_: SandboxPlan, ruleset: int | None, cgroup: Path | None) -> Callable[[], None]:
    """The function that runs in the child between fork and exec (as subprocess's preexec_fn)."""
    limits = plan_.limits
    cgroup_procs = str(cgroup / "cgroup.procs") if cgroup is not None else None
    netns = plan_.netns and plan_.network is NetworkMode.DENY

    def setup() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_DATA, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 5))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        if cgroup_procs is not None:
            with open(cgroup_procs, "w", encoding="ascii") as fh:
                fh.write(str(os.getpid()))
        if netns:
            _enter_netns()
        if ruleset is not None:
            assert _LIBC is not None
            if _LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
            _syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))

    return setup


@dataclass
class Confinement:
    """One run's confinement: its private TMPDIR, its ruleset, its pids cgroup, and the child set-up."""

    tmpdir: str
    ruleset: int | None
    setup: Callable[[], None]
    label: str
    cgroup: Path | None = None

    def close(self) -> None:
        if self.cgroup is not None:
            # Whatever the run left behind, even what left its process group (setsid), dies with it.
            _kill_cgroup(self.cgroup)
            _remove_cgroup(self.cgroup)
            self.cgroup = None
        if self.ruleset is not None:
            os.close(self.ruleset)
            self.ruleset = None
        shutil.rmtree(self.tmpdir, ignore_errors=True)


def _kill_cgroup(group: Path) -> None:
    import signal
    import time

    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        pids = [int(p) for p in _read(group / "cgroup.procs").split() if p.isdigit()]
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)


def _run_cgroup(parent: Path | None, limit: int) -> Path | None:
    """A child pids cgroup for one run: its own process budget, and a handle on everything it starts."""
    if parent is None:
        return None
    group = parent / f"run-{os.urandom(6).hex()}"
    try:
        group.mkdir()
        (group / "pids.max").write_text(str(limit), encoding="ascii")
    except OSError:
        return None
    return group


def confine(plan_: SandboxPlan, roots: Iterable[str]) -> Confinement:
    """Prepare one run: a fresh private temporary directory and a ruleset naming it and the roots."""
    tmpdir = tempfile.mkdtemp(prefix="mcp-guard-run-")
    ruleset: int | None = None
    try:
        if plan_.landlock:
            ruleset = build_ruleset(plan_, [*roots, tmpdir])
    except OSError as exc:
        shutil.rmtree(tmpdir, ignore_errors=True)
        if exc.errno in (errno.ENOSYS, errno.EOPNOTSUPP) and plan_.mode is SandboxMode.AUTO:
            log.warning("Landlock failed (%s); this run is unconfined", exc.strerror)
            return confine(SandboxPlan(SandboxMode.OFF, plan_.read_scope, plan_.network, plan_.limits), roots)
        raise
    cgroup = _run_cgroup(plan_.pids_cgroup, plan_.limits.processes)
    return Confinement(tmpdir, ruleset, child_setup(plan_, ruleset, cgroup), plan_.label, cgroup)


_CREATED_CGROUPS: list[Path] = []


def release(plan_: SandboxPlan) -> None:
    """At server exit: remove the pids cgroup (it empties as the killed processes are reaped)."""
    if plan_.pids_cgroup is not None:
        _remove_cgroup(plan_.pids_cgroup)


def release_all() -> None:
    for group in list(_CREATED_CGROUPS):
        _remove_cgroup(group)


def _remove_cgroup(group: Path) -> None:
    import time

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
