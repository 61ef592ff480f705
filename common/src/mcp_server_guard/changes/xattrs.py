"""Extended attributes across the copy: overlayfs's own bookkeeping, what a command sees, and what lands.

On the copy, overlayfs keeps its bookkeeping in ``user.overlay.*`` attributes of the upper layer (``origin`` on
what it copied up, ``opaque`` on a replaced directory, ``impure``, ``uuid``, ...), and stores an attribute a
command sets under that name escaped, as ``user.overlay.overlay.*`` (the way nested overlays are escaped). A real
file's own ``user.overlay.overlay.*`` is shown to the command unescaped, and its plain ``user.overlay.*`` is not
shown at all (overlayfs reads it as its own).

So an attribute is compared by the name the command saw (:func:`seen`), lands under that name (:func:`land`:
bookkeeping removed, escaped names unescaped), and a real file's attributes the command could not see are kept
where its file is replaced (:func:`invisible`). Only ``user.*`` attributes are the command's to change here:
``security.capability`` (file capabilities: privileges) never lands, the rest stay as the kernel made them.

Every function takes a path that is never followed at its last component; callers pass ``at(dirfd, name)``.
"""

from __future__ import annotations

import contextlib
import errno
import os

__all__ = ["Xattrs", "at", "invisible", "land", "seen", "set_seen"]

Xattrs = tuple[tuple[str, bytes], ...]  # (name, value), sorted by name

_OVERLAY = "user.overlay."
_ESCAPED = "user.overlay.overlay."
_NEVER = ("security.capability", "trusted.overlay.")  # privileges, and overlayfs's bookkeeping as root


def at(dirfd: int, name: str) -> str:
    """``name`` in the directory ``dirfd``, as a path the xattr calls take (the directory through its fd; the name
    itself never followed: pass ``follow_symlinks=False``)."""
    return f"/proc/self/fd/{dirfd}/{name}"


def _names(path: str) -> list[str]:
    try:
        return os.listxattr(path, follow_symlinks=False)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.ENOENT, errno.EPERM):
            return []
        raise


def _get(path: str, name: str) -> bytes | None:
    try:
        return os.getxattr(path, name, follow_symlinks=False)
    except OSError as exc:
        if exc.errno in (errno.ENODATA, errno.ENOTSUP, errno.ENOENT):
            return None
        raise


def _seen_name(name: str) -> str | None:
    """The name a command sees an attribute by (None: it does not see it, or it is not ``user.*``)."""
    if name.startswith(_ESCAPED):
        return _OVERLAY + name[len(_ESCAPED) :]
    if name.startswith(_OVERLAY) or not name.startswith("user."):
        return None
    return name


def seen(path: str, *, escaped: bool = False) -> Xattrs:
    """The ``user.*`` attributes of ``path`` as a command on the copy sees them (upper layer and real tree alike);
    ``escaped``: a real entry the copy shows through the escape layer (``changes.escapes``), exactly as it is."""
    found: dict[str, bytes] = {}
    for name in _names(path):
        shown = name if escaped and name.startswith("user.") else _seen_name(name)
        if shown is None:
            continue
        value = _get(path, name)
        if value is not None:
            found[shown] = value
    return tuple(sorted(found.items()))


def invisible(path: str, *, escaped: bool = False) -> Xattrs:
    """A real file's attributes a command on the copy cannot see (its plain ``user.overlay.*``, unless the escape
    layer shows them): kept when the command's version replaces it."""
    found: list[tuple[str, bytes]] = []
    if escaped:
        return ()
    for name in _names(path):
        if name.startswith(_OVERLAY) and not name.startswith(_ESCAPED):
            value = _get(path, name)
            if value is not None:
                found.append((name, value))
    return tuple(sorted(found))


def land(path: str, keep: Xattrs = ()) -> bool:
    """Make an inode of the upper layer ready for the real tree: overlayfs's bookkeeping and file capabilities
    removed, escaped names unescaped, and ``keep`` (the attributes the command could not see on what it replaces)
    set. Threat: ``user.overlay.opaque``/``whiteout``/``redirect`` landing in the project would make the next copy
    hide or redirect a path; ``security.capability`` would grant privileges to whoever runs the file. Returns
    whether it keeps an attribute under a ``user.overlay.`` name (then the escape layer must show it)."""
    for name in _names(path):
        if name.startswith(_ESCAPED):
            value = _get(path, name)
            with contextlib.suppress(OSError):
                os.removexattr(path, name, follow_symlinks=False)
            if value is not None:
                _set(path, _OVERLAY + name[len(_ESCAPED) :], value)
        elif name.startswith((_OVERLAY, *_NEVER)):
            with contextlib.suppress(OSError):
                os.removexattr(path, name, follow_symlinks=False)
    for name, value in keep:
        _set(path, name, value)
    return any(name.startswith(_OVERLAY) for name in _names(path))


def _set(path: str, name: str, value: bytes) -> None:
    try:
        os.setxattr(path, name, value, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.ENOTSUP, errno.EPERM):  # a symlink takes no user.* attribute
            raise


def set_seen(path: str, want: Xattrs, have: Xattrs) -> None:
    """Change ``path``'s attributes (real tree) from ``have`` to ``want``, both by the names a command sees: only
    the names whose values differ are set or removed."""
    wanted, had = dict(want), dict(have)
    for name, value in wanted.items():
        if had.get(name) != value:
            _set(path, name, value)
    for name in had.keys() - wanted.keys():
        with contextlib.suppress(OSError):
            os.removexattr(path, name, follow_symlinks=False)
