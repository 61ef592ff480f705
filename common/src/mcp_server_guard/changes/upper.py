"""What a command changed: its overlay's upper layer, read beside the real tree.

The upper directory holds every file the command created or changed (copied up whole: ``metacopy`` is off in
a user namespace), a *whiteout* (a character device 0:0) for every name it deleted, and an *opaque* directory
(``user.overlay.opaque = y``) where it replaced a directory wholesale (``rm -r d; mkdir d``). Read after every
process of the call has ended (or, for a running job, live), it becomes a ``ChangeSet``: one ``Change`` per
path, with what it was in the real tree, and the modification time the command left on each directory it touched
(``DirTime``: applying entries changes a directory's time; the command's is put back) — ``changes.changeset``.

A file copied up and left with the same bytes is no change unless its mode, modification time or ``user.*``
attributes differ (``changes.xattrs``); a directory's mode and attributes likewise. What the copy cannot say by
itself (hard links, renames of files with several names) is matched up afterwards (``changes.names``).

Threat: the upper tree is shaped by the command. The reader never follows a link (each name is opened on its
own, ``O_NOFOLLOW``, from its directory's fd; the same walk in the real tree), never opens anything but a
directory or a regular file, and opens files ``O_NONBLOCK``: a FIFO, socket or device is a change to report,
never something to open. A tree too large to list is reported as such (``ChangeSet.incomplete``), never
silently cut.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import stat
from collections.abc import Iterable, Mapping, Sequence

from mcp_server_guard.changes import name_changes
from mcp_server_guard.changes.changeset import (
    MADE,
    NO_FOLLOW_DIR,
    NO_RENAMES,
    ROOT,
    Change,
    ChangeSet,
    DirTime,
    Kind,
    Mounted,
    Renamed,
    depth,
    kind_of,
    listing,
    lstat,
    open_dir,
    reserved_more,
    same_bytes,
    walk_entries,
    walk_real,
)
from mcp_server_guard.changes.names import Names
from mcp_server_guard.changes.nofollow import Changed, parent
from mcp_server_guard.changes.xattrs import (
    ACL_NAMES,
    Xattrs,
    acl_key,
    acl_within,
    acls,
    at,
    attribute_names,
    default_acl,
    own_left,
    own_overlay,
    revoked,
    root_left_out,
    seen,
    set_by_command,
)
from mcp_server_guard.files.trees import own_dirs_as_found
from mcp_server_guard.paths import moving_copy

__all__ = ["judged_copy", "read_upper"]

_REWRITE = os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

_OPAQUE = ("user.overlay.opaque", "trusted.overlay.opaque")


_ACLS_LOOKED = 10_000  # entries the command removed whose access control lists are read at most


def moved_acls(
    real_root: int, gone: Sequence[str], found: Sequence[tuple[str, str, bytes]], defaults: Iterable[bytes] = ()
) -> tuple[frozenset[tuple[str, bytes]], list[tuple[str, str]]]:
    """Of the access control lists ``found`` on the command's entries that the real entry of that path did not have:
    those an entry the command removed or replaced had (``gone``: a file or directory renamed there carries its ACL
    natively; a swap replaces both), and those within the default ACL of a real directory the command made entries
    in (``defaults``: a new entry inherits it there and keeps it when moved out, ``echo x > shared/n && mv shared/n
    plain/``; no more than the project already gives what is made there), as the project's own (``xattrs.land`` keeps
    them); and the others, by path, as set by the command (never applied, said). Read only where there is one to
    match, beneath the root, never following a link."""
    if not found:
        return frozenset(), []
    own: set[object] = set()
    for rel in gone[:_ACLS_LOOKED]:
        with contextlib.suppress(Changed, OSError), parent(real_root, rel) as (dirfd, name):
            own.update(acl_key(acl, value) for acl, value in acls(at(dirfd, name)).items())
    inheritable = tuple(defaults)
    carried = frozenset((name, value) for _path, name, value in found if acl_key(name, value) in own
                        or any(acl_within(value, d, name) for d in inheritable))  # fmt: skip
    refused: dict[str, list[str]] = {}
    for path, name, value in found:
        if (name, value) not in carried:
            refused.setdefault(path, []).append(name)
    return carried, [(path, ", ".join(names)) for path, names in refused.items()]


def _whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _has(path: str, names: tuple[str, ...], value: bytes | None = None) -> bool:
    for name in names:
        with contextlib.suppress(OSError):
            found = os.getxattr(path, name, follow_symlinks=False)
            if value is None or found == value:
                return True
    return False


def _origin(dirfd: int, name: str) -> bool:
    """Whether overlayfs copied this entry up from the real tree (it marks every copy-up of a file with one name)."""
    return _has(at(dirfd, name), ("user.overlay.origin", "trusted.overlay.origin"))


def _opaque(fd: int) -> bool:
    for name in _OPAQUE:
        with contextlib.suppress(OSError):
            if os.getxattr(fd, name) == b"y":
                return True
    return False


class _Reader(Names):
    """Walks an upper layer beside the real tree (see the module docstring)."""

    def overlay_names(self, upper: str, path: str, real: Xattrs = (), *, inherited: bytes | None = None) -> None:
        """``user.overlay.*`` attributes the command set on an entry: never applied (``changes.xattrs``), said; and
        an entry with attributes to take away before it lands, noted (the others land as they are). ``inherited``:
        the default ACL of the directory a new entry is made in (an ACL within it is inherited, not the command's)."""
        names, marked = set_by_command(upper, real, self.carried, inherited=inherited)
        has = acls(upper) if any(name in ACL_NAMES for name in names) else {}
        for name in names:
            if name in has:
                self.acls.append((path, name, has[name]))  # the command's, unless a move carried it (``moved_acls``)
        if overlay := [name for name in names if name not in ACL_NAMES]:
            self.dropped.append((path, ", ".join(overlay)))
        if marked:
            self.marked.add(path)

    def deleted_tree(self, real_dir: int, name: str, path: str) -> None:
        """A real directory the command removed (or replaced): every path in it, as deleted."""
        fd = open_dir(name, real_dir)
        if fd is None:
            return
        try:
            for rel, st in walk_real(fd, path, [self.budget[0]]):
                kind = kind_of(st.st_mode)
                size = st.st_size if kind == "file" else 0
                several = st.st_nlink if kind == "file" and st.st_nlink > 1 else 0
                index = self.add(Change(rel, "delete", kind, size=size, mode=stat.S_IMODE(st.st_mode), top=path,
                                        names=several))  # fmt: skip
                if kind == "file":
                    self.gone_files.setdefault((st.st_size, st.st_mtime_ns), []).append(rel)
                if kind == "file" and st.st_nlink > 1 and index >= 0:
                    self.tree_linked.append((index, st))  # a file with other names: maybe moved with a tree
                if self.budget[0] < 0:
                    return
        finally:
            os.close(fd)

    def created_tree(
        self, upper_dir: int, name: str, path: str, st: os.stat_result, *, inherited: bytes | None = None
    ) -> None:
        """A directory that is the command's alone (new, or replacing the real one): every path in it."""
        fd = open_dir(name, upper_dir, ours=True)
        if fd is None:
            return
        try:
            self.times.append(DirTime(path, st.st_mtime_ns, -1))
            for rel, inner, inner_dir, inner_name in walk_entries(fd, path, [self.budget[0]], ours=True):
                if _whiteout(inner):
                    continue  # hides nothing here: the directory has no real counterpart
                kind = kind_of(inner.st_mode)
                size = inner.st_size if kind == "file" else 0
                index = self.add(Change(rel, "create", kind, size=size, mode=stat.S_IMODE(inner.st_mode), top=path))
                self.touched.add(rel)
                if kind in ("file", "dir") and attribute_names(inner_dir, inner_name):  # most have none
                    self.overlay_names(at(inner_dir, inner_name), rel, inherited=inherited)
                if kind == "symlink" and inner.st_nlink > 1:
                    self.marked.add(rel)  # another name of a symlink of the copy: made one of its own as it lands
                if kind == "file" and inner.st_nlink > 1:
                    self.note(rel, inner, index, None, False, False)
                elif kind == "file" and index >= 0:
                    self.single.append((rel, index, inner.st_ino))  # matched up only when a move is possible
                elif kind == "dir":
                    self.times.append(DirTime(rel, inner.st_mtime_ns, -1))
                if self.budget[0] < 0:
                    return
        finally:
            os.close(fd)

    def deleted(self, real_dir: int | None, name: str, path: str, top: str = "") -> None:
        real = lstat(name, real_dir) if real_dir is not None else None
        if real is None:
            return  # gone from the real tree already: nothing to delete
        kind = kind_of(real.st_mode)
        size = real.st_size if kind == "file" else 0
        self.add(Change(path, "delete", kind, size=size, mode=stat.S_IMODE(real.st_mode), top=top))
        if kind == "file":
            self.gone_files.setdefault((real.st_size, real.st_mtime_ns), []).append(path)
        if kind == "dir" and real_dir is not None:
            self.deleted_tree(real_dir, name, path)

    def merged(self, upper_dir: int, real_dir: int | None, rel: str) -> None:
        """A directory that exists in both (or, as far as we know, whose real counterpart we may look into)."""
        names = listing(upper_dir)
        if real_dir is not None and (default := default_acl(real_dir)) is not None:
            self.defaults.add(default)  # what an entry made here inherits, wherever the command moves it then
        if self.looked and real_dir is not None:
            self.gone_since_landed(upper_dir, real_dir, rel, set(names))
        for name in names:
            if self.budget[0] < 0:
                return
            path = f"{rel}/{name}" if rel else name
            if path in self.skip:
                continue
            depth(path)
            st = lstat(name, upper_dir)
            if st is None or moving_copy(name, stat.S_ISDIR(st.st_mode)):  # the box's helper's, never the command's
                continue
            self.touched.add(path)
            real = lstat(name, real_dir) if real_dir is not None else None
            if _whiteout(st):
                self.deleted(real_dir, name, path)
                continue
            if stat.S_ISDIR(st.st_mode):
                self.directory(upper_dir, real_dir, name, path, st, real)
            else:
                self.entry(upper_dir, real_dir, name, path, st, real)

    def gone_since_landed(self, upper_dir: int, real_dir: int, rel: str, names: set[str]) -> None:
        """A running job's earlier look landed entries in the real tree (copied: the job keeps its own); where the
        job has since removed or renamed one, its copy may hold no whiteout for it (its directory was the job's
        alone when the job made it, and overlayfs does not look again into the real tree): absent from the copy,
        an entry a look made (not one whose mode or time it set: another name of a file the job re-moded is in no
        copy) is one the job took away."""
        for name in listing(real_dir):
            path = f"{rel}/{name}" if rel else name
            if name not in names and MADE + path in self.looked and path not in self.skip:
                self.touched.add(path)
                self.deleted(real_dir, name, path)

    def directory(self, upper_dir: int, real_dir: int | None, name: str, path: str, st: os.stat_result,
                  real: os.stat_result | None) -> None:  # fmt: skip
        mode = stat.S_IMODE(st.st_mode)
        child = open_dir(name, upper_dir, ours=True)
        if child is None:
            return
        try:
            opaque = _opaque(child)
            if real is not None and stat.S_ISDIR(real.st_mode) and not opaque:
                assert real_dir is not None
                self.metadata(upper_dir, real_dir, name, path, st, real, "dir")
                self.times.append(DirTime(path, st.st_mtime_ns, real.st_ctime_ns, real.st_mtime_ns))
                real_child = open_dir(name, real_dir)
                try:
                    self.merged(child, real_child, path)
                finally:
                    if real_child is not None:
                        os.close(real_child)
                return
        finally:
            os.close(child)
        if real is not None:  # replaced: the real file or directory goes, the command's tree comes
            self.deleted(real_dir, name, path, top=path)
        origin = not opaque and _origin(upper_dir, name)
        self.add(Change(path, "create", "dir", mode=mode, opaque=real is not None, origin=origin))
        inherited = default_acl(real_dir) if real_dir is not None else None
        self.overlay_names(at(upper_dir, name), path, inherited=inherited)
        self.created_tree(upper_dir, name, path, st, inherited=inherited)

    def left_as_found(self, st: os.stat_result, real: os.stat_result, origin: bool, path: str) -> bool:
        """Whether a copy-up whose bytes differ from the real file's is the file as the command found it, and the real
        file was written by someone else while the command ran (``ln a h`` or ``chmod 600 a`` while another call
        appends to ``a``): the copy keeps the time the file had when copied up, from before the command started,
        and the real file's time is a later one, from after (a write sets it to now). A write of the command's sets
        its time to now too. (Overlayfs marks a copy-up of a file with one name; one of a file with several it does
        not mark, and a file the command made is new at that path anyway: either way, the bytes tell the rest.) A
        command that rewrote it and set an old time again (``cp -p``) while someone else wrote it too is taken for
        one that left it: the other write stays, as if it came last. Only a write counts: a mode or attribute
        change of someone else's leaves the real file's time as it was; and only someone else's, not a running
        job's earlier look (its caller checks the job's baseline). Only where the copy is this name's own: the box's
        rename helper ran and renamed no file to it (red team 61 F1: ``mv a.txt b.txt`` while someone appended to
        ``b.txt`` — ``a.txt``'s copy-up, with its old time, was taken for ``b.txt``'s, and the rename dropped)."""
        return (
            (origin or real.st_nlink > 1)
            and self.origins_known
            and path not in self.renamed
            and path not in self.remade
            and self.started_ns > 0
            and st.st_mtime_ns < self.started_ns <= real.st_mtime_ns
            and real.st_ctime_ns > self.started_ns
        )

    def replaced_by_rename(self, path: str, real: os.stat_result) -> bool:
        """Whether the box renamed another file over ``path``, a name of a real file with several (``sed -i h1``, an
        editor's save, ``cp h1 tmp && mv tmp h1``), or the command removed that name and made it again (``rm h1 &&
        cp -p b h1``: ``shell.sandbox.unlinks``): the name now holds a file of its own, whatever its bytes and
        times — natively the file's other names keep it as it was, and a later write through one of them does not
        reach this name. (A rename between names of the file itself, ``mv h1 n && mv n h1`` or ``mv h2 h1``, is
        none: the box's rename helper says the file came from this real inode; past its bound of 256 such renames a
        call it says neither, and the name is judged by its bytes as before.)"""
        if real.st_nlink < 2:
            return False
        came = self.origins.get(path)
        if came is not None:
            return came[1] != real.st_ino
        return path in self.renamed or path in self.remade

    def metadata(self, upper_dir: int, real_dir: int, name: str, path: str, st: os.stat_result,
                 real: os.stat_result, kind: Kind, *, timed: bool = True) -> int:  # fmt: skip
        """A meta change where the mode, the modification time (not a directory's: see DirTime; not ``timed``: not
        the file's either) or the attributes differ; the index of the change added, -1 when none."""
        mode, old_mode = stat.S_IMODE(st.st_mode), stat.S_IMODE(real.st_mode)
        xattrs, old_xattrs = seen(at(upper_dir, name)), seen(at(real_dir, name))
        old_xattrs = tuple(sorted(old_xattrs + revoked(at(real_dir, name), at(upper_dir, name))))
        own = own_overlay(at(real_dir, name))
        self.overlay_names(at(upper_dir, name), path, own)
        shown = path in self.escaped
        if shown:  # the project's own user.overlay.* attributes, shown to the command: what it left of them
            xattrs = tuple(sorted(xattrs + own_left(at(upper_dir, name), own, self.carried)))
            old_xattrs = tuple(sorted(old_xattrs + tuple(a for a in own if a[0].startswith("user.overlay."))))
        timed = timed and kind != "dir" and st.st_mtime_ns != real.st_mtime_ns
        if mode == old_mode and xattrs == old_xattrs and not timed:
            return -1
        size = st.st_size if kind == "file" else 0
        mtime = st.st_mtime_ns if timed or kind == "dir" else real.st_mtime_ns
        index = self.add(Change(path, "meta", kind, size=size, old_size=real.st_size if kind == "file" else 0,
                                mode=mode, old_mode=old_mode, mtime_ns=mtime, old_mtime_ns=real.st_mtime_ns,
                                xattrs=xattrs, old_xattrs=old_xattrs, shown=shown))  # fmt: skip
        if kind == "file" and real.st_nlink > 1 and index >= 0:
            self.shared_meta.setdefault(real.st_ino, []).append(index)
        return index

    def entry(self, upper_dir: int, real_dir: int | None, name: str, path: str, st: os.stat_result,
              real: os.stat_result | None) -> None:  # fmt: skip
        kind = kind_of(st.st_mode)
        mode = stat.S_IMODE(st.st_mode)
        size = st.st_size if kind == "file" else 0
        origin = _origin(upper_dir, name)
        if real is None:
            index = self.add(Change(path, "create", kind, size=size, mode=mode, origin=origin))
            if kind == "file":
                self.note(path, st, index, None, False, origin)
                self.overlay_names(at(upper_dir, name), path,
                                   inherited=default_acl(real_dir) if real_dir is not None else None)  # fmt: skip
            return
        assert real_dir is not None
        real_kind = kind_of(real.st_mode)
        if real_kind == "dir":
            self.deleted(real_dir, name, path, top=path)
            index = self.add(Change(path, "create", kind, size=size, mode=mode, opaque=True))
            if kind == "file":
                self.note(path, st, index, None, False, origin)  # maybe a name of a real file (``mv h2 d``)
            return
        if kind == real_kind == "file" and not self.replaced_by_rename(path, real):
            if (
                st.st_size == real.st_size
                and not reserved_more(st, real)
                and same_bytes(upper_dir, name, real_dir, name, st.st_size)
            ):
                index = self.metadata(upper_dir, real_dir, name, path, st, real, kind)
                self.note(path, st, index, real, True, origin)
                return  # copied up with the same bytes: its metadata at most
            if self.left_as_found(st, real, origin, path) and self.looked.get(path) != real.st_ctime_ns:
                index = self.metadata(upper_dir, real_dir, name, path, st, real, kind, timed=False)
                self.note(path, st, index, real, True, origin)
                return  # copied up (for a new name, a mode) and not written; someone else wrote the real file since
        elif kind == real_kind == "symlink" and os.readlink(name, dir_fd=upper_dir) == os.readlink(
            name, dir_fd=real_dir
        ):
            self.metadata(upper_dir, real_dir, name, path, st, real, kind)
            return
        index = self.add(Change(path, "modify", kind, size=size, old_size=real.st_size if real_kind == "file" else 0,
                                mode=mode, old_mode=stat.S_IMODE(real.st_mode), origin=origin,
                                shown=path in self.escaped, over=kind == "file" and path in self.renamed))  # fmt: skip
        if kind == "file":
            self.note(path, st, index, real, False, origin)
            self.overlay_names(at(upper_dir, name), path, own_overlay(at(real_dir, name)))


@own_dirs_as_found(name_changes.note)  # (a directory let in to be read keeps its mode; a real one: noted)
def read_upper(
    upper: str,
    real_root: int,
    root: str,
    skip: frozenset[str] = frozenset(),
    mounted: Mounted | tuple[int, int] | None = None,
    *,
    started_ns: int = 0,
    carried: frozenset[tuple[str, bytes]] = frozenset(),
    moved: Renamed = NO_RENAMES,
    escaped: frozenset[str] = frozenset(),
    looked: dict[str, int] | None = None,
) -> ChangeSet:
    """The change set of one root: ``upper`` is the overlay's upper directory, ``real_root`` an open fd of the
    real root (both read without following a link). ``skip``: root-relative paths that are not the command's;
    ``mounted``: the mode and modification time the upper directory was given when mounted (the root's then: the
    root's own are the command's change only where they differ from those; unknown: never); ``carried``: the
    ``user.overlay.*`` attributes the project has on entries of its own (``Escapes.data``); ``moved``: what the
    box's rename handler said of the call's renames (``changeset.Renamed``); ``escaped``: the
    root-relative paths whose own ``user.overlay.*`` attributes the copy showed (``Escapes.escaped``); ``looked``: for a
    running job, the root-relative paths its earlier looks applied, with their ctime then (``.``: the root; a path
    a look made marked ``MADE``: ``changeset.looked_under``)."""
    upper_fd = os.open(upper, NO_FOLLOW_DIR)
    try:
        reader = _Reader(real_root, upper_fd, skip, started_ns, carried=carried, moved=moved.linked,
                         renamed=moved.files_in(root), remade=moved.remade_in(root), origins=moved.origins_in(root),
                         origins_known=moved.origins_known, escaped=escaped,
                         looked=looked or {})  # fmt: skip
        reader.held = moved.relinked_in(root)
        elsewhere, itself = _linked_elsewhere(reader, reader.held)
        reader.remade, reader.renamed = (reader.remade | elsewhere) - itself, reader.renamed - itself
        if moved.unfollowed:
            reader.remade = _EVERY_NAME
        own, real = os.fstat(upper_fd), os.fstat(real_root)
        if mounted is not None:
            mounted = Mounted(*mounted)  # (a mode and a time alone: no attributes were given)
            mode, mtime = stat.S_IMODE(own.st_mode), own.st_mtime_ns
            kept, shown = seen(at(real_root, ".")), seen(upper_fd)
            # Its user.* attributes as the command left them where it changed them (the upper directory was given
            # the root's when mounted: ``mounted.xattrs``), else as the real root has them now (red team 68 F3).
            xattrs = shown if tuple(sorted(shown)) != mounted.xattrs else kept
            if mode != mounted.mode or xattrs != kept:
                # Judged against the root as the call found it: a change of its mode or attributes by someone else
                # meanwhile is a conflict, never overwritten.
                before = kept if tuple(sorted(kept)) == mounted.xattrs else mounted.xattrs
                reader.add(Change(ROOT, "meta", "dir", mode=mode, old_mode=mounted.mode,
                                  old_mtime_ns=real.st_mtime_ns, xattrs=xattrs, old_xattrs=before))  # fmt: skip
            if left_out := root_left_out(upper_fd, real_root):  # not applied at the root: said
                reader.dropped.append((ROOT, ", ".join(left_out)))
            # Always, as for every directory copied up: renaming the command's files into place changes the
            # root's time even where the command left it as it was (a file rewritten in place).
            reader.times.append(DirTime(ROOT, mtime, real.st_ctime_ns, real.st_mtime_ns))
        reader.merged(upper_fd, real_root, "")
        reader.links()
        reader.deleted_meanwhile()
        replaced = [c.path for c in reader.out if c.action in ("delete", "modify")]
        # A name that lands as another name of a file (``ln acl.txt l``) has that file's ACL, judged there: its
        # copy-up's (which could not carry an unmapped user's entry) is no ACL the command set (red team 7 F4).
        linked = {c.path for c in reader.out if c.link}
        found = [acl for acl in reader.acls if acl[0] not in linked]
        moved_with, dropped = moved_acls(real_root, replaced, found, reader.defaults)
        return ChangeSet(root=root, upper=upper, changes=tuple(reader.out), incomplete=reader.budget[0] < 0,
                         times=tuple(reader.times), dropped=(*reader.dropped, *dropped),
                         marked=frozenset(reader.marked), carried=carried | moved_with)  # fmt: skip
    finally:
        os.close(upper_fd)


def judged_copy(
    sets: Sequence[ChangeSet],
    rewritten: Mapping[tuple[str, str], bytes],
    moved: Mapping[tuple[str, str], tuple[str, str]],
) -> list[ChangeSet]:
    """The copy made ready to apply as judged (``changes.effects``): the judgement's safer content in place of the
    command's (``rewritten``; in the copy, ours now, never through a link: each name opened on its own below the
    upper directory), and each file another was renamed over marked (``moved``: each end of a move -> its start;
    the box said the others, ``Renamed.files``): it lands with that file's attributes and ACLs, not those of the one
    it replaced (``steps.kept_own``)."""
    ends = {end for end, start in moved.items() if start != end}
    marked = [dataclasses.replace(changes, changes=tuple(dataclasses.replace(c, over=True)
              if c.action == "modify" and (changes.root, c.path) in ends else c for c in changes.changes))
              for changes in sets]  # fmt: skip
    for changes in sets:
        for (root, path), data in rewritten.items():
            if root != changes.root:
                continue
            fd = os.open(changes.upper, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                parts = path.split("/")
                for part in parts[:-1]:
                    nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                    os.close(fd)
                    fd = nxt
                out = os.open(parts[-1], _REWRITE, dir_fd=fd)
                try:
                    if not stat.S_ISREG(os.fstat(out).st_mode):
                        continue
                    os.write(out, data)
                finally:
                    os.close(out)
            finally:
                os.close(fd)
    return marked


class _Every(frozenset[str]):
    """Every name (``Renamed.unfollowed``: each name of a file with several that the call left changed holds a file of
    its own)."""

    def __contains__(self, item: object) -> bool:
        return True


_EVERY_NAME = _Every()


def _linked_elsewhere(reader: _Reader, relinked: dict[str, str]) -> tuple[frozenset[str], frozenset[str]]:
    """Of the names whose file the call's init says another name had when the call began (``Renamed.relinked``:
    linked or renamed from there), those that hold another file than the real one at that name (``rm h1 && echo
    new > t && ln t t2 && ln t2 h1``, ``mv o.txt h1``), and those that hold that very file: brought back from one of
    its names (``rm h1 && ln h2 h1 && rm h2``, ``ln -f h2 h1``, ``echo z >> h2 && rm h1 && mv h2 h1``) it is the
    file rewritten in place, whose other names natively get what it holds. A name new to the tree that holds such a
    file is noted where it came from."""
    made: set[str] = set()
    same: set[str] = set()
    for path, source in relinked.items():
        real, was = reader.real_stat(path), reader.real_stat(source) if source else None
        if real is None:
            if was is not None and stat.S_ISREG(was.st_mode) and was.st_nlink > 1 and path not in reader.origins:
                # A new name holding that file (changed, then renamed: ``echo z >> h2 && mv h2 t``): it came from
                # there, as a rename the box's helper saw (``names.came_from``).
                reader.origins[path] = (source, was.st_ino)
            continue
        if was is not None and (was.st_dev, was.st_ino) == (real.st_dev, real.st_ino):
            same.add(path)
        else:
            made.add(path)
    return frozenset(made), frozenset(same)
