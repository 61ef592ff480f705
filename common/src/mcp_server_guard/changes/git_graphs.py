"""Commit graphs (``objects/info/commit-graph``, a chain's ``commit-graphs/graph-*.graph``) checked against the
commits' own objects: git takes a commit's tree and parents from the graph when it has one (``changes.git_refs``)."""

from __future__ import annotations

import struct
from collections.abc import Sequence

from mcp_server_guard.changes.git_layout import id_width
from mcp_server_guard.changes.git_objects import Objects, Unreadable, parents_of, tree_of
from mcp_server_guard.changes.git_verdicts import Trees

__all__ = ["graph_bases", "graph_chunks", "graph_lies", "graph_lies_in"]


_NO_PARENT, _EXTRA_EDGES, _LAST_EDGE = 0x70000000, 0x80000000, 0x80000000


def graph_chunks(data: bytes, width: int = 20) -> tuple[dict[int, int], list[bytes]]:
    """A commit graph file's chunks (id -> offset) and the commits it lists (OIDL), in order."""
    if len(data) < 8 or data[:4] != b"CGPH":
        raise Unreadable("a commit graph git would not read as such")
    chunks = {}
    for at in range(data[6] + 1):
        start = 8 + 12 * at
        chunk, offset = struct.unpack(">IQ", data[start : start + 12])
        chunks[chunk] = offset
    oidl = chunks.get(0x4F49444C)  # OIDL
    if oidl is None or 0x43444154 not in chunks:  # CDAT
        raise Unreadable("a commit graph without its commits")
    end = next(e for e in sorted(chunks.values()) if e > oidl)
    return chunks, [data[at : at + width] for at in range(oidl, oidl + (end - oidl) // width * width, width)]


def graph_bases(data: bytes, width: int = 20) -> list[bytes]:
    """The graphs below this one in a chain (its BASE chunk: their hashes, the lowest first)."""
    chunks, _ids = graph_chunks(data, width)
    base = chunks.get(0x42415345)  # BASE
    if base is None:
        return []
    end = next((e for e in sorted(chunks.values()) if e > base), base)
    return [data[at : at + width] for at in range(base, base + (end - base) // width * width, width)]


def graph_lies(objects: Objects, data: bytes, width: int = 20, below: Sequence[bytes] = ()) -> list[bytes]:
    """The commits a commit graph file gives another root tree or other parents than their own objects say
    (``below``: the commits of the graphs below it in a chain, the lowest first: a parent's position counts them
    first). Threat: git takes a commit's tree and parents from the graph when it has one, so a forged graph makes
    ``git checkout HEAD~1`` write a tree the command made (a hook in it) while every ref and object stays as it was;
    and a graph that gives a commit no parents (red team 108 F2) cuts the history behind it off — the user's next
    ``git gc`` deletes it."""
    chunks, ids = graph_chunks(data, width)
    cdat, edges = chunks[0x43444154], chunks.get(0x45444745)  # CDAT, EDGE
    every = [*below, *ids]
    if chunks.get(0x42415345) is not None and not below:
        raise Unreadable("a commit graph in a chain whose base graphs were not read")

    def commit(position: int) -> bytes:
        if position >= len(every):
            raise Unreadable("a commit graph naming a parent it does not list")
        return every[position]

    found: list[bytes] = []
    for at, oid in enumerate(ids):
        entry = data[cdat + at * (width + 16) : cdat + at * (width + 16) + width + 8]
        first, second = struct.unpack(">II", entry[width:])
        parents = [commit(first)] if first != _NO_PARENT else []
        if second & _EXTRA_EDGES and second != _NO_PARENT:
            if edges is None:
                raise Unreadable("a commit graph naming extra parents without its EDGE chunk")
            at_edge = second & ~_EXTRA_EDGES
            for _ in range(len(every)):
                (edge,) = struct.unpack(">I", data[edges + 4 * at_edge : edges + 4 * at_edge + 4])
                parents.append(commit(edge & ~_LAST_EDGE))
                if edge & _LAST_EDGE:
                    break
                at_edge += 1
        elif second != _NO_PARENT:
            parents.append(commit(second))
        if tree_of(objects, oid) != entry[:width] or parents_of(objects, oid) != parents:
            found.append(oid)
    return found


def graph_lies_in(trees: Trees, git_dir: str, rest: str, objects: Objects) -> list[bytes]:
    """``graph_lies`` of the commit graph file ``rest``, with the commits of the graphs below it in its chain."""
    width = id_width(trees, git_dir)
    data = trees.read(f"{git_dir}/{rest}", limit=256 << 20) or b""
    below: list[bytes] = []
    for base in graph_bases(data, width):
        lower = trees.read(f"{git_dir}/objects/info/commit-graphs/graph-{base.hex()}.graph", limit=256 << 20)
        if lower is None:
            raise Unreadable(f"its base graph {base.hex()[:12]} is missing")
        below += graph_chunks(lower, width)[1]
    return graph_lies(objects, data, width, below)
