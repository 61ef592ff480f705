"""Files and symlinks a command deleted in one place and made, the same, in another (``git mv``, ``mv dir new``,
``mv -f a b``): moves, judged as such (not as a deletion and a creation)."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence

from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.changes.git_index import blob_hash
from mcp_server_guard.changes.nofollow import DIR, Changed, parent

__all__ = ["link_target", "moved_pairs"]

_MOVE_HASH_BYTES = 256 << 20  # bytes hashed at most to recognise moved files


def moved_pairs(
    sets: Sequence[ChangeSet], refused: dict[tuple[str, str], str]
) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """Files deleted in one place and created, byte for byte, in another (``git mv``, ``mv dir new``), or renamed
    over another file (``mv -f a b``): (from, to) pairs of (root, path). Only files of the same size are compared,
    within a bound of bytes hashed."""
    created: dict[int, list[tuple[ChangeSet, Change]]] = {}
    links: list[tuple[ChangeSet, Change]] = []  # symlinks made: one deleted elsewhere with the same target moved
    for changes in sets:
        for change in changes.changes:
            if (changes.root, change.path) in refused or change.action not in ("create", "modify"):
                continue
            # A file renamed over another (``mv -f a b``) is a move too: ``b`` is a modify with ``a``'s bytes.
            if change.kind == "file":
                created.setdefault(change.size, []).append((changes, change))
            elif change.kind == "symlink":
                links.append((changes, change))
    budget = [_MOVE_HASH_BYTES]
    hashes: dict[tuple[str, str, bool], bytes | None] = {}

    def digest(changes: ChangeSet, path: str, real: bool, size: int) -> bytes | None:
        key = (changes.root, path, real)
        if key not in hashes:
            if budget[0] < size:
                return None
            budget[0] -= size
            base = changes.root if real else changes.upper
            hashes[key] = blob_hash(posixpath.join(base, path), no_follow_below=base)
        return hashes[key]

    moves: set[tuple[str, str]] = set()
    pairs: list[tuple[tuple[str, str], tuple[str, str]]] = []
    for changes in sets:
        for change in changes.changes:
            if change.action != "delete" or (changes.root, change.path) in refused:
                continue
            name = change.path.rsplit("/", 1)[-1]
            if change.kind == "symlink":  # ``mv d d2`` of a directory holding a link: the same link, elsewhere
                target = link_target(changes.root, change.path)
                for other, made in sorted(links, key=lambda c: c[1].path.rsplit("/", 1)[-1] != name):
                    if (
                        (other.root, made.path) not in moves
                        and target is not None
                        and target == link_target(other.upper, made.path)
                    ):
                        moves.update({(changes.root, change.path), (other.root, made.path)})
                        pairs.append(((changes.root, change.path), (other.root, made.path)))
                        break
            if change.kind != "file":
                continue
            candidates = sorted(created.get(change.size, []), key=lambda c: c[1].path.rsplit("/", 1)[-1] != name)
            for other, made in candidates:
                if (other.root, made.path) in moves:
                    continue
                old = digest(changes, change.path, True, change.size)
                if old is not None and old == digest(other, made.path, False, made.size):
                    moves.update({(changes.root, change.path), (other.root, made.path)})
                    pairs.append(((changes.root, change.path), (other.root, made.path)))
                    break
    return pairs


def link_target(base: str, path: str) -> str | None:
    """A symlink's target, read beneath ``base`` with no link followed (None when it is not one)."""
    try:
        fd = os.open(base, DIR)
    except OSError:
        return None
    try:
        with parent(fd, path) as (dirfd, name):
            return os.readlink(name, dir_fd=dirfd)
    except (OSError, Changed):
        return None
    finally:
        os.close(fd)
