"""The index's cache tree (its ``TREE`` extension) checked against the index's own entries (``changes.git_refs``).

Threat (red team 110 F1): git takes a valid cache-tree entry as "the index written as a tree" — ``git commit``,
``git stash`` and ``write-tree`` use it for every directory the index did not change since. A command that leaves
every entry as it was and only makes the cache tree name a tree of its own (HEAD's plus ``.envrc``) has the user's
next ``git stash`` + ``git stash pop`` or ``git commit`` write or commit that tree, while ``git status`` shows
nothing. Git never writes a valid entry that its entries do not make: one that differs is a forgery.
"""

from __future__ import annotations

import hashlib

from mcp_server_guard.changes.git_index import staged_for_trees

__all__ = ["CacheTreeUnreadable", "cache_tree_lies"]

_TREE_MODE = 0o40000
_MODES = {0o100644: b"100644", 0o100755: b"100755", 0o120000: b"120000", 0o160000: b"160000", _TREE_MODE: b"40000"}
_NODES_MAX = 200_000  # cache-tree entries read at most (more: the index cannot be judged)


class CacheTreeUnreadable(ValueError):
    """A cache tree git would read otherwise than this reader (or past its bound)."""


def cache_tree_lies(data: bytes, hash_size: int = 20) -> list[str]:
    """The directories ("" for the top) whose valid cache-tree entry names another tree than the index's entries
    make. Raises CacheTreeUnreadable where the extension cannot be read as git reads it."""
    entries, extensions, paths = staged_for_trees(data, hash_size)
    tree = extensions.get(b"TREE")
    if not tree:
        return []
    built = _Trees(entries, hash_size)
    spans: dict[str, int] = {}  # directory -> how many index entries lie below it (what git skips over by a count)
    for path in paths:
        parts = path.rstrip("/").split("/")
        for depth in range(len(parts)):
            directory = "/".join(parts[:depth])
            spans[directory] = spans.get(directory, 0) + 1
    # Threat (red team 112 F2): a valid entry whose count is not its directory's — git skips that many entries for
    # it, leaving a file out of every tree it writes from the index (the user's next stash + pop deletes it).
    return [path for path, oid, count in _nodes(tree, hash_size)
            if built.tree(path) != oid or spans.get(path, 0) != count]  # fmt: skip


def _nodes(data: bytes, hash_size: int) -> list[tuple[str, bytes, int]]:
    """(directory, tree id, the count of index entries it spans) of each valid entry of a ``TREE`` extension (in
    git's order: a node, then its subtrees)."""
    found: list[tuple[str, bytes, int]] = []
    stack: list[tuple[str, int]] = []  # (directory, subtrees still to read in it)
    at = 0
    while at < len(data):
        if len(found) + len(stack) > _NODES_MAX:
            raise CacheTreeUnreadable("a cache tree past what is read")
        end = data.find(b"\0", at)
        line_end = data.find(b"\n", end)
        if end < 0 or line_end < 0:
            raise CacheTreeUnreadable("a cache tree cut short")
        name = data[at:end].decode("utf-8", "surrogateescape")
        try:
            count, subtrees = (int(word) for word in data[end + 1 : line_end].split(b" "))
        except ValueError:
            raise CacheTreeUnreadable("a cache tree entry git would not read") from None
        at = line_end + 1
        parent = stack[-1][0] if stack else None
        path = name if not parent else f"{parent}/{name}"
        if parent is None and name:
            raise CacheTreeUnreadable("a cache tree whose top has a name")
        if count >= 0:
            if at + hash_size > len(data):
                raise CacheTreeUnreadable("a cache tree cut short")
            found.append((path, data[at : at + hash_size], count))
            at += hash_size
        if stack:
            directory, left = stack.pop()
            if left > 1:
                stack.append((directory, left - 1))
        if subtrees > 0:
            stack.append((path, subtrees))
        elif subtrees < 0:
            raise CacheTreeUnreadable("a cache tree entry git would not read")
    return found


class _Trees:
    """The trees the index's entries make, by directory, each hashed once, as git writes them."""

    def __init__(self, entries: dict[str, tuple[int, bytes]], hash_size: int) -> None:
        self.hash_size = hash_size
        self.children: dict[str, dict[str, tuple[int, bytes]]] = {}
        for path, (given, oid) in entries.items():
            parts = path.rstrip("/").split("/")
            mode = _TREE_MODE if path.endswith("/") else given  # (a sparse index's directory entry: a whole tree)
            for depth in range(len(parts) - 1):
                directory = "/".join(parts[:depth])
                self.children.setdefault(directory, {}).setdefault(parts[depth], (_TREE_MODE, b""))
            self.children.setdefault("/".join(parts[:-1]), {})[parts[-1]] = (mode, oid)
        self.made: dict[str, bytes | None] = {}

    def tree(self, directory: str) -> bytes | None:
        if directory in self.made:
            return self.made[directory]
        names = self.children.get(directory)
        if names is None:
            self.made[directory] = None
            return None
        body = bytearray()
        for name in sorted(names, key=lambda n: n + "/" if names[n][0] == _TREE_MODE else n):
            mode, oid = names[name]
            if mode == _TREE_MODE and not oid:
                oid = self.tree(f"{directory}/{name}" if directory else name) or b""
            if mode not in _MODES or len(oid) != self.hash_size:
                self.made[directory] = None
                return None
            body += _MODES[mode] + b" " + name.encode("utf-8", "surrogateescape") + b"\0" + oid
        header = f"tree {len(body)}\0".encode()
        hasher = hashlib.sha256(header) if self.hash_size == 32 else hashlib.sha1(header, usedforsecurity=False)
        hasher.update(body)
        self.made[directory] = hasher.digest()
        return self.made[directory]
