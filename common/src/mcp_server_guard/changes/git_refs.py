"""What git would write into the work tree later, from the refs, the stash and the index a command left.

Threat (red team 74 F2): a path the judgement refuses in the work tree (a hook of ``core.hooksPath = .githooks``,
``.envrc``, ``.vscode/tasks.json``) committed instead — with git's plumbing, the work tree never touched — onto a
branch, a tag, the stash or the index: the user's own ``git checkout``, ``stash pop``, ``reset --hard`` or
``checkout -- .`` then writes it, outside the box, and git may run it at once (``post-checkout``). So a ref a
command makes or moves (``refs/**``, ``packed-refs``, ``HEAD`` and the other ``*_HEAD`` files) and the index are
judged by what they would write: the paths whose content differs from what the user has (the commit ``HEAD``
names, and what the ref named before), each judged as a write of that path would be. One that would be refused
is asked (with the reason); one whose objects cannot be read whole is asked too. Git's objects are read by the
server (``changes.git_objects``), no git program runs.

Only a git dir at the top of its work tree (``<dir>/.git``) is judged so; a linked work tree's or a bare
repository's refs are git's own paths, judged by ``changes.git_verdicts``.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
from collections.abc import Callable

from mcp_server_guard.changes.changeset import ChangeSet
from mcp_server_guard.changes.git_index import parse_index
from mcp_server_guard.changes.git_objects import Objects, Unreadable, changed_paths, entries, parents_of, tree_of
from mcp_server_guard.changes.git_verdicts import Trees
from mcp_server_guard.paths import printable

__all__ = ["ref_questions"]

_HEADS = frozenset({"HEAD", "ORIG_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "AUTO_MERGE"})
_OID = re.compile(rb"^([0-9a-f]{40}|[0-9a-f]{64})$")
_SHOWN = 3  # paths named in a question, at most


def _judged(rest: str) -> bool:
    return rest in _HEADS or rest in ("packed-refs", "index") or rest.startswith("refs/")


def ref_questions(changes: ChangeSet, trees: Trees, refused: Callable[[str], str | None]) -> list[str]:
    """The questions for what the refs and the index ``changes`` leave would write into the work tree later;
    ``refused``: why a write of a root-relative path would be refused (None: it would not)."""
    found: dict[str, set[str]] = {}
    for change in changes.changes:
        parts = change.path.split("/")
        if ".git" not in parts or change.kind == "dir":
            continue
        at = parts.index(".git")
        rest = "/".join(parts[at + 1 :])
        if _judged(rest) and change.action != "delete":
            found.setdefault("/".join(parts[: at + 1]), set()).add(rest)
    asks: list[str] = []
    for git_dir, names in sorted(found.items()):
        asks += _questions(changes, trees, git_dir, names, refused)
    return asks


def _questions(
    changes: ChangeSet, trees: Trees, git_dir: str, names: set[str], refused: Callable[[str], str | None]
) -> list[str]:
    top = posixpath.dirname(git_dir)
    found = (trees.open_dir(base, f"{git_dir}/objects") for base in (changes.upper, changes.root))
    dirs = [fd for fd in found if fd is not None]
    objects = Objects(dirs)
    asks: list[str] = []
    try:
        refs_now, refs_then = _refs(trees, git_dir, names, real=False), _refs(trees, git_dir, names, real=True)
        head = refs_then.get("HEAD")
        try:
            bases = [tree_of(objects, head)] if head is not None else []
        except Unreadable:
            bases = []  # (the user's checkout cannot be read: every path a ref names is new to it)
        for ref, oid in sorted(refs_now.items()):
            if refs_then.get(ref) == oid:
                continue
            try:
                paths = _written(objects, ref, oid, refs_then.get(ref), bases)
            except Unreadable as exc:
                asks.append(f"It points {printable(_shown(top, ref))} at a commit the server could not read whole "
                            f"({exc}): what your next checkout of it writes could not be judged.")  # fmt: skip
                continue
            asks += _asked(top, _shown(top, ref), paths, refused)
        if "index" in names:
            asks += _asked(top, _shown(top, "the index"), _staged(trees, git_dir, objects, bases), refused)
    finally:
        objects.close()
    return asks


def _shown(top: str, ref: str) -> str:
    return f"{ref} of {top or '.'}/.git"


def _asked(top: str, what: str, paths: list[str], refused: Callable[[str], str | None]) -> list[str]:
    hits: list[tuple[str, str]] = []
    for path in sorted(paths):
        rel = posixpath.join(top, path) if top else path
        why = refused(rel)
        if why is not None:
            hits.append((rel, why))
    if not hits:
        return []
    named = ", ".join(f"{rel} ({why})" for rel, why in hits[:_SHOWN]) + (" …" if len(hits) > _SHOWN else "")
    return [
        printable(
            f"It sets {what} to content no tool may write in the work tree: {named}. Your next checkout, "
            "stash pop or reset of it writes that there, outside the box (git may run a hook at once)."
        )
    ]


def _written(objects: Objects, ref: str, oid: bytes, before: bytes | None, bases: list[bytes]) -> list[str]:
    """The paths a checkout of ``oid`` writes over what the user has (every base: the checkout, the ref before)."""
    tree = tree_of(objects, oid)
    against: list[bytes | None] = [*bases, *([tree_of(objects, before)] if before is not None else [])] or [None]
    paths = set(changed_paths(objects, against[0], tree))
    for base in against[1:]:
        paths &= set(changed_paths(objects, base, tree))
    if ref == "refs/stash":  # what `stash pop` writes also comes from its index and untracked commits
        for parent in parents_of(objects, oid)[1:]:
            paths |= set(changed_paths(objects, against[0], tree_of(objects, parent)))
    return sorted(paths)


def _staged(trees: Trees, git_dir: str, objects: Objects, bases: list[bytes]) -> list[str]:
    """The index entries the command changed whose content the user's checkout does not have."""
    now = parse_index(trees.read(f"{git_dir}/index", limit=256 << 20) or b"", _width(trees, git_dir))
    then = parse_index(trees.read(f"{git_dir}/index", real=True, limit=256 << 20) or b"", _width(trees, git_dir))
    changed = [path for path, oid in now.items() if then.get(path) != oid]
    return [path for path in changed if not bases or _entry(objects, bases[0], path) != now[path]]


def _entry(objects: Objects, tree: bytes, path: str) -> bytes | None:
    """The id ``path`` has in ``tree`` (None: none, or it cannot be read)."""
    with contextlib.suppress(Unreadable):
        for part in path.split("/")[:-1]:
            tree = next((oid for name, mode, oid in entries(objects, tree) if name == part and mode == 0o40000), b"")
            if not tree:
                return None
        last = path.rsplit("/", 1)[-1]
        return next((oid for name, _mode, oid in entries(objects, tree) if name == last), None)
    return None


def _width(trees: Trees, git_dir: str) -> int:
    config = trees.read(f"{git_dir}/config", real=True) or b""
    return 32 if re.search(rb"(?im)^\s*objectformat\s*=\s*\"?sha256", config) else 20


def _refs(trees: Trees, git_dir: str, names: set[str], *, real: bool) -> dict[str, bytes]:
    """The commits the changed refs name (``names``: paths below the git dir), and ``HEAD``'s, resolved."""
    packed = _packed(trees.read(f"{git_dir}/packed-refs", real=real, limit=64 << 20) or b"")
    out: dict[str, bytes] = {}
    wanted = {n for n in names if n != "index"} | {"HEAD"}
    if "packed-refs" in names:
        wanted |= set(packed)
    wanted.discard("packed-refs")
    for ref in wanted:
        oid = _resolve(trees, git_dir, ref, packed, real)
        if oid is not None:
            out[ref] = oid
    return out


def _resolve(trees: Trees, git_dir: str, ref: str, packed: dict[str, bytes], real: bool) -> bytes | None:
    for _ in range(5):  # symbolic refs, followed a few times
        text = trees.read(f"{git_dir}/{ref}", real=real, limit=4096)
        if text is None:
            return packed.get(ref)
        value = text.split(b"\n", 1)[0].split(b"\t", 1)[0].strip()  # (FETCH_HEAD-like lines: the first id)
        if value.startswith(b"ref: "):
            ref = value[5:].decode("utf-8", "surrogateescape").strip()
            continue
        return bytes.fromhex(value.decode()) if _OID.match(value) else None
    return None


def _packed(data: bytes) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for line in data.splitlines():
        oid, _, ref = line.partition(b" ")
        if _OID.match(oid) and ref:
            out[ref.decode("utf-8", "surrogateescape")] = bytes.fromhex(oid.decode())
    return out
