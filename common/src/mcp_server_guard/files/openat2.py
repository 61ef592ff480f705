"""openat2(2) through ctypes (Linux >= 5.6), with ENOSYS detection.

The kernel resolves the whole path beneath a directory fd in one call, so a component swapped
for a symlink between a check and the open cannot lead outside: there is no check to race.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys

RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08

_SYSCALL_NUMBERS = {"x86_64": 437, "aarch64": 437, "arm64": 437, "riscv64": 437, "ppc64le": 437, "s390x": 437}


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


def _load() -> tuple[ctypes.CDLL, int] | None:
    if not sys.platform.startswith("linux"):
        return None
    number = _SYSCALL_NUMBERS.get(platform.machine())
    if number is None:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    return libc, number


_LIBC = _load()
_available: bool | None = None if _LIBC else False


def openat2(dir_fd: int, path: str, flags: int, resolve: int, mode: int = 0) -> int:
    """Open ``path`` relative to ``dir_fd``. Raises OSError; ENOSYS when the kernel lacks openat2."""
    global _available  # noqa: PLW0603 - one probe per process
    if _LIBC is None or _available is False:
        raise OSError(errno.ENOSYS, "openat2 is not available")
    libc, number = _LIBC
    how = _OpenHow(flags | os.O_CLOEXEC, mode, resolve)
    fd = int(libc.syscall(number, dir_fd, os.fsencode(path), ctypes.byref(how), ctypes.sizeof(how)))
    if fd < 0:
        err = ctypes.get_errno()
        if err == errno.ENOSYS:
            _available = False
        raise OSError(err, os.strerror(err), path)
    _available = True
    return fd


def available() -> bool:
    """True unless openat2 is known to be missing (probed lazily by the first call)."""
    return _available is not False
