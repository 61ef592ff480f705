"""Directory renames on the copy: the call's init answers its command's rename calls (seccomp user notification).

A command works on an overlay (see ``overlays``). Mounted in a user namespace, overlayfs cannot record that a
directory moved (``redirect_dir`` needs trusted xattrs), so renaming a directory that exists in the real tree
fails with ``EXDEV``: ``git mv src lib`` and ``os.rename`` of a directory would break, where ``mv`` copes by
copying. The call's init therefore loads a last seccomp filter that turns ``rename``, ``renameat`` and
``renameat2`` into user notifications, and answers them from a thread of its own that started before that
filter (so its own calls are not intercepted):

* the source is not a directory, or cannot be looked at: the kernel carries the call out as asked (CONTINUE);
  where it is a regular file, the thread first notes where it is going and its inode number (a file's number on
  the overlay stays the same through a rename and a copy-up): those found there at the call's end are said with
  it (``renamed``);
* a regular file with several names: the thread renames it itself, with the caller's paths (as below), and notes
  where it came from and the copy it became (``_rename_linked``): overlayfs copies such a file up as a file of its
  own, so that the server could not otherwise tell a later write through the new name from a new file;
* a directory: the thread renames it itself, with the caller's paths (read from ``/proc/<pid>/mem``) resolved
  from the caller's working directory or directory fds (``/proc/<pid>/cwd``, ``/proc/<pid>/fd/N``); where the
  overlay answers ``EXDEV``, it moves the tree the way ``mv`` does: a copy under a temporary name beside the
  target (modes, times, symlinks, hard links within the tree), the copy renamed into place (it is new, so that
  works), then the source removed (``tree_moves``).

``link``/``linkat`` come to the same thread: a link of a regular file with several names, or one that touches a
directory the call's init watches (``unlinks``), it makes itself, as the kernel would, and notes (``_linking``);
any other it leaves to the kernel.

The thread has exactly the command's rights: the same user, mount view, Landlock domain and seccomp filter
(less this last one), and no capability. A command that races it (changes its paths or directories while it
works) gains nothing it could not do itself. Anything it cannot judge is left to the kernel (CONTINUE).

Standard library only (the in-box supervisor imports this).
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import errno
import os
import re
import select
import stat
from typing import Any

from mcp_server_guard import linux
from mcp_server_guard.shell.sandbox import unlinks
from mcp_server_guard.shell.sandbox.tree_moves import OPENAT2, RESOLVE_NO_MAGICLINKS, lstat_from, move_tree
from mcp_server_guard.shell.sandbox.tree_moves import open_parent as _parent
from mcp_server_guard.shell.sandbox.unlinks import holds as _holds
from mcp_server_guard.shell.sandbox.unlinks import where as _at

SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3
_NOTIF_RECV = 0xC0502100  # _IOWR('!', 0, struct seccomp_notif)
_NOTIF_SEND = 0xC0182101  # _IOWR('!', 1, struct seccomp_notif_resp)
_NOTIF_ID_VALID = 0x40082102  # _IOW('!', 2, __u64)
_FLAG_CONTINUE = 1
_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_AT_SYMLINK_FOLLOW = 0x400
_OWN_PROC = re.compile(rb"/proc/(\d+)/(?:cwd|root|fd/\d+)(?:/+|$)")  # a process's own places in /proc
_PATH_MAX = 4096
_PAGE = 4096
_MOVED_MAX = 100_000
_RENAMED_SAID = 10_000  # files said renamed at most (``renamed``)
# This call's renamed regular files: where each was going (an absolute path) and its inode number on the copy. Those
# found there at the call's end are said, so that the server tells a file renamed over another (``mv -f p.txt
# acl.txt``: p.txt's, with its own ACL) from one rewritten in place (the same file, with its ACL), whatever bytes it
# holds (red team 4 F1). A rename that failed, or a file renamed again, removed or replaced since, is not found.
_renamed: dict[tuple[bytes, int], None] = {}  # (in order; one renamed back and forth is noted once each way)
_unnoted: list[bool] = [False]  # a rename past ``_MOVED_MAX`` went unnoted (``renamed`` says so)
# This call's renamed files with several names (renamed by the handler itself: ``_rename_linked``), by their inode
# number on the copy after the rename: the path each was renamed from, its inode number there (the project's file,
# where the source had not been copied up yet: the server checks that against the real tree), and a descriptor that
# holds the file (so that its number is not given to another file while the call runs: ``mv h1 n && rm n && echo x
# > n`` would otherwise look the same at the end).
_origins: dict[int, tuple[bytes, int, int]] = {}
_HELD_MAX = 256  # files held so at most (past that, renamed as before: their later writes stay theirs alone)
# The names this call linked to a file with several names (``ln h2 h1``), made by the handler itself: the new name's
# path (absolute, as ``_where`` says it) -> the source's path and a descriptor that holds the file linked (so that its
# number is not given to another while the call runs): a name linked so and then renamed (``ln d/h3 t && mv t h1``)
# came from the file the link's source was (red team 51 F6). (What a name of a watched directory holds at the end,
# the init's watch follows: ``unlinks``.)
_linked: dict[bytes, tuple[bytes, int, int]] = {}  # (and the source's inode number then, as the copy showed it)
_LINKED_MAX = _HELD_MAX


class _Arch:
    def __init__(self, audit: int, seccomp: int, renameat2: int, calls: dict[int, str]) -> None:
        self.audit, self.seccomp, self.renameat2, self.calls = audit, seccomp, renameat2, calls


# Per architecture: AUDIT_ARCH, the seccomp and renameat2 syscall numbers, and which numbers are which rename.
_ARCHES = {
    "x86_64": _Arch(0xC000003E, 317, 316, {82: "rename", 264: "renameat", 316: "renameat2", 86: "link", 265: "linkat"}),
    "aarch64": _Arch(0xC00000B7, 277, 276, {38: "renameat", 276: "renameat2", 37: "linkat"}),
}
_ARCHES["amd64"], _ARCHES["arm64"] = _ARCHES["x86_64"], _ARCHES["aarch64"]


def arch() -> _Arch | None:
    return _ARCHES.get(os.uname().machine.lower())


class _Data(ctypes.Structure):
    _fields_ = (("nr", ctypes.c_int), ("arch", ctypes.c_uint32), ("ip", ctypes.c_uint64), ("args", ctypes.c_uint64 * 6))


class _Notif(ctypes.Structure):
    _fields_ = (("id", ctypes.c_uint64), ("pid", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("data", _Data))


class _Resp(ctypes.Structure):
    _fields_ = (("id", ctypes.c_uint64), ("val", ctypes.c_int64), ("error", ctypes.c_int32), ("flags", ctypes.c_uint32))


def load_with_listener(fprog: Any, which: _Arch) -> int:
    """Load a prepared filter (a ``sock_fprog`` and its buffer, see ``call_init``) on the calling thread with a
    new listener for its user notifications; returns the listener fd (close-on-exec)."""
    return linux.syscall(
        which.seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, ctypes.byref(fprog[0])
    )


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class _Skip(Exception):
    """Leave the call to the kernel, as asked."""


class Handler:
    """The thread that answers one call's renames.

    Started by the init once it is confined exactly as the command will be (a new thread inherits its creator's
    Landlock domain, capabilities and seccomp filters; Landlock lets a process look into another only within
    one domain, so it must be this domain, not an equal one), and before the notify filter is loaded (a thread
    is bound only by the filters its creator had when it was created). It then answers the notifications of
    the listener it is given (``attach``).
    """

    def __init__(self, which: _Arch) -> None:
        self.which = which
        self._fd = -1
        self._attached = _thread.allocate_lock()
        self._attached.acquire()
        self.idle = _thread.allocate_lock()  # held while answering one call (the init waits for it at the end)
        self._libc = linux.LIBC
        self.tid: int | None = None  # the thread's id, once it runs

    def start(self) -> None:
        _thread.start_new_thread(self._run, ())  # the lean way: threading's Thread costs ~4x as much here

    def attach(self, listener: int) -> None:
        self._fd = listener
        self._attached.release()

    def _run(self) -> None:
        self.tid = _thread.get_native_id()
        with self._attached:
            pass
        libc = self._libc
        assert libc is not None
        notif = _Notif()
        waiting = select.poll()
        waiting.register(self._fd, select.POLLIN)
        while True:
            # Once no process or thread is left under the filter (the call is over), the listener reports a hang-up:
            # the thread ends (an init that serves several calls in turn starts one per call).
            if not dict(waiting.poll()).get(self._fd, 0) & select.POLLIN:
                os.close(self._fd)
                return
            ctypes.memset(ctypes.byref(notif), 0, ctypes.sizeof(notif))
            if libc.ioctl(self._fd, _NOTIF_RECV, ctypes.byref(notif)) < 0:
                err = ctypes.get_errno()
                if err in (errno.EINTR, errno.ENOENT):
                    continue  # interrupted, or the caller died before we took it
                os.close(self._fd)
                return
            with self.idle:
                try:
                    result: int | None = self._answer(notif)
                except _Skip:
                    result = None
                except Exception:  # noqa: BLE001 - never leave a caller blocked: the kernel decides instead
                    result = None
            response = _Resp(notif.id, 0, 0, _FLAG_CONTINUE) if result is None else _Resp(notif.id, 0, result, 0)
            libc.ioctl(self._fd, _NOTIF_SEND, ctypes.byref(response))

    # -- one call ------------------------------------------------------------------------------------

    def _answer(self, notif: _Notif) -> int:
        """0 or a negative errno for the caller; raises _Skip to let the kernel do it."""
        name = self.which.calls.get(notif.data.nr)
        args = notif.data.args
        if name == "rename":
            old_dir, old_ptr, new_dir, new_ptr, flags = _AT_FDCWD, args[0], _AT_FDCWD, args[1], 0
        elif name == "renameat":
            old_dir, old_ptr, new_dir, new_ptr, flags = _int32(args[0]), args[1], _int32(args[2]), args[3], 0
        elif name == "renameat2":
            old_dir, old_ptr, new_dir, new_ptr = _int32(args[0]), args[1], _int32(args[2]), args[3]
            flags = args[4] & 0xFFFFFFFF
        elif name == "link":
            return self._linking(notif, (_AT_FDCWD, args[0]), (_AT_FDCWD, args[1]), 0)
        elif name == "linkat":
            flags = args[4] & 0xFFFFFFFF
            return self._linking(notif, (_int32(args[0]), args[1]), (_int32(args[2]), args[3]), flags)
        else:
            raise _Skip
        if not flags & _RENAME_EXCHANGE:
            return self._renaming(notif, (old_dir, old_ptr), (new_dir, new_ptr), flags)
        try:
            return self._renaming(notif, (old_dir, old_ptr), (new_dir, new_ptr), flags)
        except _Skip as skip:
            # A swap is never the kernel's: it says one as two renames, which the call's init would read as two
            # (red team 54 F1: a swap through another process's /proc/<pid>/cwd, or a path flipped in the caller's
            # memory after the look, was followed as a file moved away and back).
            return -(skip.args[0] if skip.args else errno.EPERM)

    def _renaming(self, notif: _Notif, old_at: tuple[int, int], new_at: tuple[int, int], flags: int) -> int:
        """A rename (see the module docstring): 0 or a negative errno; raises _Skip (with an errno where it has one)
        to let the kernel do it."""
        (old_dir, old_ptr), (new_dir, new_ptr) = old_at, new_at
        pid = notif.pid
        try:
            mem = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            raise _Skip(errno.ESRCH) from None
        try:
            old, new = _string(mem, old_ptr), _string(mem, new_ptr)
        finally:
            os.close(mem)
        if old is None or new is None or not self._valid(notif.id):
            raise _Skip(errno.EFAULT)  # unreadable, or the caller is gone (its pid may be someone else's by now)
        old, new = _callers(old, pid), _callers(new, pid)
        fds: list[int] = []
        try:
            old_fd, old = self._dir_fd(pid, old_dir, old, fds)
            new_fd, new = self._dir_fd(pid, new_dir, new, fds)
            try:  # (each path resolved once, never through /proc's magic links: ``_parent``)
                a_dir, a = _parent(old_fd, old)
                fds.append(a_dir)
                b_dir, b = _parent(new_fd, new)
                fds.append(b_dir)
                st = os.stat(a, dir_fd=a_dir, follow_symlinks=False)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    # Through another process's /proc/<pid>/cwd (a magic link, never followed here) or a loop: not
                    # left to the kernel, which would move one overlay inode of a file with several names over
                    # another (red team 55 F3: ``rename(h2, h1)`` of two names of one file took a name away).
                    return -errno.ELOOP
                raise _Skip(exc.errno) from None
            if not stat.S_ISDIR(st.st_mode) and (old.endswith(b"/") or new.endswith(b"/")):
                raise _Skip(errno.ENOTDIR)  # a file's name with a slash after it: the kernel fails it as it should
            if not stat.S_ISDIR(st.st_mode):
                # Two names of one file: natively rename() does nothing and succeeds; on the overlay the two names
                # of a project file are two inodes to the kernel (it moved one over the other: a name of the
                # project deleted, red team 40q B), and two the command linked are ESTALE. Same as shown: nothing —
                # with RENAME_EXCHANGE too (red team 7 F5); RENAME_NOREPLACE fails natively (EEXIST), as it will.
                with contextlib.suppress(OSError):
                    other = os.stat(b, dir_fd=b_dir, follow_symlinks=False)
                    if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino) and flags in (0, _RENAME_EXCHANGE):
                        return 0
                if flags & _RENAME_EXCHANGE:
                    return -_exchange(self.which, (a_dir, a), (b_dir, b), flags, st)
                if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                    return -_rename_linked(self.which, (a_dir, a), (b_dir, b), flags, st)
                if stat.S_ISREG(st.st_mode):
                    _note_renamed(b_dir, b, st.st_ino)
                raise _Skip  # files move on the overlay as they are
            error = _renameat2(self.which, a_dir, a, b_dir, b, flags)
            if error != errno.EXDEV or flags & _RENAME_EXCHANGE:
                return -error
            return -move_tree(a_dir, a, b_dir, b, noreplace=bool(flags & _RENAME_NOREPLACE))
        finally:
            for fd in fds:
                os.close(fd)

    def _linking(self, notif: _Notif, old: tuple[int, int], new: tuple[int, int], flags: int) -> int:
        """A link of a regular file: made here as the kernel would (the caller's paths, from its directories) where
        the source has several names (then noted: ``_linked``) or either end is in a directory the call's init
        watches (``unlinks.linking`` follows what the new name holds); else left to the kernel (raises _Skip), and
        so is one from a descriptor (``AT_EMPTY_PATH``: an ``O_TMPFILE`` made a file; into a watched directory,
        what the name holds is then not said). Returns 0 or the errno."""
        pid = notif.pid
        try:
            mem = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            raise _Skip from None
        try:
            source, target = _string(mem, old[1]), _string(mem, new[1])
        finally:
            os.close(mem)
        if source is None or not target or not self._valid(notif.id):
            raise _Skip  # unreadable, or the caller is gone (its pid may be someone else's by now)
        if source.endswith(b"/") or target.endswith(b"/"):
            raise _Skip  # a file's name with a slash after it: the kernel fails it as it should (ENOTDIR, ENOENT)
        source, target = _callers(source, pid), _callers(target, pid)
        fds: list[int] = []
        try:
            old_fd, source = self._dir_fd(pid, old[0], source, fds)
            new_fd, target = self._dir_fd(pid, new[0], target, fds)
            # Each path resolved once, its directory held: what is followed, noted and linked is one name, whatever
            # another process does to the paths meanwhile (red team 52 F2: a symlink flipped between two lookups).
            try:
                to_dir, to_name = _parent(new_fd, target)
            except OSError:
                raise _Skip from None
            fds.append(to_dir)
            watching = unlinks.watching()
            to = _at(to_dir, to_name) if watching else None
            if not source or flags & ~_AT_SYMLINK_FOLLOW:
                unlinks.unsaid(to)  # from a descriptor (``AT_EMPTY_PATH``): the kernel makes it, a file of its own
                raise _Skip
            try:
                from_dir, from_name = _parent(old_fd, source)
                fds.append(from_dir)
                st = os.stat(from_name, dir_fd=from_dir, follow_symlinks=False)
                through = bool(flags) and stat.S_ISLNK(st.st_mode)
                if through:
                    # ``ln -L s h1``: the file the symlink names, opened once and linked from that descriptor; its
                    # name is followed only where it still holds that very file.
                    opened = linux.openat2(
                        OPENAT2, from_dir, os.fsdecode(from_name), os.O_PATH | os.O_CLOEXEC, RESOLVE_NO_MAGICLINKS
                    )  # (not through /proc/1's: red team 54 F3)
                    fds.append(opened)
                    st = os.fstat(opened)
                    from_dir, from_name = _parent(_AT_FDCWD, os.readlink(f"/proc/self/fd/{opened}").encode())
                    fds.append(from_dir)
            except OSError as exc:
                if exc.errno == errno.ELOOP:  # through /proc's magic links (or a loop): the kernel's to answer
                    unlinks.unsaid(to)
                    raise _Skip from None
                return -(exc.errno or errno.ENOENT)  # (never resolved again by the kernel: red team 52 F2)
            if not stat.S_ISREG(st.st_mode):
                raise _Skip
            several = st.st_nlink > 1
            came, where = (_where(from_dir, from_name), _where(to_dir, to_name)) if several else (None, None)
            noted = several and came is not None and where is not None and len(_linked) < _LINKED_MAX
            libc = linux.LIBC
            assert libc is not None

            def make() -> int:
                if through:
                    done = libc.linkat(_AT_FDCWD, f"/proc/self/fd/{opened}".encode(), to_dir, to_name, flags)
                else:
                    done = libc.linkat(from_dir, from_name, to_dir, to_name, 0)
                return 0 if done == 0 else ctypes.get_errno()

            came_at = _at(from_dir, from_name) if watching else None
            if through and not _holds(from_dir, from_name, st):
                came_at, noted = None, False  # (its name holds another file by now: taken for a file of its own)
            error = unlinks.linking(to, came_at, make, known=not through or came_at is not None) if watching else None
            if error is None:
                if not noted:
                    raise _Skip
                error = make()
            if error:
                return -error
            if noted:
                assert came is not None and where is not None
                with contextlib.suppress(OSError):
                    held = os.open(to_name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=to_dir)
                    kept = _linked.pop(where, None)
                    if kept is not None:
                        os.close(kept[1])
                    _linked[where] = (came, held, st.st_ino)
            return 0
        finally:
            for fd in fds:
                os.close(fd)

    def _valid(self, notif_id: int) -> bool:
        assert self._libc is not None
        value = ctypes.c_uint64(notif_id)
        return int(self._libc.ioctl(self._fd, _NOTIF_ID_VALID, ctypes.byref(value))) == 0

    @staticmethod
    def _dir_fd(pid: int, dirfd: int, path: bytes, fds: list[int]) -> tuple[int, bytes]:
        """Where the caller's ``path`` starts from (its working directory, a descriptor of its, the root) and the
        path from there. A path through the caller's own ``/proc/<pid>/cwd``, ``root`` or ``fd/N`` (``_callers``)
        starts from that, opened here (``_parent`` never goes through a magic link itself)."""
        if path.startswith(b"/"):
            own = _OWN_PROC.match(path)
            if own is None or int(own.group(1)) != pid:
                return _AT_FDCWD, path  # resolved from the root, which the caller shares with us
            where, path = own.group(0).rstrip(b"/").decode(), path[own.end() :] or b"."
        else:
            where = f"/proc/{pid}/cwd" if dirfd == _AT_FDCWD else f"/proc/{pid}/fd/{dirfd}"
        try:
            fd = os.open(where, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            raise _Skip from None
        fds.append(fd)
        return fd, path


def _callers(path: bytes, pid: int) -> bytes:
    """A path the caller wrote relative to itself (``/proc/self``, ``/proc/thread-self``, ``/dev/fd``), made the
    caller's: resolved here, it would name this thread's own (a rename of ``/proc/self/cwd/d`` failed EXDEV)."""
    for mine, theirs in ((b"/proc/self/", f"/proc/{pid}/"), (b"/proc/thread-self/", f"/proc/{pid}/"),
                         (b"/dev/fd/", f"/proc/{pid}/fd/")):  # fmt: skip
        if path.startswith(mine):
            return theirs.encode() + path[len(mine) :]
    return path


def warm_up() -> None:
    """A forked process's first thread costs ~4x a later one (its stack, the interpreter's thread state): pay that
    while an init waits for its call."""
    done = _thread.allocate_lock()
    done.acquire()
    _thread.start_new_thread(done.release, ())
    with done:
        pass


def _string(mem: int, address: int) -> bytes | None:
    """A NUL-terminated path from the caller's memory (None when unreadable or longer than PATH_MAX)."""
    out = b""
    while len(out) < _PATH_MAX:
        size = _PAGE - (address + len(out)) % _PAGE
        try:
            chunk = os.pread(mem, size, address + len(out))
        except OSError:
            return None
        if not chunk:
            return None
        end = chunk.find(b"\x00")
        if end >= 0:
            return out + chunk[:end]
        out += chunk
    return None


def _renameat2(which: _Arch, old_fd: int, old: bytes, new_fd: int, new: bytes, flags: int) -> int:
    """renameat2 as asked; 0 or the errno."""
    libc = linux.LIBC
    assert libc is not None
    result = libc.syscall(which.renameat2, old_fd, old, new_fd, new, ctypes.c_uint(flags))
    return ctypes.get_errno() if result < 0 else 0


def _note_renamed(dirfd: int, path: bytes, ino: int) -> None:
    """Note where a file with inode number ``ino`` is being renamed to (``_renamed``): the path of the directory as
    this thread sees it (the caller's view: the same mounts and root), and the name."""
    where = _where(dirfd, path)
    if where is None or (where, ino) in _renamed:
        return
    if len(_renamed) >= _MOVED_MAX:
        _unnoted[0] = True  # (red team 56 F6: then names of files with several names are said unfollowed)
        return
    _renamed[(where, ino)] = None


def _rename_linked(which: _Arch, old: tuple[int, bytes], new: tuple[int, bytes], flags: int,
                   st: os.stat_result) -> int:  # fmt: skip
    """Rename a file with several names (``st``, as the source looked) the way the kernel would, and note where it
    went and what it was (``_origins``). On the overlay the rename copies it up as a file of its own (overlayfs
    breaks the names of a file it copies up, and marks no origin then), so that a later write through the new name
    (``mv h1 n && echo z >> n``) would look like a new file: the server is told it is the project's file, whose
    other names natively get the write too (red team 11 F6). Returns 0 or the errno."""
    return _moved(which, old, new, flags, [st])


def _exchange(which: _Arch, old: tuple[int, bytes], new: tuple[int, bytes], flags: int, st: os.stat_result) -> int:
    """``RENAME_EXCHANGE`` of a file (``st``, as the source looked) with whatever is at ``new``: made here, and each
    regular file noted where it went (``_renamed``), with where it came from where it had several names
    (``_origins``), as ``_rename_linked`` notes one renamed (red team 18 F4: ``mv --exchange`` of a name of a
    shared file went by unseen). Returns 0 or the errno."""
    return _moved(which, old, new, flags, [st, None])


def _moved(which: _Arch, old: tuple[int, bytes], new: tuple[int, bytes], flags: int,
           looked: list[os.stat_result | None]) -> int:  # fmt: skip
    """``_rename_linked`` and ``_exchange`` (each end a directory ``_parent`` opened once, and a name in it): what
    each end is looked at again once the call's init follows the two names (``unlinks.moving``), and the origin
    noted only where nothing else touched them meanwhile — another process that replaced a name between the look
    and the rename would otherwise have its file taken for the project's (red team 52 F1, F2). Returns 0 or the
    errno."""
    (a_dir, a), (b_dir, b) = old, new
    sources = (_where(a_dir, a), _where(b_dir, b))
    keys = (_at(a_dir, a), _at(b_dir, b)) if unlinks.watching() else (None, None)

    def make() -> int:
        for i, (dirfd, name) in enumerate(((a_dir, a), (b_dir, b))[: len(looked)]):
            try:
                looked[i] = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
            except OSError:
                looked[i] = None
        return _renameat2(which, a_dir, a, b_dir, b, flags)

    error, clean = unlinks.moving(keys, make, swap=len(looked) == 2)
    if error == 0:
        for (dirfd, path), source, before in zip(((b_dir, b), (a_dir, a)), sources, looked, strict=False):
            if before is not None and stat.S_ISREG(before.st_mode):
                _noted(dirfd, path, source if clean else None, before)
    return error


def _linked_from(source: bytes, before: os.stat_result) -> int:
    """The inode number a file renamed from ``source`` (``before``: as it was there) came from: the file its link was
    made of where ``source`` is a name the call linked and still holds that very file, else its own. (A name linked,
    removed and made again holds another file: red team 55 saw the old note taken for it.)"""
    kept = _linked.get(source)
    with contextlib.suppress(OSError):
        held = os.fstat(kept[1]) if kept is not None else None
        if kept is not None and held is not None and (held.st_dev, held.st_ino) == (before.st_dev, before.st_ino):
            return kept[2]
    return before.st_ino


def _noted(dirfd: int, path: bytes, source: bytes | None, before: os.stat_result) -> None:
    """The regular file now at ``path`` noted as renamed there (``_renamed``); where it had several names
    (``before``: what it was), also where it came from (``source``) and a descriptor that holds it (``_origins``) —
    and not at all where that cannot be said (no source, or past ``_HELD_MAX``: the server then judges the name by
    its bytes). The first of a chain says where the file came from; a later rename of it is noted all the same."""
    linked = before.st_nlink > 1
    if linked and (source is None or len(_origins) >= _HELD_MAX):
        return
    with contextlib.suppress(OSError):
        held = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
        now = os.fstat(held)
        if linked and source is not None and stat.S_ISREG(now.st_mode) and now.st_ino not in _origins:
            # A name the call linked (``ln d/h3 t && mv t h1``: red team 51 F6) is the file it was linked to: its
            # inode number then (the project's, where that was not copied up yet).
            _origins[now.st_ino] = (source, _linked_from(source, before), held)
        else:
            os.close(held)
        if stat.S_ISREG(now.st_mode):
            _note_renamed(dirfd, path, now.st_ino)


def _where(dirfd: int, name: bytes) -> bytes | None:
    """A name in a directory this thread holds open (``_parent``) as it sees it (the caller's view: the same mounts
    and root): the directory's absolute path and the name; None when that cannot be said."""
    with contextlib.suppress(OSError):
        where = os.readlink(f"/proc/self/fd/{dirfd}".encode())
        if where.startswith(b"/"):
            return where.rstrip(b"/") + b"/" + name
    return None


def renamed(view: int) -> tuple[list[str], list[tuple[str, str, int]], bool]:
    """Where the regular files this call renamed are at its end: each noted path that holds the inode renamed there
    (``_renamed``); and of those that were files with several names when first renamed (``_origins``), where each
    is, where it came from and its inode number there. ``view``: the root of the call's mount namespace (its copy is
    mounted there), walked without following a link; and whether there was more to say than ``_RENAMED_SAID`` (the
    status line stays small) or to note than ``_MOVED_MAX`` — then the names of files with several names are not
    followed (red team 55 F1, 56 F6).
    Forgotten once said."""
    said: list[str] = []
    origins: list[tuple[str, str, int]] = []
    cut, _unnoted[0] = _unnoted[0], False
    for path, ino in _renamed:
        if len(said) >= _RENAMED_SAID:
            cut = True
            break
        with contextlib.suppress(OSError):
            st = lstat_from(view, path)
            if stat.S_ISREG(st.st_mode) and st.st_ino == ino:
                said.append(os.fsdecode(path))
                if ino in _origins:
                    source, first, held = _origins[ino]
                    if (os.fstat(held).st_dev, ino) == (st.st_dev, st.st_ino):  # the very file renamed there
                        origins.append((os.fsdecode(path), os.fsdecode(source), first))
    _renamed.clear()
    for _source, _first, held in _origins.values():
        os.close(held)
    _origins.clear()
    return said, origins, cut


def forget_links() -> None:
    """The call is over: the names it linked (``_linked``) are forgotten, the files they held let go."""
    for _came, held, _ino in _linked.values():
        os.close(held)
    _linked.clear()
