"""Files of git's object stores a command deleted whose objects the store still has: git's own bookkeeping.

``git gc`` (and ``gc --auto`` after a ``git commit``) packs loose objects and deletes them, and replaces old packs
by a new one: dozens of files deleted, directories of ``objects/`` emptied — none of it a loss, since every object
is still there. Counted as deletions, they asked "It deletes .git/objects/17/ …" and "Git has no copy of …" of
everyday git (red team 79's note; issue 45: questions only where the copy cannot help). So a deleted loose object
that a pack left by the call lists, and a deleted pack each of whose objects a pack or a loose object left by the
call still holds, are not counted as losses (undo gives them back all the same). An object deleted with no copy
left (``rm -rf .git/objects/ab``: a corrupt repository, work lost) still is (red team 78's test).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

from mcp_server_guard.changes.changeset import ChangeSet
from mcp_server_guard.changes.git_layout import OID, packed_refs
from mcp_server_guard.changes.git_objects import index_ids, indexed, object_id
from mcp_server_guard.changes.git_verdicts import Trees

__all__ = ["kept_by_git"]

_LOOSE = re.compile(r"^(.*?)(?:^|/)objects/([0-9a-f]{2})/([0-9a-f]{38}|[0-9a-f]{62})$")
_PACK = re.compile(r"^(.*?)(?:^|/)objects/pack/(pack-[0-9a-f]+)\.(pack|idx|rev|bitmap|mtimes|keep|promisor)$")
_INDEX_MAX = 256 << 20
_IDS_MAX = 4_000_000  # ids of the deleted packs checked in all, at most (more: counted as deletions)
_LOOSE_MAX = 64 << 20  # a loose object read to check it, at most


def kept_by_git(sets: Sequence[ChangeSet]) -> set[tuple[str, str]]:
    """(root, path) of each deleted file of a git object store whose objects the store still has afterwards."""
    kept: set[tuple[str, str]] = set()
    for changes in sets:
        deleted = [c.path for c in changes.changes if c.action == "delete" and c.kind == "file"]
        if not any(_LOOSE.match(p) or _PACK.match(p) or "refs/" in p for p in deleted):
            continue
        trees = Trees(changes)
        stores: dict[str, _Store] = {}  # each store's indexes read once
        budget = [_IDS_MAX]
        packed: dict[str, dict[str, bytes]] = {}  # each git dir's packed-refs, read once
        for path in deleted:
            if "refs/" in path and _ref_packed(trees, path, packed):
                kept.add((changes.root, path))
            elif loose := _LOOSE.match(path):
                objects = path[: -len(loose.group(2)) - len(loose.group(3)) - 2]
                if stores.setdefault(objects, _Store(trees, objects)).packed(
                    bytes.fromhex(loose.group(2) + loose.group(3))
                ):
                    kept.add((changes.root, path))
            elif pack := _PACK.match(path):
                objects = path[: path.rindex("/pack/")]
                if pack.group(3) not in ("pack", "idx") or stores.setdefault(objects, _Store(trees, objects)).held(
                    pack.group(2), budget
                ):
                    kept.add((changes.root, path))  # (the rest are caches and marks of a pack)
    return kept


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
            names = set(self.trees.real_names(directory))
            for change in self.trees.changes.changes:
                parent, _, name = change.path.rpartition("/")
                if parent == directory:
                    (names.discard if change.action == "delete" else names.add)(name)
            for name in sorted(n for n in names if n.endswith(".idx")):
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
