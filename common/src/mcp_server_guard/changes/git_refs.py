"""What git would write into the work tree later, from the refs, the stash and the index a command left.

Threat (red team 74 F2): a path the judgement refuses in the work tree (a hook of ``core.hooksPath = .githooks``,
``.envrc``, ``.vscode/tasks.json``) committed instead — with git's plumbing, the work tree never touched — onto a
branch, a tag, the stash or the index: the user's own ``git checkout``, ``stash pop``, ``reset --hard`` or
``checkout -- .`` then writes it, outside the box, and git may run it at once (``post-checkout``). So a ref a
command makes or moves (``refs/**``, ``packed-refs``, ``HEAD`` and the other ``*_HEAD`` files) and the index are
judged by what they would write: the paths whose content differs from what the user has (the commit ``HEAD``
names, and what the ref named before), each judged as a write of that path would be. One that would be refused
is asked (with the reason); one whose objects cannot be read whole is asked too. So is a new pack that gives an
object the repository had other content (git reads packs first: a substitute moves no ref). Git's objects are read
by the server (``changes.git_objects``), no git program runs.

Every git dir with a work tree is judged so: ``<dir>/.git``, a linked work tree's (``.git/worktrees/<name>``: its
HEAD and index its own, its refs and objects the common dir's), a submodule's (``.git/modules/<name>``, its work
tree where ``core.worktree`` says), one a ``.git`` file names (``--separate-git-dir``: a ``.git`` file at the root's
top or beside it) — a work tree outside the root judged by its paths' names. A bare repository has no checkout of
its own (what a user fetches from one is the fetch's business).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import re
import stat
import struct
from dataclasses import dataclass

from mcp_server_guard.changes.changeset import ChangeSet
from mcp_server_guard.changes.git_cache_tree import CacheTreeUnreadable, cache_tree_lies
from mcp_server_guard.changes.git_graphs import graph_lies_in
from mcp_server_guard.changes.git_index import blob_hash, index_entries, split_index
from mcp_server_guard.changes.git_layout import Layout, id_width, layout_of, packed_refs, refs_of, resolve_ref
from mcp_server_guard.changes.git_objects import (
    Objects,
    Unreadable,
    changed_entries,
    entries,
    object_id,
    parents_of,
    shadowed,
    tree_of,
)
from mcp_server_guard.changes.git_state_files import (
    KNOWN,
    REPLAYS,
    am_patches,
    ids_only,
    lfs_object_as_named,
    shallow_cuts,
    unknown_question,
)
from mcp_server_guard.changes.git_upstreams import LEGACY_REMOTE, legacy_remote_question, upstream_questions
from mcp_server_guard.changes.git_verdicts import Trees, pointer_place, root_relative
from mcp_server_guard.paths import printable, within_any

__all__ = ["Later", "in_git_state", "may_be_git_state", "ref_questions"]

_HEADS = frozenset({"HEAD", "ORIG_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "AUTO_MERGE", "BISECT_HEAD",
                    "REBASE_HEAD"})  # fmt: skip
_SHOWN = 3  # paths named in a question, at most
# Files whose text names commits git may check out later, by id anywhere in a line (red team 76): the reflogs
# (``checkout -``, ``HEAD@{1}``), FETCH_HEAD, a rebase's or a cherry-pick's state (its todo's picks: ids abbreviated).
_MENTIONS = re.compile(r"^(?:logs/.+|FETCH_HEAD|(?:rebase-merge|rebase-apply|sequencer)/.+)$")
_TOKEN = re.compile(rb"(?<![0-9a-zA-Z])[0-9a-fA-F]{7,64}(?![0-9a-zA-Z])")
# A rebase's todo takes ids abbreviated down to 4 digits (red team 79 F3: `pick 1a2b`).
_SHORT = re.compile(rb"(?<![0-9a-zA-Z])[0-9a-fA-F]{4,64}(?![0-9a-zA-Z])")
_MENTIONED = 256  # ids a judgement follows from such files, at most


def _rewritten_shared_index(action: str, rest: str) -> bool:
    """A split index's shared part changed where it is. Threat (red team 110 F4): git never rewrites one (a new one
    gets a new name, and the index that links to it is judged), so its entries changed in place — ``.envrc`` staged —
    are what the user's ``git checkout -- .`` writes, with ``.git/index`` untouched."""
    return action == "modify" and rest.startswith("sharedindex.")


def _judged(rest: str) -> bool:
    return (rest in _HEADS or rest in ("packed-refs", "index") or rest.startswith("refs/")
            or bool(_MENTIONS.match(rest)) or (rest.startswith("objects/pack/") and rest.endswith(".idx"))
            or bool(_GRAPHS.match(rest)))  # fmt: skip


_GRAPHS = re.compile(r"^objects/info/(?:commit-graph|commit-graphs/graph-[0-9a-f]+\.graph)$")


@dataclass(frozen=True)
class Later:
    """What the user's git would write into the work tree later, for ``what`` (a ref, the index, the stash): the
    root-relative ``path`` with git's ``mode`` (``0o100644``, ``0o100755``, ``0o120000``) and the bytes ``data``;
    ``same``: the tree already holds those very bytes there — the command wrote them (judged as that write) or the
    user's own are unchanged (nothing new to write) — ``data`` then not read."""

    what: str
    path: str
    mode: int
    data: bytes
    same: bool = False


def ref_questions(changes: ChangeSet, trees: Trees) -> tuple[list[str], list[Later]]:
    """What the refs, the stash and the index ``changes`` leave would write into the work tree later (each such
    path once per content, judged by the caller as a write of it would be), and the questions for what could not
    be read so (or that git reads for other objects: a replace ref, an am session's patches)."""
    found: dict[str, set[str]] = {}
    unknown: dict[str, set[str]] = {}
    shallow: set[str] = set()  # git dirs whose ``shallow`` the call wrote
    upstreams: list[str] = []  # questions for the upstreams a config gains
    for change in changes.changes:
        if change.kind == "dir" or not may_be_git_state(change.path):
            continue
        # The nearest git dir: ``<dir>/.git``, a linked work tree's (``.git/worktrees/<name>``), a submodule's
        # (``.git/modules/<name>``) or one a ``.git`` file names — each one's refs and index are checked out later.
        git_dir = trees.git_dir_of(posixpath.dirname(change.path))
        if git_dir is None:
            continue
        rest = change.path[len(git_dir) + 1 :]
        if rest in ("config", "config.worktree") and change.action != "delete" and change.kind == "file":
            upstreams += upstream_questions(trees, change.path)
        if LEGACY_REMOTE.match(rest) and change.action != "delete":
            upstreams.append(legacy_remote_question(change.path))
            continue
        if _judged(rest) and (change.action != "delete" or rest.startswith("refs/")):  # (a deleted loose ref: what
            found.setdefault(git_dir, set()).add(rest)  # packed-refs says then, red team 76 F8)
        elif rest == "shallow" and change.action != "delete":
            shallow.add(git_dir)
        elif change.action != "delete" and (not KNOWN.match(rest) or _rewritten_shared_index(change.action, rest)):
            # Threat (red team 80 F2, F5): state git reads later to fill the work tree, named one file at a time
            # (MERGE_AUTOSTASH, BISECT_START, rerere's resolutions …): a file the judgement does not know is asked,
            # but for one that only names commits (followed, judged as their checkout).
            unknown.setdefault(git_dir, set()).add(rest)
            found.setdefault(git_dir, set())
    asks: list[str] = upstreams
    for git_dir in sorted(shallow):
        layout = layout_of(trees, git_dir)
        asks += (
            shallow_cuts(trees, layout, "shallow") if layout is not None else [unknown_question(git_dir, ["shallow"])]
        )
    later = _Laters(trees)
    for git_dir, names in sorted(found.items()):
        layout = layout_of(trees, git_dir)
        if layout is not None:
            asks += _questions(changes, trees, layout, names | unknown.get(git_dir, set()), later)
        elif unknown.get(git_dir):
            asks.append(unknown_question(git_dir, sorted(unknown[git_dir])))
    done: set[tuple[str, bytes]] = set()
    while later.gitlinks and len(done) < _HISTORY:  # (a submodule's own submodules in turn)
        whose, path, oid = later.gitlinks.pop()
        if (path, oid) not in done:
            done.add((path, oid))
            asks += _submodule(changes, trees, whose, path, oid, later)
    return asks, later.found


def _submodule(changes: ChangeSet, trees: Trees, whose: Layout, path: str, oid: bytes, later: _Laters) -> list[str]:
    """What ``git submodule update`` writes for a gitlink the command set to ``oid`` at ``path``: that commit's tree
    in the submodule's work tree, from the submodule's git dir (red team 80 F1: a commit put in
    ``.git/modules/<name>/objects`` alone, no ref of the submodule moved). A commit the submodule's git dir does not
    have is fetched from its remote at the update: upstream's, as a fetch's content is."""
    dotgit = f"{path}/.git"
    if trees.kind(dotgit) == "file":
        place = pointer_place(trees, dotgit, True)
        git_dir = root_relative(place, changes.root) if place and within_any(place, [changes.root]) else None
    elif trees.kind(dotgit) == "dir":
        git_dir = dotgit
    else:
        git_dir = f"{whose.common}/modules/{path[len(whose.top) + 1 :] if whose.top else path}"
    layout = layout_of(trees, git_dir) if git_dir is not None and trees.is_git_dir(git_dir) else None
    if layout is None:
        return []
    objects = trees.objects(f"{layout.common}/objects")
    try:
        if not objects.has(oid):
            return []
        head = refs_of(trees, layout, set(), real=True).get("HEAD")
        bases = [tree_of(objects, head)] if head is not None and objects.has(head) else []
        label = f"the commit {whose.shown} records for {path}"
        later.add(objects, layout, label, _written(objects, "", oid, None, bases))
    except Unreadable as exc:
        return [printable(f"It sets {whose.shown}'s submodule {path} to a commit the server could not read whole "
                          f"({exc}): what your next git submodule update writes could not be judged.")]  # fmt: skip
    finally:
        objects.close()
    return []


class _Laters:
    """Collects each (path, mode, content) a later checkout writes once (a commit named by its ref and its reflogs,
    a file the same in the index and the branch)."""

    def __init__(self, trees: Trees) -> None:
        self.trees = trees
        self.found: list[Later] = []
        self.gitlinks: list[tuple[Layout, str, bytes]] = []  # (whose, the submodule's path, its commit)
        self._seen: set[tuple[str, int, bytes]] = set()

    def add(self, objects: Objects, where: Layout, what: str, written: list[tuple[str, int, bytes]]) -> None:
        width = id_width(self.trees, where.common)
        for path, mode, oid in written:
            rel = posixpath.join(where.top, path) if where.top else path
            if (rel, mode, oid) in self._seen:
                continue
            self._seen.add((rel, mode, oid))
            if mode == _GITLINK:  # (a submodule's commit: its `git submodule update` writes that commit's tree)
                self.gitlinks.append((where, rel, oid))
                continue
            # A file the command wrote with those very bytes was judged as that write (a commit of 100 files: no
            # second reading of their objects).
            if self._wrote(rel, mode, oid, width):
                self.found.append(Later(what, rel, mode, b"", same=True))
                continue
            kind, data = objects.get(oid)
            if kind != "blob":
                raise Unreadable(f"{path} names a {kind}")
            self.found.append(Later(what, rel, mode, self._lfs(where, path, data)))

    def _lfs(self, where: Layout, path: str, data: bytes) -> bytes:
        """What git-lfs's smudge filter writes for a pointer blob: the object in ``lfs/objects`` when the repository
        has it (checked against its id), else the pointer. Threat (red team 79's note): a pointer committed for
        package.json and an object the command planted in .git/lfs: the user's checkout writes the object's bytes,
        not the blob's."""
        found = _LFS.match(data) if len(data) < 1024 else None
        if found is None:
            return data
        hexid = found.group(1).decode()
        stored = self.trees.read(f"{where.common}/lfs/objects/{hexid[:2]}/{hexid[2:4]}/{hexid}", limit=64 << 20)
        if stored is None:
            return data  # (fetched from the remote at checkout: upstream's, as a fetch's content is)
        if hashlib.sha256(stored).hexdigest() != hexid:
            raise Unreadable(f"the LFS object for {path} is not what its id says")
        return stored

    def _wrote(self, rel: str, mode: int, oid: bytes, width: int) -> bool:
        """Whether the tree as the command leaves it holds those very bytes at ``rel``, as a file of that kind and
        exec bit: written so by the command (judged as that write), or the user's own, unchanged (``git add -A &&
        git commit`` of their edits: a checkout writes nothing new there). Read with no link followed."""
        change = self.trees.by_path.get(rel)
        if change is not None and change.action == "delete":
            return False
        base = self.trees.changes.upper if change is not None else self.trees.changes.root
        directory, _, name = rel.rpartition("/")
        fd = self.trees.open_dir(base, directory)
        if fd is None:
            return False
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if mode == _LINK:
                if not stat.S_ISLNK(st.st_mode):
                    return False
                return object_id("blob", os.fsencode(os.readlink(name, dir_fd=fd)), width) == oid
        except OSError:
            return False
        finally:
            os.close(fd)
        if not stat.S_ISREG(st.st_mode) or bool(st.st_mode & 0o100) != (mode == _EXECUTABLE):
            return False
        return blob_hash(posixpath.join(base, rel), base, sha256=width == 32) == oid


_GITLINK, _LINK, _EXECUTABLE = 0o160000, 0o120000, 0o100755
# A git-lfs pointer (its keys sorted, ``version`` first): the object it names is what a checkout writes.
_LFS = re.compile(
    rb"^version https://git-lfs\.github\.com/spec/v1\n(?:[a-z0-9.-]+ [^\n]*\n)*?oid sha256:([0-9a-f]{64})\n"
)


# Paths that may be a ref, a reflog, the index or git's object bookkeeping (only these look for their git dir).
_CANDIDATE = re.compile(r"(?:^|/)(?:refs|logs|objects|rebase-merge|rebase-apply|sequencer)/|"
                        r"(?:^|/)(?:[A-Z_]*HEAD|packed-refs|index)$")  # fmt: skip


def in_git_state(trees: Trees, path: str) -> bool:
    """Whether ``path`` lies in a git dir (as the change set leaves the tree): a file of git's state."""
    return may_be_git_state(path) and trees.git_dir_of(posixpath.dirname(path)) is not None


def may_be_git_state(path: str) -> bool:
    """Whether ``path`` may be a ref, a reflog, the index or git's object bookkeeping of some git dir, or lies in a
    ``.git`` directory (every file of git's state is judged, or asked)."""
    return bool(_CANDIDATE.search(path)) or "/.git/" in f"/{path}/"


def _questions(changes: ChangeSet, trees: Trees, where: Layout, names: set[str], later: _Laters) -> list[str]:
    git_dir, top = where.own, where.top
    objects = trees.objects(f"{where.common}/objects")
    real = trees.open_dir(changes.root, f"{where.common}/objects")
    had = Objects([real] if real is not None else [])  # (the repository before the call: its commits are the user's)
    asks: list[str] = []
    try:
        judged = {n for n in names if _judged(n)}  # (not the unknown state files: read below, for what they name)
        refs_now, refs_then = refs_of(trees, where, judged, real=False), refs_of(trees, where, judged, real=True)
        head = refs_then.get("HEAD")
        if head is None and where.common != git_dir:  # (a new linked work tree: what the main checkout has)
            head = refs_of(trees, Layout(where.common, where.common, top, ""), set(), real=True).get("HEAD")
        try:
            bases = [tree_of(objects, head)] if head is not None else []
        except Unreadable:
            bases = []  # (the user's checkout cannot be read: every path a ref names is new to it)
        moved: list[tuple[str, bytes | None, bytes | None]] = [
            (ref, oid, refs_then.get(ref)) for ref, oid in sorted(refs_now.items()) if refs_then.get(ref) != oid
        ]
        # A changed ref the server cannot read as git would (red team 76 F3: spellings git accepts): asked.
        moved += [
            (ref, None, None)
            for ref in sorted(names)
            if ref.startswith("refs/")
            and ref not in refs_now
            and resolve_ref(trees, where, ref, {}, False) is None
            and trees.read(f"{git_dir}/{ref}") is not None
        ]
        named, said = _named(trees, where, names, objects)
        moved += named
        asks += said
        seen: set[tuple[bytes | None, bytes | None]] = set()
        for ref, oid, before in moved:
            if ref.startswith("refs/replace/"):
                # Threat (red team 78 F3): git reads the replacement wherever the replaced object occurs — a tree
                # replaced under .githooks/ is written there at the next checkout, not at the top. Everyday work
                # makes no replace ref: asked.
                asks.append(printable(f"It makes git read another object in place of {ref[len('refs/replace/') :]} "
                                      f"everywhere ({_shown(where, ref)}): your next checkout of any commit that "
                                      "holds it writes what the replacement says."))  # fmt: skip
                continue
            if oid is not None and (oid, before) in seen:
                continue  # (the same commit over the same base: judged once)
            seen.add((oid, before))
            try:
                if oid is None:
                    raise Unreadable("git reads it otherwise than the server")
                later.add(objects, where, _shown(where, ref), _written(objects, ref, oid, before, bases))
                if bases and not ref.startswith("refs/remotes/"):  # (upstream's history: the fetch's, as its tip;
                    # a repository new in this call: what the user has of it is nothing, its config sanitized)
                    for commit in _new_history(objects, had, oid):
                        later.add(objects, where, f"{_shown(where, ref)} (its commit {commit.hex()[:12]})",
                                  _written(objects, ref, commit, None, bases))  # fmt: skip
            except Unreadable as exc:
                asks.append(f"It points {printable(_shown(where, ref))} at a commit the server could not read whole "
                            f"({exc}): what your next checkout of it writes could not be judged.")  # fmt: skip
        asks += am_patches(trees, where, names)
        for rest in sorted(n for n in names if n.startswith("objects/pack/")):
            asks += _substitutes(changes, trees, git_dir, rest, where.shown)
        for rest in sorted(n for n in names if _GRAPHS.match(n)):  # (written by every `git gc`: checked, not refused)
            try:
                lies = graph_lies_in(trees, git_dir, rest, objects)
            except (Unreadable, struct.error, StopIteration, IndexError, ValueError) as exc:
                asks.append(printable(f"It writes {rest} in {where.shown}, which the server could not check ({exc})."))
                continue
            if lies:
                asks.append(printable(f"It writes {rest} in {where.shown}, which gives {len(lies)} commit(s) "
                                      f"(such as {lies[0].hex()[:12]}) another tree or other parents than their own: "
                                      "your next checkout of one would write what that tree says, and your next git "
                                      "gc deletes what they no longer lead to."))  # fmt: skip
        if "index" in names:
            index = trees.read(f"{where.own}/index", limit=256 << 20) or b""  # (read once: large in large repositories)
            asks += _cache_tree(trees, where, index)
            try:
                later.add(objects, where, _shown(where, "the index"), _staged(trees, where, objects, bases, index))
            except Unreadable as exc:
                asks.append(f"It changes {printable(_shown(where, 'the index'))}, which the server could not read "
                            f"whole ({exc}): what your next checkout -- . writes could not be judged.")  # fmt: skip
    except Unreadable as exc:  # (the store itself: more packs than read, a lookup past the budget)
        asks.append(printable(f"It changes git's state in {where.shown}, whose objects the server could not read "
                              f"whole ({exc}): what your next checkout writes could not be judged."))  # fmt: skip
    finally:
        objects.close()
        had.close()
    return asks


def _named(
    trees: Trees, where: Layout, names: set[str], objects: Objects
) -> tuple[list[tuple[str, bytes | None, bytes | None]], list[str]]:
    """The commits the state files ``names`` name anew (reflogs, FETCH_HEAD, a rebase's state, and any file of
    git's the judgement does not know that only names commits: MERGE_AUTOSTASH, BISECT_START …), each judged as its
    checkout (a stash's parents too: every new commit behind it); and the questions for the other unknown files."""
    git_dir = where.own
    moved: list[tuple[str, bytes | None, bytes | None]] = []
    asks: list[str] = []
    unread = sorted(n for n in names if not _judged(n))
    packed = packed_refs(trees.read(f"{where.common}/packed-refs", limit=64 << 20) or b"") if unread else {}

    def branch(name: str) -> bool:
        return resolve_ref(trees, where, name, packed, False) is not None

    for rest in unread:
        change = trees.by_path.get(f"{git_dir}/{rest}")
        if lfs_object_as_named(trees, git_dir, rest, made=change is not None and change.action == "create"):
            continue
        data = (trees.read(f"{git_dir}/{rest}", limit=4096) if not REPLAYS.match(rest) else None) or b""
        found = ids_only(data, objects, branch)
        if found is None:
            asks.append(unknown_question(where.shown, [rest]))
            continue
        moved += [(f"{rest} (it names {oid.hex()[:12]})", oid, None) for oid in found]
    for rest in sorted(n for n in names if _MENTIONS.match(n)):
        try:
            moved += [(f"{rest} (it names {oid.hex()[:12]})", oid, None)
                      for oid in _mentioned(trees, git_dir, rest, objects)]  # fmt: skip
        except Unreadable as exc:
            asks.append(printable(f"It changes {rest} in {where.shown}, which the server could not read whole "
                                  f"({exc}): what a checkout of what it names writes was not judged."))  # fmt: skip
    return moved, asks


_HISTORY = 256  # new commits behind a ref judged, at most (more: asked)


def _new_history(objects: Objects, had: Objects, tip: bytes) -> list[bytes]:
    """The commits behind ``tip`` (every parent: a stash's index and untracked commits too) that the repository did
    not have before the call. Threat (red team 79 F4, F5): a branch whose middle commit adds a hook and whose tip
    takes it away — the user's rebase, cherry-pick or ``checkout feature~1`` writes that commit's tree; an older stash
    entry's untracked files, popped later."""
    found: list[bytes] = []
    pending, seen = list(parents_of(objects, tip)), {tip}
    while pending:
        commit = pending.pop()
        if commit in seen or had.has(commit):
            continue
        seen.add(commit)
        if len(found) == _HISTORY:
            raise Unreadable(f"more than {_HISTORY} new commits behind it")
        found.append(commit)
        pending += parents_of(objects, commit)
    return found


def _shown(where: Layout, ref: str) -> str:
    return f"{ref} of {where.shown}"


def _written(
    objects: Objects, ref: str, oid: bytes, before: bytes | None, bases: list[bytes]
) -> list[tuple[str, int, bytes]]:
    """(path, mode, id) of what a checkout of ``oid`` writes over what the user has (every base: the checkout, the
    ref before)."""
    tree = tree_of(objects, oid)
    against: list[bytes | None] = [*bases, *([tree_of(objects, before)] if before is not None else [])] or [None]
    found = changed_entries(objects, against[0], tree)
    for base in against[1:]:
        differ = {path for path, _mode, _oid in changed_entries(objects, base, tree)}
        found = [entry for entry in found if entry[0] in differ]
    if ref == "refs/stash":  # what `stash pop` writes also comes from its index and untracked commits
        for parent in parents_of(objects, oid)[1:]:
            found += changed_entries(objects, against[0], tree_of(objects, parent))
    return sorted(set(found))


_REPACKED_BYTES, _REPACKED_SECONDS = 1 << 30, 20.0  # what a new pack's check reads at most


def _substitutes(changes: ChangeSet, trees: Trees, git_dir: str, rest: str, shown: str) -> list[str]:
    """A question for a new pack that names objects with content that is not theirs (``shadowed``)."""
    if trees.real_kind(f"{git_dir}/{rest}") is not None:
        return []  # (not new: a pack changed in place is refused as such)
    packs = trees.open_dir(changes.upper, f"{git_dir}/objects/pack")
    if packs is None:
        return []
    # Every object of a new pack is read whole and hashed (a `git gc` repacks them all), within a budget of its own
    # (a project of 80 MB of objects took 1.7 s and passed the judgement's 64 MB: everyday gc was asked).
    reader = trees.objects(f"{git_dir}/objects", budget=_REPACKED_BYTES, seconds=_REPACKED_SECONDS)
    try:
        found = shadowed(reader, packs, rest.rsplit("/", 1)[-1], id_width(trees, git_dir))
    except (Unreadable, OSError, ValueError) as exc:
        return [printable(f"It adds {rest} to {shown}, whose objects the server could not check ({exc}): "
                          "git may read them for ones the repository has.")]  # fmt: skip
    finally:
        reader.close()
        os.close(packs)
    if not found:
        return []
    return [printable(f"It adds {rest} to {shown}, which gives {len(found)} object(s) (such as "
                      f"{found[0].hex()[:12]}) content that is not theirs: git reads packs first (this repository's, "
                      "and any that borrows its objects), so your next checkout or reset would write what the "
                      "substitutes say.")]  # fmt: skip


def _mentioned(trees: Trees, git_dir: str, rest: str, objects: Objects) -> list[bytes]:
    """The commits a reflog, FETCH_HEAD or a rebase's state names that it did not name before (abbreviated ids
    expanded as git would); ids of no commit at all left aside (words of a message). More new words than the
    judgement follows: :class:`Unreadable` (red team 79 F2: 300 words that name nothing, sorted before the one that
    does, pushed it past the bound)."""
    token = _TOKEN if rest.startswith("logs/") or rest == "FETCH_HEAD" else _SHORT
    now = set(token.findall(trees.read(f"{git_dir}/{rest}", limit=16 << 20) or b""))
    then = set(token.findall(trees.read(f"{git_dir}/{rest}", real=True, limit=16 << 20) or b""))
    if len(now - then) > _MENTIONED:
        raise Unreadable(f"{rest} names more than {_MENTIONED} new ids")
    found: list[bytes] = []
    for word in sorted(now - then):
        text = word.decode().lower()
        oid = bytes.fromhex(text) if len(text) in (40, 64) else objects.expand(text)
        if oid is None or oid in found or not oid.strip(b"\0"):  # (git's null id: a ref made or deleted)
            continue
        try:
            if objects.get(oid)[0] in ("commit", "tag"):
                found.append(oid)
        except Unreadable as exc:
            if not exc.missing:
                raise
    return found


def _staged(
    trees: Trees, where: Layout, objects: Objects, bases: list[bytes], data: bytes
) -> list[tuple[str, int, bytes]]:
    """(path, mode, id) of the index entries (``data``: the index as left) the command changed whose content the
    user's checkout does not have."""
    width = id_width(trees, where.common)
    if split_index(data, width):  # (its entries partly in a shared index file: red team 76 F4)
        raise Unreadable("the index is split")
    now = index_entries(data, width)
    then = index_entries(trees.read(f"{where.own}/index", real=True, limit=256 << 20) or b"", width)
    changed = [
        (path, mode, oid) for (path, stage), (mode, oid) in now.items() if then.get((path, stage)) != (mode, oid)
    ]
    listed: dict[bytes, dict[str, tuple[int, bytes]]] = {}
    return [entry for entry in changed if not bases or _entry(objects, bases[0], entry[0], listed) != entry[2]]


def _cache_tree(trees: Trees, where: Layout, data: bytes) -> list[str]:
    """A question for an index (``data``) whose cache tree names trees its entries do not make
    (``git_cache_tree``)."""
    try:
        lies = cache_tree_lies(data, id_width(trees, where.common))
    except CacheTreeUnreadable as exc:
        lies = [f"({exc})"]
    if not lies:
        return []
    return [printable(f"It changes {_shown(where, 'the index')} so that its cache tree names another tree than its "
                      f"entries make (for {lies[0] or 'the top'}): your next git commit or git stash would take that "
                      "tree, whatever git status shows.")]  # fmt: skip


def _entry(objects: Objects, tree: bytes, path: str, listed: dict[bytes, dict[str, tuple[int, bytes]]]) -> bytes | None:
    """The id ``path`` has in ``tree`` (None: none, or it cannot be read); ``listed``: trees read so far, by id (an
    index of 100 changed paths reads each directory once)."""
    parts = path.split("/")
    with contextlib.suppress(Unreadable):
        for at, part in enumerate(parts):
            if tree not in listed:
                listed[tree] = {name: (mode, oid) for name, mode, oid in entries(objects, tree)}
            found = listed[tree].get(part)
            if found is None or (at < len(parts) - 1 and found[0] != 0o40000):
                return None
            tree = found[1]
        return tree
    return None
