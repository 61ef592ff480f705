"""Landlock: the box's inner file-system layer, applied by each call's init to itself before the command starts.

Read (and execute) the whole system or only listed directories; write only the listed writable places
(the jail roots, the call's private /tmp and /dev/shm, a few character devices); optionally no TCP bind or
connect; and, from ABI 6, no signals and no abstract UNIX sockets outside the domain. The highest ABI the
kernel offers is used; what an older ABI cannot restrict is reported by :func:`missing_rights`.

Standard library only (the in-box supervisor imports this).
"""

from __future__ import annotations

import ctypes
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass

from mcp_server_guard import linux

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
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
_DEVICE_RIGHTS = FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV

# Read-only system locations for a jail-only read scope (whatever of them exists).
SYSTEM_READ_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys",
                    "/dev", "/run", "/var/lib", "/nix", "/snap")  # fmt: skip
# Character devices a command may read and write wherever it runs.
WRITABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom", "/dev/ptmx")


class _RulesetAttr(ctypes.Structure):
    _fields_ = (("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64))  # fmt: skip


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def abi() -> int:
    """The kernel's Landlock ABI version, 0 when it has none.

    ``MCP_GUARD_LANDLOCK_MAX_ABI`` caps the answer, to see how the server behaves on an older kernel.
    """
    if linux.LIBC is None or os.uname().machine not in ("x86_64", "aarch64", "arm64", "riscv64"):
        return 0
    try:
        found = linux.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except OSError:
        return 0
    cap = os.environ.get("MCP_GUARD_LANDLOCK_MAX_ABI")
    if cap is not None and cap.strip().isdigit():
        found = min(found, int(cap))
    return found


def missing_rights(version: int) -> list[str]:
    """What Landlock at ``version`` cannot restrict (for the start-up notes)."""
    missing = []
    if version < 2:
        missing.append("refer (cross-directory links and renames)")
    if version < 3:
        missing.append("truncate")
    if version < 4:
        missing.append("TCP bind/connect")
    if version < 5:
        missing.append("device ioctls")
    if version < 6:
        missing.append("signal and abstract-socket scoping")
    return missing


@dataclass(frozen=True)
class Rules:
    """One call's ruleset, as plain data (it crosses into the box as JSON)."""

    abi: int
    read_all: bool
    writable: tuple[str, ...]
    deny_tcp: bool = False


def _add_path(ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # absent here: nothing to allow
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= _FILE_RIGHTS
        if access:
            attr = _PathBeneathAttr(access, fd)
            linux.syscall(
                _SYS_ADD_RULE,
                ctypes.c_int(ruleset),
                ctypes.c_int(_RULE_PATH_BENEATH),
                ctypes.byref(attr),
                ctypes.c_uint32(0),
            )
    finally:
        os.close(fd)


def build(rules: Rules, extra_readable: Iterable[str] = ()) -> int:
    """A ruleset fd: read per the scope (plus ``extra_readable`` directories), full access only beneath
    ``rules.writable``."""
    version = rules.abi
    handled_fs = _FS_BY_ABI.get(version, _FS_BY_ABI[5])
    handled_net = (NET_BIND_TCP | NET_CONNECT_TCP) if rules.deny_tcp and version >= 4 else 0
    scoped = (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if version >= 6 else 0
    attr = _RulesetAttr(handled_fs, handled_net, scoped)
    size = ctypes.sizeof(_RulesetAttr) if version >= 6 else (16 if version >= 4 else 8)
    ruleset = linux.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        read = _FS_READ & handled_fs
        for directory in ("/",) if rules.read_all else SYSTEM_READ_DIRS:
            _add_path(ruleset, directory, read)
        for device in WRITABLE_DEVICES:
            _add_path(ruleset, device, _DEVICE_RIGHTS & handled_fs)
        for directory in rules.writable:
            _add_path(ruleset, directory, handled_fs)
        for directory in extra_readable:
            _add_path(ruleset, directory, read)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def restrict_self(ruleset: int) -> None:
    """Enforce the ruleset on the calling thread and everything it starts (sets no_new_privs first)."""
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    linux.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))


def apply(rules: Rules, extra_readable: Iterable[str] = ()) -> None:
    """Build and enforce ``rules`` (plus ``extra_readable`` directories for a jail-only read scope)."""
    ruleset = build(rules, extra_readable)
    try:
        restrict_self(ruleset)
    finally:
        os.close(ruleset)
