"""The search for git dirs at or below a directory (``.git`` files followed), and each git dir's family (its common
dir, ``modules/*`` and ``worktrees/*``): for the box, what it mounts read-only below its roots; for the git rule
(``protected``), the repositories within the roots.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from mcp_server_guard.errors import protection_unavailable
from mcp_server_guard.git_dirs import is_git_dir, read_pointer

__all__ = ["GIT_SEARCH_BUDGET", "GIT_SEARCH_DEPTH", "NESTED_SEARCH_DEPTH", "git_dirs_below", "git_family"]

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
