"""Where a git dir's work tree, objects and refs are, and its refs read as git reads them (``changes.git_refs``).

A git dir is ``<dir>/.git``, a linked work tree's (``.git/worktrees/<name>``: its HEAD and index its own, its refs and
objects the common dir's), a submodule's (``.git/modules/<name>``, its work tree where ``core.worktree`` says) or
one a ``.git`` file names (``--separate-git-dir``). Read without following links, from the tree as the command left
it or (``real``) as it was.
"""

from __future__ import annotations

import os
import posixpath
import re

from mcp_server_guard.changes.git_verdicts import Trees, pointer_place, root_relative
from mcp_server_guard.paths import within_any

__all__ = ["OID", "Layout", "id_width", "layout_of", "packed_refs", "refs_of", "resolve_ref", "valid_ref"]

OID = re.compile(rb"^([0-9a-fA-F]{40}|[0-9a-fA-F]{64})$")
_MODULE = re.compile(r"^(?:(.*)/)?\.git/modules/(.+)$")  # (the work tree's top, the module's name)
_MENTIONS_OR_INDEX = re.compile(r"^(?:index|logs/.+|FETCH_HEAD|(?:rebase-merge|rebase-apply|sequencer)/.+)$")


class Layout:
    """A git dir (``own``: its HEAD, index, reflogs), the dir with its objects and shared refs (``common``), and
    where its work tree lies: ``top``, root-relative ("" for one outside the root, judged by its paths' names)."""

    def __init__(self, own: str, common: str, top: str, shown: str) -> None:
        self.own, self.common, self.top, self.shown = own, common, top, shown


def layout_of(trees: Trees, git_dir: str) -> Layout | None:
    """Where ``git_dir``'s objects and work tree are; None for one without a work tree (a bare repository)."""
    root = trees.changes.root
    common = git_dir
    if trees.kind(f"{git_dir}/commondir") == "file":  # (a linked work tree's: its refs and objects are shared)
        target = pointer_place(trees, f"{git_dir}/commondir", False)
        if target is None or not within_any(target, [root]):
            return None  # (objects outside the root: the command wrote none of them)
        common = root_relative(target, root)
    if posixpath.basename(git_dir) == ".git":
        top: str | None = posixpath.dirname(git_dir)
    elif trees.kind(f"{git_dir}/gitdir") == "file":  # (a linked work tree: its ``.git`` file's place)
        place = pointer_place(trees, f"{git_dir}/gitdir", False)
        top = posixpath.dirname(place) if place is not None else None
    else:  # (a submodule's, or one with ``core.worktree``: git takes that from the git dir's config)
        found = re.findall(rb"(?im)^\s*worktree\s*=\s*\"?([^\"\r\n]*)", trees.read(f"{git_dir}/config") or b"")
        top = posixpath.normpath(posixpath.join(root, git_dir, os.fsdecode(found[-1].strip()))) if found else None
        if top is None:  # (``--separate-git-dir``: a ``.git`` file at the root's top or beside the git dir names it)
            for near in dict.fromkeys(("", posixpath.dirname(git_dir))):
                gitfile = f"{near}/.git" if near else ".git"
                place = pointer_place(trees, gitfile, True) if trees.kind(gitfile) == "file" else None
                if place is not None and place == posixpath.normpath(posixpath.join(root, git_dir)):
                    top = near
    module = _MODULE.match(git_dir)
    if top is None and module is not None:
        # (a submodule's git dir with no ``core.worktree``: `git submodule update` takes it for the submodule of
        # that name and checks it out there — red team 80's note; a module's default path is its name)
        top = posixpath.join(module.group(1), module.group(2)) if module.group(1) else module.group(2)
    if top is None:
        return None
    if posixpath.isabs(top):
        top = root_relative(top, root) if within_any(top, [root]) else ""
    return Layout(git_dir, common, top, git_dir if posixpath.basename(git_dir) != ".git" else f"{top or '.'}/.git")


def id_width(trees: Trees, git_dir: str) -> int:
    config = trees.read(f"{git_dir}/config", real=True) or b""
    return 32 if re.search(rb"(?im)^\s*objectformat\s*=\s*\"?sha256", config) else 20


def refs_of(trees: Trees, where: Layout, names: set[str], *, real: bool) -> dict[str, bytes]:
    """The commits the changed refs name (``names``: paths below the git dir), and ``HEAD``'s, resolved."""
    packed = packed_refs(trees.read(f"{where.common}/packed-refs", real=real, limit=64 << 20) or b"")
    out: dict[str, bytes] = {}
    wanted = {n for n in names if not _MENTIONS_OR_INDEX.match(n)} | {"HEAD"}
    if "packed-refs" in names:
        wanted |= set(packed)
    wanted.discard("packed-refs")
    for ref in wanted:
        oid = resolve_ref(trees, where, ref, packed, real)
        if oid is not None:
            out[ref] = oid
    return out


# The refs a linked work tree keeps for itself (git's per-worktree refs); every other ref is the common dir's.
_OWN = re.compile(r"^(?:[^/]+|refs/(?:bisect|worktree|rewritten)/.*)$")


def resolve_ref(trees: Trees, where: Layout, ref: str, packed: dict[str, bytes], real: bool) -> bytes | None:
    for _ in range(5):  # symbolic refs, followed a few times
        text = trees.read(f"{where.own if _OWN.match(ref) else where.common}/{ref}", real=real, limit=4096)
        if text is None:
            return packed.get(ref)
        line = text.split(b"\n", 1)[0].strip()
        if line.startswith(b"ref:"):  # (any blanks after it, as git reads it)
            ref = line[4:].decode("utf-8", "surrogateescape").strip()
            continue
        value = line.split(None, 1)[0] if line.split() else b""  # (the first word: git ignores what follows)
        return bytes.fromhex(value.decode().lower()) if OID.match(value) else None
    return None


_BAD_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|/\.|\.lock(?:/|$)|^\.|/$|\.$|^@$")


def valid_ref(name: str) -> bool:
    """Whether git reads a ref by this name (``git check-ref-format``'s rules): no part that begins with a dot or
    ends with ``.lock``, no ``..``, ``@{``, control characters, blanks or any of ``~^:?*[`` and the backslash, no
    final dot or slash."""
    return not _BAD_REF.search(name)


def packed_refs(data: bytes) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for line in data.split(b"\n"):  # (at LF only, as git reads it)
        oid, _, ref = line.strip().partition(b" ")
        if OID.match(oid) and ref.strip():
            out[ref.strip().decode("utf-8", "surrogateescape")] = bytes.fromhex(oid.decode().lower())
    return out
