"""Git's objects read by the server itself, loose and packed: no git program runs, no link is followed.

Owns :class:`Objects` — a git dir's objects as a command left them (its copy's new objects over the real ones: an
object never changes, so the two are one store) — and the reading of commits and trees
(:func:`tree_of`, :func:`parents_of`, :func:`changed_paths`), within a budget. What the judgement does with it
is ``changes.git_refs``'s. A pack is read through its index (version 2), deltas applied (``OFS_DELTA``,
``REF_DELTA``); what cannot be read (a missing object, another format, the budget spent) is None, never a guess.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import stat
import struct
import time
import zlib
from collections.abc import Callable, Iterator

__all__ = [
    "BLOB_MODES",
    "Objects",
    "Unreadable",
    "changed_entries",
    "changed_paths",
    "entries",
    "entry_at",
    "index_ids",
    "indexed",
    "object_id",
    "parents_of",
    "shadowed",
    "tree_of",
]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_OBJECT_MAX = 32 << 20  # bytes of one object (inflated) read at most
_PACKS = 256  # pack indexes looked at, at most
_TYPES = {1: "commit", 2: "tree", 3: "blob", 4: "tag"}
_CHAIN = 64  # deltas followed, at most


class Unreadable(Exception):
    """An object the server could not read (missing, malformed, or past the budget)."""

    def __init__(self, why: str, *, missing: bool = False) -> None:
        super().__init__(why)
        self.missing = missing  # not in the repository at all (not one git could read and the server could not)


class Objects:
    """The objects below each of ``dirs`` (open ``objects`` directories, the copy's first): looked up by id (bytes
    of 20 or 32), each read at most once; ``budget``: inflated bytes read in all before :class:`Unreadable`."""

    def __init__(
        self,
        dirs: list[int],
        budget: int = 64 << 20,
        seconds: float = 5.0,
        *,
        lower: int | None = None,
        gone: Callable[[str], bool] | None = None,
    ) -> None:
        """``lower``, ``gone``: of ``dirs``, the real tree's, whose files the call deleted (``gone(rel)``, ``rel``
        below ``objects``) are not there. Threat (red team 102 F1, F2): a pack whose entries are deltas on objects the
        call also deletes loose read well at judgement (the loose copies still there) and never again after it:
        history (or a stash's only copy of untracked work) destroyed unasked."""
        self.dirs, self.budget = dirs, budget
        self._lower, self._deleted = lower, gone
        self.deadline = time.monotonic() + seconds
        self._cache: dict[bytes, tuple[str, bytes]] = {}
        self._at_offset: dict[tuple[int, int], tuple[str, bytes]] = {}  # (pack, offset): a delta base read once
        self._packs: list[tuple[bytes, int]] | None = None  # (index, pack fd)
        self._kept: list[tuple[bytes, int]] = []
        self._resolving: set[bytes] = set()  # the REF_DELTA bases being read (``_base``)

    def _gone(self, fd: int, rel: str) -> bool:
        """Whether ``rel`` below the store ``fd`` is a file the call deleted (only the real tree's are)."""
        return fd == self._lower and self._deleted is not None and self._deleted(rel)

    def _charge(self, size: int) -> None:
        """Every byte inflated or patched counts, bases of deltas too, and so does time (red team 76 F7: 62 deltas
        each copying a 30 MiB base, read again for every tree, took a minute and counted nothing)."""
        self.budget -= size
        if self.budget < 0:
            raise Unreadable("more objects than the judgement reads")
        if time.monotonic() > self.deadline:
            raise Unreadable("objects that take longer to read than the judgement waits")

    def expand(self, prefix: str) -> bytes | None:
        """The one object whose id starts with the hex ``prefix`` (7 digits or more), as git expands an
        abbreviated id; None when there is none or more than one."""
        found: set[bytes] = set()
        for objects in self.dirs:
            with contextlib.suppress(OSError):
                sub = os.open(prefix[:2], _DIR, dir_fd=objects)
                try:
                    found |= {bytes.fromhex(prefix[:2] + n) for n in os.listdir(sub) if n.startswith(prefix[2:])
                              and len(n) in (38, 62) and not self._gone(objects, f"{prefix[:2]}/{n}")}  # fmt: skip
                finally:
                    os.close(sub)
        for index, _pack in self._indexes():
            found |= _prefixed(index, prefix)
            if len(found) > 1:
                return None
        return found.pop() if len(found) == 1 else None

    def close(self) -> None:
        for _index, fd in [*(self._packs or []), *self._kept]:
            os.close(fd)
        for fd in self.dirs:
            os.close(fd)

    def get(self, oid: bytes) -> tuple[str, bytes]:
        """The type and body of object ``oid`` (a tag peeled by the caller): every copy of it there is (loose in
        each store, in each pack) read, each one's hash checked against ``oid``. Threat (red team 79 F1): git reads
        packs first, the newest first — a new pack's entry for an id the command also wrote loose, with other
        content, is what git checks out; a reader that takes one copy judges another's bytes."""
        if oid in self._cache:
            return self._cache[oid]
        copies = [*self._loose_all(oid), *self._packed_all(oid)]
        if not copies:
            raise Unreadable(f"object {oid.hex()} is not in the repository", missing=True)
        for kind, body in copies:
            if object_id(kind, body, len(oid)) != oid:
                raise Unreadable(f"object {oid.hex()} has content of another id")
        self._cache[oid] = copies[0]
        return copies[0]

    def keep(self, index: bytes, pack: int) -> None:
        """A pack opened elsewhere, closed with this store."""
        self._kept.append((index, pack))

    def has(self, oid: bytes) -> bool:
        """Whether ``oid`` is in this store (loose or in a pack), without reading it."""
        name = oid.hex()
        for objects in self.dirs:
            with contextlib.suppress(OSError):
                os.stat(f"{name[:2]}/{name[2:]}", dir_fd=objects, follow_symlinks=False)
                if not self._gone(objects, f"{name[:2]}/{name[2:]}"):
                    return True
        return any(_find(index, oid) is not None for index, _pack in self._indexes())

    def _loose(self, oid: bytes) -> tuple[str, bytes] | None:
        return next(iter(self._loose_all(oid)), None)

    def _loose_all(self, oid: bytes) -> list[tuple[str, bytes]]:
        name = oid.hex()
        found: list[tuple[str, bytes]] = []
        for objects in self.dirs:
            if self._gone(objects, f"{name[:2]}/{name[2:]}"):
                continue
            with contextlib.suppress(OSError):
                sub = os.open(name[:2], _DIR, dir_fd=objects)
                try:
                    fd = os.open(name[2:], _FILE, dir_fd=sub)
                finally:
                    os.close(sub)
                try:
                    if not stat.S_ISREG(os.fstat(fd).st_mode):
                        continue
                    raw = _inflate(functools.partial(_read_at, fd), 0)
                finally:
                    os.close(fd)
                self._charge(len(raw))
                head, _, body = raw.partition(b"\0")
                kind, _, size = head.partition(b" ")
                if kind.decode(errors="replace") not in _TYPES.values() or not size.isdigit():
                    raise Unreadable(f"object {name} is malformed")
                found.append((kind.decode(), body))
        return found

    def _indexes(self) -> list[tuple[bytes, int]]:
        if self._packs is None:
            self._packs = []
            for objects in self.dirs:
                with contextlib.suppress(OSError):
                    packs = os.open("pack", _DIR, dir_fd=objects)
                    try:
                        names = sorted(n for n in os.listdir(packs) if n.endswith(".idx"))
                        if len(names) > _PACKS:  # (git reads them all: one past the bound is not judged)
                            raise Unreadable(f"more than {_PACKS} packs")
                        for name in names:
                            if any(self._gone(objects, f"pack/{name[:-3]}{end}") for end in ("idx", "pack")):
                                continue
                            with contextlib.suppress(OSError, ValueError):
                                self._packs.append(_open_pack(packs, name))
                    finally:
                        os.close(packs)
        return self._packs

    def _packed(self, oid: bytes, depth: int) -> tuple[str, bytes] | None:
        for index, pack in self._indexes():
            offset = _find(index, oid)
            if offset is not None:
                return self._at(pack, offset, len(oid), depth)
        return None

    def _packed_all(self, oid: bytes) -> list[tuple[str, bytes]]:
        return [self._at(pack, offset, len(oid), 0) for index, pack in self._indexes()
                if (offset := _find(index, oid)) is not None]  # fmt: skip

    def _at(self, pack: int, offset: int, width: int, depth: int) -> tuple[str, bytes]:
        if (pack, offset) in self._at_offset:
            return self._at_offset[(pack, offset)]
        found = self._unpacked(pack, offset, width, depth)
        self._charge(len(found[1]))
        self._at_offset[(pack, offset)] = found
        return found

    def _base(self, pack: int, base_id: bytes, width: int, depth: int) -> tuple[str, bytes]:
        """A REF_DELTA's base as git finds it: in the same pack first, then the other packs, then loose. Threat (red
        team 103 F1): a new pack whose entry for X is a delta on X itself — git loops on it for ever (history, or a
        stash's only copy of untracked work, gone), while a reader that took the loose X first read it well. A base
        that is being resolved already is a loop: Unreadable."""
        if base_id in self._resolving:
            raise Unreadable(f"a delta on itself ({base_id.hex()})")
        self._resolving.add(base_id)
        try:
            own = _own_index(self, pack)
            where = _find(own, base_id) if own is not None else None
            if where is not None:
                return self._at(pack, where, width, depth + 1)
            found = self._packed(base_id, depth + 1) or self._loose(base_id)
        finally:
            self._resolving.discard(base_id)
        if found is None:
            raise Unreadable(f"the delta base {base_id.hex()} is missing")
        return found

    def _unpacked(self, pack: int, offset: int, width: int, depth: int) -> tuple[str, bytes]:
        if depth > _CHAIN:
            raise Unreadable("a delta chain too long")
        head = os.pread(pack, 32 + width, offset)
        if not head:
            raise Unreadable("a pack cut short")
        kind, at = (head[0] >> 4) & 7, 1
        byte = head[0]
        while byte & 0x80:
            byte, at = head[at], at + 1
        if kind in _TYPES:
            return _TYPES[kind], _inflate(functools.partial(_read_at, pack), offset + at)
        if kind == 6:  # OFS_DELTA: the base at a negative offset
            byte, at = head[at], at + 1
            back = byte & 0x7F
            while byte & 0x80:
                byte, at = head[at], at + 1
                back = ((back + 1) << 7) | (byte & 0x7F)
            base = self._at(pack, offset - back, width, depth + 1)
        elif kind == 7:  # REF_DELTA: the base by its id
            base_id, at = head[at : at + width], at + width
            base = self._base(pack, base_id, width, depth)
        else:
            raise Unreadable(f"an object of unknown type {kind}")
        delta = _inflate(functools.partial(_read_at, pack), offset + at)
        return base[0], _patch(base[1], delta)


def _own_index(objects: Objects, pack: int) -> bytes | None:
    return next((index for index, fd in [*(objects._packs or []), *objects._kept] if fd == pack), None)


def shadowed(objects: Objects, packs: int, name: str, width: int = 20) -> list[bytes]:
    """The objects of the new pack ``name`` (in the open directory ``packs``) whose content there is not what their
    id says. Threat: a pack a command adds naming an existing tree or commit with other content — git reads packs
    first, so ``git checkout .`` then writes what the substitute says (a hook), while a judgement reading the same
    store sees nothing moved; and one naming an object another repository has (red team 80 F4: a repository whose
    ``objects/info/alternates`` borrows this one's objects reads its packs before its own loose objects). So every
    entry is checked, not only those the repository had before the call."""
    index, pack = _open_pack(packs, name)
    objects.keep(index, pack)  # (closed with ``objects``: its reads are cached by descriptor and offset)
    total = struct.unpack(">I", index[8 + 4 * 255 : 12 + 4 * 255])[0]
    found: list[bytes] = []
    for at in range(total):
        oid = bytes(index[8 + 1024 + at * width : 8 + 1024 + (at + 1) * width])
        offset = _find(index, oid)
        if offset is None:
            raise Unreadable("a pack index that does not find its own ids")
        kind, body = objects._at(pack, offset, width, 0)
        digest = hashlib.sha256 if width == 32 else hashlib.sha1
        if digest(f"{kind} {len(body)}".encode() + b"\0" + body).digest() != oid:
            found.append(oid)
    return found


def object_id(kind: str, body: bytes, width: int) -> bytes:
    """Git's id of an object of ``kind`` with ``body`` (SHA-1, or SHA-256 for ids of 32 bytes)."""
    header = f"{kind} {len(body)}\0".encode()
    hasher = hashlib.sha256(header) if width == 32 else hashlib.sha1(header, usedforsecurity=False)
    hasher.update(body)
    return hasher.digest()


def _read_at(fd: int, offset: int) -> bytes:
    return os.pread(fd, 1 << 16, offset)


_INDEX_MAX = 256 << 20  # bytes of a pack index read at most (about 9 million objects)


def _open_pack(packs: int, name: str) -> tuple[bytes, int]:
    """A pack's index, read whole (not mapped: a running job may truncate its copy while a look reads it, and a
    mapped file cut short kills the reader), and its pack, open."""
    fd = os.open(name, _FILE, dir_fd=packs)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not 8 + 1024 <= st.st_size <= _INDEX_MAX:
            raise ValueError(name)
        index = os.pread(fd, st.st_size, 0)
    finally:
        os.close(fd)
    if index[:8] != b"\xfftOc\x00\x00\x00\x02":
        raise ValueError(name)
    pack = os.open(name[: -len(".idx")] + ".pack", _FILE, dir_fd=packs)
    if not stat.S_ISREG(os.fstat(pack).st_mode):
        os.close(pack)
        raise ValueError(name)
    return index, pack


def _prefixed(index: bytes, prefix: str) -> set[bytes]:
    """The ids of a version 2 index that start with the hex ``prefix`` (two at most: enough to say "not one")."""
    found: set[bytes] = set()
    try:
        first = int(prefix[:2], 16)
        low = struct.unpack(">I", index[8 + 4 * (first - 1) : 12 + 4 * (first - 1)])[0] if first else 0
        high = struct.unpack(">I", index[8 + 4 * first : 12 + 4 * first])[0]
        total = struct.unpack(">I", index[8 + 4 * 255 : 12 + 4 * 255])[0]
        width = (len(index) - 8 - 1024 - 40) // total - 4 - 4 if total else 20  # (ids, crcs, offsets; no large)
        width = 32 if width >= 32 else 20
        base = 8 + 1024
        for middle in range(low, min(high, low + 4096)):
            oid = index[base + middle * width : base + (middle + 1) * width]
            if oid.hex().startswith(prefix):
                found.add(bytes(oid))
                if len(found) > 1:
                    break
    except (struct.error, IndexError, ValueError, ZeroDivisionError):
        return set()
    return found


def index_ids(index: bytes, width: int) -> list[bytes]:
    """The ids a version 2 pack index lists (empty when it is none)."""
    if index[:8] != b"\xfftOc\x00\x00\x00\x02" or len(index) < 8 + 1024:
        return []
    total = struct.unpack(">I", index[8 + 4 * 255 : 12 + 4 * 255])[0]
    base = 8 + 1024
    if len(index) < base + total * width:
        return []
    return [index[base + at * width : base + (at + 1) * width] for at in range(total)]


def indexed(index: bytes, oid: bytes) -> bool:
    """Whether the version 2 pack index ``index`` lists ``oid``."""
    return index[:8] == b"\xfftOc\x00\x00\x00\x02" and _find(index, oid) is not None


def _find(index: bytes, oid: bytes) -> int | None:
    """The pack offset of ``oid`` (binary search of a version 2 index), or None."""
    try:
        first = oid[0]
        low = struct.unpack(">I", index[8 + 4 * (first - 1) : 12 + 4 * (first - 1)])[0] if first else 0
        high = struct.unpack(">I", index[8 + 4 * first : 12 + 4 * first])[0]
        total = struct.unpack(">I", index[8 + 4 * 255 : 12 + 4 * 255])[0]
        width, base = len(oid), 8 + 1024
        while low < high:
            middle = (low + high) // 2
            found = index[base + middle * width : base + (middle + 1) * width]
            if found == oid:
                offsets = base + total * (width + 4)
                value = struct.unpack(">I", index[offsets + 4 * middle : offsets + 4 * middle + 4])[0]
                if value & 0x80000000:
                    large = offsets + 4 * total + 8 * (value & 0x7FFFFFFF)
                    value = struct.unpack(">Q", index[large : large + 8])[0]
                return int(value)
            if found < oid:
                low = middle + 1
            else:
                high = middle
    except (struct.error, IndexError, ValueError):
        return None
    return None


def _inflate(read: Callable[[int], bytes], offset: int) -> bytes:
    """A zlib stream read from ``offset`` on, whole, within :data:`_OBJECT_MAX`."""
    stream = zlib.decompressobj()
    out: list[bytes] = []
    size = 0
    while not stream.eof:
        chunk = read(offset)
        if not chunk:
            raise Unreadable("an object cut short")
        offset += len(chunk)
        try:
            data = stream.decompress(chunk, _OBJECT_MAX + 1 - size)
        except zlib.error as exc:
            raise Unreadable(f"an object that does not inflate: {exc}") from None
        size += len(data)
        out.append(data)
        if size > _OBJECT_MAX:
            raise Unreadable("an object larger than the judgement reads")
        if stream.unconsumed_tail:
            raise Unreadable("an object larger than the judgement reads")
    return b"".join(out)


def _size(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def _patch(base: bytes, delta: bytes) -> bytes:
    """A git delta applied to ``base``."""
    try:
        source, at = _size(delta, 0)
        target, at = _size(delta, at)
        if source != len(base) or target > _OBJECT_MAX:
            raise Unreadable("a delta that does not fit its base")
        out = bytearray()
        while at < len(delta):
            op = delta[at]
            at += 1
            if op & 0x80:
                offset = length = 0
                for bit in range(4):
                    if op & (1 << bit):
                        offset |= delta[at] << (8 * bit)
                        at += 1
                for bit in range(3):
                    if op & (1 << (4 + bit)):
                        length |= delta[at] << (8 * bit)
                        at += 1
                out += base[offset : offset + (length or 0x10000)]
            elif op:
                out += delta[at : at + op]
                at += op
            else:
                raise Unreadable("a delta with a reserved instruction")
        if len(out) != target:
            raise Unreadable("a delta of the wrong size")
        return bytes(out)
    except IndexError:
        raise Unreadable("a delta cut short") from None


def _peeled(objects: Objects, oid: bytes) -> tuple[str, bytes]:
    kind, body = objects.get(oid)
    for _ in range(8):  # a tag of a tag ...
        if kind != "tag":
            return kind, body
        target = body.split(b"\n", 1)[0].removeprefix(b"object ").strip()
        kind, body = objects.get(bytes.fromhex(target.decode()))
    raise Unreadable("a chain of tags")


def tree_of(objects: Objects, oid: bytes) -> bytes:
    """The root tree of the commit (or tag of one, or tree) ``oid``."""
    kind, body = _peeled(objects, oid)
    if kind == "tree":
        return oid
    if kind != "commit" or not body.startswith(b"tree "):
        raise Unreadable(f"{oid.hex()} is no commit")
    return bytes.fromhex(body[5 : body.index(b"\n")].decode())


def parents_of(objects: Objects, oid: bytes) -> list[bytes]:
    kind, body = _peeled(objects, oid)
    if kind != "commit":
        return []
    head = body.split(b"\n\n", 1)[0]
    return [bytes.fromhex(line[7:].decode()) for line in head.split(b"\n") if line.startswith(b"parent ")]


def entries(objects: Objects, tree: bytes) -> Iterator[tuple[str, int, bytes]]:
    kind, body = objects.get(tree)
    if kind != "tree":
        raise Unreadable(f"{tree.hex()} is no tree")
    at, width = 0, len(tree)
    try:
        while at < len(body):
            space = body.index(b" ", at)
            nul = body.index(b"\0", space)
            mode = int(body[at:space], 8)
            name = body[space + 1 : nul].decode("utf-8", "surrogateescape")
            yield name, mode, body[nul + 1 : nul + 1 + width]
            at = nul + 1 + width
    except ValueError:
        raise Unreadable(f"tree {tree.hex()} is malformed") from None


_TREE = 0o40000


def changed_paths(objects: Objects, old: bytes | None, new: bytes, prefix: str = "", limit: int = 100_000) -> list[str]:
    """The paths (files, links, submodules) whose entry in tree ``new`` is not the same in ``old`` (None: an empty
    tree): what a checkout of ``new`` over ``old`` writes."""
    return [path for path, _mode, _oid in changed_entries(objects, old, new, prefix, limit)]


def changed_entries(
    objects: Objects, old: bytes | None, new: bytes, prefix: str = "", limit: int = 100_000
) -> list[tuple[str, int, bytes]]:
    """(path, git's mode, id) of each entry (file, link, submodule) of tree ``new`` that is not the same in ``old``
    (None: an empty tree): what a checkout of ``new`` over ``old`` writes. Only subtrees that differ are read."""
    found: list[tuple[str, int, bytes]] = []
    pending = [(prefix, old, new)]
    while pending:
        where, before, after = pending.pop()
        had = {name: (mode, oid) for name, mode, oid in entries(objects, before)} if before is not None else {}
        for name, mode, oid in entries(objects, after):
            path = f"{where}{name}"
            if had.get(name) == (mode, oid):
                continue
            if mode == _TREE:
                was = had.get(name)
                pending.append((f"{path}/", was[1] if was is not None and was[0] == _TREE else None, oid))
            else:
                found.append((path, mode, oid))
                if len(found) > limit:
                    raise Unreadable("more changed paths than the judgement reads")
    return found


BLOB_MODES = {"file": (0o100644, 0o100755), "symlink": (0o120000,)}  # git's modes of a file, of a link


def entry_at(objects: Objects, tree: bytes, rel: str, kind: str) -> bytes | None:
    """The id ``tree`` gives an entry of ``kind`` at ``rel`` (None where it has none)."""
    *dirs, name = rel.split("/")
    for part in dirs:
        found = next((oid for n, mode, oid in entries(objects, tree) if n == part and mode == 0o40000), None)
        if found is None:
            return None
        tree = found
    return next((oid for n, mode, oid in entries(objects, tree) if n == name and mode in BLOB_MODES[kind]), None)
