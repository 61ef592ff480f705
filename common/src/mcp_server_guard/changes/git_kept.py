"""Files of git's object stores a command deleted whose objects the store still has: git's own bookkeeping.

``git gc`` (and ``gc --auto`` after a ``git commit``) packs loose objects and deletes them, and replaces old packs
by a new one: dozens of files deleted, directories of ``objects/`` emptied — none of it a loss, since every object
is still there. Counted as deletions, they asked "It deletes .git/objects/17/ …" and "Git has no copy of …" of
everyday git (red team 79's note; issue 45: questions only where the copy cannot help). So a deleted loose object
that a pack left by the call lists, and a deleted pack each of whose objects a pack or a loose object left by the
call still holds, are not counted as losses (undo gives them back all the same). An object deleted with no copy
left (``rm -rf .git/objects/ab``: a corrupt repository, work lost) still is (red team 78's test). So is a branch or a
tag (and its reflog) deleted whose commit the refs the call left still reach (``git branch -d``, ``git tag -d``: the
work is all there, and undo gives the name back; issue 45) — a branch only it reached (``git branch -D``) is a loss.
And so is a file or a link of the work tree a ``git stash`` (``-u``, ``push -- path``) deleted after saving it into
the stash commit the call left ``refs/stash`` at: what counts is what that commit's trees hold (its work tree's, its
index's, its untracked files'), each blob read and its id checked — a file the stash did not take, one a forged
stash only names, or a link the stash holds as a file is still a loss (issue 45).
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import subprocess
import tempfile
import zlib
from collections.abc import Sequence

from mcp_server_guard.changes.changeset import ChangeSet
from mcp_server_guard.changes.git_index import blob_hash
from mcp_server_guard.changes.git_layout import OID, layout_of, packed_refs, refs_of, valid_ref
from mcp_server_guard.changes.git_objects import (
    BLOB_MODES,
    Objects,
    Unreadable,
    changed_entries,
    entry_at,
    index_ids,
    indexed,
    object_id,
    parents_of,
    tree_of,
)
from mcp_server_guard.changes.git_verdicts import Trees

__all__ = ["kept_by_git", "unnamed_by_rewrites"]

_LOOSE = re.compile(r"^(.*?)(?:^|/)objects/([0-9a-f]{2})/([0-9a-f]{38}|[0-9a-f]{62})$")
_PACK = re.compile(r"^(.*?)(?:^|/)objects/pack/(pack-[0-9a-f]+)\.(pack|idx|rev|bitmap|mtimes|keep|promisor)$")
_INDEX_MAX = 256 << 20
_IDS_MAX = 4_000_000  # ids of the deleted packs checked in all, at most (more: counted as deletions)
_LOOSE_MAX = 64 << 20  # a loose object read to check it, at most


def kept_by_git(sets: Sequence[ChangeSet]) -> set[tuple[str, str]]:
    """(root, path) of each deleted file of a git object store whose objects the store still has afterwards, of
    each deleted branch or tag (or its reflog) whose commit the refs left still reach, and of each file or link a
    new stash commit holds as it was."""
    kept: set[tuple[str, str]] = set()
    for changes in sets:
        deleted = [c.path for c in changes.changes if c.action == "delete" and c.kind == "file"]
        if any(_LOOSE.match(p) or _PACK.match(p) or "refs/" in p for p in deleted):
            kept.update((changes.root, path) for path in _kept_in(changes, deleted))
        kept.update((changes.root, path) for path in _stashed(changes))
        if any(posixpath.basename(p) == "AUTO_MERGE" for p in deleted):
            trees = Trees(changes)
            kept.update((changes.root, path) for path in deleted if _auto_merge(trees, path))
    return kept


def _auto_merge(trees: Trees, path: str) -> bool:
    """Whether ``path`` is a git dir's ``AUTO_MERGE`` (the id of the tree git's last merge computed, conflicts and
    all: no work of the user's) the call deleted (``git merge --abort``, ``git reset``, the next merge): a loss of
    nothing (issue 45)."""
    parent = posixpath.dirname(path)
    if posixpath.basename(path) != "AUTO_MERGE" or not parent or trees.git_dir_of(parent) != parent:
        return False
    data = trees.read(path, real=True, limit=4096)
    return data is not None and bool(OID.match(data.strip()))


_STASH = "refs/stash"


def _stashed(changes: ChangeSet) -> list[str]:
    """The files and links of a work tree (its git dir ``.git``) the call deleted whose content, and kind, the stash
    commit it left ``refs/stash`` at (a new one) holds at their path, in its work tree's, its index's or its
    untracked files' tree: ``git stash -u`` keeps what it takes away (issue 45)."""
    refs = [c.path for c in changes.changes if c.action != "delete" and c.kind == "file"
            and (c.path == f".git/{_STASH}" or c.path.endswith(f"/.git/{_STASH}"))]  # fmt: skip
    gone = [c for c in changes.changes if c.action == "delete" and c.kind in BLOB_MODES]
    if not refs or not gone:
        return []
    trees = Trees(changes)
    kept: list[str] = []
    for ref in refs:
        git_dir = ref[: -len(_STASH) - 1]
        top = posixpath.dirname(git_dir)
        new, old = (trees.read(ref, real=real, limit=4096) for real in (False, True))
        if new is None or not OID.match(new.strip()) or (old is not None and old.strip() == new.strip()):
            continue  # (no new stash commit)
        objects = trees.objects(f"{git_dir}/objects")  # (as the call leaves them: red team 102 F1)
        try:
            commit = bytes.fromhex(new.strip().decode().lower())
            saved = [tree_of(objects, c) for c in [commit, *parents_of(objects, commit)[1:3]]]
            for change in gone:
                rel = change.path[len(top) + 1 :] if top else change.path
                if (top and not change.path.startswith(f"{top}/")) or rel.split("/", 1)[0] == ".git":
                    continue
                held = _content_id(trees, change.path, change.kind, len(commit))
                if held is not None and any(_holds(objects, tree, rel, change.kind, held) for tree in saved):
                    kept.append(change.path)
        except Unreadable:
            pass  # (what is not read is not kept: the rest count)
        finally:
            objects.close()
    return kept


def _applied(trees: Trees, path: str) -> bool:
    """Whether ``path`` is a work tree's stash ref (or its reflog) the call deleted whose every stash commit it names
    the work tree as the call left it holds (``git stash pop`` of the last stash, which drops it once applied): each
    file and link the commit changed from the commit it was made on, and each untracked one it saved, is there with
    those bytes. A stash nothing applied (``git stash clear``, ``drop``) is a loss (counted)."""
    if not (path.endswith(f"/.git/{_STASH}") or path.endswith(f"/.git/logs/{_STASH}")) and path not in (
        f".git/{_STASH}",
        f".git/logs/{_STASH}",
    ):
        return False
    git_dir = ".git" if path.startswith(".git/") else path[: path.rindex("/.git/") + 5]
    top = posixpath.dirname(git_dir)
    if trees.git_dir_of(path.rpartition("/")[0]) != git_dir:
        return False
    data = trees.read(path, real=True, limit=1 << 20)
    if not data:
        return False
    reflog = "/logs/" in f"/{path}"
    # (lines as git reads them: at LF only — a CR inside a reflog's message starts no line git sees)
    words = [data.strip()] if not reflog else [[*line.split(b" ", 2), b""][1] for line in data.split(b"\n")
                                              if line.strip()]  # fmt: skip
    objects = trees.objects(f"{git_dir}/objects")
    try:
        for word in words:
            if not OID.match(word):
                return False
            commit = bytes.fromhex(word.decode().lower())
            if commit.strip(b"\0") and not _applied_here(trees, objects, top, commit):
                return False
        return True
    except Unreadable:
        return False
    finally:
        objects.close()


def _applied_here(trees: Trees, objects: Objects, top: str, commit: bytes) -> bool:
    """Whether the work tree at ``top``, as the call left it, holds stash commit ``commit``: each file and link it
    changed from the commit it was made on, and each untracked one it saved, there with those bytes."""
    parents = parents_of(objects, commit)
    if not parents:
        return False
    saved = changed_entries(objects, tree_of(objects, parents[0]), tree_of(objects, commit), limit=10_000)
    if len(parents) > 2:  # (its untracked files: a tree of their own)
        saved += changed_entries(objects, None, tree_of(objects, parents[2]), limit=10_000)
    for rel, mode, oid in saved:
        kind = "symlink" if mode == 0o120000 else "file" if mode in BLOB_MODES["file"] else ""
        at = f"{top}/{rel}" if top else rel
        if not kind or (
            _left_id(trees, at, kind, len(commit)) != oid
            and not (kind == "file" and _merged_in(trees, objects, (tree_of(objects, parents[0]), rel, oid), at))
        ):
            return False
    return True


_MERGE_SECONDS = 10


def _merged_in(trees: Trees, objects: Objects, stashed: tuple[bytes, str, bytes], at: str) -> bool:
    """Whether the file at ``at`` holds, as the call left it, what git's merge of the stash's change to it (``rel``
    from its base tree to blob ``oid``) into the file as it was before the call gives, with no conflict: a ``git stash
    pop`` after a commit that changed the same file elsewhere (red team 105 F2: asked, though nothing was lost). The
    merge is git's own (``git merge-file``, on copies of the three texts in a private directory)."""
    base_tree, rel, oid = stashed
    ours, left = trees.read(at, real=True, limit=_LEFT_MAX), trees.read(at, limit=_LEFT_MAX)
    program = shutil.which("git")
    if ours is None or left is None or program is None:
        return False
    base = next((b for b in _blob_at(objects, base_tree, rel)), b"")
    kind, theirs = objects.get(oid)
    if kind != "blob":
        return False
    with tempfile.TemporaryDirectory(prefix="mcp-guard-merge-") as place:
        texts = [os.path.join(place, name) for name in ("ours", "base", "theirs")]
        for path, data in zip(texts, (ours, base, theirs), strict=True):
            with open(path, "wb") as out:
                out.write(data)
        try:
            # (no repository, no config of the project's or the user's is read: a private directory, nothing above)
            env = {"PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
                   "HOME": place, "GIT_CEILING_DIRECTORIES": os.path.dirname(place)}  # fmt: skip
            done = subprocess.run([program, "merge-file", "-p", "-q", *texts], capture_output=True, cwd=place,
                                  timeout=_MERGE_SECONDS, env=env, check=False)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return False
    return done.returncode == 0 and done.stdout == left


def _blob_at(objects: Objects, tree: bytes, rel: str) -> list[bytes]:
    """The bytes of the blob at ``rel`` in ``tree`` ([] where there is none)."""
    if (blob := entry_at(objects, tree, rel, "file")) is None:
        return []
    kind, body = objects.get(blob)
    return [body] if kind == "blob" else []


# The files of a git dir that name the commits a person's work lives in: a branch, a tag, the stash, their reflogs,
# HEAD's, and packed-refs (its lines for those refs).
_NAMING = re.compile(r"^(?:packed-refs|(?:logs/)?refs/(?:heads/.+|tags/.+|stash)|logs/HEAD)$")
_WORD = re.compile(rb"(?<![0-9a-fA-F])([0-9a-fA-F]{64}|[0-9a-fA-F]{40})(?![0-9a-fA-F])")
_KEPT_REFS = (b"refs/heads/", b"refs/tags/", b"refs/stash")
_NAMED_HERE = re.compile(r"(?:^|/)(?:packed-refs|refs/(?:heads|tags)/.|refs/stash|logs/HEAD)")  # (before a git dir)


def _named_ids(data: bytes, path: str) -> set[bytes]:
    """The commits (or tags) a ref, a reflog (the two ids of each line: not its message, red team 105 F1) or
    ``packed-refs`` (its lines for ``_KEPT_REFS``, and the peeled ``^`` line after one) names."""
    if "logs/" in f"/{path}":
        # (at LF only, as git reads them: a message's CR followed by two ids names nothing to git)
        words = [w for line in data.split(b"\n") for w in line.split(b" ", 2)[:2]]
        return {bytes.fromhex(w.decode()) for w in words if _WORD.fullmatch(w)} - {bytes(20), bytes(32)}
    if not path.endswith("packed-refs"):
        return {bytes.fromhex(word.decode()) for word in _WORD.findall(data)} - {bytes(20), bytes(32)}
    found: set[bytes] = set()
    taken = False
    for line in data.split(b"\n"):
        word, _, ref = line.partition(b" ")
        if line.startswith(b"^"):
            word, ref = line[1:].strip(), b""
        elif not line.startswith(b"#"):
            taken = ref.strip().startswith(_KEPT_REFS)
        if taken and _WORD.fullmatch(word.strip()):
            found.add(bytes.fromhex(word.strip().decode()))
    return found


def unnamed_by_rewrites(sets: Sequence[ChangeSet]) -> list[str]:
    """The files of git dirs the call rewrote (not deleted: ``kept_by_git``) that named commits nothing the call left
    names or reaches any more: a ``git stash drop`` of one stash of several (``refs/stash`` and its reflog
    rewritten), a ``git tag -d`` or ``git branch -D`` of a packed ref (``packed-refs`` rewritten), a reflog
    expired. Threat (red team 104 F1): work only a stash or a packed tag named, made unreachable unasked — the
    next ``git gc`` deletes it. A stash the call applied to the work tree (``git stash pop``) is not lost."""
    lost: list[str] = []
    for changes in sets:
        # (a loose ref made over a packed one hides it: ``git tag -f t``, ``update-ref``; red team 105 F1)
        rewritten = [c.path for c in changes.changes if c.action in ("modify", "create") and c.kind == "file"
                     and _NAMED_HERE.search(c.path)]  # fmt: skip
        if not rewritten:
            continue
        trees = Trees(changes)
        by_dir: dict[str, list[str]] = {}
        for path in rewritten:
            git_dir = trees.git_dir_of(path.rpartition("/")[0]) if "/" in path else None
            if git_dir is not None and _NAMING.match(path[len(git_dir) + 1 :] if git_dir else path):
                by_dir.setdefault(git_dir, []).append(path)
        for git_dir, paths in by_dir.items():
            lost += _unnamed(trees, git_dir, paths)
    return lost


_NAMING_MAX = 16 << 20  # bytes of a ref or reflog read to know what it names, at most
_PACKED_MAX = 64 << 20  # bytes of packed-refs read, at most


def _unnamed(trees: Trees, git_dir: str, paths: list[str]) -> list[str]:
    texts = {p: [trees.read(p, real=real, limit=_NAMING_MAX + 1) or b"" for real in (True, False)] for p in paths}
    packed_data = trees.read(f"{git_dir}/packed-refs", real=True, limit=_PACKED_MAX + 1) or b""
    # Threat: a reflog (or packed-refs) longer than what is read, whose newest entries (at its end) a command
    # drops: read in part, it named nothing that was lost. One too long to read whole is taken as losing work.
    if len(packed_data) > _PACKED_MAX:
        return list(paths)
    too_long = [p for p, both in texts.items() if any(len(data) > _NAMING_MAX for data in both)]
    if too_long:
        return too_long
    named = {p: [_named_ids(data, p) for data in both] for p, both in texts.items()}
    packed = packed_refs(packed_data)
    for path, ids in named.items():
        ref = path[len(git_dir) + 1 :] if git_dir else path
        if ref in packed and not ids[0]:  # (made where the packed line named the ref: what it named before)
            ids[0] = {packed[ref]}
    left = set().union(*(after for _before, after in named.values()))
    reach = _Reach(trees, git_dir)
    objects = trees.objects(f"{git_dir}/objects")
    try:
        lost = []
        for path, (before, _after) in named.items():
            for oid in sorted(before - left):
                if not reach.holds(oid) and not (
                    path.endswith(_STASH) and _stash_applied(trees, objects, git_dir, oid)
                ):
                    lost.append(path)
                    break
        return lost
    finally:
        reach.close()
        objects.close()


def _stash_applied(trees: Trees, objects: Objects, git_dir: str, oid: bytes) -> bool:
    try:
        return posixpath.basename(git_dir) == ".git" and _applied_here(trees, objects, posixpath.dirname(git_dir), oid)
    except Unreadable:
        return False


_LEFT_MAX = 32 << 20  # bytes of a file read to check it holds a stash's content, at most


def _left_id(trees: Trees, path: str, kind: str, width: int) -> bytes | None:
    """Git's blob id of what the tree as the call left it holds at ``path`` (a file's bytes, a link's target), or
    None where it holds something else or nothing."""
    if trees.kind(path) != kind:
        return None
    base = trees.changes.upper if path in trees.by_path else trees.changes.root
    if kind == "file":
        data = trees.read(path, limit=_LEFT_MAX + 1)
        return None if data is None or len(data) > _LEFT_MAX else object_id("blob", data, width)
    return _link_id(trees, base, path, width)


def _content_id(trees: Trees, path: str, kind: str, width: int) -> bytes | None:
    """Git's blob id of what the real tree holds at ``path``: a file's bytes, or a link's target (no link followed
    on the way)."""
    root = trees.changes.root
    if kind == "file":
        return blob_hash(posixpath.join(root, path), root, sha256=width == 32)
    return _link_id(trees, root, path, width)


def _link_id(trees: Trees, base: str, path: str, width: int) -> bytes | None:
    """Git's blob id of the link at ``path`` below ``base`` (its target; no link followed on the way), or None."""
    parent, _, name = path.rpartition("/")
    fd = trees.open_dir(base, parent)
    if fd is None:
        return None
    try:
        return object_id("blob", os.readlink(os.fsencode(name), dir_fd=fd), width)
    except OSError:
        return None
    finally:
        os.close(fd)


def _holds(objects: Objects, tree: bytes, rel: str, kind: str, blob: bytes) -> bool:
    """Whether ``tree`` has at ``rel`` an entry of ``kind`` naming ``blob``, and the store has that blob (its bytes
    hash to its id: ``Objects.get``)."""
    if entry_at(objects, tree, rel, kind) != blob:
        return False
    try:
        return objects.get(blob)[0] == "blob"
    except Unreadable:
        return False


def _kept_in(changes: ChangeSet, deleted: list[str]) -> list[str]:
    trees = Trees(changes)
    stores: dict[str, _Store] = {}  # each store's indexes read once
    budget = [_IDS_MAX]
    packed: dict[str, dict[str, bytes]] = {}  # each git dir's packed-refs, read once
    reaches: dict[str, _Reach] = {}  # each git dir's commits its refs reach, walked once
    kept: list[str] = []
    try:
        for path in deleted:
            if "refs/" in path and (
                _ref_packed(trees, path, packed)
                or _reachable(trees, path, "", reaches)
                or _reachable(trees, path, "logs/", reaches)
                or _applied(trees, path)
            ):
                kept.append(path)
            elif loose := _LOOSE.match(path):
                objects = path[: -len(loose.group(2)) - len(loose.group(3)) - 2]
                if stores.setdefault(objects, _Store(trees, objects)).packed(
                    bytes.fromhex(loose.group(2) + loose.group(3))
                ):
                    kept.append(path)
            elif pack := _PACK.match(path):
                objects = path[: path.rindex("/pack/")]
                if pack.group(3) not in ("pack", "idx") or stores.setdefault(objects, _Store(trees, objects)).held(
                    pack.group(2), budget
                ):
                    kept.append(path)  # (the rest are caches and marks of a pack)
    finally:
        for reach in reaches.values():
            reach.close()
    return kept


_WALK = 20_000  # commits walked from what the call left to find a deleted branch's (more: asked)


class _Reach:
    """The commits the refs of one git dir reach as the call left them (``HEAD``, ``packed-refs``, the loose branches
    and tags), walked once, at most ``_WALK`` of them: what a branch's deletion leaves git a copy of."""

    def __init__(self, trees: Trees, git_dir: str) -> None:
        self.trees, self.git_dir = trees, git_dir
        self._seen: set[bytes] | None = None
        self._objects: Objects | None = None

    def close(self) -> None:
        if self._objects is not None:
            self._objects.close()

    def holds(self, oid: bytes) -> bool:
        """Whether the refs reach ``oid`` (a tag's: the commit it tags)."""
        try:
            if self._seen is None:
                self._seen = self._walk()
            return self._objects is not None and self._peeled(oid) in self._seen
        except Unreadable:
            return False

    def _peeled(self, oid: bytes) -> bytes:
        assert self._objects is not None
        for _ in range(8):  # a tag of a tag ...
            kind, body = self._objects.get(oid)
            if kind != "tag":
                return oid
            oid = bytes.fromhex(body.split(b"\n", 1)[0].removeprefix(b"object ").strip().decode())
        raise Unreadable("a chain of tags")

    def _walk(self) -> set[bytes]:
        layout = layout_of(self.trees, self.git_dir)
        if layout is None:
            return set()
        names = {"HEAD"} | {f"refs/{kind}/{name}" for kind in ("heads", "tags")
                            for name in self.trees.names(f"{layout.common}/refs/{kind}")}  # fmt: skip
        # (only names git reads: ``keep.lock``, ``.hidden`` keep nothing alive — red team 97 F2)
        found = refs_of(self.trees, layout, {n for n in names if valid_ref(n)} | {"packed-refs"}, real=False)
        tips = {ref: oid for ref, oid in found.items() if ref == "HEAD" or valid_ref(ref)}
        self._objects = self.trees.objects(f"{layout.common}/objects")
        seen: set[bytes] = set()
        pending = [self._peeled(tip) for tip in tips.values()]
        while pending:
            commit = pending.pop()
            if commit in seen:
                continue
            if len(seen) == _WALK:
                return set()  # (not known: the deletion counts)
            seen.add(commit)
            pending += parents_of(self._objects, commit)
        return seen


def _reachable(trees: Trees, path: str, prefix: str, reaches: dict[str, _Reach]) -> bool:
    """Whether ``path`` is a branch or a tag (``prefix`` "logs/": its reflog) the call deleted whose commit (each
    commit a reflog names: red team 97 F1, the only name left of work a branch once held) the refs the call left
    still reach (``git branch -d`` of a merged branch, ``git tag -d``): no work lost, and undo gives the name back.
    A branch whose commits nothing else reaches (``git branch -D``) is a loss (counted)."""
    git_dir = trees.git_dir_of(path.rpartition("/")[0])
    if git_dir is None:
        return False
    at = f"{git_dir}/" if git_dir else ""
    if not path.startswith((f"{at}{prefix}refs/heads/", f"{at}{prefix}refs/tags/")):
        return False
    data = trees.read(path, real=True, limit=1 << 20)
    if data is None or (not data and not prefix):
        return False  # (unreadable, or an empty ref: no ref; an empty reflog names nothing)
    # A ref holds its id; each line of a reflog names the tip before and after ("<old> <new> <who> <when>\t<why>").
    words = [data.strip()] if not prefix else [w for line in data.split(b"\n") if line for w in line.split(b" ", 2)[:2]]
    reach = reaches.setdefault(git_dir, _Reach(trees, git_dir))
    for word in words:
        if not OID.match(word):
            return False
        oid = bytes.fromhex(word.decode().lower())
        if oid.strip(b"\0") and not reach.holds(oid):
            return False
    return True


def _ref_packed(trees: Trees, path: str, packed: dict[str, dict[str, bytes]]) -> bool:
    """Whether ``path`` is a loose ref the call deleted whose id ``packed-refs`` (as the call left it) still gives
    that ref (``git pack-refs``, which ``git gc`` runs)."""
    git_dir = trees.git_dir_of(path.rpartition("/")[0])
    if git_dir is None or not path.startswith(f"{git_dir}/refs/" if git_dir else "refs/"):
        return False
    ref = path[len(git_dir) + 1 :] if git_dir else path
    was = (trees.read(path, real=True, limit=4096) or b"").strip()
    if not OID.match(was):
        return False
    if git_dir not in packed:
        packed[git_dir] = packed_refs(trees.read(f"{git_dir}/packed-refs", limit=64 << 20) or b"")
    return packed[git_dir].get(ref) == bytes.fromhex(was.decode().lower())


class _Store:
    """One object store (``objects``, root-relative) as the call left it: its packs' indexes, read once."""

    def __init__(self, trees: Trees, objects: str) -> None:
        self.trees, self.objects = trees, objects
        self._indexes: list[bytes] | None = None

    def _left(self) -> list[bytes]:
        """The indexes of the packs the call left (new ones and old ones it did not delete)."""
        if self._indexes is None:
            self._indexes = []
            directory = f"{self.objects}/pack"
            for name in sorted(n for n in self.trees.names(directory) if n.endswith(".idx")):
                if self.trees.kind(f"{directory}/{name[: -len('.idx')]}.pack") == "file":
                    data = self.trees.read(f"{directory}/{name}", limit=_INDEX_MAX)
                    if data is not None:
                        self._indexes.append(data)
        return self._indexes

    def packed(self, oid: bytes) -> bool:
        """Whether a pack the call left lists ``oid``."""
        return any(indexed(index, oid) for index in self._left())

    def held(self, name: str, budget: list[int]) -> bool:
        """Whether every object of the deleted pack ``name`` is in a pack or loose the call left."""
        index = self.trees.read(f"{self.objects}/pack/{name}.idx", real=True, limit=_INDEX_MAX)
        if index is None:
            return False
        width = 32 if len(index) > 8 + 1024 and self._width(index) == 32 else 20
        ids = index_ids(index, width)
        budget[0] -= len(ids)
        if not ids or budget[0] < 0:
            return False
        for oid in ids:
            if self.packed(oid):
                continue
            # Held loose only where that file is what its id says: git reads a loose object once no pack has the
            # id, so a forged one written beside a deleted pack would stand in for the real object, unasked.
            if not self._loose_is(oid, budget):
                return False
        return True

    def _loose_is(self, oid: bytes, budget: list[int]) -> bool:
        hexid = oid.hex()
        data = self.trees.read(f"{self.objects}/{hexid[:2]}/{hexid[2:]}", limit=_LOOSE_MAX)
        if data is None:
            return False
        try:
            raw = zlib.decompressobj().decompress(data, _LOOSE_MAX)
        except zlib.error:
            return False
        budget[0] -= len(raw) // 64  # (bytes hashed count against the ids' budget too)
        head, _, body = raw.partition(b"\0")
        kind = head.partition(b" ")[0].decode("ascii", "replace")
        return budget[0] >= 0 and object_id(kind, body, len(oid)) == oid

    @staticmethod
    def _width(index: bytes) -> int:
        """The id width of a version 2 index: its size is fixed by the count (ids, crcs, offsets, two trailing ids)."""
        total = int.from_bytes(index[8 + 4 * 255 : 12 + 4 * 255], "big")
        rest = len(index) - 8 - 1024
        return 32 if total and rest >= total * (32 + 8) + 64 else 20
