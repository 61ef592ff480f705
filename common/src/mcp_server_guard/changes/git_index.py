"""What git has a copy of, read from a work tree's index file itself: no git program runs.

Owns the reading of a git index (versions 2 to 4, sha-1 repositories) found one name at a time below a root with
no link followed, and git's blob id of a file, so that the judgement can ask before a command deletes, empties
or discards work git does not have (:func:`uncommitted`, :func:`discarded`) and recognise moved files
(:func:`blob_hash`). Not here: what is asked and when (``changes.effects``), nor git's own files as protected
paths (``changes.git_verdicts``).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import posixpath
import re
import stat
import struct
from collections.abc import Sequence

from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.changes.git_layout import layout_of, refs_of
from mcp_server_guard.changes.git_objects import Objects, Unreadable, entry_at, tree_of
from mcp_server_guard.changes.git_verdicts import Trees
from mcp_server_guard.git_search import is_git_dir, read_pointer
from mcp_server_guard.paths import within

__all__ = [
    "blob_hash",
    "discarded",
    "index_entries",
    "index_extensions",
    "parse_index",
    "split_index",
    "staged_for_trees",
    "uncommitted",
]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_MAX_HASHED = 64 << 20  # files larger than this count as modified without hashing them
_DISCARD_HASH_BYTES = 64 << 20  # bytes hashed at most to recognise files put back to git's copy
_HELD_BYTES = 1 << 30  # object bytes read at most to see that git holds the copies it is said to (then: it does not)
_HELD_SECONDS = 20.0


def discarded(
    rewritten: Sequence[tuple[ChangeSet, Change]],
    stashed: frozenset[tuple[str, str]] = frozenset(),
    at_stake: list[tuple[str, str]] | None = None,
) -> list[str]:
    """Of the files overwritten, those that had changes git has no copy of (differing from the index) and now
    hold exactly the index's content: uncommitted work thrown away. Read from the index file itself. ``stashed``:
    (root, work tree) pairs whose ``git stash`` the command moved: there a file whose old content the command wrote
    into the repository's objects (the stash took it: ``git stash push -- a.txt`` takes a.txt, not b.txt) is kept.
    ``at_stake`` (given) gets (root, path) of every file rewritten that had such changes: what its new content is
    decides, so a running job's look leaves it for the job's end."""
    found: list[str] = []
    indexes: dict[str, tuple[str, dict[str, bytes]] | None] = {}
    budget = _DISCARD_HASH_BYTES
    stores = _Stores()
    try:
        _discarded(rewritten, stashed, at_stake, found, indexes, budget, stores)
    finally:
        stores.close()
    return found


def _discarded(
    rewritten: Sequence[tuple[ChangeSet, Change]],
    stashed: frozenset[tuple[str, str]],
    at_stake: list[tuple[str, str]] | None,
    found: list[str],
    indexes: dict[str, tuple[str, dict[str, bytes]] | None],
    budget: int,
    stores: _Stores,
) -> None:
    for changes, change in rewritten:
        if change.size + change.old_size > budget:
            break
        repository = _repository(changes.root, change.path, indexes)
        if repository is None:
            continue
        work_tree, entries = repository
        blob = entries.get(posixpath.relpath(posixpath.join(changes.root, change.path), work_tree))
        if blob is None:
            continue
        budget -= change.size + change.old_size
        wide = blob is not None and len(blob) == 32  # a SHA-256 repository
        old = blob_hash(posixpath.join(changes.root, change.path), changes.root, sha256=wide)
        if old == blob and stores.holds(work_tree, blob):
            continue  # nothing git has no copy of
        if at_stake is not None:
            at_stake.append((changes.root, change.path))
        new = blob_hash(posixpath.join(changes.upper, change.path), changes.upper, sha256=wide)
        # Put back to the index's content, or to any other version git has (``git reset --hard HEAD~1``,
        # ``git checkout HEAD~1 -- f``, ``git restore --source=…``, ``git checkout -f other``).
        if new is None or (new != blob and not stores.holds(work_tree, new)):
            continue
        if not (old is not None and _stashed_object(changes, work_tree, old, stashed)):
            found.append(change.path)


class _Stores:
    """The object stores of the work trees a judgement looks at, each opened once (its git dir's ``objects``, and
    the common dir's a linked work tree names); closed with :meth:`close`."""

    def __init__(self) -> None:
        self._open: dict[str, Objects | None] = {}

    def holds(self, work_tree: str, object_id: bytes, kind: str = "blob") -> bool:
        """Whether the repository of ``work_tree`` holds object ``object_id`` of ``kind`` — read, its every copy's
        hash checked. Threat (red team 121 F1): ``git update-index --add --info-only f`` names f's bytes in the index
        with no object behind them (or a loose file named so holds other bytes): taken for git's copy, the only copy
        of f went unasked, then out of the history."""
        if work_tree not in self._open:
            self._open[work_tree] = _store(work_tree)
        store = self._open[work_tree]
        if store is None:
            return False
        try:
            return store.get(object_id)[0] == kind
        except Unreadable:
            return False

    def close(self) -> None:
        for store in self._open.values():
            if store is not None:
                store.close()
        self._open.clear()


def _store(work_tree: str) -> Objects | None:
    try:
        fd = os.open(work_tree, _DIR)
        try:
            git = _git_dir_of(fd, work_tree)
        finally:
            os.close(fd)
    except OSError:
        return None
    try:
        dirs: list[int] = []
        with contextlib.suppress(OSError):
            dirs.append(os.open("objects", _DIR, dir_fd=git))
        common = _common_dir(git)
        with contextlib.suppress(OSError):
            if common is not None:
                dirs.append(os.open(posixpath.join(common, "objects"), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC,
                                    dir_fd=git))  # fmt: skip
        return Objects(dirs, budget=_HELD_BYTES, seconds=_HELD_SECONDS) if dirs else None
    finally:
        os.close(git)


def _stashed_object(changes: ChangeSet, work_tree: str, blob: bytes, stashed: frozenset[tuple[str, str]]) -> bool:
    """Whether the command wrote the object ``blob`` into the ``.git`` of ``work_tree`` (a loose object on the copy:
    a stash writes what it takes) in a repository whose stash it moved."""
    tree = posixpath.relpath(work_tree, changes.root)
    tree = "" if tree == "." else tree
    if (changes.root, tree) not in stashed:
        return False
    name = blob.hex()
    where = posixpath.join(changes.upper, tree, ".git", "objects", name[:2], name[2:])
    try:
        fd = open_below(where, changes.upper)  # one name at a time, no link followed
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    finally:
        os.close(fd)


def uncommitted(losing: Sequence[tuple[ChangeSet, Change]], outside: list[str] | None = None) -> list[str]:
    """Of the files being deleted or emptied, those whose current content git does not have (untracked, or
    different from the index), judged from the index file itself: no git program runs — or that git does not keep
    once the call has landed (``kept_after``: a call that changed the index too). ``outside`` (given) gets those in
    no repository at all."""
    lost: list[str] = []
    indexes: dict[str, tuple[str, dict[str, bytes]] | None] = {}
    stores = _Stores()
    kept_after = KeptAfter()
    try:
        for changes, change in losing:
            found = _repository(changes.root, change.path, indexes)
            if found is None:
                if outside is not None:
                    outside.append(change.path)
                continue
            blob = found[1].get(posixpath.relpath(posixpath.join(changes.root, change.path), found[0]), b"")
            if not _in_index(changes.root, change.path, found, stores) or not kept_after(
                changes, change.path, found[0], blob
            ):
                lost.append(change.path)
    finally:
        stores.close()
        kept_after.close()
    return lost


def has_copy(root: str, path: str) -> bool:
    """Whether git has a copy of the file ``path`` beneath ``root`` as it is now (its repository's index holds
    these bytes): file_write's overwrite of one it has not keeps the one copy in the history."""
    found = _repository(root, path, {})
    if found is None:
        return False
    stores = _Stores()
    try:
        return _in_index(root, path, found, stores)
    finally:
        stores.close()


def _in_index(root: str, path: str, found: tuple[str, dict[str, bytes]], stores: _Stores) -> bool:
    """Whether the index names the file's bytes and the repository holds them (red team 121 F1)."""
    work_tree, entries = found
    blob = entries.get(posixpath.relpath(posixpath.join(root, path), work_tree))
    if blob is None or blob_hash(posixpath.join(root, path), root, sha256=len(blob) == 32) != blob:
        return False
    return stores.holds(work_tree, blob)


def _repository(
    root: str, path: str, cache: dict[str, tuple[str, dict[str, bytes]] | None]
) -> tuple[str, dict[str, bytes]] | None:
    """The work tree holding ``path`` (a directory with a .git directory, at or above it, inside the root or above
    it: a root may lie below its repository's top, and git keeps that repository's copies) and its index: path ->
    blob id."""
    parts = path.split("/")[:-1]
    candidates = [posixpath.join(root, *parts[:depth]) for depth in range(len(parts), 0, -1)] + [root]
    above = root
    while (parent := posixpath.dirname(above)) != above:
        candidates.append(parent)  # outside the roots: no command shapes them
        above = parent
    for work_tree in candidates:
        if work_tree in cache:
            return cache[work_tree]
        with contextlib.suppress(OSError):
            fd = os.open(work_tree, _DIR)  # the root, then one name at a time below it: no link followed
            try:
                git = _git_dir_of(fd, work_tree)
            finally:
                os.close(fd)
            try:
                cache[work_tree] = (work_tree, _read_index(git))
            finally:
                os.close(git)
            return cache[work_tree]
    return None


def _git_dir_of(work_tree_fd: int, work_tree: str) -> int:
    """The git dir of a work tree: its ``.git`` directory, or the one its ``.git`` file or link names (a linked work
    tree, a submodule). Raises OSError where there is none."""
    try:
        return os.open(".git", _DIR, dir_fd=work_tree_fd)
    except OSError as exc:
        if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
    dotgit = posixpath.join(work_tree, ".git")
    st = os.lstat(dotgit)
    target = os.path.realpath(dotgit) if stat.S_ISLNK(st.st_mode) else read_pointer(dotgit, gitfile=True)
    if not is_git_dir(target):
        raise OSError(errno.ENOENT, "no git dir")
    return os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def _read_index(git_dir: int) -> dict[str, bytes]:
    """Path -> blob id from a git dir's index file (versions 2 to 4); empty when it cannot be read."""
    try:
        fd = os.open("index", _FILE, dir_fd=git_dir)
    except OSError:
        return {}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {}
        data = os.pread(fd, 256 << 20, 0)
    finally:
        os.close(fd)
    return parse_index(data, 32 if _sha256(git_dir) else 20)  # the repository's object format: ids of 20 or 32 bytes


def split_index(data: bytes, hash_size: int = 20) -> bool:
    """Whether an index file's entries are partly in a shared index (its ``link`` extension: ``--split-index``)."""
    return b"link" in index_extensions(data, hash_size, _parse(data, hash_size)[1])


def index_extensions(data: bytes, hash_size: int, at: int) -> dict[bytes, bytes]:
    """An index file's extensions (from ``at``, where its entries end) by signature."""
    found: dict[bytes, bytes] = {}
    while at > 0 and at + 8 <= len(data) - hash_size:
        signature, size = data[at : at + 4], struct.unpack(">I", data[at + 4 : at + 8])[0]
        found.setdefault(signature, data[at + 8 : at + 8 + size])
        at += 8 + size
    return found


def staged_for_trees(data: bytes, hash_size: int) -> tuple[dict[str, tuple[int, bytes]], dict[bytes, bytes], list[str]]:
    """The stage-0 entries git writes into trees (not those only intended to be added), the extensions, and the
    path of every entry, in the index's order (what a cache-tree entry's count spans)."""
    added: set[str] = set()
    _entries, at, staged = _parse(data, hash_size, added)
    kept = {path: entry for (path, stage), entry in staged.items() if stage == 0 and path not in added}
    return kept, index_extensions(data, hash_size, at), [path for path, _stage in staged]


def parse_index(data: bytes, hash_size: int = 20) -> dict[str, bytes]:
    """Path -> blob id of an index file's bytes (versions 2 to 4); empty when they are no index."""
    return {path: blob for path, (_mode, blob) in _parse(data, hash_size)[0].items()}


def index_entries(data: bytes, hash_size: int = 20) -> dict[tuple[str, int], tuple[int, bytes]]:
    """(path, stage) -> (git's mode: 0o100644, 0o100755, 0o120000, 0o160000; blob id) of an index file's bytes:
    every stage of a conflict (red team 80 F3: ``git checkout --ours`` writes stage 2, whatever stage 3 says)."""
    return _parse(data, hash_size)[2]


def _parse(
    data: bytes, hash_size: int, added: set[str] | None = None
) -> tuple[dict[str, tuple[int, bytes]], int, dict[tuple[str, int], tuple[int, bytes]]]:
    """The entries by path (the last stage of a conflict), where the extensions start (0: unreadable), and the
    entries by path and stage (``added``, when given: the paths of entries only intended to be added, ``add -N``)."""
    out: dict[str, tuple[int, bytes]] = {}
    staged: dict[tuple[str, int], tuple[int, bytes]] = {}
    if len(data) < 12 or data[:4] != b"DIRC":
        return out, 0, staged
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4):
        return out, 0, staged
    offset = 12
    previous = b""
    try:
        for _ in range(count):
            start = offset
            mode = struct.unpack(">I", data[offset + 24 : offset + 28])[0]
            blob = data[offset + 40 : offset + 40 + hash_size]
            flags = struct.unpack(">H", data[offset + 40 + hash_size : offset + 42 + hash_size])[0]
            offset += 42 + hash_size
            extended = 0
            if version >= 3 and flags & 0x4000:
                extended = struct.unpack(">H", data[offset : offset + 2])[0]
                offset += 2
            if version == 4:
                strip, used = _varint(data, offset)
                offset += used
                end = data.index(b"\0", offset)
                name = previous[: len(previous) - strip] + data[offset:end]
                offset = end + 1
            else:
                end = data.index(b"\0", offset)
                name = data[offset:end]
                offset = start + ((end - start + 8) & ~7)
            previous = name
            path = name.decode("utf-8", "surrogateescape")
            out[path] = staged[(path, (flags >> 12) & 3)] = (mode, blob)
            if added is not None and extended & 0x2000:
                added.add(path)
    except (ValueError, struct.error, IndexError):
        return out, 0, staged
    return out, offset, staged


def _common_dir(git_dir: int) -> str | None:
    """The common dir a linked work tree's git dir names (its ``commondir`` file, relative to it), or None."""
    try:
        fd = os.open("commondir", _FILE, dir_fd=git_dir)
    except OSError:
        return None
    try:
        return os.pread(fd, 4096, 0).decode("utf-8", "surrogateescape").strip()
    except OSError:
        return None
    finally:
        os.close(fd)


def _sha256(git_dir: int) -> bool:
    """Whether the repository's objects are named by SHA-256 (``extensions.objectFormat = sha256`` in its config, or
    in the config of the common dir a linked work tree's git dir names)."""
    configs: list[tuple[int, str]] = [(git_dir, "config")]
    common = _common_dir(git_dir)
    if common is not None:
        configs.append((git_dir, posixpath.join(common, "config")))
    for base, name in configs:
        with contextlib.suppress(OSError):
            fd = os.open(name, _FILE, dir_fd=base)
            try:
                if _OBJECT_FORMAT.search(os.pread(fd, 1 << 20, 0)):
                    return True
            finally:
                os.close(fd)
    return False


_OBJECT_FORMAT = re.compile(rb"^\s*objectformat\s*=\s*\"?sha256\"?\s*$", re.IGNORECASE | re.MULTILINE)


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    value = data[offset] & 0x7F
    used = 1
    while data[offset + used - 1] & 0x80:
        value = ((value + 1) << 7) | (data[offset + used] & 0x7F)
        used += 1
    return value, used


def open_below(path: str, base: str) -> int:
    """Open the regular file ``path`` below ``base``, one name at a time: no link followed on the way."""
    rel = posixpath.relpath(path, base)
    fd = os.open(base, _DIR)
    try:
        parts = rel.split("/")
        for part in parts[:-1]:
            nxt = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return os.open(parts[-1], _FILE, dir_fd=fd)
    finally:
        os.close(fd)


def blob_hash(path: str, no_follow_below: str = "", *, sha256: bool = False) -> bytes | None:
    """Git's blob id of a regular file's current content (never following a link or opening anything else);
    ``sha256``: in a repository whose objects are named by SHA-256."""
    try:
        fd = open_below(path, no_follow_below or posixpath.dirname(path))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_HASHED:
            return None
        header = f"blob {st.st_size}\0".encode()
        hasher = hashlib.sha256(header) if sha256 else hashlib.sha1(header, usedforsecurity=False)
        offset = 0
        while chunk := os.pread(fd, 1 << 20, offset):
            hasher.update(chunk)
            offset += len(chunk)
        return hasher.digest()
    finally:
        os.close(fd)


# Whether git still has a copy of a file's old content once the call has landed (``uncommitted``). Threat (red team
# 152 F1): git's copy of work only staged (``git add``, never committed) is the index's entry. A call that rewrites
# the file *and* the index (``echo x > f && git add f``, ``git rm -f f``) leaves nothing naming the old bytes — a
# dangling blob the user's next ``git gc`` deletes — while the index read before the call said git had them: the
# call's pre-image was not kept as an only copy, and the history's bound evicted it unasked. So where the call
# changed a repository's index, the old content counts as git's only if the index the call left still names it (at
# any path), or the commit ``HEAD`` leaves holds it at that path.
_LEFT_INDEX_MAX = 256 << 20  # an index file read at most (larger: the old content counts as git's no more)


class KeptAfter:
    """Whether git keeps a file's old content once the call has landed (the comment above), each repository's index
    and ``HEAD`` as the call leaves them read once; :meth:`close` when done."""

    def __init__(self) -> None:
        self._views: dict[str, Trees] = {}
        self._left: dict[tuple[str, str], tuple[frozenset[bytes], Objects | None, bytes | None] | None] = {}

    def close(self) -> None:
        for left in self._left.values():
            if left is not None and left[1] is not None:
                left[1].close()
        self._left.clear()

    def __call__(self, changes: ChangeSet, path: str, work_tree: str, blob: bytes) -> bool:
        """Whether git keeps ``blob`` (``path``'s old content, which the index before the call named): the call left
        the repository's index alone, or the index it left names ``blob``, or ``HEAD`` as it left it holds it at
        ``path``. ``work_tree``: the repository's top (absolute); one outside the root, or whose git dir is not a
        ``.git`` directory in it, is judged by the index before the call alone (a command cannot change what lies
        outside the root; a linked work tree's index is judged as before)."""
        if not within(work_tree, changes.root):
            return True
        top = posixpath.relpath(work_tree, changes.root)
        key = (changes.root, top)
        if key not in self._left:
            self._left[key] = self._read(changes, ".git" if top == "." else f"{top}/.git", len(blob))
        left = self._left[key]
        if left is None:
            return True  # (the index as before: what it named is still git's)
        names, objects, tree = left
        if blob in names:
            return True
        if objects is None or tree is None:
            return False
        try:
            found = entry_at(objects, tree, posixpath.relpath(path, top), "file")
            return found == blob and objects.get(blob)[0] == "blob"
        except Unreadable:
            return False

    def _read(
        self, changes: ChangeSet, git_dir: str, width: int
    ) -> tuple[frozenset[bytes], Objects | None, bytes | None] | None:
        """What the index the call left names (ids ``width`` bytes long: the repository's, as before the call), and
        the tree of ``HEAD`` as it left it; None: the index unchanged."""
        view = self._views.setdefault(changes.root, Trees(changes))
        index = view.by_path.get(f"{git_dir}/index")
        if index is None or view.kind(git_dir) != "dir":
            return None
        data = view.read(f"{git_dir}/index", limit=_LEFT_INDEX_MAX + 1) if index.action != "delete" else b""
        names = frozenset(parse_index(data, width).values()) if data and len(data) <= _LEFT_INDEX_MAX else frozenset()
        layout = layout_of(view, git_dir)
        head = refs_of(view, layout, set(), real=False).get("HEAD") if layout is not None else None
        if layout is None or head is None:
            return names, None, None
        objects = view.objects(f"{layout.common}/objects")
        try:
            return names, objects, tree_of(objects, head)
        except Unreadable:
            return names, objects, None
