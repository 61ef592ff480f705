"""Where a line's commands run: its ``cd``, ``pushd``, ``popd`` and ``env -C`` followed in order from where the line
starts, and whether a directory is plainly outside the project.

``cd build && cmake .. && cd .. && rm -rf build`` acts in the project again (fuzz 21 F3: any ``cd ..`` used to
count as outside for the rest of the line); ``cd ~ && echo x >> .bashrc`` writes the home's start-up file (red team
20 F8). The expander keeps the walk's directory (``changed_dir``, ``outside``) and, before a line is walked, the
places its relative paths may land (``places``: the sequence, not every combination of its targets).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from mcp_server_guard.shell.strings.commands import Command
from mcp_server_guard.shell.strings.matching import normalize_path
from mcp_server_guard.shell.strings.wrappers import all_values
from mcp_server_guard.shell.strings.writes import Where

__all__ = ["changed_dir", "outside", "places", "plainly_outside"]

_SYSTEM_TOPS = [["", top] for top in ("etc", "usr", "var", "home", "root", "boot", "bin", "sbin", "lib", "lib64", "opt",
                                      "srv", "mnt", "media", "sys", "proc", "dev")]  # fmt: skip


# Programs and their options that run a command in another directory.
_RUN_IN: dict[str | None, tuple[str, ...]] = {
    "unshare": ("--wd", "-w"), "nsenter": ("--wd", "-w"), "uv": ("--directory",), "find": (),
}  # fmt: skip


def plainly_outside(directory: str) -> bool:
    """Home, /, .., -, the system's own directories: places no project is."""
    path = normalize_path(directory)
    return path in ("-", "~", "/", "..") or path.startswith("../") or path.split("/")[:2] in _SYSTEM_TOPS


def changed_dir(
    cwd: str | None, stack: list[str | None], head: str, args: Sequence[str | None], home: str
) -> str | None:
    """Where ``cd``/``pushd``/``popd`` (``head``) with ``args`` leaves the shell that was in ``cwd`` (None: a
    directory only run time knows; "" where the line started when no directory of it is known)."""
    if head == "popd":
        return stack.pop() if stack else None
    given = [a for a in args if a not in ("-P", "-L", "-e", "-@", "--")][:1]
    target = given[0] if given else "~"
    if head == "pushd":
        stack.append(cwd)
    if target is None or target == "-":
        return None
    home = home.rstrip("/")
    if target == "~" or target.startswith("~/"):
        if not home:
            return None
        target = home + target[1:]
    elif target.startswith("~"):
        return None  # ~user, ~+, ~-
    if target.startswith("/"):
        return posixpath.normpath(target)
    if cwd is None:
        return None
    return posixpath.normpath(posixpath.join(cwd, target) if cwd else target)


def outside(cwd: str | None, roots: Sequence[str], home: str) -> bool:
    """Whether the directory ``cwd`` (None: one only run time knows) is plainly outside the project: the home, /, a
    system directory, above a root (an agent's `cd /testbed` names its project, which this layer may not know as a
    root)."""
    if cwd is None:
        return True
    if not cwd.startswith("/"):
        return cwd == ".." or cwd.startswith("../")  # relative to where the line started (no root known)
    if any(cwd == root or cwd.startswith(root.rstrip("/") + "/") for root in roots):
        return False
    home = home.rstrip("/")
    under_home = bool(home) and (cwd == home or cwd.startswith(home + "/"))
    above = any(root.startswith(cwd.rstrip("/") + "/") for root in roots)
    return under_home or above or plainly_outside(cwd)


def places(
    commands: Sequence[Command], where: Where, cwd: str | None, stack: Sequence[str | None], home: str,
    roots: Sequence[str],
) -> Where:  # fmt: skip
    """``where`` with the directories ``commands`` run in, followed from ``cwd`` (and pushd's ``stack``) through their
    ``cd``, ``pushd``, ``popd`` in order (``env -C DIR``: a place for its command)."""
    found = [*where.places, *([cwd] if cwd else [])]
    unknown = where.unknown
    stacked = list(stack)
    for command in commands:
        words = command.words
        head = words[0].value if words else None
        if head in ("cd", "pushd", "popd"):
            cwd = changed_dir(cwd, stacked, head, [w.value for w in words[1:]], home)
            unknown = unknown or cwd is None
            found += [cwd] if cwd else []
        elif head in _RUN_IN or (head == "cmake" and [w.value for w in words[1:3]] == ["-E", "chdir"]):
            # Programs that run their command in a directory they are given (red team 21): a place for it.
            if head == "find" and any(w.value in ("-execdir", "-okdir") for w in words):
                unknown = True  # each found file's directory
                continue
            given = [words[3].value] if head == "cmake" and len(words) > 3 else all_values(words[1:], _RUN_IN[head])
            for value in given:
                there = changed_dir(cwd, [], "cd", [value if isinstance(value, str) else None], home)
                unknown = unknown or there is None
                found += [there] if there else []
        elif head == "env":
            for value in all_values(words[1:], ("-C", "--chdir")):
                there = changed_dir(cwd, [], "cd", [value if isinstance(value, str) else None], home)
                unknown = unknown or there is None
                found += [there] if there else []
    return Where(home, tuple(roots), tuple(dict.fromkeys(found))[:32], unknown)
