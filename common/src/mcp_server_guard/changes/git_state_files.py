"""Git's state files the judgement of later checkouts does not read as refs: which are inert, which git replays
by itself (rerere), which only name commits, and an am session's patches (``changes.git_refs``)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable

from mcp_server_guard.changes.git_layout import OID, Layout, id_width
from mcp_server_guard.changes.git_objects import Objects, Unreadable, parents_of
from mcp_server_guard.changes.git_verdicts import Trees
from mcp_server_guard.paths import printable

__all__ = ["KNOWN", "REPLAYS", "am_patches", "ids_only", "lfs_object_as_named", "shallow_cuts", "unknown_question"]

_SHOWN = 3  # paths named in a question, at most


# What a git dir holds that the judgement reads otherwise or that no checkout reads: its hooks, config and pointers
# (``git_verdicts``), its objects (checked there and below), other git dirs within it (judged as themselves), and
# what git keeps for people or for itself alone (messages, logs of gc, excludes, locks, git-lfs's store: read by
# way of the pointers a checkout names).
KNOWN = re.compile(
    r"^(?:hooks/.*|config|config\.worktree|commondir|gitdir|objects/.*|info/grafts|modules/.*|worktrees/.*"
    r"|description|COMMIT_EDITMSG|MERGE_MSG|MERGE_MODE|SQUASH_MSG|TAG_EDITMSG|NOTES_EDITMSG|EDIT_DESCRIPTION"
    r"|gc\.log|gc\.pid|shallow|locked|info/exclude|info/refs|info/sparse-checkout|branches/[^/]+|remotes/[^/]+"
    r"|BISECT_LOG|BISECT_TERMS|BISECT_NAMES|BISECT_ANCESTORS_OK|.*\.lock|sharedindex\.[0-9a-f]+"
    r"|fsmonitor--daemon(?:/.*|\.ipc)|lfs/(?!objects/).*|MERGE_RR|rr-cache/[^/]+/(?:preimage|thisimage)(?:\.[0-9]+)?)$"
)


def unknown_question(shown: str, rests: list[str]) -> str:
    """The question for files of git's state (``rests``, in the git dir ``shown``) the judgement does not read."""
    named = ", ".join(rests[:_SHOWN]) + (" …" if len(rests) > _SHOWN else "")
    return printable(f"It writes {named} in {shown}, which git may read later to write the work tree (a merge, a "
                     "bisect, rerere, a filter) and which the server does not judge.")  # fmt: skip


# An am session's (or an apply-backend rebase's) state: the patches still to apply, numbered, and where it is.
_PATCHES = re.compile(r"^rebase-apply/(?:[0-9]{4,}|next|last)$")
_PATCHED = re.compile(rb"^(?:\+\+\+ b/|rename to |copy to )(.+)$", re.MULTILINE)


def am_patches(trees: Trees, where: Layout, names: set[str]) -> list[str]:
    """A question for an am session's patches the command wrote or changed that are still to apply. Threat (red
    team 78 F4): ``git am --continue``/``--skip`` applies them outside the box — a patch that adds a hook, which git
    runs right after that patch's commit. Their text is a diff, not the bytes git writes: asked, with the paths."""
    if not any(_PATCHES.match(n) for n in names):
        return []

    def number(name: str) -> int:
        text = (trees.read(f"{where.own}/rebase-apply/{name}", limit=64) or b"").strip()
        return int(text) if text.isdigit() else 0

    first, last = number("next"), number("last")
    pending = [f"{i:04d}" for i in range(max(first, 1), min(last, first + 10_000) + 1)]
    if not pending or not any(f"rebase-apply/{p}" in names or n in names for p in pending
                              for n in ("rebase-apply/next", "rebase-apply/last")):  # fmt: skip
        return []
    paths: list[str] = []
    for patch in pending[:256]:
        data = trees.read(f"{where.own}/rebase-apply/{patch}", limit=16 << 20) or b""
        paths += [os.fsdecode(m.strip()) for m in _PATCHED.findall(data)]
    shown = ", ".join(dict.fromkeys(paths[:_SHOWN])) + (" …" if len(set(paths)) > _SHOWN else "")
    return [printable(f"It leaves a git am session in {where.shown} with {len(pending)} patch(es) still to apply"
                      f"{f' (to {shown})' if shown else ''}: your git am --continue or --skip applies them to the "
                      "work tree outside the box (git may run a hook at once).")]  # fmt: skip


# What git replays into the work tree by itself at a later merge: rerere's recorded resolutions.
REPLAYS = re.compile(r"^rr-cache/[^/]+/postimage(?:\.[0-9]+)?$")  # (what rerere writes over a conflict)
_WORD = re.compile(rb"\S+")


def ids_only(data: bytes, objects: Objects, branch: Callable[[str], bool]) -> list[bytes] | None:
    """The commits a small state file names when every word of it is a whole id of a commit or a tag, or a branch
    the repository has (``main``, ``refs/heads/main``: judged where it moves); None otherwise, or for a file that
    names nothing (one the server cannot read for what git takes from it)."""
    found: list[bytes] = []
    words = _WORD.findall(data)
    for word in words:
        text = word.decode("utf-8", "surrogateescape")
        if word == b"ref:" or branch(text if text.startswith("refs/") else f"refs/heads/{text}"):
            continue
        if not OID.match(word):
            return None
        oid = bytes.fromhex(word.decode().lower())
        try:
            if objects.get(oid)[0] not in ("commit", "tag"):
                return None
        except Unreadable:
            return None
        found.append(oid)
    return found if words else None


_LFS_OBJECT = re.compile(r"^lfs/objects/([0-9a-f]{2})/([0-9a-f]{2})/(\1\2[0-9a-f]{60})$")


def lfs_object_as_named(trees: Trees, git_dir: str, rest: str, *, made: bool) -> bool:
    """Whether ``rest`` is a git-lfs object the command made whose bytes are what its name (their SHA-256) says:
    ``git lfs pull`` (a pointer naming it is judged by those bytes). One rewritten in place, or named otherwise,
    is not: the user's checkout of a pointer already there would write it."""
    found = _LFS_OBJECT.match(rest)
    if not made or found is None:
        return False
    data = trees.read(f"{git_dir}/{rest}", limit=1 << 30)
    return data is not None and hashlib.sha256(data).hexdigest() == found.group(3)


_SHALLOW_MAX = 64 << 20  # bytes of a shallow file read, at most


def _shallow_ids(data: bytes, width: int) -> set[bytes]:
    """The commits a shallow file names, read as git reads it: each line's first ``width`` × 2 characters, when they
    are hex, whatever follows them (red team 111 F2: ``<id> x``, ``<id>ZZ``, 64 hex digits in a SHA-1 repository)."""
    found: set[bytes] = set()
    for line in data.split(b"\n"):
        head = line[: width * 2]
        if len(head) == width * 2 and all(c in b"0123456789abcdefABCDEF" for c in head):
            found.add(bytes.fromhex(head.decode()))
    return found


def shallow_cuts(trees: Trees, where: Layout, rest: str) -> list[str]:
    """A question for a ``shallow`` file (``rest`` of the git dir ``where``) that names anew a commit whose parents
    the repository holds. Threat (red team 108 F1): git reads ``shallow`` as grafts — each commit it names has no
    parents —, so the history behind such a commit is unreachable to git and the user's next ``git gc`` deletes it
    (``undo`` gives the file back, not the objects). A shallow fetch's boundary names commits whose parents it did
    not fetch: those cut nothing."""
    path = f"{where.own}/{rest}"
    after, before = trees.read(path, limit=_SHALLOW_MAX + 1) or b"", trees.read(path, real=True, limit=_SHALLOW_MAX)
    width = id_width(trees, where.common)
    new = sorted(_shallow_ids(after, width) - _shallow_ids(before or b"", width))
    if not new and len(after) <= _SHALLOW_MAX:
        return []
    objects = trees.objects(f"{where.common}/objects")
    try:
        cut = [oid for oid in new if objects.has(oid) and any(objects.has(p) for p in parents_of(objects, oid))]
    except Unreadable as exc:
        return [printable(f"It writes {rest} in {where.shown}, which makes git take the commits it names as having no "
                          f"parents, and the server could not read them whole ({exc}).")]  # fmt: skip
    finally:
        objects.close()
    if not cut and len(after) <= _SHALLOW_MAX:
        return []
    shown = f" (such as {cut[0].hex()[:12]})" if cut else ""
    return [printable(f"It writes {rest} in {where.shown}, which makes git take {len(cut) or 'its'} commit(s){shown} "
                      "as having no parents: the history behind them is then unreachable to git, and your next git gc "
                      "deletes it for good (undo gives back the file, not what gc deleted).")]  # fmt: skip
