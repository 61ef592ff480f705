"""Extended attributes across the copy: overlayfs's own bookkeeping, what a command may change, and what lands.

On the copy, overlayfs keeps its bookkeeping in ``user.overlay.*`` attributes of the upper layer (``origin`` on
what it copied up, ``opaque`` on a replaced directory, ``impure``, ``uuid``, ...), and stores an attribute a
command sets under that name escaped, as ``user.overlay.overlay.*`` (the way nested overlays are escaped).

A command changes ``user.*`` attributes (:func:`seen` reads them the same way on both sides), except the
``user.overlay.*`` names: overlayfs reads those in the real tree as its own (a directory marked ``opaque=x`` hides
what is marked ``whiteout`` in it, a file marked ``metacopy`` or ``redirect`` cannot be read), so they would turn
every later copy against the project — and other overlays the user mounts. A project's own ones are data: they
are shown to the command as they are (``changes.escapes``) and kept on what lands (:func:`own_overlay`); a
command's own are left out, and said (:func:`set_by_command`) — unless the project has the same attribute with the
same value on an entry of its own (a rename or ``cp -a`` carried it: :func:`carried_by`). ``security.capability``
(file capabilities: privileges) never lands either; the rest stay as the kernel made them.

Every function takes a path that is never followed at its last component (callers pass ``at(dirfd, name)``),
or an open descriptor.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from mcp_server_guard import linux
from mcp_server_guard.changes import name_changes
from mcp_server_guard.files import widened
from mcp_server_guard.files.copying import owner_writes

_AT_FDCWD = -100

__all__ = [
    "ACL_NAMES",
    "At",
    "Xattrs",
    "acl_key",
    "acl_mode",
    "acl_within",
    "acls",
    "acls_alike",
    "at",
    "attribute_names",
    "carried_by",
    "default_acl",
    "kept_in_place",
    "land",
    "own_left",
    "own_overlay",
    "root_left_at",
    "seen",
    "seen_as",
    "set_by_command",
    "set_seen",
]

Xattrs = tuple[tuple[str, bytes], ...]  # (name, value), sorted by name


class At(str):
    """``name`` in the directory ``dirfd``: a path the xattr calls take (the directory through its fd, the name never
    followed), which also remembers both (listed with one lookup in the directory where the kernel can)."""

    dirfd: int
    name: str

    def __new__(cls, dirfd: int, name: str) -> At:
        made = super().__new__(cls, f"/proc/self/fd/{dirfd}/{name}")
        made.dirfd, made.name = dirfd, name
        return made


_OVERLAY = "user.overlay."
_ESCAPED = "user.overlay.overlay."
_NEVER = ("security.capability", "trusted.overlay.")  # privileges, and overlayfs's bookkeeping as root
# Threat: an access control list a command set grants what the mode bits do not show (a default ACL of other::rwx
# on a new hooks directory makes every file made there later writable by anyone); the judge reads modes only.
_ACL = ACL_NAMES = linux.ACL_NAMES
_LANDED_NOT = (_OVERLAY, *_NEVER, *_ACL)


def at(dirfd: int, name: str) -> At:
    """``name`` in the directory ``dirfd`` (see :class:`At`)."""
    return At(dirfd, name)


def _names(target: str | int) -> list[str]:
    try:
        if isinstance(target, int):
            return os.listxattr(target)
        if isinstance(target, At):
            found = linux.listxattr_at(target.dirfd, target.name)
            if found is not None:
                return found
        return os.listxattr(target, follow_symlinks=False)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.ENOENT, errno.EPERM):
            return []
        raise


def attribute_names(dirfd: int, name: str) -> list[str]:
    """Every attribute name of ``name`` in ``dirfd`` (never followed), listed the quickest way the kernel offers."""
    return _names(at(dirfd, name))


def _get(target: str | int, name: str) -> bytes | None:
    try:
        if isinstance(target, int):
            return os.getxattr(target, name)
        return os.getxattr(target, name, follow_symlinks=False)
    except OSError as exc:
        if exc.errno in (errno.ENODATA, errno.ENOTSUP, errno.ENOENT):
            return None
        if exc.errno == errno.EACCES and isinstance(target, str):
            return _get_let_in(target, name)
        raise


def _get_let_in(target: str, name: str) -> bytes | None:
    """An attribute of a regular file of this user's that they may not read (``chmod 000``: ``user.*`` attributes are
    read as the file is), read with u+r given for the time of it by a descriptor of that very inode (noted first:
    ``files.widened``), its mode put back and the ctime that moved noted as ours (``name_changes.note``). Red team
    71 F5: the project's own ``user.overlay.*`` data on a file the command made 000 failed the whole call ("could
    not be read; nothing applied"), and its undo raised."""
    held = os.open(target, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        before = os.fstat(held)
        mode = stat.S_IMODE(before.st_mode)
        if not stat.S_ISREG(before.st_mode) or before.st_uid != os.geteuid() or mode & stat.S_IRUSR:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), target)
        note = widened.widen(held, mode, mode | stat.S_IRUSR)
        try:
            return os.getxattr(f"/proc/self/fd/{held}", name)  # (the inode held, through its magic link)
        except OSError as exc:
            if exc.errno in (errno.ENODATA, errno.ENOTSUP, errno.ENOENT):
                return None
            raise
        finally:
            widened.narrow(held, mode, note)
            name_changes.note(before, os.fstat(held))
    finally:
        os.close(held)


def _values(target: str | int, names: list[str]) -> Xattrs:
    found = ((name, _get(target, name)) for name in names)
    return tuple(sorted((name, value) for name, value in found if value is not None))


def seen(path: str | int) -> Xattrs:
    """The ``user.*`` attributes a command may change (every one but ``user.overlay.*``), upper layer and real tree
    alike."""
    return _values(path, [n for n in _names(path) if n.startswith("user.") and not n.startswith(_OVERLAY)])


def seen_as(path: str | int, *recorded: Xattrs) -> Xattrs:
    """A real entry's attributes as a change recorded them (``recorded``: what it set, and what was there): as
    :func:`seen`, and its own ``user.overlay.*`` ones too where the change names any (the copy showed them to the
    command, which left, removed or carried some: ``changes.upper``), and the access control lists it names (one
    the command took away: ``revoked``)."""
    named = {name for attributes in recorded for name, _value in attributes}
    found = (
        seen(path)
        if not any(name.startswith(_OVERLAY) for name in named)
        else _values(path, [n for n in _names(path) if n.startswith("user.")])
    )
    if acl_names := sorted(named & set(_ACL)):
        found = tuple(sorted(found + _values(path, acl_names)))
    return found


def revoked(real: str | int, upper: str | int) -> Xattrs:
    """The real entry's access control lists that its upper entry no longer has (the command removed or narrowed
    them: ``setfacl -b``, a same-bytes copy renamed over it) or has otherwise (it set another: that one never lands):
    taken away as natively, never granted anew (red team 5a F2)."""
    return _compared(real, upper)[1]


def _compared(real: str | int, upper: str | int) -> tuple[Xattrs, Xattrs]:
    """The real entry's access control lists its upper entry has too (with at most the mode changed), and the rest;
    the upper entry is not read where the real one has none (the usual case)."""
    mine = acls(real)
    if not mine:
        return (), ()
    theirs = acls(upper)
    alike = tuple((name, value) for name, value in sorted(mine.items()) if _same_acl(name, theirs.get(name), value))
    return alike, tuple(item for item in sorted(mine.items()) if item not in alike)


def own_overlay(path: str | int) -> Xattrs:
    """A real entry's own ``user.overlay.*`` attributes and access control lists, as they are: kept on what replaces
    it (a command's own never land: see ``_ACL``)."""
    return _values(path, [n for n in _names(path) if n.startswith(_OVERLAY) or n in _ACL])


def acls_alike(real: str | int, upper: str | int) -> Xattrs:
    """The real entry's access control lists that its upper entry has too (with at most the mode changed): the
    ones a file renamed over it brings along (``mv -f a b`` where both have the same) — the rest of the real one's
    stay behind."""
    return _compared(real, upper)[0]


def kept_in_place(real: str | int, upper: str | int, shown: bool = False) -> Xattrs:
    """What the command's file keeps of the real file's own ``user.overlay.*`` attributes and access control lists
    where it rewrote that file in place: all of them — but not those overlay attributes where the copy showed them
    (``shown``: the escape layer did; or the upper entry carries some): its entry, stored escaped, says what the
    command left (none, where it removed them or renamed a file without any over this one)."""
    own = own_overlay(real)
    if shown or any(name.startswith(_ESCAPED) for name in _names(upper)):
        return tuple((name, value) for name, value in own if not name.startswith(_OVERLAY))
    return own


def own_left(upper: str | int, real: Xattrs, carried: frozenset[tuple[str, bytes]] = frozenset()) -> Xattrs:
    """Of a real entry's own ``user.overlay.*`` attributes (``real``: :func:`own_overlay`), shown to the command,
    those its upper entry still holds (escaped: the command removed the others), and the project's own it carried
    there (``carried``). One whose value the command changed keeps the real value (a command's own never land:
    :func:`set_by_command` says it)."""
    had = {name: value for name, value in real if name.startswith(_OVERLAY)}
    left: dict[str, bytes] = {}
    for name in _names(upper):
        if name.startswith(_ESCAPED):
            shown = _OVERLAY + name[len(_ESCAPED) :]
            value = _get(upper, name)
            if shown in had:
                left[shown] = had[shown]
            elif value is not None and (shown, value) in carried:
                left[shown] = value
    return tuple(sorted(left.items()))


_ACL_USER_OBJ, _ACL_GROUP_OBJ, _ACL_MASK, _ACL_OTHER = 0x01, 0x04, 0x10, 0x20


def default_acl(dirfd: int) -> bytes | None:
    """The default access control list of the directory ``dirfd`` (what an entry made in it inherits), or None."""
    return _get(dirfd, "system.posix_acl_default") if "system.posix_acl_default" in _names(dirfd) else None


def _acl_entries(value: bytes) -> dict[tuple[int, int], int] | None:
    """(tag, id) -> permission bits of an ACL as the kernel stores it (version 2: 4-byte header, 8-byte entries)."""
    if len(value) < 4 or (len(value) - 4) % 8 or int.from_bytes(value[:4], "little") != 2:
        return None
    found: dict[tuple[int, int], int] = {}
    for at in range(4, len(value), 8):
        tag, perm, ident = (int.from_bytes(value[at:at + 2], "little"), int.from_bytes(value[at + 2:at + 4], "little"),
                            int.from_bytes(value[at + 4:at + 8], "little"))  # fmt: skip
        found[(tag, ident if tag in (0x02, 0x08) else 0)] = perm
    return found


def acl_within(value: bytes | None, default: bytes | None, name: str) -> bool:
    """Whether the ACL ``name`` (access or default) grants no one more than the directory's default ACL would (what
    inheritance gives: the same entries, perhaps fewer rights) beyond what the mode shows: of an access ACL, the
    entries ``chmod`` rewrites (owner, others, the mask) are the mode's, judged with it (red team 70 F1: ``echo n >
    team/n && chmod o+r team/n`` left the inherited ACL out, the mask and group rights changed unasked). Threat: a
    command granting a named user or group more than the default ACL does (``setfacl -m u:x:rwx``), or setting a
    default ACL of its own on a new directory."""
    if value is None or default is None:
        return False
    mine, theirs = _acl_entries(value), _acl_entries(default)
    if mine is None or theirs is None:
        return False
    if name == _ACL[0]:
        coupled = {(_ACL_USER_OBJ, 0), (_ACL_OTHER, 0), (_ACL_MASK if (_ACL_MASK, 0) in mine else _ACL_GROUP_OBJ, 0)}
        mine = {key: perm for key, perm in mine.items() if key not in coupled}
    return all(key in theirs and not perm & ~theirs[key] for key, perm in mine.items())


def acl_key(name: str, value: bytes | None) -> tuple[str, frozenset[tuple[tuple[int, int], int]]] | None:
    """An access control list as far as the mode does not say it: of an access ACL, the entries ``chmod`` rewrites
    (owner, others, and the mask — or the owning group where there is no mask) left out; a default ACL whole. Two
    ACLs with one key grant the same beyond what the mode grants, and the mode is judged on its own."""
    entries = _acl_entries(value) if value is not None else None
    if entries is None:
        return None
    if name == _ACL[0]:
        coupled = {(_ACL_USER_OBJ, 0), (_ACL_OTHER, 0), (_ACL_MASK if (_ACL_MASK, 0) in entries else _ACL_GROUP_OBJ, 0)}
        entries = {key: perm for key, perm in entries.items() if key not in coupled}
    return name, frozenset(entries.items())


def acls(target: str | int) -> dict[str, bytes]:
    """The access control lists an entry has, by name."""
    found = ((name, _get(target, name)) for name in ACL_NAMES)
    return {name: value for name, value in found if value is not None}


def _same_acl(name: str, value: bytes | None, other: bytes | None) -> bool:
    """The ACL ``value`` is ``other`` with at most the mode changed (``chmod`` of a file with an ACL rewrites it)."""
    if value == other:
        return value is not None
    key = acl_key(name, value)
    return key is not None and key == acl_key(name, other)


def acl_mode(default: bytes) -> int:
    """The permission bits a new entry may have under a default ACL (owner, group class — the mask where there is
    one — and others), in place of what the umask would leave."""
    entries = _acl_entries(default) or {}
    group = entries.get((_ACL_MASK, 0), entries.get((_ACL_GROUP_OBJ, 0), 0))
    return (entries.get((_ACL_USER_OBJ, 0), 7) << 6) | (group << 3) | entries.get((_ACL_OTHER, 0), 0)


def set_by_command(
    upper: str | int,
    real: Xattrs,
    carried: frozenset[tuple[str, bytes]] = frozenset(),
    *,
    inherited: bytes | None = None,
) -> tuple[list[str], bool]:
    """The ``user.overlay.*`` names a command set or changed on an upper-layer entry (stored escaped), against the
    real entry's own (``real``: :func:`own_overlay`, empty for a new entry) and the project's own elsewhere
    (``carried``: a rename or ``cp -a`` carries them); and whether the entry has anything :func:`land` must take
    away (one listing of its attributes for both)."""
    had = dict(real)
    found: list[str] = []
    names = _names(upper)
    for name in names:
        if name.startswith(_ESCAPED):
            shown, value = _OVERLAY + name[len(_ESCAPED) :], _get(upper, name)
            if had.get(shown) != value and had.get(name) != value and (shown, value) not in carried:
                found.append(shown)
        elif (
            name in _ACL
            and not _same_acl(name, value := _get(upper, name), had.get(name))
            and (name, value) not in carried
            and not acl_within(value, inherited, name)
        ):
            found.append(name)  # an access control list the command set (not inherited, not moved): never applied
    return sorted(found), bool(names) and any(name.startswith(_LANDED_NOT) for name in names)


def root_left_out(upper: int, real: int) -> list[str]:
    """What a command did to a root's own access control lists (set, changed beyond what its mode says, removed) or
    ``user.overlay.*`` attributes: the copy's upper root stands for the root, so none of it is applied — named here so
    the result says so (red team 72: a removal of the root's ACL was lost with nothing said)."""
    overlay, _marked = set_by_command(upper, own_overlay(real))
    changed = [name for name in _ACL if acl_key(name, _get(upper, name)) != acl_key(name, _get(real, name))]
    if changed and not _has_acls(upper):
        changed = []  # copies on a file system without ACLs: the upper root could not be given the root's
    return sorted({*changed, *(name for name in overlay if name not in _ACL)})


def _has_acls(fd: int) -> bool:
    try:
        os.getxattr(fd, _ACL[0])
    except OSError as exc:
        return exc.errno != errno.ENOTSUP
    return True


def carried_by(path: str | int, carried: frozenset[tuple[str, bytes]]) -> Xattrs:
    """The ``user.overlay.*`` attributes an upper-layer entry holds (escaped) that the project has on an entry of
    its own (``carried``): data a rename or a copy carried, landed under their real names."""
    if not carried:
        return ()
    found: list[tuple[str, bytes]] = []
    for name in _names(path):
        if name.startswith(_ESCAPED):
            shown, value = _OVERLAY + name[len(_ESCAPED) :], _get(path, name)
            if value is not None and (shown, value) in carried:
                found.append((shown, value))
    return tuple(sorted(found))


def land(
    path: str, keep: Xattrs = (), carried: frozenset[tuple[str, bytes]] = frozenset(), *, inherited: bytes | None = None
) -> bool:
    """Make an inode of the upper layer ready for the real tree: every ``user.overlay.*`` attribute (overlayfs's
    bookkeeping, and the command's own, stored escaped) and file capabilities removed, then ``keep`` (the real
    entry's own ``user.overlay.*``, :func:`own_overlay`) set. Threat: ``user.overlay.opaque``/``whiteout``/
    ``metacopy`` landing in the project would make later copies hide a path or refuse to read it;
    ``security.capability`` would grant privileges to whoever runs the file. Returns whether it keeps a
    ``user.overlay.*`` attribute (the escape layer must show it)."""
    kept = dict(carried_by(path, carried)) | dict(keep)
    # (An entry of the copy its owner may not write, ``chmod 444 f``/``555 d``, gets u+w while its attributes change:
    # a user.* attribute is written as the file is — red team 62 F1: a read-only file renamed kept overlayfs's origin.)
    with owner_writes((_AT_FDCWD, path), files=True):
        _land(path, kept, carried, inherited)
    return bool(kept)


def _land(path: str, kept: dict[str, bytes], carried: frozenset[tuple[str, bytes]], inherited: bytes | None) -> None:
    for name in _names(path):
        if name.startswith(_LANDED_NOT) and name in _ACL:
            value = _get(path, name)
            if _same_acl(name, value, kept.get(name)):
                del kept[name]  # the project's, with the mode the command gave it (setting the old one would undo it)
                continue
            # (By key: the entries a mode rewrites are the mode's — and ``land`` itself gives an owner-read-only
            # file u+w meanwhile, which rewrites them: ``mv acl.txt b && chmod 444 b`` lost its ACL, red team 71's
            # fuzzer, seed 7010.)
            if (name, value) in carried or acl_key(name, value) in {acl_key(n, v) for n, v in carried if n == name}:
                continue  # the project's, carried by a move
            if acl_within(value, inherited, name):
                continue  # inherited from the directory's default ACL
        if name.startswith(_LANDED_NOT):
            _remove(path, name)
    for name, value in sorted(kept.items()):
        _set(path, name, value)


def _set(target: str | int, name: str, value: bytes) -> None:
    try:
        if isinstance(target, int):
            os.setxattr(target, name, value)
        else:
            os.setxattr(target, name, value, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.ENOTSUP, errno.EPERM):  # a symlink takes no user.* attribute
            raise


def _remove(target: str | int, name: str) -> None:
    with contextlib.suppress(OSError):
        if isinstance(target, int):
            os.removexattr(target, name)
        else:
            os.removexattr(target, name, follow_symlinks=False)


def set_seen(target: str | int, want: Xattrs, have: Xattrs) -> None:
    """Change ``target``'s attributes (real tree; a path never followed, or an open descriptor) from ``have`` to
    ``want`` (both :func:`seen`): only the names whose values differ are set or removed."""
    wanted, had = dict(want), dict(have)
    for name, value in wanted.items():
        if had.get(name) != value:
            _set(target, name, value)
    for name in had.keys() - wanted.keys():
        _remove(target, name)


def root_left_at(upper: str, root: str) -> list[str]:
    """What a command did to the root's own ACLs or ``user.overlay.*`` attributes (``xattrs.root_left_out``), both
    opened without following a link."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    upper_fd = os.open(upper, flags)
    try:
        real_fd = os.open(root, flags)
        try:
            return root_left_out(upper_fd, real_fd)
        finally:
            os.close(real_fd)
    finally:
        os.close(upper_fd)
