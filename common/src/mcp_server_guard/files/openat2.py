"""openat2(2) through ctypes (Linux >= 5.6), with ENOSYS detection.

The kernel resolves the whole path beneath a directory fd in one call, so a component swapped
for a symlink between a check and the open cannot lead outside: there is no check to race.
"""

from __future__ import annotations

import errno
import os
import platform

from mcp_server_guard import linux

RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08

_SYSCALL_NUMBERS = {"x86_64": 437, "aarch64": 437, "arm64": 437, "riscv64": 437, "ppc64le": 437, "s390x": 437}


# The syscall's number here (None: not a machine we know it on), and whether the kernel has it: unknown until
# the first call tells.
_NUMBER = _SYSCALL_NUMBERS.get(platform.machine()) if linux.LIBC is not None else None
_available: bool | None = None if _NUMBER is not None else False


def openat2(dir_fd: int, path: str, flags: int, resolve: int, mode: int = 0) -> int:
    """Open ``path`` relative to ``dir_fd``. Raises OSError; ENOSYS when the kernel lacks openat2."""
    global _available  # noqa: PLW0603 - one probe per process
    if _NUMBER is None or _available is False:
        raise OSError(errno.ENOSYS, "openat2 is not available")
    try:
        fd = linux.openat2(_NUMBER, dir_fd, path, flags | os.O_CLOEXEC, resolve, mode)
    except OSError as exc:
        if exc.errno == errno.ENOSYS:
            _available = False
        raise
    _available = True
    return fd


def available() -> bool:
    """True unless openat2 is known to be missing (probed lazily by the first call)."""
    return _available is not False
