"""What a change set may not do, path by path, and what the modes a command leaves grant.

A path is refused (``refuse``) when it is protected (exactly what ``file_write`` refuses, by the same code), git's
own (judged by the git rules on the tree the command left: ``changes.git_verdicts``), outside the allowed
directories, a device, a FIFO or a socket, or another name of a file one end of which the guards look after. The
modes a command leaves (``judge_modes``) are refused where they grant what could make someone else's program run
as the user (setuid or setgid bits, a guarded path writable by others), and listed to ask otherwise.

Used by ``changes.effects``, which owns the judgement as a whole.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from itertools import chain

from mcp_server_guard import registry
from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.changes.git_refs import Later, in_git_state, may_be_git_state, ref_questions
from mcp_server_guard.changes.git_verdicts import (
    STRATEGY_NAMES,
    TODO_NAMES,
    Trees,
    creates_git_dir,
    git_verdict,
    in_relative_hooks,
    objects_verdict,
    pointer_verdict,
)
from mcp_server_guard.changes.link_ends import climbs_back, link_end, open_to_others, per_process
from mcp_server_guard.changes.nofollow import TooMany, default_acl_above, entries_below, lstat_beneath
from mcp_server_guard.changes.wholes import refuse_whole
from mcp_server_guard.changes.xattrs import acl_mode
from mcp_server_guard.files.kept import file_kind
from mcp_server_guard.paths import printable, within, within_any
from mcp_server_guard.protected import Lookups, Protection
from mcp_server_guard.python_startup import ENV_MARKERS, start_up_file

__all__ = ["judge_modes", "later_checkouts", "refuse"]

_GIT_NAMES = frozenset({"HEAD", "config", "config.worktree", "commondir", "gitdir", "objects", "refs"})
_BY_CONTENT = frozenset({"config", "config.worktree", "commondir", "gitdir", ".git", *TODO_NAMES})


def _strategy(path: str) -> bool:
    """A rebase's or cherry-pick's merge strategy file (judged by its content too: red team 5b F6, a job flipping it
    between a look's judgement and its copy)."""
    parts = path.split("/")
    return parts[-1] in STRATEGY_NAMES and len(parts) > 1 and parts[-2] in ("rebase-merge", "rebase-apply", "sequencer")


def refuse(
    changes: ChangeSet,
    protection: Protection,
    roots: Sequence[str],
    refused: dict[tuple[str, str], str],
    by_content: set[tuple[str, str]],
) -> None:
    trees = Trees(changes, roots)
    lookups = Lookups()
    root = changes.root
    for change in changes.changes:
        name = change.path.rsplit("/", 1)[-1]
        if change.action != "delete" and (name in _BY_CONTENT or _strategy(change.path)):
            by_content.add((root, change.path))
        absolute = posixpath.join(root, change.path)
        why: str | None = None
        if not within_any(absolute, roots):
            # Defense in depth: Landlock keeps a call inside its (narrowed) roots; the apply checks again.
            why = "outside the allowed directories"
        elif change.kind in ("device", "fifo", "socket") and change.action != "delete":
            # Threat: a FIFO or socket left in the project hangs whatever tool later opens it (an editor, a build);
            # a device is worse. No project needs one in its files.
            why = {"device": "a device file", "fifo": "a FIFO", "socket": "a socket"}[change.kind]
            if change.opaque:
                why += " in place of a directory: the directory stays, with everything in it"
            elif change.action == "modify":
                why += " in place of a file: the file stays as it was"
        else:
            why = _protected(trees, change, protection, roots, lookups)
            if why is None and change.link and change.action != "delete":
                why = _linked(trees, change, protection, roots, lookups, by_content)
        if why is not None:
            refused[(root, change.path)] = why
    refuse_whole(changes, refused)


def later_checkouts(changes: ChangeSet, roots: Sequence[str]) -> tuple[list[str], list[Later]]:
    """What the refs, the stash and the index a command left would write into the work tree at the user's next
    checkout (``changes.git_refs``), for the caller to judge as writes of those paths; and the questions for what
    could not be read so."""
    if not any(may_be_git_state(change.path) for change in changes.changes):
        return [], []
    return ref_questions(changes, Trees(changes, roots))


def _linked(
    trees: Trees,
    change: Change,
    protection: Protection,
    roots: Sequence[str],
    lookups: Lookups,
    by_content: set[tuple[str, str]],
) -> str | None:
    """Why a path may not become another name of a file (``ln a b``; the other names of a file rewritten in place).
    Threat: a protected file (a git config, a hook, a shell rc) given an ordinary second name — then rewritten,
    re-moded or given attributes through that name, unjudged — or made a name of an ordinary file. Neither end may
    be a path the guards look after, nor one judged by its content."""
    root = trees.changes.root
    # Threat (red team 82 F4): a ref given a name in the work tree (``ln notes.txt .git/refs/heads/feature``), or
    # the work tree a name of the index or a ref: writing the ordinary name then moves the ref, while the judgement
    # of git's state reads only the paths a command wrote. Git's state and the rest never share a file.
    ends = (in_git_state(trees, change.path), in_git_state(trees, change.link))
    if ends[0] != ends[1]:
        state, other = (change.path, change.link) if ends[0] else (change.link, change.path)
        return f"it would make {other} another name of {state}, which is git's state (writing one changes the other)"
    target = Change(change.link, "modify", "file", size=change.size, mode=change.mode)
    for end, judged in ((change.path, change), (change.link, target)):
        if (root, end) in by_content or end.rsplit("/", 1)[-1] in _BY_CONTENT:
            other = change.link if end == change.path else change.path
            return f"it would be another name of {other}, and {end} is judged by what it holds"
        why = _protected(trees, judged, protection, roots, lookups)
        if why is not None:
            return f"it would make {end} ({why}) a name of an ordinary file"
    return None


# A path with one of these components is judged by the git rules (``git_verdicts.GIT_STATE``, and hooks): a set, not
# a search of the whole path (paths thousands of bytes long are judged by the thousand under the tree lock).
_GIT_PARTS = frozenset({"hooks", "rebase-merge", "rebase-apply", "sequencer"})


def _protected(
    trees: Trees, change: Change, protection: Protection, roots: Sequence[str], lookups: Lookups
) -> str | None:
    """Why a change is refused (None: it is not). Git's own paths are decided by the git rules, which allow only
    what cannot make git run anything; everything else by the protected list file_write uses."""
    absolute = posixpath.join(trees.changes.root, change.path)
    name = change.path.rsplit("/", 1)[-1]
    if name == ".git" and change.kind == "dir" and change.action != "delete":
        return None  # a git dir of its own (git init, git clone): what is in it is judged path by path
    verdict: str | None = None
    if name == ".git" and change.action != "delete":
        verdict = pointer_verdict(trees, change, roots, gitfile=True)
    elif name in _GIT_NAMES or not _GIT_PARTS.isdisjoint(change.path.split("/")):
        verdict = creates_git_dir(trees, change, roots) or git_verdict(trees, change, roots)
    elif not {"objects", "info"}.isdisjoint(change.path.split("/")):
        verdict = objects_verdict(trees, change)
    if verdict is not None and ".git" not in change.path.split("/"):
        # A git dir of another name (``git init --bare``; ``mkdir .vscode/objects .vscode/refs``): the protected list
        # has its say first — a protected directory given git's shape is no licence to write in it (and what it
        # refuses is refused whole, never applied with keys left out).
        rule = protection.listed([change.path, absolute])
        if rule is not None:
            return f"protected ({rule})"
    if verdict is not None:
        return verdict or None  # ALLOWED (""): cannot make git run anything
    hooks = in_relative_hooks(trees, change.path, protection.home, lookups)
    if hooks is not None:
        return hooks
    lookups.git.becoming_link = change.kind == "symlink" and change.action != "delete"
    try:
        rule = protection.write_rule([change.path, absolute], None, roots, lookups)
    finally:
        lookups.git.becoming_link = False
    return f"protected ({rule})" if rule is not None else None


# Mode bits a command grants, judged by what they grant (not by who set them: cp -p, chmod, install, a tarball).
_SET_ID = 0o6000  # setuid, setgid


_WRITABLE_BY_OTHERS = 0o022  # group or others may write


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _before(root: str, change: Change, made: int) -> int:
    """The mode ``change``'s path had before: ``made`` (what the umask or a default ACL gives) for a new entry — and
    for one that replaced another kind (a link, a socket, a FIFO: its mode is no mode the path had — red team 92
    F3, 93 F1: ``rm notes && echo x > notes && chmod 666 notes`` over a link read as granting nothing; looked at
    only where it would grant something)."""
    if change.action not in ("meta", "modify"):
        return made
    if change.action == "modify" and change.mode & ~made & (_SET_ID | _WRITABLE_BY_OTHERS):
        st = lstat_beneath(root, change.path)
        if st is not None and file_kind(st.st_mode) != change.kind:
            return made
    return change.old_mode


def judge_modes(
    sets: Sequence[ChangeSet],
    protection: Protection,
    roots: Sequence[str],
    in_scratch: Callable[[str, str], bool],
    refused: dict[tuple[str, str], str],
) -> list[str]:
    """Refuse, or list to ask, what the modes a command left grant: the bits beyond what the path had (a mode
    change) or beyond what the user's umask gives a new path (a file made under umask 002 is not asked about).

    Threats: a setuid or setgid program planted in the project (``cp /bin/bash tool && chmod 4755 tool``: run by
    another user it keeps the owner's rights); a git dir, a hook directory or a config made writable by others
    (anyone may then plant what the user's own git runs); a protected directory (``.vscode``, ``~/.local/bin``)
    made or re-moded by a command. ``in_scratch``: whether a path (beneath a root) is in the build and cache
    directories; ``refused``: the judgement's refusals, added to."""
    lookups = Lookups()
    default = 0o777 & ~_umask()
    acls: dict[str, bytes | None] = {}  # directory -> its default ACL (what new entries below it inherit)
    asks: list[str] = []
    # Threat: ``ln -s tpl .vscode`` — a protected directory made a link to an ordinary one, whose files (written
    # unjudged, then or later) an editor or agent then reads through it. Only a directory may have such a name.
    nested = [p.strip("/").removeprefix("**/").lower().split("/") for p in protection.patterns if "/" in p.strip("/")]
    for changes in sets:
        trees = Trees(changes, roots)
        dirs = {c.path: c.mode for c in changes.changes if c.kind == "dir" and c.action != "delete"}
        for change in changes.changes:
            key = (changes.root, change.path)
            if key in refused or change.action == "delete":
                continue
            # Threat: a directory made writable by others first (nothing guarded in it then), a repository made in
            # it after (``git init``): anyone may then move it away and put theirs, with hooks, in its place.
            if (
                change.action == "create"
                and change.path.rsplit("/", 1)[-1] == ".git"
                and (loose := _loose_above(changes.root, change.path, dirs, default))
            ):
                refused[key] = f"a repository in {loose}/, which others may write (no sticky bit)"
                continue
            if (held := _state_locked(changes.root, change, protection, roots)) is not None:
                refused[key] = f"it would take the owner's rights to {change.path or '.'}/, which holds {held}"
                continue
            if change.kind == "symlink":
                probe = replace(change, kind="dir")
                if _above_protected(change.path, nested) or _guarded(trees, probe, protection, roots, lookups):
                    refused[key] = "a link in place of a protected directory: only a directory may be there"
                elif (end := link_end(changes, change.path)) is not None:
                    _judge_link_end(trees, change, end, (protection, roots, lookups), refused, asks)
                continue
            if change.kind not in ("file", "dir"):
                continue
            if change.action == "create" and (acl := default_acl_above(changes.root, change.path, acls)) is not None:
                made = acl_mode(acl)  # under a default ACL the mode comes from it, not from the umask
            else:
                made = default
            if change.action == "create" and change.kind == "dir" and _setgid_parent(changes.root, change.path, dirs):
                made |= 0o2000  # the kernel gives it, as natively: a team's shared directory (red team 40q E)
            extra = change.mode & ~_before(changes.root, change, made)
            if change.kind == "file" and change.action == "modify":
                extra |= change.mode & _SET_ID  # threat: a setuid helper's bytes replaced by a shell's, the bit kept
            remoded = change.action == "meta" and change.mode != change.old_mode
            if not (
                extra & (_SET_ID | _WRITABLE_BY_OTHERS)
                or (change.kind == "dir" and (remoded or change.action == "create"))
            ):
                continue  # grants nothing new: nothing to judge here
            guarded = _guarded(trees, change, protection, roots, lookups)
            shown = f"{change.path} ({change.mode:04o})"

            if change.kind == "file" and extra & _SET_ID:
                bit = "setuid" if extra & 0o4000 else "setgid"
                rights = "its owner's" if bit == "setuid" else "its group's"
                refused[key] = f"it would set the {bit} bit: a program that runs with {rights} rights"
            elif guarded and extra & _WRITABLE_BY_OTHERS:
                refused[key] = f"it would make {guarded} writable by others"
            elif guarded and change.kind == "dir" and (remoded or (change.action == "create" and not
                                                                  _of_git(change, trees, protection))):  # fmt: skip
                refused[key] = f"{guarded}: a command may not make or re-mode it"
            # Threat: ``chmod 777 ~``: anyone may move ``.bashrc`` away and put theirs; with the sticky bit too they
            # may make a protected name that is missing (an included config not there yet, ``.envrc``: red team 5b).
            # What it holds: in the real tree, and what the command put below it (``git init build/pkg``). Judged by
            # the state it leaves, not by the bits it adds (``chmod 1777 d``, then ``chmod o-t d``).
            elif (
                change.kind == "dir"
                and (extra & _WRITABLE_BY_OTHERS if change.action == "create" else _open(change.mode, default))
                and not (
                    change.action != "create"
                    and _open(change.old_mode, default)
                    and (_loose(change.old_mode, default) or change.mode & 0o1000)
                )  # as open before
                and (held := _holds_guarded(changes, change, trees, protection, roots, lookups))
            ):
                refused[key] = f"it would make {change.path}/ writable by others, and it holds {held}"
            elif extra & _SET_ID:
                asks.append(f"sets the setgid or setuid bit of the directory {shown}")
            elif extra & _WRITABLE_BY_OTHERS and (why := _loosened(trees, changes, change, in_scratch)) is not None:
                asks.append(f"makes {shown} writable by {'others' if extra & 0o002 else 'its group'}{why}")
    return asks


def _state_locked(root: str, change: Change, protection: Protection, roots: Sequence[str]) -> str | None:
    """The state path (a server's copies, history, audit log, or the registry of them) that ``change`` — a mode
    change of a directory taking away its owner's rights — would lock away, or None. Threat (red team 159): ``chmod
    000`` of a directory above the registry, inside a root: servers started later no longer find the other servers'
    state to hide (nor the journals' sealing key, nor the tree lock), and a server whose state it holds fails."""
    if change.kind != "dir" or change.action != "meta" or not (change.old_mode & 0o700 & ~change.mode):
        return None
    here = posixpath.normpath(posixpath.join(root, change.path))
    held = [*protection.hidden_paths(roots), os.path.realpath(registry.directory())]
    return next((printable(h) for h in held if h == here or within(h, here)), None)


def _judge_link_end(
    trees: Trees,
    change: Change,
    end: str,
    guards: tuple[Protection, Sequence[str], Lookups],
    refused: dict[tuple[str, str], str],
    asks: list[str],
) -> None:
    """A link judged by where it ends (``link_ends``): refused at a protected path or git's own (what is written
    through it lands there unjudged: red team 143 F2), asked where others may write what is read through it (red
    teams 141 F1, 143 F1) or outside the roots where the user's own files lie."""
    protection, roots, lookups = guards
    key = (trees.changes.root, change.path)
    if per_process(end):  # (``/proc/self/cwd/githooks/x``: the server's own directory here, the build's there)
        refused[key] = f"a link through {printable(end)}: where it leads depends on the process that follows it"
    elif within(end, trees.changes.root) and end != trees.changes.root:
        probe = Change(posixpath.relpath(end, trees.changes.root), "modify", "file")
        if guarded := _guarded(trees, probe, protection, roots, lookups):
            refused[key] = f"a link to {guarded}: what is written through it would land there unjudged"
    elif any(within(end, root) for root in roots):
        if rule := protection.write_rule([end], None, roots, lookups):
            refused[key] = f"a link to {printable(end)} (protected: {rule})"
    elif _interpreter_link(trees, change.path, end):
        pass  # (a venv's python: the interpreter it was made from — pyenv's, uv's, the system's —, run, not written)
    elif rule := protection.write_rule([end], None, roots, lookups):
        refused[key] = f"a link to {printable(end)} (protected: {rule})"
    elif os.path.isdir(end):  # (``up -> /``: everything below reached through the project, links made before too)
        asks.append(f"links {change.path} to the directory {printable(end)}, outside the allowed directories")
    elif (why := open_to_others(end)) is not None:
        asks.append(f"links {change.path} to {printable(end)} ({why})")
    if key not in refused and climbs_back(trees.changes, change.path):
        asks.append(f"links {change.path} through a directory and back out of it: where it ends depends on later links")


_INTERPRETER_LINK = re.compile(r"(?:bin|Scripts)/(?:python|pypy)[\d.]*(?:\.exe)?")
_INTERPRETER = re.compile(r"(?:python|pypy)[\d.]*")


def _interpreter_link(trees: Trees, path: str, end: str) -> bool:
    """Whether the link at ``path`` is a Python environment's interpreter (``.venv/bin/python3``, in a directory with
    ``pyvenv.cfg``) ending at an interpreter (an executable regular file named like one, outside the roots: its
    metadata only) — the one link outside the roots a tool makes every day. Threat (red team 150 F1): every other
    program's name is no excuse: ``dist/tool -> ~/.local/bin/tool`` is what a build copying to ``dist/`` rewrites."""
    parts = path.rsplit("/", 2)
    if not _INTERPRETER_LINK.fullmatch("/".join(parts[-2:])):
        return False
    env = parts[0] if len(parts) == 3 else ""
    if not any(trees.kind(posixpath.join(env, marker)) in ("file", "dir") for marker in ENV_MARKERS):
        return False
    try:
        st = os.lstat(end)
    except OSError:
        return False
    return (
        stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o111) and bool(_INTERPRETER.fullmatch(posixpath.basename(end)))
    )


def _loosened(trees: Trees, changes: ChangeSet, change: Change, in_scratch: Callable[[str, str], bool]) -> str | None:
    """Why a group or others write grant on ``change`` is asked ("" outside the build and cache directories), or
    None where it is not."""
    if not in_scratch(change.path, changes.root):
        return ""
    # Threat: what every start of the project's Python runs (``.venv/bin/activate``, a ``.pth`` file,
    # ``site-packages``) given to others to write: a rewrite of it is asked, so is handing the pen to someone
    # else — in an environment too, which is a build directory otherwise (red team 74 F1).
    if (env := _in_environment(trees, change.path)) is not None:
        if change.kind == "file" and change.path[len(env) + 1 :] in _NOT_READ:
            return None  # (uv's ``.lock``, 0666 on purpose: no start or install of the environment reads it)
        return f": what every start of the Python environment {env or '.'}/ runs lies there"
    # Threat (red teams 106 F1, 107 F3, 134 F1): in a build or cache directory, what the user's next build, install
    # or run reads given to others to write — compiled Python, installed packages, a program built, and just as well
    # what has no telling name: a generated recipe (``build/Makefile``, ``build.ninja``, ``CMakeCache.txt``), an
    # object or library linked next (``*.o``, ``*.a``), a package archive (``dist/*.whl``), fetched code
    # (``_deps/*-src/CMakeLists.txt``, ``.terraform/modules``). No name tells what nothing reads, so every grant
    # there is asked, but one: a compiled Python file that has its source's mode (granting nothing new).
    if _as_its_source(changes.root, change):
        return None
    return ": a build, an install or a program may read or run what lies there"


def _as_its_source(root: str, change: Change) -> bool:
    """Whether ``change`` is a ``__pycache__`` file whose source may be written by the same others already (Python
    gives a compiled file its source's mode: a 0664 checkout's ``.pyc`` is 0664, granting nothing new)."""
    parent, _, name = change.path.rpartition("/")
    if change.kind != "file" or posixpath.basename(parent) != "__pycache__" or not name.endswith(".pyc"):
        return False
    source = lstat_beneath(root, posixpath.join(posixpath.dirname(parent), name.split(".", 1)[0] + ".py"))
    # (a link's own mode is 0777, which no source has: red team 136 F4 — only a regular source's mode counts)
    return (
        source is not None and stat.S_ISREG(source.st_mode) and not change.mode & _WRITABLE_BY_OTHERS & ~source.st_mode
    )


# At an environment's top, none of its starts or installs reads these (uv's ``.lock``, 0666 on purpose; its
# ``.gitignore``; ``CACHEDIR.TAG``: issue 45, ``uv run`` asked on every new project); anything else there may be read
# — ``pyvenv.cfg``, ``pip.conf`` (red team 97 F4) — and counts.
_NOT_READ = frozenset({".lock", ".gitignore", "CACHEDIR.TAG"})


def _in_environment(trees: Trees, path: str) -> str | None:
    """The Python environment ``path`` is or lies in (a directory holding ``pyvenv.cfg`` or ``conda-meta``, as the
    command left the tree), or None; a start-up file by its name (``sitecustomize.py``) counts as its own."""
    if start_up_file(path):
        return posixpath.dirname(path)
    parts = path.split("/")
    for end in range(len(parts), 0, -1):
        env = "/".join(parts[:end])
        if any(trees.kind(f"{env}/{marker}") in ("file", "dir") for marker in ENV_MARKERS):
            return env
    return None


def _setgid_parent(root: str, path: str, dirs: dict[str, int]) -> bool:
    """Whether the directory ``path`` is made in has the setgid bit: made by the command, or in the real tree."""
    parent = path.rpartition("/")[0]
    if parent in dirs:
        return bool(dirs[parent] & 0o2000)
    try:
        return bool(os.lstat(os.path.join(root, parent) if parent else root).st_mode & 0o2000)
    except OSError:
        return False


def _open(mode: int, default: int) -> bool:
    """Whether group or others may make entries in a directory of this mode beyond what the user's umask gives."""
    return bool(mode & _WRITABLE_BY_OTHERS & ~default)


def _loose(mode: int, default: int) -> bool:
    """Whether a directory of this mode lets group or others rename what it holds beyond what the user's umask
    gives every directory (``default``: under umask 002 the group is the user's own), with no sticky bit."""
    return bool(mode & _WRITABLE_BY_OTHERS & ~default) and not mode & 0o1000


def _loose_above(root: str, path: str, dirs: dict[str, int], default: int) -> str:
    """The nearest directory above ``path`` (the root included) that others may write as the command leaves it, no
    sticky bit ("" none). Not a group's: a team directory (setgid, a default ACL) is the group's on purpose."""
    parts = path.split("/")[:-1]
    for depth in range(len(parts), -1, -1):
        above = "/".join(parts[:depth]) or "."  # the root's own change is named "."
        real = lstat_beneath(root, above) if above not in dirs else None
        if _loose(dirs.get(above, real.st_mode if real is not None else 0), default | 0o020):
            return above
    return ""


def _holds_guarded(
    changes: ChangeSet, change: Change, trees: Trees, protection: Protection, roots: Sequence[str], lookups: Lookups
) -> str:
    """What guarded path the directory ``change`` holds, in the real tree or among what the command put below it;
    "" when none. Threat: a tree padded past the walk's bound (thousands of files before a nested ``.git``) hid
    what it holds: a walk cut short names that, and the re-mode is refused (fail closed)."""
    made = ((c.path, c.kind) for c in changes.changes if c.path.startswith(f"{change.path}/") and c.action != "delete")
    try:
        for path, kind in chain(entries_below(changes.root, change.path), made):
            if guarded := _guarded(trees, replace(change, path=path, kind=kind), protection, roots, lookups):
                return guarded
            # A link to a repository elsewhere: anyone could re-point it at theirs, whose hooks the user's git runs.
            if kind == "symlink" and _leads_to_repository(changes.root, path):
                return f"{path} (a link to a repository)"
    except TooMany:
        return "more entries than could be looked through (not all of them could be checked)"
    return ""


def _leads_to_repository(root: str, path: str) -> bool:
    """Whether the link ``path`` (beneath ``root``) leads to a directory that is, or holds, a git dir (metadata
    looked up only: nothing is opened there)."""
    target = os.path.realpath(posixpath.join(root, path))
    return os.path.isdir(target) and (
        os.path.lexists(posixpath.join(target, ".git")) or os.path.isfile(posixpath.join(target, "HEAD"))
    )


def _above_protected(path: str, nested: Sequence[Sequence[str]]) -> bool:
    """Whether a protected pattern with directories (``.local/lib/python*/site-packages/**``) could match something
    below ``path``: its last components are the pattern's first ones (a link there would lead into it), or it is
    named ``.git``."""
    parts = path.lower().split("/")
    if parts[-1] == ".git":
        return True
    for pattern in nested:
        for depth in range(1, len(pattern)):
            head = pattern[:depth]
            if len(parts) >= depth and all(
                fnmatch.fnmatchcase(p, h) for p, h in zip(parts[-depth:], head, strict=True)
            ):
                return True
    return False


def _of_git(change: Change, trees: Trees, protection: Protection) -> bool:
    """A git dir or a directory in one, in the tree as the command left it (``git init``, ``git init --bare x``, a
    clone make them; what is in them is judged path by path) — but not a protected directory given git's shape
    (``mkdir -p .vscode/objects .vscode/refs``): one of another name that the protected list names is not git's."""
    if ".git" in change.path.split("/"):
        return True
    return trees.git_dir_of(change.path) is not None and not _listed(trees, change, protection)


def _guarded(trees: Trees, change: Change, protection: Protection, roots: Sequence[str], lookups: Lookups) -> str:
    """What the guards look after at ``change``'s path ("" when nothing): a protected path, a directory that
    protected paths lie in, or anything of a git dir."""
    absolute = posixpath.join(trees.changes.root, change.path)
    parts = change.path.split("/")
    if ".git" in parts or (change.kind != "dir" and (parts[-1] in _GIT_NAMES or parts[-1] in _BY_CONTENT)):
        return f"{change.path} (git's own)"
    # A git dir of any name, in the tree as the command left it (``git init --bare lib.git``), or a path in one.
    # Not a protected directory given git's shape (``mkdir -p .vscode/objects .vscode/refs``): the list names it.
    git_dir = trees.git_dir_of(change.path)
    if git_dir is not None and not _listed(trees, change, protection):
        return f"{change.path} (git's own: {git_dir} is a git dir)"
    absolute = posixpath.join(trees.changes.root, change.path)
    probes = [change.path, absolute]
    if change.kind == "dir":
        probes += [posixpath.join(change.path, "_"), posixpath.join(absolute, "_")]
    rule = protection.write_rule(probes, None, roots, lookups)
    return f"{change.path} (protected: {rule})" if rule else ""


def _listed(trees: Trees, change: Change, protection: Protection) -> str:
    """The protected pattern ``change``'s path (a directory: what is in it too) falls under ("" when none)."""
    absolute = posixpath.join(trees.changes.root, change.path)
    probes = [change.path, absolute]
    if change.kind == "dir":
        probes += [posixpath.join(change.path, "_"), posixpath.join(absolute, "_")]
    return protection.listed(probes) or ""


_PATH_MAX = 4096  # bytes of a path the kernel takes by name
# What the judge looks up beside a changed path's directories (``.git/config.worktree``, ``.git/hooks/<name>``,
# ``.envrc``) is longer than the directory by this much at most.
_LOOKUP_MARGIN = 512


def too_deep(sets: Sequence[ChangeSet], refused: Mapping[tuple[str, str], str]) -> list[str]:
    """A question for changes whose path is close to or past the length the kernel takes by name. Threat (red team
    107 F2): the judge finds a repository, its configs and hooks path, and the tools' configs by their names; past
    PATH_MAX those lookups say "not there" — a hook of a deep repository's ``core.hooksPath`` was rewritten
    unjudged; and a path just short of it lies in a repository whose ``.git/config`` is past it (a
    ``credential.helper = ./x`` never read, ``x`` rewritten unasked). The apply itself works at any depth (by
    descriptor)."""
    bound = _PATH_MAX - _LOOKUP_MARGIN
    deep = [c.path for s in sets for c in s.changes if (s.root, c.path) not in refused
            and len(os.fsencode(s.root)) + 1 + len(os.fsencode(c.path)) >= bound]  # fmt: skip
    if not deep:
        return []
    return [
        f"It changes {len(deep)} path(s) of {bound} bytes or more, where what configures git and the tools "
        f"there may not be looked up by name to judge it: {printable(deep[0][:120])}…"
    ]
