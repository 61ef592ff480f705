"""The names of one file: what the upper layer cannot say by itself, read from both trees once a reader has walked
the copy (``changes.upper``).

* **hard links**: names of one upper inode land as one inode. Where one of them is a real file the command left
  as it was (``ln a b``), the others become new names of that real file (``link``: its other real names stay
  with it). Where the command rewrote one name of a real file that has other names in the root (``echo >> h1``
  with ``h2`` a hard link of it), those names get the new file too, as they would natively — unless one of them
  lies outside the root (then only this name changes: nothing outside is written through a link). A mode, time
  or attribute change of such a file reaches each name, judged together;
* **moves** of a file with other names (``mv h1 n`` while ``h2`` stays): the real file is renamed, so its names
  stay one inode (``moved_from``); renamed and then changed (``mv h1 n && echo z >> n``: the box's rename handler
  says where ``n`` came from, ``Renamed.origins``), or renamed through one name and rewritten through another
  (``mv h2 d/n && echo z >> h1``), its names become names of the changed file;
* a file the command had changed that someone deleted meanwhile (``gone``).

Other names are looked for in the directories the command touched, then in the whole root (bounded: past that,
no name is taken for all of them)."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from mcp_server_guard.changes.changeset import (
    MAX_ENTRIES,
    ROOT,
    Change,
    DirTime,
    listing,
    lstat,
    open_dir,
    same_bytes,
    walk_real,
)
from mcp_server_guard.changes.nofollow import Changed, set_meta
from mcp_server_guard.changes.xattrs import at, seen

__all__ = ["Names"]

WALK_ENTRIES = 50_000  # paths of a root walked at most to find the other names of a file with several
_MOVE_BYTES = 256 << 20  # bytes compared at most to recognise files with several names that the command renamed
_MOVE_CANDIDATES = 4  # real files of the same size and time a file is compared with


@dataclass
class _Name:
    """One name of an upper file, with what the real tree has there."""

    path: str
    index: int  # its Change in the reader's list; -1: none (the same bytes and metadata as the real file)
    real: os.stat_result | None  # a regular file of the real tree at that path
    same: bool  # the upper file holds the real file's bytes
    origin: bool


@dataclass
class _Taken:
    """Names of a real file with several that the command took over (``Names.moves``): for each name taken away,
    the changes made names of the file there (each as it was before: its index and the change)."""

    olds: dict[str, list[tuple[int, Change]]] = field(default_factory=dict)
    by_box: set[str] = field(default_factory=set)  # those taken over by names the box's tree moves made (renames)


def _relinked(path: str, real: os.stat_result, link: str) -> Change:
    mode = stat.S_IMODE(real.st_mode)
    return Change(path, "modify", "file", size=real.st_size, old_size=real.st_size, mode=mode, old_mode=mode,
                  mtime_ns=real.st_mtime_ns, old_mtime_ns=real.st_mtime_ns, link=link)  # fmt: skip


@dataclass
class Names:
    """A reader's state once its walk is over, and the matching of names (see the module docstring)."""

    real_root: int
    upper_root: int
    skip: frozenset[str]  # paths of the real tree that are not the command's (our own area in a root)
    started_ns: int = 0  # when the command started: a real directory changed later was changed by someone else
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (path, user.overlay.* names the command set)
    acls: list[tuple[str, str, bytes]] = field(default_factory=list)  # (path, name, value): ACLs the entry did not have
    defaults: set[bytes] = field(default_factory=set)  # default ACLs of real directories the command changed things in
    marked: set[str] = field(default_factory=set)  # entries in trees it made with attributes to take away
    single: list[tuple[str, int, int]] = field(default_factory=list)  # files with one name in trees it made
    tree_linked: list[tuple[int, os.stat_result]] = field(default_factory=list)  # deleted in trees, several names
    out: list[Change] = field(default_factory=list)
    times: list[DirTime] = field(default_factory=list)
    budget: list[int] = field(default_factory=lambda: [MAX_ENTRIES])
    inodes: dict[int, list[_Name]] = field(default_factory=dict)  # upper regular files, by upper inode
    touched: set[str] = field(default_factory=set)  # every path the upper layer holds
    landed: dict[int, str] = field(default_factory=dict)  # real inodes the command renamed: the name they end at
    gone_files: dict[tuple[int, int], list[str]] = field(default_factory=dict)  # real files deleted, by size and time
    old_names: dict[int, str] = field(default_factory=dict)  # real inodes waiting in trees: a name they had
    compared: int = 0  # bytes compared so far to recognise renamed files
    shared_meta: dict[int, list[int]] = field(default_factory=dict)  # meta changes of files with several names
    carried: frozenset[tuple[str, bytes]] = frozenset()  # the project's own user.overlay.* attributes (data)
    moved: frozenset[int] = frozenset()  # upper inodes of names of linked files the box's tree moves made
    renamed: frozenset[str] = frozenset()  # paths of regular files the box renamed there (``Renamed.files``)
    remade: frozenset[str] = frozenset()  # names of linked files removed and made again in place (``Renamed.remade``)
    held: dict[str, str] = field(default_factory=dict)  # a name -> the name whose file it holds (``Renamed.relinked``)
    escaped: frozenset[str] = frozenset()  # paths whose own user.overlay.* attributes the copy showed
    origins: dict[str, tuple[str, int]] = field(default_factory=dict)  # ``Renamed.origins_in``: path -> (from, inode)
    origins_known: bool = False  # ``Renamed.origins_known``: a rename it did not name was none
    looked: dict[str, int] = field(default_factory=dict)  # a job's paths its earlier looks applied: their ctime then
    folded: set[str] = field(default_factory=set)  # names whose meta change went into a file rewritten through another

    def add(self, change: Change) -> int:
        """List a change; its index, or -2 once the budget is spent (not listed: the set is incomplete)."""
        self.budget[0] -= 1
        if self.budget[0] < 0:
            return -2
        self.out.append(change)
        return len(self.out) - 1

    def note(self, path: str, st: os.stat_result, index: int, real: os.stat_result | None, same: bool,
             origin: bool) -> None:  # fmt: skip
        """An upper regular file: its names are matched up once the walk is over (hard links, moves)."""
        if index == -2:
            return  # not listed (too many paths): nothing of it is matched up
        real_file = real if real is not None and stat.S_ISREG(real.st_mode) else None
        self.inodes.setdefault(st.st_ino, []).append(_Name(path, index, real_file, same, origin))

    def deleted_meanwhile(self) -> None:
        """A file the command copied up (it was in the real tree then) that is not there any more, in a directory
        someone else changed while the command ran, and that is no rename of the command's (no file it deleted holds
        its bytes, mode and attributes): someone deleted it meanwhile. A conflict then, not a creation; where the
        command never wrote it (its time is from before the command started), a conflict of its mode or
        attributes, with no copy."""
        if not self.started_ns:
            return
        # (Not by a running job's earlier look: the directory as that left it is the job's own.)
        changed = {t.path if t.path != ROOT else "" for t in self.times
                   if t.ctime_ns > self.started_ns and self.looked.get(t.path) != t.ctime_ns}  # fmt: skip
        now = os.fstat(self.real_root).st_ctime_ns
        if now > self.started_ns and self.looked.get(ROOT) != now:
            changed.add("")  # the root itself (whose time is known only where the copy's mount says it)
        if not changed:
            return
        deleted = [c.path for c in self.out if c.action == "delete" and c.kind == "file"]
        for index, change in enumerate(self.out):
            if change.action != "create" or not change.origin or change.top or change.moved_from or change.link:
                continue
            if change.path.rpartition("/")[0] not in changed:
                continue  # nobody else changed its directory
            upper = self.upper_stat(change.path)
            if upper is not None and any(self.same_file(change.path, path, upper) for path in deleted
                                         if (self.real_stat(path) or upper).st_size == upper.st_size):  # fmt: skip
                continue  # a file the command renamed here (its bytes, mode and attributes: one it deleted)
            if change.kind == "file" and upper is not None and upper.st_mtime_ns < self.started_ns:
                # Copied up for a mode, an attribute or a rename and never written (a write sets its time to now):
                # nothing of the command's to keep beside it; its change of a file no longer there is a conflict
                # of its own, as if the deletion came first. (``mv a b`` while another call deletes ``a`` looks the
                # same on the copy as ``chmod 600 a && rm c`` while it deletes ``a`` and ``c``: a file is never
                # brought back.)
                self.out[index] = replace(change, action="meta", old_mode=change.mode, mtime_ns=upper.st_mtime_ns,
                                          old_mtime_ns=upper.st_mtime_ns)  # fmt: skip
                continue
            self.out[index] = replace(change, gone=True)

    def links(self) -> None:
        """Match up the names of upper files (the module docstring: hard links, rewrites, moves of linked files)."""
        wanted: dict[int, list[_Name]] = {}  # real inodes with other names, whose names the root must show
        # A name the box's rename helper says the real file was renamed away from holds a new file of the command's,
        # not the real file rewritten (``mv app.log app.log.1 && echo x >> app.log.1 && echo fresh > app.log``: red
        # team 16 F2).
        gone_from = self.renamed_away()
        # A file in a tree the command made that the box's rename helper says came from a file with several names
        # (``mkdir e && mv h1 e/n && echo z >> e/n``): matched up like any other.
        for path, index, ino in [s for s in self.single if s[0] in self.origins]:
            self.inodes.setdefault(ino, []).append(_Name(path, index, None, False, False))
        self.single = [s for s in self.single if s[0] not in self.origins]
        for names in self.inodes.values():
            kept = [n for n in names if n.same and n.real is not None]
            held = {self.held.get(n.path) for n in names}
            anchor = next((n for n in kept if n.path in held), kept[0] if kept else None)
            if anchor is not None:
                assert anchor.real is not None
                # Which of two equal files became a name of the other the copy cannot say, unless the init said which
                # (``rm a && ln c a``), or neither has names elsewhere (they would change with it: red team 4 F2).
                single = all(n.real is not None and n.real.st_nlink == 1 for n in kept)
                for other in names:
                    if other is anchor or (other.real is not None and other.real.st_ino == anchor.real.st_ino):
                        continue  # already that file's name: its metadata change (if any) stays
                    if other.index < 0 and other.real and (single or self.held.get(other.path) == anchor.path):
                        # A real file left with the same bytes and metadata, now a name of another (``rm a && ln b
                        # a`` of two equal files, a dedup tool): natively one file then (red team 40s F9).
                        other.index = self.add(_relinked(other.path, other.real, anchor.path))
                    if other.index >= 0:
                        self.out[other.index] = replace(self.out[other.index], link=anchor.path)
                continue
            for one in names:
                linked = one.real is not None and one.real.st_nlink > 1 and not one.origin and one.index >= 0
                if (came := self.came_from(one)) is not None:
                    wanted.setdefault(came.st_ino, []).append(replace(one, real=came))
                elif (linked and one.real is not None and not self.renamed_here(one.path) and one.path not in gone_from
                      and one.path not in self.renamed and one.path not in self.remade):  # fmt: skip
                    # (A file the box renamed there replaced the name, ``sed -i``, an editor's save, or one made again,
                    # ``rm h1 && cp -p b h1``: natively the file's other names keep it as it was — red team 17.)
                    wanted.setdefault(one.real.st_ino, []).append(one)
        moved, pending, reused = self.moves()
        for ino, taken in reused.items():
            kept_names = [n for n in wanted.get(ino, []) if n.path not in taken.olds]
            if not kept_names and self.copied(ino, taken):
                # Copied before it was rewritten in place (``cp -p app.log app.log.1 && truncate -s 0 app.log``: red
                # team 17 F2): the copy keeps the old bytes, the file and its other names get the new ones.
                continue
            if not kept_names:
                # Its bytes went to the name that has new ones: that name was replaced (``mv h1 n && echo new > h1``).
                wanted.pop(ino, None)
                continue
            wanted[ino] = kept_names  # rewritten through a name it kept: its other names get the new bytes
            self.rewritten_taken(ino, taken, kept_names[0].path, moved, pending)
        shared: dict[int, list[int]] = {}  # files deleted or replaced that have other names: which stays, for undo
        created = {c.path: i for i, c in enumerate(self.out) if c.action == "create" and c.opaque}
        for index, change in enumerate(self.out):
            replaced = change.top == change.path  # a file the command replaced with a directory
            if (
                change.action in ("delete", "modify")
                and change.kind != "dir"
                and (not change.top or replaced)
                and not change.link
                and change.path not in moved
            ):
                real = self.real_stat(change.path)
                if real is not None and real.st_nlink > 1:
                    shared.setdefault(real.st_ino, []).append(created[change.path] if replaced else index)
        if wanted or shared or pending or self.shared_meta:
            self.names_elsewhere(wanted, shared, pending)

    def moves(self) -> tuple[set[str], dict[int, list[int]], dict[int, _Taken]]:
        """A file of the command's that is a real file with other names it renamed (``mv h1 n`` with ``h2`` a hard
        link of it; a swap through a temporary name): same bytes, mode, time and attributes as the real file at a
        name the command deleted or replaced. Where that name is simply gone, the real file is renamed; else the
        path becomes another name of it (inside a tree the command made: of a name of it that stays, once the tree
        is in place). Either way its names stay one inode. Returns the names renamed away, the paths inside trees
        waiting for a name that stays (by real inode), and the real inodes found elsewhere so (their names taken
        away, and the changes made names of them as they were before).

        (A copy that keeps every attribute, ``cp -a h1 n && rm h1``, looks the same on the copy, and lands as a
        rename: overlayfs keeps no trace of which it was for a file with several names.)"""
        moved: set[str] = set()
        pending: dict[int, list[int]] = {}
        reused: dict[int, _Taken] = {}
        lost: dict[tuple[int, int], list[tuple[Change, int]]] = {}
        # A name another file was renamed over (``sed -i h1``) lost a file that went nowhere (red team 18: a ``cp -p``
        # of it, of a git hook too, was taken for it) unless the box's helper said it went (or said nothing).
        away = {source for path, (source, _ino) in self.origins.items() if path != source}
        for change in self.out:
            replaced = change.top == change.path  # a file the command replaced with a directory
            if change.over and self.origins_known and change.path not in away:
                continue
            # (Replaced by a symlink too: ``ln h2 n && mv -f link h2`` — ``n`` is still a name of h2's old file.)
            if change.kind != "dir" and (not change.top or replaced) and change.action in ("delete", "modify"):
                real = self.real_stat(change.path)
                if real is not None and stat.S_ISREG(real.st_mode) and real.st_nlink > 1:
                    lost.setdefault((real.st_size, real.st_mtime_ns), []).append((change, real.st_ino))
        for index, real in self.tree_linked:  # a name in a tree the command deleted (or renamed: ``mv d d2``)
            lost.setdefault((real.st_size, real.st_mtime_ns), []).append((self.out[index], real.st_ino))
        if not lost:
            return moved, pending, reused
        for candidates in lost.values():
            # A name the command deleted before one it rewrote or replaced: of two names of one file, ``mv h2 n &&
            # echo z >> h1`` took h2 away and kept h1 (red team 11 F6).
            candidates.sort(key=lambda found: found[0].action != "delete")
        for path, index, ino in self.single:
            self.inodes.setdefault(ino, []).append(_Name(path, index, None, False, False))
        self.single.clear()

        # The names the box's tree moves made first: a ``cp -a`` of the tree (same bytes, mode and times) is a copy.
        # (Then those the box's rename helper says came from a file with several names: ``cp -p h1 bak && mv h1 n``
        # took h1 over by n, not by the copy.)
        def first(upper_ino: int) -> tuple[bool, bool]:
            return upper_ino not in self.moved, not any(n.path in self.origins for n in self.inodes[upper_ino])

        for upper_ino in sorted(self.inodes, key=first):
            found = self.inodes[upper_ino]
            if any(n.same or n.origin or n.index < 0 for n in found):
                continue
            # One name of the upper file is where the real file goes (the first outside a tree the command made);
            # its other names become names of that.
            names = sorted(found, key=lambda n: bool(self.out[n.index].top))
            one = names[0]
            change = self.out[one.index]
            upper = self.upper_stat(one.path)
            if upper is None or change.action not in ("create", "modify"):
                continue
            matches = lost.get((upper.st_size, upper.st_mtime_ns), [])
            for position, (old, ino) in enumerate(matches[:_MOVE_CANDIDATES]):
                # The same path is another file only where a tree replaced it (``mv d d2 && mv d2 d``).
                if (old.path == one.path and not change.top) or not self.same_file(one.path, old.path, upper):
                    continue
                del matches[position]  # one name of the real file taken over per name the command took away
                taken = reused.setdefault(ino, _Taken())
                taken.olds.setdefault(old.path, []).extend((n.index, self.out[n.index]) for n in names)
                if upper_ino in self.moved:
                    taken.by_box.add(old.path)
                if change.top:
                    pending.setdefault(ino, []).extend(n.index for n in names)
                    self.old_names.setdefault(ino, old.path)
                    break
                self.landed.setdefault(ino, one.path)  # where the real file is once moves are done
                if change.opaque:
                    # In place of what the command replaced (a directory: ``rm -r d; mv h2 d``): that goes first,
                    # then the name is made, while the old name is still there (names are deleted last).
                    self.out[one.index] = replace(change, link=old.path)
                elif change.action == "create" and old.action == "delete" and not old.top and old.path not in moved:
                    self.out[one.index] = replace(change, moved_from=old.path, origin=True)
                    moved.add(old.path)
                else:
                    self.out[one.index] = replace(change, link=old.path, link_old=True)
                for other in names[1:]:
                    self.out[other.index] = replace(self.out[other.index], link=one.path)
                break
        return moved, pending, reused

    def copied(self, ino: int, taken: _Taken) -> bool:
        """Whether the names that took over real file ``ino``'s bytes are copies, not renames: the box's rename helper
        said its renames and named none of them, and no tree move of the box made them."""
        if not self.origins_known or taken.by_box:
            return False
        return not any(self.origins.get(b.path, ("", 0))[1] == ino for names in taken.olds.values() for _i, b in names)

    def renamed_away(self) -> set[str]:
        """Paths the box's rename helper says a real file with several names was renamed away from, and that no such
        file was renamed to after (``mv h1 n && mv h2 h1``): what is there now is another file."""
        return {source for path, (source, _ino) in self.origins.items() if path != source} - set(self.origins)

    def rewritten_taken(self, ino: int, taken: _Taken, rewritten: str, moved: set[str],
                        pending: dict[int, list[int]]) -> None:  # fmt: skip
        """The names a real file rewritten through ``rewritten`` had taken over (``moves``). One the box's rename
        helper says is a rename of it (``mv h2 d/n && echo z >> h1``: red team 11 F6) is a name of the rewritten
        file, as natively. Any other is taken for a copy that kept the file's time (``cp -p h1 h1.bak && rm h1 &&
        echo edited > h2``: the copy keeps the old bytes, red team 16 F1): the real file as it was goes there —
        renamed, or, in a tree the command made, linked before anything is applied — while its other names get the
        new bytes. Where the two cannot be told apart, both versions are kept; none is lost."""
        for old, names in taken.olds.items():
            if old in taken.by_box or any(self.origins.get(before.path, ("", 0))[1] == ino for _i, before in names):
                moved.discard(old)
                for index, before in names:
                    self.out[index] = replace(before, link=rewritten, link_old=False, moved_from="")
                if ino in pending:
                    pending[ino] = [i for i in pending[ino] if all(i != index for index, _before in names)]
            elif names and names[0][1].top:
                for index, before in names:
                    self.out[index] = replace(before, link=old, link_old=True)
                if ino in pending:
                    pending[ino] = [i for i in pending[ino] if all(i != index for index, _before in names)]
        if ino in pending and not pending[ino]:
            del pending[ino]

    def came_from(self, name: _Name) -> os.stat_result | None:
        """The real file with several names that a new file of the command's is, renamed and then changed (``mv h1 n
        && echo z >> n``: the box's rename handler said where it came from, ``Renamed.origins``): its other names
        get the change too, as natively — also where it was renamed over another file (``mv h1 o.txt && echo z >>
        o.txt``). Only where the real file is still at that name with the inode the copy showed there (it was the
        project's file, not one the command made), the command took that name away, and the file is not the real
        one as it was — bytes, mode, attributes and time (that lands as a rename: ``moves``)."""
        if name.index < 0 or name.path not in self.origins:
            return None
        source, ino = self.origins[name.path]
        if name.real is not None and name.real.st_ino == ino and source != name.path:
            return None  # a name of that very file (the rename did nothing natively)
        real = self.real_stat(source)
        if real is None or not stat.S_ISREG(real.st_mode) or real.st_ino != ino or real.st_nlink < 2:
            return None
        if source not in self.touched or self.out[name.index].action not in ("create", "modify"):
            return None
        upper = self.upper_stat(name.path)
        if upper is None:
            return None
        if upper.st_mtime_ns == real.st_mtime_ns and self.same_file(name.path, source, upper):
            return None
        return real

    def renamed_here(self, path: str) -> bool:
        """Whether the upper file at ``path`` (in place of a real file with other names) is a real file the command
        deleted elsewhere: same bytes and modification time (``mv -f f h2``: the name is replaced, the other names
        keep the old file; its mode or attributes may have been changed on the way). Else it was rewritten through
        that name (``echo > h2``: a time of now), as its other names are natively. (``cp -a f h2 && rm f`` looks the
        same on the copy, and lands as the rename.)"""
        upper = self.upper_stat(path)
        if upper is None:
            return False
        candidates = self.gone_files.get((upper.st_size, upper.st_mtime_ns), [])
        return any(p != path and self.same_file(path, p, upper, exact=False) for p in candidates[:_MOVE_CANDIDATES])

    def same_file(self, upper_path: str, real_path: str, upper: os.stat_result, *, exact: bool = True) -> bool:
        """Whether the upper file holds the real file's bytes (and, ``exact``, its mode and attributes)."""
        real = self.real_stat(real_path)
        if real is None or (exact and stat.S_IMODE(real.st_mode) != stat.S_IMODE(upper.st_mode)):
            return False
        # Threat: a command making thousands of large files of one size and time, to have each compared with each.
        self.compared += upper.st_size
        if self.compared > _MOVE_BYTES:
            return False
        upper_at, real_at = self.parent(self.upper_root, upper_path), self.parent(self.real_root, real_path)
        with upper_at as (u_dir, u_name), real_at as (r_dir, r_name):
            if u_dir < 0 or r_dir < 0:
                return False
            if exact and seen(at(u_dir, u_name)) != seen(at(r_dir, r_name)):
                return False
            return same_bytes(u_dir, u_name, r_dir, r_name, upper.st_size)

    def names_elsewhere(
        self, wanted: dict[int, list[_Name]], shared: dict[int, list[int]], pending: dict[int, list[int]]
    ) -> None:
        """The other names of real files with several (one walk of the root). A file the command rewrote through one
        of its names (no copy-up of another file moved there: that is marked as one): its other names get the new
        file too, as they would natively — unless one of its names is outside the root (then only the rewritten
        name changes: nothing outside is written through a link). A file deleted or replaced under one name: a name
        that stays, for an undo to make the name one with it again."""
        # A name stays what it is unless the command deleted or replaced it (a mode change keeps it).
        gone = {c.path for c in self.out if c.action != "meta"}
        metas = self.shared_meta
        found = self.names_of({*wanted, *shared, *pending, *metas})

        def enough() -> bool:
            complete = all(len(found[ino]) >= names[0].real.st_nlink for ino, names in wanted.items() if names[0].real)
            complete = complete and all(len(found[ino]) >= self.nlink(indexes[0]) for ino, indexes in metas.items())
            return complete and all(any(p not in gone for p in found[ino]) for ino in (*shared, *pending))

        if not enough():
            found = self.names_of({*wanted, *shared, *pending, *metas}, everywhere=True)
        for ino, indexes in metas.items():
            if ino in wanted and len(found[ino]) == self.nlink(indexes[0]):
                self.fold_meta(wanted[ino][0], indexes)  # rewritten through one name, re-moded through another
            else:
                self.meta_names(ino, indexes, found[ino])
        for ino, indexes in shared.items():
            staying = [p for p in found[ino] if p not in gone]
            if staying:
                for index in indexes:
                    self.out[index] = replace(self.out[index], stays=staying[0])
        for ino, indexes in pending.items():
            # A name that stays; else where the file was renamed to; else a name it had (all of them in trees the
            # command moved: ``mv sp sp2 && mv d d2``): linked into the command's tree before anything moves.
            staying = [p for p in found[ino] if p not in gone] or ([self.landed[ino]] if ino in self.landed else [])
            old = not staying and ino in self.old_names  # linked in the command's tree, before anything moves
            staying = staying or ([self.old_names[ino]] if ino in self.old_names else [])
            if staying:
                for index in indexes:
                    self.out[index] = replace(self.out[index], link=staying[0], link_old=old)
        removed = {c.path for c in self.out if c.action == "delete" and c.kind == "dir"}
        # (a name made again of the file, ``ln h2 h1``, is one of it; a copy made there, ``cp -p n h1``, is not)
        relinked = {name.path for names_of in self.inodes.values() if len(names_of) > 1 for name in names_of}
        renamed_away = self.renamed_away()
        for ino, names in wanted.items():
            one = names[0]
            assert one.real is not None
            if len(found[ino]) != one.real.st_nlink:
                continue  # a name outside the root: never written through
            change = self.out[one.index]
            # Names the command left as they were on the copy (copied up for a new link: ``ln h1 n``, a mode set
            # to the one it had) are the same file natively: they get the new file too, and so do the new names made
            # of them. (A lone new file with the same bytes and times — a restore from a backup — looks the same on
            # the copy, and is taken for the file: red team 17 F1, left.)
            kept = {name.path for names_of in self.inodes.values() for name in names_of
                    if name.index < 0 and name.real is not None and name.real.st_ino == ino}  # fmt: skip
            away = renamed_away - (kept & relinked)
            for path in found[ino]:
                if path in self.folded or (path in self.touched and path not in kept) or path in away:
                    continue  # the command changed that name itself (or renamed the file away from it)
                if any(path.startswith(f"{tree}/") for tree in removed):
                    continue  # in a tree the command removed whole (``rm -r d && echo q >> h1``: red team 11 F5)
                self.add(Change(path, "modify", "file", size=change.size, old_size=one.real.st_size, mode=change.mode,
                                old_mode=stat.S_IMODE(one.real.st_mode), link=one.path))  # fmt: skip
            for index, other in enumerate(self.out):
                if other.link in kept and not other.link_old:
                    self.out[index] = replace(other, link=one.path)

    def nlink(self, index: int) -> int:
        real = self.real_stat(self.out[index].path)
        return real.st_nlink if real is not None else 1

    def meta_names(self, ino: int, indexes: list[int], names: list[str]) -> None:
        """A mode, time or attribute change of a file with several names reaches each of them, natively and here:
        each name is a change of its own, judged together (one refused, all are). Where a name is outside the root
        (or too far to find), none is changed so: the name the command used gets a file of its own instead (its
        link broken), and nothing outside is written through a link."""
        if len(names) < self.nlink(indexes[0]):
            for index in indexes:
                self.out[index] = replace(self.out[index], action="modify")
            return
        first = self.combined(indexes)
        for index in indexes:
            self.out[index] = replace(first, path=self.out[index].path, inode=ino)
        changed = {self.out[index].path for index in indexes}
        for path in names:
            if path not in changed and path not in self.touched:
                self.add(replace(first, path=path, inode=ino))

    def combined(self, indexes: list[int]) -> Change:
        """One file changed in place through several of its names (``chmod 600 h1 && touch -d 2001 h2``): the copy
        shows each name as a file of its own, each with one change; natively every change reaches the one file.
        What lands is each change made to the file as it was; where two names changed the same thing (the mode, the
        modification time, an attribute), the copy cannot say which came last: the name whose copy changed last
        (its change time) wins."""
        changes = sorted((self.out[i] for i in indexes), key=lambda c: self.changed_at(c.path))
        first = changes[0]
        mode, mtime, attributes = first.old_mode, first.old_mtime_ns, dict(first.old_xattrs)
        for change in changes:
            mode = change.mode if change.mode != change.old_mode else mode
            mtime = change.mtime_ns if change.mtime_ns != change.old_mtime_ns else mtime
            now, before = dict(change.xattrs), dict(change.old_xattrs)
            for name in before.keys() - now.keys():
                attributes.pop(name, None)
            attributes.update((name, value) for name, value in now.items() if before.get(name) != value)
        return replace(first, mode=mode, mtime_ns=mtime, xattrs=tuple(sorted(attributes.items())))

    def changed_at(self, path: str) -> int:
        upper = self.upper_stat(path)
        return upper.st_ctime_ns if upper is not None else 0

    def fold_meta(self, rewritten: _Name, indexes: list[int]) -> None:
        """A file rewritten through one name (``echo >> h1``) whose mode, time or attributes the command changed
        through another (``chmod 600 h2``): natively one file has both. The rewritten copy is given the other
        names' changes (the later over the earlier, as :meth:`combined`), and those names become names of it."""
        base = self.out[rewritten.index]
        with self.parent(self.upper_root, rewritten.path) as (fd, name):
            if fd < 0:
                return
            upper = lstat(name, fd)
            if upper is None or not stat.S_ISREG(upper.st_mode):
                return
            # (what the file was: the real file's mode, also where the name is new — renamed there, ``came_from``)
            was = stat.S_IMODE(rewritten.real.st_mode) if rewritten.real is not None else base.old_mode
            own = Change(base.path, "meta", "file", mode=stat.S_IMODE(upper.st_mode), old_mode=was,
                         mtime_ns=upper.st_mtime_ns, old_mtime_ns=self.out[indexes[0]].old_mtime_ns,
                         xattrs=seen(at(fd, name)), old_xattrs=self.out[indexes[0]].old_xattrs)  # fmt: skip
            self.out.append(own)  # only to merge: taken away again below
            try:
                want = self.combined([*indexes, len(self.out) - 1])
            finally:
                self.out.pop()
            # The command has ended (or, for a job's look, its copy shows the same file natively would): its
            # upper file is set once, through a descriptor of the very inode looked at, never a path that could be
            # a link.
            try:
                set_meta(fd, name, upper, want.mode, want.mtime_ns, want.xattrs, own.xattrs)
            except Changed:
                return  # a running job swapped it meanwhile: the names land as they are; the next look sees again
        self.out[rewritten.index] = replace(base, mode=want.mode)
        for index in indexes:
            change = self.out[index]
            self.out[index] = replace(change, action="modify", size=base.size, mode=want.mode, link=rewritten.path,
                                      mtime_ns=0, old_mtime_ns=0, xattrs=(), old_xattrs=())  # fmt: skip
            self.folded.add(change.path)

    def names_of(self, inodes: set[int], *, everywhere: bool = False) -> dict[int, list[str]]:
        """The names of real files ``inodes`` in the directories the command touched; ``everywhere``: in the whole
        root, at most WALK_ENTRIES paths (past that, none: no name is taken for all of them)."""
        found: dict[int, list[str]] = {ino: [] for ino in inodes}
        if everywhere:
            budget = [WALK_ENTRIES]
            for path, st in walk_real(self.real_root, "", budget):  # (within ``upper.read_upper``'s own scope)
                if st.st_ino in found and stat.S_ISREG(st.st_mode) and path not in self.skip:
                    found[st.st_ino].append(path)
            return found if budget[0] >= 0 else {ino: [] for ino in inodes}
        for directory in sorted({p.rpartition("/")[0] for p in self.touched} | {""}):
            with self.parent(self.real_root, f"{directory}/." if directory else ".") as (fd, _name):
                if fd < 0:
                    continue
                with contextlib.suppress(OSError):
                    for name in listing(fd):
                        path = f"{directory}/{name}" if directory else name
                        entry = lstat(name, fd)
                        if entry is None or entry.st_ino not in found or path in self.skip:
                            continue
                        if stat.S_ISREG(entry.st_mode):
                            found[entry.st_ino].append(path)
        return found

    @contextlib.contextmanager
    def parent(self, base: int, path: str) -> Iterator[tuple[int, str]]:
        directory, _, name = path.rpartition("/")
        fd = base
        opened: list[int] = []
        try:
            for part in [p for p in directory.split("/") if p]:
                nxt = open_dir(part, fd)
                if nxt is None:
                    yield -1, name
                    return
                opened.append(nxt)
                fd = nxt
            yield fd, name
        finally:
            for fd in opened:
                os.close(fd)

    def real_stat(self, path: str) -> os.stat_result | None:
        with self.parent(self.real_root, path) as (fd, name):
            return lstat(name, fd) if fd >= 0 else None

    def upper_stat(self, path: str) -> os.stat_result | None:
        with self.parent(self.upper_root, path) as (fd, name):
            return lstat(name, fd) if fd >= 0 else None
