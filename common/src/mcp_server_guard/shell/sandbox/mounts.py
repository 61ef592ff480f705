"""A call's own mount view, made by its init in the call's mount namespace: what the command can see and name.

A ready init builds the view every usual call shares ahead of its call (``base_mounts``: a fresh /proc, a
private /tmp with the jail roots under it bound back, a private /dev/shm); once its call comes it adds what only
that call needs (``call_mounts``): the roots under /tmp the client narrowed the call out of made read-only,
protected paths read-only, hidden paths and the UNIX sockets outside the call's reach masked, and the directories
above each hidden path pinned so that a rename cannot carry it out from under its mask. The copy-on-write overlay
a command works on is mounted by ``overlays``; which mounts come ahead of the call and which with it is decided
in ``call_init``.

Standard library only: the supervisor imports this with no site-packages.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from mcp_server_guard import linux
from mcp_server_guard.shell.sandbox.overlays import directory_state
from mcp_server_guard.shell.sandbox.wire import CallOptions, CallRequest

MQUEUE = "/dev/mqueue"  # where a view served again shows the POSIX message queues of its IPC namespace


def own_proc() -> None:
    """Once per PID namespace: nothing propagates out of this mount namespace, and a /proc of this namespace."""
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    linux.mount("proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)


_BYTES_PER_INODE = 8192  # a call's /tmp of 1 GiB holds 131,072 entries at most


def base_mounts(options: CallOptions, proc: bool = True) -> None:
    """The call's own view, built by a ready init before its call: fresh /proc (unless its PID namespace has one
    already), private /tmp (jail roots under it bound back) and /dev/shm."""
    if proc:
        own_proc()
    if options["private_tmp"]:
        keep = [(p, os.open(p, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)) for p in options["tmp_binds"]]
        # No access times: reading the directories would change them (see ``left_behind``).
        private = linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOATIME
        # Inodes too: empty files take kernel memory no size counts (red team 40s F7: 300,000 took 355 MiB).
        room = options["tmp_bytes"]
        size = f",size={room},nr_inodes={max(1024, room // _BYTES_PER_INODE)}" if room > 0 else ""
        linux.mount("tmpfs", "/tmp", "tmpfs", private, "mode=1777" + size)  # noqa: S108
        for path, fd in keep:
            os.makedirs(path, exist_ok=True)
            linux.mount(f"/proc/self/fd/{fd}", path, None, linux.MS_BIND | linux.MS_REC)
            os.close(fd)
        with contextlib.suppress(OSError):
            linux.mount("tmpfs", "/dev/shm", "tmpfs", private, "mode=1777" + size)  # noqa: S108


def own_mqueue() -> bool:
    """In a view that may serve several calls that only read: this IPC namespace's POSIX message queues, mounted
    where ``left_behind`` can list them (they outlive every process of a call). Whether they can be listed (a
    kernel without them has none to list)."""
    try:
        linux.mount("mqueue", MQUEUE, "mqueue", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
    except OSError as exc:
        return exc.errno == errno.ENODEV
    return True


def left_behind(options: CallOptions) -> tuple[object, ...] | None:
    """Everything a call could leave in its view for a later call served in the same view (see ``worker``), by
    value: each directory of the private /tmp (the root and those above the roots bound back in it) and /dev/shm —
    its entries, inode, mode, link count, times, owner, extended attributes and inode flags —, the System V objects
    and the POSIX message queues of the IPC namespace. Read by the call's own thread, confined as its command was
    (no link followed). None when any of it cannot be read."""
    directories = {"/tmp", "/dev/shm"}  # noqa: S108
    for path in options["tmp_binds"]:
        parent = os.path.dirname(path)
        while parent.startswith("/tmp/"):  # noqa: S108
            directories.add(parent)
            parent = os.path.dirname(parent)
    state: list[object] = []
    try:
        for directory in sorted(directories):
            try:
                fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except (FileNotFoundError, PermissionError) as exc:
                state.append((directory, exc.errno))  # below a mask (an area in the hidden state directory)
                continue
            try:
                st = os.fstat(fd)
                state.append((directory, sorted(os.listdir(fd)), st.st_ino, st.st_mode, st.st_nlink, st.st_atime_ns,
                              st.st_mtime_ns, directory_state(fd)))  # fmt: skip
            finally:
                os.close(fd)
        for table in ("shm", "msg", "sem"):
            with open(f"/proc/sysvipc/{table}", "rb") as listing:
                state.append(listing.read())
        state.append(sorted(os.listdir(MQUEUE)) if os.path.ismount(MQUEUE) else None)
    except OSError:
        return None
    return tuple(state)


def masks_in_place(spec: CallRequest) -> tuple[int | tuple[int, int, bool], ...]:
    """What each hidden path and outside socket of ``spec`` is in this view: the errno when it is absent, else its
    device, inode, and whether it shows as a mask (``linux.mask``: the null device, or an empty read-only tmpfs
    mounted there). A file replaced or moved since its mask was made shows as itself, not as the mask."""
    state: list[int | tuple[int, int, bool]] = []
    for path in (*spec["sockets"], *spec["masked"]):
        try:
            st = os.lstat(path)
            if stat.S_ISDIR(st.st_mode):
                masked = st.st_mode & 0o7777 == 0o500 and st.st_dev != os.lstat(os.path.dirname(path)).st_dev
            else:
                masked = stat.S_ISCHR(st.st_mode) and st.st_rdev == _NULL_DEVICE
        except OSError as exc:
            state.append(exc.errno or -1)
        else:
            state.append((st.st_dev, st.st_ino, masked))
    return tuple(state)


_NULL_DEVICE = os.makedev(1, 3)


def _narrow_tmp_binds(prepared: list[str], wanted: list[str]) -> None:
    """The client narrowed its roots: a prepared root under /tmp that the call may not write becomes read-only,
    with the narrowed roots inside it bound back writable. (Landlock lets the call write its whole /tmp, so the
    mounts are what keep it out of the narrowed-out part.)"""
    for root in prepared:
        if root in wanted:
            continue
        inside = [w for w in wanted if w.startswith(root.rstrip("/") + "/")]
        keep = [(w, os.open(w, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)) for w in inside]
        linux.bind_read_only(root)
        for path, fd in keep:
            linux.mount(f"/proc/self/fd/{fd}", path, None, linux.MS_BIND | linux.MS_REC)
            os.close(fd)


def _mask_sockets(paths: list[str]) -> None:
    """The UNIX sockets outside the call's reach (see ``sockets``): a read-only /dev/null over each, so that
    neither connect nor a datagram can name them."""
    for path in paths:
        with contextlib.suppress(OSError):  # gone since the server looked, or not visible in the box
            linux.mask(path)


def _pin_ancestors(masked: list[str], roots: list[str]) -> None:
    """Threat: ``mv ~/.config ~/c2`` takes a hidden ``~/.config/gh`` out from under its mask (a mount follows its
    directory), and ``~/c2/gh`` is readable. Each directory between a root and a hidden path is bound onto itself
    first: a mount point cannot be renamed or removed (EBUSY), so the hidden path stays where its mask is."""
    pinned: set[str] = set()
    for path in masked:
        root = next((r for r in roots if path.startswith(r.rstrip("/") + "/")), None)
        if root is None:
            continue
        ancestors: list[str] = []
        parent = os.path.dirname(path)
        while parent.startswith(root.rstrip("/") + "/"):
            ancestors.append(parent)
            parent = os.path.dirname(parent)
        for directory in reversed(ancestors):  # outermost first
            if directory in pinned or not os.path.isdir(directory) or os.path.islink(directory):
                continue
            with contextlib.suppress(OSError):
                linux.mount(directory, directory, None, linux.MS_BIND | linux.MS_REC)
                pinned.add(directory)


def call_mounts(spec: CallRequest, usual: CallOptions) -> None:
    """What only this call needs on top of the prepared view: narrowed roots, protected paths read-only, hidden
    paths and outside sockets masked. The sockets are masked now, every one: a mask made ahead of the call would
    be gone if its daemon had bound the socket anew since."""
    _mask_sockets(spec["sockets"])
    if spec["tmp_binds"] != usual["tmp_binds"]:
        _narrow_tmp_binds(usual["tmp_binds"], spec["tmp_binds"])
    _pin_ancestors(spec["masked"], spec["roots"])
    for path in spec["read_only"]:
        try:
            linux.bind_read_only(path)
        except FileNotFoundError:
            continue  # gone since the server looked: nothing left to protect there
    for path in spec["masked"]:
        try:
            linux.mask(path)
        except FileNotFoundError:
            continue
