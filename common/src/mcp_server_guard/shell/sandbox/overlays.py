"""The copy a command works on: an overlay over each writable root, mounted by the call's init.

The command's writes land in a fresh upper directory in the root's area (``changes.area``: on the root's own
file system, so that applying a change is a rename); the server reads that upper layer once the call is over
(``changes.upper``) and judges it. Every area is masked in the call's view, so the command sees neither its own
upper layer nor another call's. ``probe_copy`` checks at the box's start that the kernel lets the box mount one.
When the copy is mounted (ahead of the call, by a ready init, or with it) is decided in ``call_init``;
directory renames on the copy are answered by ``renames``.

Standard library only: the supervisor imports this with no site-packages.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import sys
from dataclasses import dataclass

from mcp_server_guard import linux
from mcp_server_guard.shell.sandbox.wire import CallOptions, Overlay

# An upper directory's own state (see ``directory_state``): ctime, uid, gid, extended attributes, inode flags.
UpperState = tuple[int, int, int, tuple[tuple[str, bytes], ...], int]


@dataclass(frozen=True)
class MountedCopy:
    """One call's overlays: below ``<area>/<name>/`` for each writable root, ``u<i>`` takes its writes (the upper
    layer the server reads afterwards), ``w<i>`` is overlayfs's own work directory and ``m<i>`` says the mode and
    modification time the upper directory was given (the root's, when mounted). Where the server keeps an escape
    layer for the root (``<area>/escape-<i>``, see ``changes.escapes``), it lies above the root."""

    name: str
    overlays: tuple[tuple[str, str], ...]  # (root, area)
    setup: tuple[UpperState, ...] = ()  # each upper directory's own state once mounted (see ``untouched``)


def _escape(path: str) -> str:
    """A path as overlayfs reads it in its options (a comma ends an option, a colon separates lower layers)."""
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


def untouched(copy: MountedCopy) -> bool:
    """Whether a copy whose call is over (every process gone, every rename settled) holds nothing the command did:
    each upper directory empty, and its own state as the mount left it (``directory_state``) — a change to a root's
    owner, extended attributes or flags lands on its upper directory itself, and so does a file made and removed
    again."""
    if len(copy.setup) != len(copy.overlays):
        return False
    try:
        for index, (_root, area) in enumerate(copy.overlays):
            fd = os.open(os.path.join(area, copy.name, f"u{index}"), _UPPER)
            try:
                with os.scandir(fd) as entries:
                    if next(entries, None) is not None:
                        return False
                if directory_state(fd) != copy.setup[index]:
                    return False
            finally:
                os.close(fd)
    except OSError:
        return False
    return True


_UPPER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOTE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
_FS_IOC_GETFLAGS = 0x80086601  # _IOR('f', 1, long) on x86_64 and aarch64; the kernel writes an int


def directory_state(fd: int) -> UpperState:
    """An upper directory's own state: ctime, owner, every extended attribute (name and value) and the inode flags.
    Threat: a call leaving a message on its root for the next call served from the same directories. Each part is
    compared in full, not the ctime alone (a file system or kernel with coarse timestamps gives a change made in
    the same tick as the mount the same ctime), and the attributes by value, with no name let through (a command's
    ``user.overlay.*`` is stored escaped as ``user.overlay.overlay.*``, beside overlayfs's own)."""
    st = os.fstat(fd)
    attributes = tuple(sorted((name, os.getxattr(fd, name)) for name in os.listxattr(fd)))
    try:
        flags = int.from_bytes(fcntl.ioctl(fd, _FS_IOC_GETFLAGS, bytes(8))[:4], sys.byteorder)
    except OSError:
        flags = -1  # no inode flags on this file system
    return st.st_ctime_ns, st.st_uid, st.st_gid, attributes, flags


# What a volatile overlay mount leaves in its work directory, innermost first: a new mount refuses to start while
# ``incompat/volatile`` is there (and makes all of it again).
_VOLATILE_LEFTOVERS = ("incompat/volatile/dirty", "incompat/volatile", "incompat", "")


def _take_back(spare: MountedCopy, name: str, pairs: tuple[tuple[str, str], ...]) -> bool:
    """Make an untouched copy of an earlier call (``untouched``) this call's, under ``name``: nothing made or
    removed but what overlayfs itself remakes in its work directory (``_VOLATILE_LEFTOVERS``). False if it cannot
    be (then it is removed, and a fresh copy made)."""
    if spare.overlays != pairs:
        remove_copy(spare)
        return False
    try:
        for area in dict.fromkeys(area for _, area in pairs):
            os.rename(os.path.join(area, spare.name), os.path.join(area, name))
        for index, (_root, area) in enumerate(pairs):
            work = os.path.join(area, name, f"w{index}", "work")
            for leftover in _VOLATILE_LEFTOVERS:
                # Anything else in the work directory (a copy-up cut short) makes rmdir fail: a fresh copy then.
                with contextlib.suppress(FileNotFoundError):
                    if leftover.endswith("/dirty"):
                        os.unlink(os.path.join(work, leftover))
                    else:
                        os.rmdir(os.path.join(work, leftover) if leftover else work)
    except OSError:
        remove_copy(spare)  # whichever of the two names it has now
        remove_copy(MountedCopy(name, pairs))
        return False
    return True


def mount_copy(overlays: list[Overlay], spare: MountedCopy | None = None) -> MountedCopy:
    """Mount an overlay over each writable root (its writes go to an empty upper directory in the root's area, on
    the same file system: a fresh one, or ``spare``'s, an earlier call's untouched copy), then hide every area: the
    command sees neither its own upper layer nor another's."""
    name = os.urandom(8).hex()  # (secrets.token_hex's own source; its import is the box's start: issue 44)
    pairs = tuple((o["root"], o["area"]) for o in overlays)
    taken = spare is not None and _take_back(spare, name, pairs)
    setup: list[UpperState] = []
    for index, (root, area) in enumerate(pairs):
        base = os.path.join(area, name)
        upper, work = os.path.join(base, f"u{index}"), os.path.join(base, f"w{index}")
        if not taken:
            os.makedirs(base, mode=0o700, exist_ok=True)
            os.mkdir(upper, 0o700)
            os.mkdir(work, 0o700)
        # The merged root shows the upper directory's own mode and times: those of the root itself. What they were
        # is noted beside it (``m<i>``: the root may change before the call starts, and the server tells the
        # command's own change of them from that).
        real = os.stat(root)
        os.chmod(upper, stat.S_IMODE(real.st_mode))
        shown = _attributes_of(root, upper)
        os.utime(upper, ns=(real.st_atime_ns, real.st_mtime_ns))
        note = os.open(os.path.join(base, f"m{index}"), _NOTE, 0o600)
        try:
            data = memoryview(mounted_note(stat.S_IMODE(real.st_mode), real.st_mtime_ns, shown))
            while data:
                data = data[os.write(note, data) :]
        finally:
            os.close(note)
        lower = _escape(root)
        # The project's own overlay attributes, escaped: always a lower layer (empty until the server's walk finds
        # such entries), so that what the server puts there before the call shows in a copy mounted ahead of it.
        # Not where the area lies in the root: overlayfs refuses a lower layer inside another (ELOOP).
        escape = os.path.join(area, f"escape-{index}")
        if not escape.startswith(root.rstrip("/") + "/"):
            with contextlib.suppress(OSError):
                os.makedirs(escape, mode=0o700, exist_ok=True)
            if os.path.isdir(escape) and not os.path.islink(escape):
                lower = f"{_escape(escape)}:{lower}"
        options = f"lowerdir={lower},upperdir={_escape(upper)},workdir={_escape(work)},userxattr,volatile"
        # Its path may lead through the overlay once mounted (an area inside its root): held open before.
        held = os.open(upper, _UPPER)
        try:
            linux.mount("overlay", root, "overlay", linux.MS_NOSUID | linux.MS_NODEV, options)
            setup.append(directory_state(held))  # after the mount, which notes its uuid on the upper directory
        finally:
            os.close(held)
    for area in dict.fromkeys(area for _, area in pairs):
        linux.mask(area)
    return MountedCopy(name, pairs, tuple(setup))


_ACLS = ("system.posix_acl_access", "system.posix_acl_default")
_OVERLAY = "user.overlay."  # overlayfs's own names (with ``userxattr``): never set on an upper directory by us


def _attributes_of(root: str, upper: str) -> list[tuple[str, bytes]]:
    """The root's ACLs and ``user.*`` attributes on the upper directory that stands for it in the command's view
    (red team 68 F2, F3): what the command makes in the root inherits its default ACL as natively, and it sees (and
    may change) the root's own attributes; an earlier call's spare copy gets exactly these too. Returns the
    ``user.*`` attributes set (the ``m<i>`` note keeps them: the server reads the command's change of them). The
    root's own ``user.overlay.*`` ones are not shown: on an upper directory overlayfs would take them for its own."""
    for name in _ACLS:
        try:
            value = os.getxattr(root, name, follow_symlinks=False)
        except OSError:  # none (ENODATA), or a file system without ACLs: none on an earlier call's copy either
            with contextlib.suppress(OSError):
                os.removexattr(upper, name, follow_symlinks=False)
            continue
        with contextlib.suppress(OSError):
            os.setxattr(upper, name, value, follow_symlinks=False)
    shown: list[tuple[str, bytes]] = []
    for name in _user_names(root):
        with contextlib.suppress(OSError):
            shown.append((name, os.getxattr(root, name, follow_symlinks=False)))
    for name in set(_user_names(upper)) - {name for name, _value in shown}:
        with contextlib.suppress(OSError):
            os.removexattr(upper, name, follow_symlinks=False)
    for name, value in shown:
        with contextlib.suppress(OSError):
            os.setxattr(upper, name, value, follow_symlinks=False)
    return sorted(shown)


def _user_names(path: str) -> list[str]:
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return []
    return [name for name in names if name.startswith("user.") and not name.startswith(_OVERLAY)]


def mounted_note(mode: int, mtime_ns: int, shown: list[tuple[str, bytes]]) -> bytes:
    """What a copy's upper root was given when mounted: its mode and time, then (a line) its ``user.*`` attributes,
    each ``<name in hex>=<value in hex>`` (see ``changes.transactions``, which reads it back)."""
    pairs = " ".join(f"{name.encode('utf-8', 'surrogateescape').hex()}={value.hex()}" for name, value in shown)
    return f"{mode} {mtime_ns}\n{pairs}\n".encode()


def probe_copy(usual: CallOptions) -> str:
    """Whether the copy can be made here: mount it once in a throwaway mount namespace and write through it.
    Returns "" when it works, else why not (what the kernel said)."""
    return start_probe(usual).result()


class Probe:
    """``probe_copy`` begun: its child mounts the copy and writes through it while the caller goes on (the box's
    supervisor makes its first inits meanwhile); ``result`` waits for it. The caller forks nothing that could keep
    ``fd`` before ``result`` (a child it forks meanwhile closes it: see ``Supervisor.prefork``'s ``inherited``)."""

    def __init__(self, usual: CallOptions, child: int, fd: int) -> None:
        self.usual, self.child, self.fd = usual, child, fd

    def result(self) -> str:
        with os.fdopen(self.fd, "rb") as pipe:
            said = dict(line.decode(errors="replace").partition("=")[::2] for line in pipe.read().splitlines())
        _pid, status = os.waitpid(self.child, 0)
        name = said.get("name", "")
        if name:
            for overlay in self.usual["overlays"]:
                remove_unused(os.path.join(overlay["area"], name))
        if os.waitstatus_to_exitcode(status) == 0:
            return ""
        return said.get("why") or f"the probe ended with status {status}"


def start_probe(usual: CallOptions) -> Probe:
    """Begin ``probe_copy``: its child is forked and its pipe's writing end closed here at once."""
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    child = os.fork()
    if child == 0:
        code = 1
        try:
            os.close(read_end)
            linux.unshare(linux.CLONE_NEWNS)
            linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
            copy = mount_copy(usual["overlays"])
            os.write(write_end, f"name={copy.name}\n".encode())
            for root, _area in copy.overlays:
                probe = os.path.join(root, f".mcp-guard-probe-{copy.name}")
                os.mkdir(probe)
                os.rmdir(probe)
            code = 0
        except OSError as exc:
            os.write(write_end, f"why={exc.strerror or exc}\n".encode(errors="replace"))
        finally:
            os._exit(code)
    os.close(write_end)
    return Probe(usual, child, read_end)


def remove_copy(copy: MountedCopy) -> None:
    """Remove a copy that holds no change, by its init (see ``remove_unused``)."""
    for area in dict.fromkeys(area for _, area in copy.overlays):
        remove_unused(os.path.join(area, copy.name))


def remove_unused(directory: str, depth: int = 6) -> None:
    """A copy that holds no change (the probe's, a retired init's, an untouched one not taken back): its upper
    directories, and overlayfs's work directory, which it leaves without permissions and with
    ``_VOLATILE_LEFTOVERS`` in it. Never through a link (a link is removed as itself), ``depth`` levels at most:
    anything deeper stays (the server's sweep removes it, the no-follow way)."""
    with contextlib.suppress(OSError):
        if depth > 0:
            with os.scandir(directory) as entries:
                found = [(entry.path, entry.is_dir(follow_symlinks=False)) for entry in entries]
            for path, is_dir in found:
                if not is_dir:
                    with contextlib.suppress(OSError):
                        os.unlink(path)
                    continue
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o700)  # a directory (scandir said): the areas are masked from every command
                remove_unused(path, depth - 1)
        os.rmdir(directory)
