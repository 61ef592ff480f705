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
import os

from mcp_server_guard import linux
from mcp_server_guard.shell.sandbox.wire import CallOptions, CallRequest


def own_proc() -> None:
    """Once per PID namespace: nothing propagates out of this mount namespace, and a /proc of this namespace."""
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    linux.mount("proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)


def base_mounts(options: CallOptions, proc: bool = True) -> None:
    """The call's own view, built by a ready init before its call: fresh /proc (unless its PID namespace has one
    already), private /tmp (jail roots under it bound back) and /dev/shm."""
    if proc:
        own_proc()
    if options["private_tmp"]:
        keep = [(p, os.open(p, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)) for p in options["tmp_binds"]]
        linux.mount("tmpfs", "/tmp", "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=1777")  # noqa: S108
        for path, fd in keep:
            os.makedirs(path, exist_ok=True)
            linux.mount(f"/proc/self/fd/{fd}", path, None, linux.MS_BIND | linux.MS_REC)
            os.close(fd)
        with contextlib.suppress(OSError):
            linux.mount("tmpfs", "/dev/shm", "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=1777")  # noqa: S108


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
