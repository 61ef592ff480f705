"""The Linux system calls the os module lacks, through ctypes: the one module that loads libc.

The jail's openat2, the writer's renameat2 and syncfs, the protected files' inotify, and the box's mounts,
namespaces, capabilities, prctl and seccomp. Standard library only: the in-box supervisor imports this, and its
start-up must stay fast.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import re
import resource
import socket
import struct
import sys
import threading
from collections.abc import Iterable
from typing import Any, Protocol

# The extended attributes that hold a file's POSIX access control lists.
ACL_NAMES = ("system.posix_acl_access", "system.posix_acl_default")
CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_BIND = 4096
MS_REC = 0x4000
MS_PRIVATE = 1 << 18

PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

_LINUX_CAPABILITY_VERSION_3 = 0x20080522

LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def _libc() -> ctypes.CDLL:
    if LIBC is None:
        raise OSError(38, "not Linux")
    return LIBC


def last_errno() -> int:
    """The errno of the last call made through this module (ctypes keeps it per thread)."""
    return ctypes.get_errno()


def renameat2(src_dir: int, src: str, dst_dir: int, dst: str, flags: int) -> None:
    """renameat2(2): ``flags`` RENAME_NOREPLACE or RENAME_EXCHANGE, which os.rename cannot ask for."""
    result = _libc().renameat2(src_dir, os.fsencode(src), dst_dir, os.fsencode(dst), ctypes.c_uint(flags))
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


_LISTXATTRAT = 465  # Linux 6.13 and later, the same number on every architecture
_AT_SYMLINK_NOFOLLOW = 0x100
_listxattrat: list[Any] = []  # the syscall, typed once (a plain ctypes call costs more than the lookup itself)
_buffers = threading.local()


def attributes_digest(dirfd: int, name: str) -> str:
    """A digest of what a person may change on ``name`` in ``dirfd`` (never followed) after a call that moves its
    ctime alone: its owner and group (red team 97 F3), all ``user.*`` attributes and the access control lists. What
    an apply or a write left, for an undo's check that nobody changed them since (``changes.plan.changed_since``);
    "" where they cannot be read."""
    import hashlib  # noqa: PLC0415 - not for the box's supervisor, which never digests (its start: issue 44)

    path = f"/proc/self/fd/{dirfd}/{name}"
    digest = hashlib.blake2b(digest_size=16)
    st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    digest.update(b"owner:%d:%d;" % (st.st_uid, st.st_gid))
    try:
        names = listxattr_at(dirfd, name)
        names = sorted(os.listxattr(path, follow_symlinks=False) if names is None else names)
        for attribute in names:
            if attribute.startswith("user.") or attribute in ACL_NAMES:
                try:
                    value = os.getxattr(path, attribute, follow_symlinks=False)
                except OSError as exc:
                    if exc.errno != errno.ENODATA:  # (removed meanwhile)
                        raise
                    continue
                raw = os.fsencode(attribute)  # (names need not be UTF-8)
                digest.update(b"%d:%s%d:%s" % (len(raw), raw, len(value), value))
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.ENOENT):
            return digest.hexdigest()  # (none to have)
        if exc.errno in (errno.EACCES, errno.EPERM):
            return ""  # a file its owner may not read (``chmod 000``): its attributes not known, none compared
        raise
    return digest.hexdigest()


def listxattr_at(dirfd: int, name: str) -> list[str] | None:
    """The extended attribute names of ``name`` in the directory ``dirfd``, never followed (``listxattrat``: one
    lookup in the directory, no path through /proc); None where the kernel lacks it (the caller asks another way)."""
    if not _listxattrat:
        _listxattrat.append(
            ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint,
                             ctypes.c_void_p, ctypes.c_size_t, use_errno=True)(("syscall", _libc()))
        )  # fmt: skip
    call = _listxattrat[0]
    if call is None:
        return None
    buf = getattr(_buffers, "buf", None)
    if buf is None:
        buf = _buffers.buf = ctypes.create_string_buffer(4096)
    encoded = os.fsencode(name)
    while True:
        result = int(call(_LISTXATTRAT, dirfd, encoded, _AT_SYMLINK_NOFOLLOW, buf, len(buf)))
        if result >= 0:
            return [os.fsdecode(n) for n in buf.raw[:result].split(b"\0") if n] if result else []
        err = ctypes.get_errno()
        if err == errno.ERANGE and len(buf) < 1 << 16:
            buf = _buffers.buf = ctypes.create_string_buffer(len(buf) * 8)
            continue
        if err in (errno.ENOSYS, errno.EPERM):  # missing, or refused by a seccomp filter
            _listxattrat[0] = None
            return None
        raise OSError(err, os.strerror(err))


def syncfs(fd: int) -> None:
    """syncfs(2): the file system of ``fd`` to disk (best effort: a failure changes nothing for the caller)."""
    _libc().syncfs(fd)


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


def openat2(number: int, dir_fd: int, path: str, flags: int, resolve: int, mode: int = 0) -> int:
    """openat2(2) (syscall ``number`` on this machine): raises OSError with the kernel's errno, naming ``path``."""
    how = _OpenHow(flags, mode, resolve)
    fd = int(_libc().syscall(number, dir_fd, os.fsencode(path), ctypes.byref(how), ctypes.sizeof(how)))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    return fd


def inotify_init1(flags: int) -> int:
    return _check(int(_libc().inotify_init1(ctypes.c_int(flags))), "inotify_init1")


def inotify_add_watch(fd: int, path: str, mask: int) -> int:
    watch = _libc().inotify_add_watch(ctypes.c_int(fd), os.fsencode(path), ctypes.c_uint32(mask))
    if watch < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    return int(watch)


def syscall(number: int, *args: object) -> int:
    return _check(int(_libc().syscall(number, *args)), f"syscall {number}")


def unshare(flags: int) -> None:
    _check(_libc().unshare(ctypes.c_int(flags)), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = os.fsencode
    _check(
        _libc().mount(
            enc(source) if source else None,
            enc(target),
            enc(fstype) if fstype else None,
            ctypes.c_ulong(flags),
            enc(data) if data else None,
        ),
        f"mount {target}",
    )


MNT_DETACH = 2


def umount(target: str) -> None:
    """Detach the mount on ``target`` (lazily: whatever still uses it keeps it until done)."""
    _check(_libc().umount2(os.fsencode(target), ctypes.c_int(MNT_DETACH)), f"umount {target}")


def bind_read_only(path: str) -> None:
    """Make ``path`` and every mount under it read-only in this mount namespace. A path swapped for a symlink since
    it was surveyed is refused (``ELOOP``), not followed somewhere else.

    Threat: a remount read-only of a bind changes that one mount, not those under it: the directories pinned above
    a hidden path (``~/.config``) stayed writable in a read-only session, and a command re-moded and re-timed them
    (red team 6 R1). Every mount below is made read-only too (``mount_setattr``, or one remount each)."""
    if os.path.islink(path):
        raise OSError(errno.ELOOP, "a symlink cannot be made read-only", path)
    mount(path, path, None, MS_BIND | MS_REC)
    mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    if not _read_only_recursively(path):
        _read_only_below(path)


_MOUNT_SETATTR = 442  # the same number on x86_64 and aarch64
_AT_RECURSIVE, _AT_SYMLINK_NOFOLLOW, _MOUNT_ATTR_RDONLY = 0x8000, 0x100, 1


class _MountAttr(ctypes.Structure):
    _fields_ = (("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64))  # fmt: skip


def _read_only_recursively(path: str) -> bool:
    """``mount_setattr(AT_RECURSIVE, MOUNT_ATTR_RDONLY)`` on ``path`` (Linux 5.12): False where it did not (a kernel
    without it, a filter refusing it): the caller remounts each mount then."""
    attr = _MountAttr(_MOUNT_ATTR_RDONLY, 0, 0, 0)
    flags = _AT_RECURSIVE | _AT_SYMLINK_NOFOLLOW
    return bool(
        _libc().syscall(_MOUNT_SETATTR, -100, os.fsencode(path), flags, ctypes.byref(attr), ctypes.sizeof(attr)) == 0
    )


_KEPT = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
         "nodiratime": 2048, "relatime": 1 << 21}  # fmt: skip


def _read_only_below(path: str) -> None:
    """Remount each mount below ``path`` read-only, keeping its other flags (a mount a user namespace inherited
    keeps them locked)."""
    below = path.rstrip("/") + "/"
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as info:
        lines = info.read().splitlines()
    for line in lines:
        fields = line.split()
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
        options = fields[5].split(",")
        if point.startswith(below) and "ro" not in options:
            kept = sum(flag for name, flag in _KEPT.items() if name in options)
            mount(None, point, None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept)


def mask(path: str) -> None:
    """Show ``path`` as empty and read-only: a directory becomes an empty read-only tmpfs, anything else a
    read-only /dev/null (reads nothing, writes vanish, cannot be removed: it is a mount point)."""
    if os.path.isdir(path) and not os.path.islink(path):
        mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0500")
    else:
        mount("/dev/null", path, None, MS_BIND)
        mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_IFREQ = "16sh22x"  # struct ifreq: the interface's name, then its flags (the rest of the union unused)


def loopback_up() -> None:
    """Bring up ``lo`` in this (new) network namespace: 127.0.0.1 answers only once it is up (CAP_NET_ADMIN)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        flags = struct.unpack(_IFREQ, fcntl.ioctl(sock, _SIOCGIFFLAGS, struct.pack(_IFREQ, b"lo", 0)))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | _IFF_UP))


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    return _check(
        int(
            _libc().prctl(
                ctypes.c_int(option),
                ctypes.c_ulong(arg2),
                ctypes.c_ulong(arg3),
                ctypes.c_ulong(arg4),
                ctypes.c_ulong(arg5),
            )
        ),
        f"prctl {option}",
    )


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32))


def last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return 40


def drop_all_capabilities(bounding: Iterable[int] | None = None) -> None:
    """No capability, now or after any exec: bounding set emptied, ambient cleared, sets zeroed.

    Even a server running as root hands its commands none (a command with CAP_SYS_ADMIN in the box's user
    namespace could remount the read-only file system writable). ``bounding`` lists the capabilities still in
    the bounding set (read once by the caller: a file read in a freshly forked process costs a millisecond);
    by default every capability the kernel knows.
    """
    for cap in range(last_cap() + 1) if bounding is None else bounding:
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except OSError as exc:
            if exc.errno != 22:  # EINVAL: a capability this kernel does not know
                raise
    try:
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError as exc:
        if exc.errno != 22:
            raise
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc().capset(ctypes.byref(header), ctypes.byref(data)), "capset")


def warm_up() -> None:
    """Go through what :func:`drop_all_capabilities`, :func:`mount` and Landlock use, changing nothing (a forked
    process's first use of a ctypes function or structure is slow: see the supervisor)."""
    prctl(PR_GET_DUMPABLE)
    prctl(PR_CAPBSET_READ, 0)
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc().capget(ctypes.byref(header), ctypes.byref(data)), "capget")
    _ = _libc().capset, _libc().mount, _libc().syscall


def capability_mask(field: str = "CapEff") -> int:
    """One capability set of this process (from /proc/self/status): ``CapEff`` by default, or ``CapBnd`` etc."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1], 16)
    return 0


def set_limit(which: int, soft: int, hard: int) -> None:
    """A resource limit of this process, within the hard limit it has: one below the policy's (a host's `ulimit -H`,
    a unit's `LimitCPU=`) stays (raising it is refused, and every command would fail to start; red team 40s F8)."""
    _now, ceiling = resource.getrlimit(which)
    if ceiling != resource.RLIM_INFINITY:
        hard = ceiling if hard == resource.RLIM_INFINITY else min(hard, ceiling)
        soft = hard if soft == resource.RLIM_INFINITY else min(soft, hard)
    resource.setrlimit(which, (soft, hard))


def data_ranges(fd: int, size: int) -> list[tuple[int, int]]:
    """Where a file holds data, as (start, end), up to ``size``: what lies between is a hole (``SEEK_DATA``,
    ``SEEK_HOLE``). The whole file where the file system cannot say."""
    ranges: list[tuple[int, int]] = []
    offset = 0
    try:
        while offset < size:
            try:
                start = os.lseek(fd, offset, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:
                    break  # nothing but a hole to the end
                raise
            end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
            ranges.append((start, end))
            offset = end
    except OSError:
        return [(0, size)]
    return ranges


class _Hasher(Protocol):
    def update(self, data: bytes, /) -> None: ...


_COPY_CHUNK = 1 << 20
_ZEROS = bytes(_COPY_CHUNK)


def copy_data(src: int, dst: int, size: int, hasher: _Hasher | None = None) -> None:
    """Copy the first ``size`` bytes of the open file ``src`` into the new, empty file ``dst``, keeping its holes (a
    sparse disk image or database stays sparse, as natively: threat, a sparse file filling the disk when copied);
    ``dst`` ends at ``size``. ``hasher`` is given every byte, holes as zeros. A file that shrinks meanwhile ends
    where it ended then (the caller compares what it copied)."""
    at = 0
    for start, end in data_ranges(src, size):
        _zeros(hasher, start - at)
        at = _copy_range(src, dst, start, end, hasher)
        if at < end:
            break  # it shrank: the rest reads as zeros in the copy
    _zeros(hasher, size - at)
    os.ftruncate(dst, size)


def _zeros(hasher: _Hasher | None, count: int) -> None:
    while hasher is not None and count > 0:
        hasher.update(_ZEROS[: min(count, _COPY_CHUNK)])
        count -= _COPY_CHUNK


def _copy_range(src: int, dst: int, start: int, end: int, hasher: _Hasher | None) -> int:
    at = start
    while at < end:
        if hasher is not None:
            chunk = os.pread(src, min(_COPY_CHUNK, end - at), at)
            hasher.update(chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.pwrite(dst, view, at + len(chunk) - len(view)) :]
            done = len(chunk)
        else:
            try:
                done = os.copy_file_range(src, dst, end - at, at, at)
            except OSError as exc:
                if exc.errno not in (errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                    raise
                os.lseek(dst, at, os.SEEK_SET)
                done = os.sendfile(dst, src, at, end - at)
        if done == 0:
            break  # the file shrank meanwhile
        at += done
    return at


_PUNCH_HOLE = 0x02 | 0x01  # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE


def punch_like(new: int, old: int, size: int) -> int:
    """Make holes in the open file ``new`` (writable) wherever the file ``old`` has one and ``new`` holds only zeros
    there, in whole blocks, up to ``size``; returns the bytes made holes. Overlayfs copies a file up in 1 MiB pieces
    and writes the small holes of a sparse file as zeros: a disk image with scattered data changed in place would
    land up to a MiB larger per extent (red team 9 F1). The bytes stay the same; ``new``'s times move."""
    block = max(os.fstat(new).st_blksize, 512)
    made = at = 0
    for start, end in [*data_ranges(old, size), (size, size)]:
        lo, hi = -(-at // block) * block, start // block * block  # the whole blocks of a hole of ``old``
        at = end
        for data_lo, data_hi in data_ranges(new, hi) if hi > lo else ():
            made += _punch_zeros(new, max(lo, data_lo), min(hi, data_hi), block)
    return made


def punch_zeros(fd: int, size: int) -> int:
    """Make holes of the whole blocks of zeros in the data of the open file ``fd`` (writable), up to ``size``;
    returns the bytes made holes. For a file overlayfs copied up from a sparse one and the command renamed: the
    real file it came from is gone from its name, and the zeros around each piece of data (up to a MiB) are the
    holes it had (red team 61 F2). The bytes stay the same; its times move."""
    block = max(os.fstat(fd).st_blksize, 512)
    return sum(_punch_zeros(fd, lo, hi, block) for lo, hi in data_ranges(fd, size))


def _punch_zeros(fd: int, lo: int, hi: int, block: int) -> int:
    made = 0
    at, hi = -(-lo // block) * block, hi // block * block
    while at < hi:
        piece = os.pread(fd, min(_COPY_CHUNK, hi - at), at)
        if not piece:
            break
        if piece == _ZEROS[: len(piece)]:
            made += _punch(fd, at, len(piece))
        else:
            run = 0  # zero blocks before ``offset``, punched together
            for offset in range(0, len(piece), block):
                part = piece[offset : offset + block]
                if part == _ZEROS[: len(part)]:
                    run += len(part)
                else:
                    made += _punch(fd, at + offset - run, run)
                    run = 0
            made += _punch(fd, at + len(piece) - run, run)
        at += len(piece)
    return made


def _punch(fd: int, offset: int, length: int) -> int:
    if length <= 0:
        return 0
    if _libc().fallocate(fd, _PUNCH_HOLE, ctypes.c_long(offset), ctypes.c_long(length)) != 0:
        return 0  # a file system without holes: the zeros stay (as before)
    return length


_KEEP_SIZE = 0x01  # FALLOC_FL_KEEP_SIZE


def allocate_beyond_end(fd: int, size: int) -> None:
    """Allocate ``size`` bytes of blocks for ``fd`` from its start, its size unchanged (``fallocate`` with
    ``FALLOC_FL_KEEP_SIZE``): later writes within them need no new room. Raises OSError (ENOSPC) when the disk has
    not that room; on a file system that cannot, nothing happens."""
    if _libc().fallocate(fd, _KEEP_SIZE, ctypes.c_long(0), ctypes.c_long(size)) != 0:
        error = last_errno()
        if error not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            raise OSError(error, os.strerror(error))
