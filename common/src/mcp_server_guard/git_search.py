"""The search for git dirs at or below a directory (``.git`` files followed), and each git dir's family (its common
dir, ``modules/*`` and ``worktrees/*``): for the box, what it mounts read-only below its roots; for the git rule
(``protected``), the repositories within the roots.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator

from mcp_server_guard.errors import protection_unavailable

__all__ = [
    "GIT_CONFIGS",
    "GIT_ENTRIES",
    "GIT_SEARCH_BUDGET",
    "GIT_SEARCH_DEPTH",
    "NESTED_SEARCH_DEPTH",
    "POINTER_LIMIT",
    "git_dirs_below",
    "git_family",
    "is_git_dir",
    "pointer_text",
    "read_pointer",
]

# The entries of a git dir the box mounts read-only (where commands write the real tree directly).
GIT_CONFIGS = ("config", "config.worktree")
GIT_ENTRIES = (*GIT_CONFIGS, "hooks", "commondir", "gitdir")
POINTER_LIMIT = 4096  # bytes of a .git or commondir file read at most; a longer one names nothing we trust

# How deep below each writable root the box looks for git dirs (a wider search costs every call).
GIT_SEARCH_DEPTH = 2
# Directories visited per root at most by that search; past it, deeper git dirs are not looked for.
GIT_SEARCH_BUDGET = 2000
# The git rule's search for repositories within the roots: git dirs to this many levels below a root (a work tree
# 5 levels down: ``a/b/c/d/app/.git``), GIT_SEARCH_BUDGET directories at most.
NESTED_SEARCH_DEPTH = 6


# -- the box's search for git dirs below its roots (what it mounts read-only) ----------------------------------


def git_dirs_below(
    base: str,
    gitfiles: list[str] | None = None,
    bad: list[str] | None = None,
    depth_limit: int = GIT_SEARCH_DEPTH,
    linked: list[str] | None = None,
) -> Iterator[str]:
    """Git dirs at or below ``base`` (``.git`` files followed), to ``depth_limit`` levels. An unreadable
    ``.git`` file raises PROTECTION_UNAVAILABLE, or goes to ``bad`` when one is given. ``linked`` (when given):
    ``.git`` symlinks that lead to a git dir are followed too (their work trees noted there)."""
    budget = GIT_SEARCH_BUDGET
    level = [base]
    for depth in range(depth_limit + 1):
        below: list[str] = []
        for directory in level:
            if is_git_dir(directory):
                yield directory
                continue
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                if entry.name == ".git" and linked is not None and entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if is_git_dir(target):
                        linked.append(entry.path)
                        yield target
                    continue
                if entry.name == ".git" and entry.is_file(follow_symlinks=False):
                    try:
                        target = read_pointer(entry.path, gitfile=True)
                    except (OSError, ValueError) as exc:
                        if bad is None:
                            raise protection_unavailable(entry.path, f"unreadable .git file ({exc})") from None
                        bad.append(entry.path)
                        continue
                    if gitfiles is not None:
                        gitfiles.append(entry.path)
                    if is_git_dir(target):
                        yield target
                elif entry.is_dir(follow_symlinks=False) and depth < depth_limit and budget > 0:
                    budget -= 1
                    below.append(entry.path)
        level = below


def git_family(git_dir: str) -> Iterator[str]:
    """``git_dir``, the common dir its ``commondir`` names, and their ``modules/*`` and ``worktrees/*``."""
    dirs = [git_dir]
    seen: set[str] = set()
    while dirs:
        current = dirs.pop()
        if current in seen:
            continue
        seen.add(current)
        yield current
        commondir = os.path.join(current, "commondir")
        if os.path.lexists(commondir):
            try:
                dirs.append(read_pointer(commondir, gitfile=False))
            except (OSError, ValueError) as exc:
                raise protection_unavailable(commondir, f"unreadable ({exc})") from None
        with contextlib.suppress(OSError):
            dirs += [e.path for e in os.scandir(os.path.join(current, "worktrees")) if e.is_dir(follow_symlinks=False)]
        dirs += _modules(os.path.join(current, "modules"), 0)


def _modules(directory: str, depth: int) -> list[str]:
    """The submodules' git dirs under ``directory`` (``modules/``): git names each after the submodule's name, which
    may hold a ``/`` (``vendor/lib``: ``modules/vendor/lib``, red team 166 F1), so a directory that is not a git dir
    is looked in, 8 levels at most."""
    found: list[str] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            if entry.is_dir(follow_symlinks=False):
                if is_git_dir(entry.path):
                    found.append(entry.path)
                elif depth < 8:
                    found += _modules(entry.path, depth + 1)
    return found


def is_git_dir(path: str) -> bool:
    """Git's own test, taken wide: ``objects`` + ``refs`` (a repository, or a common dir: what another git dir's
    ``commondir`` may name, HEAD or not), or a ``HEAD`` that is not a directory and a ``commondir``; each of any
    kind.

    Threat: git tests ``objects`` and ``refs`` with access(X_OK), which follows a symlink (and passes for an
    executable file): a directory whose ``objects`` is a link to a real repository's is a git dir to git, and
    its config runs programs. So any entry of those names counts, links never followed. And a common dir has no
    HEAD of its own: git reads its config and hooks for every git dir whose commondir names it."""
    join = os.path.join
    if os.path.lexists(join(path, "objects")) and os.path.lexists(join(path, "refs")):
        return True
    try:
        if stat.S_ISDIR(os.lstat(join(path, "HEAD")).st_mode):
            return False
    except OSError:
        return False
    return os.path.lexists(join(path, "commondir"))


def pointer_text(data: bytes, gitfile: bool) -> str | None:
    """The path a pointer file names, read as git reads it; None when git would take it as naming nothing.

    Threat: a reader that takes a different path than git does (the first line only, spaces stripped) judges
    one directory while git uses another. Git reads the whole file, needs ``gitdir: `` (with its space) at the
    start of a ``.git`` file, drops only the trailing line ends, and stops at a NUL."""
    if len(data) > POINTER_LIMIT:
        return None
    if gitfile:
        if not data.startswith(b"gitdir: "):
            return None
        data = data[len(b"gitdir: ") :]
    text = data.rstrip(b"\r\n").split(b"\0", 1)[0]
    return os.fsdecode(text) or None


def read_pointer(path: str, gitfile: bool) -> str:
    """The directory a ``.git`` file or a ``commondir`` file at ``path`` names, made absolute (no link followed
    to the file itself)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        target = pointer_text(os.pread(fd, POINTER_LIMIT + 1, 0), gitfile)
    finally:
        os.close(fd)
    if target is None:
        raise ValueError("names no directory as git reads it")
    return os.path.normpath(os.path.join(os.path.dirname(path), target))
