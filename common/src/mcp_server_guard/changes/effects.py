"""Judging what a command did, before it reaches the real files.

A change set is judged by its effects, whatever program made them and however it was spelt:

* **refused** — never applied: a protected path (exactly what ``file_write`` refuses, by the same code: git's
  hooks and config — recognised the way git recognises a git dir, in the tree as the command left it —, shell
  rc files, editor and host configs, the guards' own files), a hidden path, a path outside the allowed
  directories, a device. Two git effects are allowed because they cannot make git run anything: a git config
  whose change touches only keys on the safe list (``git init``, ``git clone``, ``git remote add``, ``git branch
  -u``), and git's ``*.sample`` hooks. A directory deletion that would take a refused path with it is refused
  whole.
* **asked** — a person says yes first (``[effects]`` in the policy): deleting or overwriting more than
  ``max_files`` files, deleting a directory tree, emptying a file, a new executable outside the usual places,
  deleting or emptying work git does not have — each outside the build and cache directories (``scratch``).
* everything else is applied without a question.

The judgement also says, in one line a person can judge in five seconds, what the change set does.

This module owns the judgement as a whole: refusals, questions, moved files, the summary line. Git's own paths
are judged on the tree the command left by ``changes.git_verdicts``; what git has a copy of is read from the
index by ``changes.git_index``.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import shutil
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain

from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.changes.git_index import discarded, uncommitted
from mcp_server_guard.changes.git_verdicts import (
    STRATEGY_NAMES,
    TODO_NAMES,
    Trees,
    creates_git_dir,
    git_verdict,
    in_relative_hooks,
    pointer_verdict,
)
from mcp_server_guard.changes.later import runs_later
from mcp_server_guard.changes.moves import moved_pairs
from mcp_server_guard.changes.nofollow import TooMany, default_acl_above, entries_below, lstat_beneath
from mcp_server_guard.changes.summary import MODES_NAMED, Counts, count_of, list_of, summary_line
from mcp_server_guard.changes.wholes import refuse_whole
from mcp_server_guard.changes.xattrs import acl_mode
from mcp_server_guard.git_config import safe_git_config, unsafe_git_entries
from mcp_server_guard.globs import SuffixMatcher
from mcp_server_guard.hook_runs import path_dirs
from mcp_server_guard.paths import printable, within_any
from mcp_server_guard.policy import EffectsPolicy
from mcp_server_guard.protected import Lookups, Protection

__all__ = ["Counts", "Judgement", "judge", "summary_line"]
_n, _list = count_of, list_of  # the questions' wording

_GIT_NAMES = frozenset({"HEAD", "config", "config.worktree", "commondir", "gitdir", "objects", "refs"})
_BY_CONTENT = frozenset({"config", "config.worktree", "commondir", "gitdir", ".git", *TODO_NAMES})


def _strategy(path: str) -> bool:
    """A rebase's or cherry-pick's merge strategy file (judged by its content too: red team 5b F6, a job flipping it
    between a look's judgement and its copy)."""
    parts = path.split("/")
    return parts[-1] in STRATEGY_NAMES and len(parts) > 1 and parts[-2] in ("rebase-merge", "rebase-apply", "sequencer")


@dataclass
class Judgement:
    refused: dict[tuple[str, str], str] = field(default_factory=dict)  # (root, path) -> why
    # (root, path) -> the content to apply instead of the command's: a new git dir's config with the keys that
    # could make git run programs taken out (the rest of the repository stays usable)
    rewritten: dict[tuple[str, str], bytes] = field(default_factory=dict)
    dropped_keys: dict[str, list[str]] = field(default_factory=dict)  # path -> the keys left out of it
    # (root, path) allowed for what is in them (git configs, pointers): a running job's copy may change them
    # between the judgement and a copy, so they are applied only once it has ended
    by_content: set[tuple[str, str]] = field(default_factory=set)
    # (root, path) of both ends of each move the judgement recognised by the bytes (a file deleted here and the
    # same bytes created there): a running job's look leaves them for its end, when those bytes no longer change
    moved: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # each end of a move -> its start
    asks: list[str] = field(default_factory=list)  # each reason a person must agree first, in words
    counts: Counts = field(default_factory=Counts)
    summary: str = ""  # what the change set does, in one line
    # What the counted questions counted (files deleted, overwritten or re-moded; of those, deletions no repository
    # keeps): a job's looks add theirs up, so that no job slips under a threshold look by look.
    touched: int = 0
    unbacked: int = 0
    # Files (absolute) whose content before the call git has no copy of (modified, untracked, in no repository):
    # once this applies, the history's pre-image is their one copy (``HistoryStore.evicting``).
    only_copies: list[str] = field(default_factory=list)
    evicts: list[str] = field(default_factory=list)  # calls whose only copies its apply pushes out (when asked yes)

    def evicting(self, gone: Mapping[str, Sequence[str]]) -> None:
        """Its apply pushes the history's only copies of earlier work out: asked, and those calls noted."""
        if gone:
            self.asks.append(eviction_ask(sorted({path for paths in gone.values() for path in paths})))
            self.evicts = sorted(gone)

    @property
    def question(self) -> str:
        return printable(f"The command would {self.summary}. " + " ".join(self.asks) + " Apply these changes?")


# Names people also give directories of their own (``env/`` of settings, ``tmp/`` and ``out/`` of notes): a build
# or cache directory only where it shows it (a file its tool leaves in it). Threat: ``rm -r env`` deleting the user's
# files unasked because of the directory's name alone (red team 5b F8).
_SHOWN_BY = {"env": ("pyvenv.cfg", "CACHEDIR.TAG"), "tmp": ("CACHEDIR.TAG",), ".tmp": ("CACHEDIR.TAG",),
             "out": ("CACHEDIR.TAG", "tsconfig.tsbuildinfo", ".tsbuildinfo")}  # fmt: skip


class _Matcher:
    def __init__(self, patterns: Iterable[str]) -> None:
        names = [p for p in patterns if "/" not in p.strip("/")]
        paths = [p for p in patterns if "/" in p.strip("/")]
        self._names = re.compile("|".join(f"(?:{fnmatch.translate(n)})" for n in names) or r"(?!)")
        self._paths = SuffixMatcher(paths, ignore_case=False)
        self._dirs: dict[tuple[str, str], bool] = {}  # a directory's answer, asked once for all the paths below it

    def name(self, path: str, root: str = "") -> bool:
        """Some component of ``path`` (or a directory path above it) matches; one of ``_SHOWN_BY``'s names only where
        the real directory under ``root`` holds one of its tool's files (no root: never)."""
        parent, _, last = path.rpartition("/")
        if parent:
            above = self._dirs.get((root, parent))
            if above is None:
                above = self._dirs[(root, parent)] = self.name(parent, root)
            if above:
                return True
        if last in _SHOWN_BY and self._names.match(last) and not self._paths.search(path):
            return bool(root) and any(lstat_beneath(root, f"{path}/{mark}") for mark in _SHOWN_BY[last])
        return bool(self._names.match(last)) or bool(self._paths.search(path))

    def path(self, path: str) -> bool:
        return bool(self._paths.search(path)) or bool(self._names.match(path.rsplit("/", 1)[-1]))


def judge(
    sets: Sequence[ChangeSet],
    protection: Protection,
    policy: EffectsPolicy,
    roots: Sequence[str],
    earlier: tuple[int, int] = (0, 0),
    landed: Mapping[str, tuple[int, ...]] | None = None,
) -> Judgement:
    """The judgement of a call's change sets. ``roots``: the call's allowed directories (narrowed by the client's
    roots); ``earlier``: what a job's earlier looks applied of what the counted questions count (``touched``,
    ``unbacked``); ``landed``: what this server last landed, by path (``Applier.landed``: not an only copy)."""
    judgement = Judgement()
    scratch = _Matcher(policy.scratch)
    places = _Matcher(policy.executable_places)
    for changes in sets:
        _refuse(changes, protection, roots, judgement.refused, judgement.by_content)
        _sanitize_new_configs(changes, judgement)
        runs_later(changes, judgement.refused, judgement.asks, judgement.by_content)
    granted = _modes(sets, protection, roots, scratch, judgement)
    pairs = moved_pairs(sets, judgement.refused)
    moves = {end: old for old, new in pairs for end in (old, new)}
    judgement.moved = dict(moves)
    # Threat: a tree moved into a build or cache directory, then deleted there with no question.
    kept_out = {old for old, new in pairs if scratch.name(new[1], new[0]) and not scratch.name(old[1], old[0])}
    judgement.summary, judgement.counts = summary_line(sets, judgement.refused, moves)
    touched: list[str] = []
    trees: list[str] = []
    emptied: list[str] = []
    executables: list[str] = []
    losing: list[tuple[ChangeSet, Change]] = []
    rewritten: list[tuple[ChangeSet, Change]] = []  # files overwritten (perhaps back to what git has)
    for changes in sets:
        for change in changes.changes:
            key = (changes.root, change.path)
            if (
                change.action == "modify"
                and key in moves
                and key not in judgement.refused
                and not scratch.name(change.path, changes.root)
            ):
                # Renamed over (``mv -f template.txt notes.txt``): what the file there held is gone, as deleted.
                touched.append(change.path)
                losing.append((changes, change))
                continue
            if key in judgement.refused or (key in moves and key not in kept_out) or scratch.name(change.path, key[0]):
                continue
            if change.action == "delete" and change.kind != "dir":
                touched.append(change.path)
                losing.append((changes, change))
            elif change.action == "modify" and change.kind == "symlink" and _was_file(changes.root, change.path):
                # A file replaced by a link (``ln -sf /dev/null f``) loses what the file held, as a deletion does.
                touched.append(change.path)
                losing.append((changes, change))
            elif change.action == "modify" and change.kind == "file" and _replaced_by_another(changes.root, change):
                # A file replaced by a name of another file (``ln -f a b``) loses what it held, as a deletion does.
                touched.append(change.path)
                losing.append((changes, change))
            elif change.action == "modify" and change.kind == "file":
                # Rewritten: undo gives the bytes back exactly; applied and shown, not counted (issue 45: questions
                # only where the copy cannot help). Losses are counted: deletions, files replaced or emptied.
                if change.size == 0 and change.old_size > 0:
                    touched.append(change.path)
                    emptied.append(change.path)
                    losing.append((changes, change))
                elif ".git" not in change.path.split("/"):
                    rewritten.append((changes, change))
            # A directory deleted and made again (``rm -r d; mkdir d``) lost what it held all the same.
            if change.action == "delete" and change.kind == "dir" and change.top in ("", change.path):
                held = sum(
                    1
                    for c in changes.changes
                    if c.top == change.path
                    and c.action == "delete"  # what it held, not what was made there again
                    and c.kind != "dir"
                    and ((changes.root, c.path) not in moves or (changes.root, c.path) in kept_out)
                )
                if held:
                    trees.append(f"{change.path}/ ({_n(held, 'file')})")
            if (
                change.kind == "file"
                and change.action in ("create", "modify", "meta")
                and change.mode & 0o111
                and not change.old_mode & 0o111
                and not places.path(change.path)
            ):
                executables.append(change.path)
    judgement.touched = len(touched)
    if len(touched) + earlier[0] > policy.max_files:
        judgement.asks.append(f"It deletes, replaces or empties {_n(len(touched) + earlier[0], 'file')} "
                              f"(more than {policy.max_files}).")  # fmt: skip
    if policy.ask_tree_deletion and trees:
        judgement.asks.append(f"It deletes {_list(trees)}.")
    if policy.ask_truncation and emptied:
        judgement.asks.append(f"It empties {_list(emptied)}.")
    if policy.ask_new_executables and executables:
        judgement.asks.append(f"It makes new executables: {_list(executables)}.")
    judgement.asks += _shadowing(sets, scratch, judgement.refused)
    if granted:
        judgement.asks.append(f"It {_list(granted, MODES_NAMED)}.")
    if policy.ask_uncommitted and losing:
        outside: list[str] = []
        lost = uncommitted(losing, outside)
        if lost:
            judgement.asks.append(f"Git has no copy of {_list(lost)} (modified or untracked).")
        # Where no repository keeps a copy, a few deletions are as much a loss as uncommitted work.
        judgement.unbacked = len(outside)
        if len(outside) + earlier[1] > policy.max_unbacked_files:
            judgement.asks.append(f"It deletes or empties {_n(len(outside) + earlier[1], 'file')} no git repository "
                                  f"has a copy of: {_list(outside)}.")  # fmt: skip
    if policy.ask_uncommitted:
        judgement.only_copies = _only_copies([*losing, *rewritten], landed or {})
    if policy.ask_uncommitted and rewritten:
        at_stake: list[tuple[str, str]] = []  # a job's look leaves them to its end (after _refuse: no _linked)
        thrown = discarded(rewritten, _stashed(sets), at_stake)
        judgement.by_content.update(at_stake)
        if thrown:
            judgement.asks.append(f"It discards uncommitted changes to {_list(thrown)} (back to what git has; git "
                                  "reset --hard, checkout, restore).")  # fmt: skip
    return judgement


# Mode bits a command grants, judged by what they grant (not by who set them: cp -p, chmod, install, a tarball).
_SET_ID = 0o6000  # setuid, setgid
_WRITABLE_BY_OTHERS = 0o022  # group or others may write


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _modes(
    sets: Sequence[ChangeSet], protection: Protection, roots: Sequence[str], scratch: _Matcher, judgement: Judgement
) -> list[str]:
    """Refuse, or list to ask, what the modes a command left grant: the bits beyond what the path had (a mode
    change) or beyond what the user's umask gives a new path (a file made under umask 002 is not asked about).

    Threats: a setuid or setgid program planted in the project (``cp /bin/bash tool && chmod 4755 tool``: run by
    another user it keeps the owner's rights); a git dir, a hook directory or a config made writable by others
    (anyone may then plant what the user's own git runs); a protected directory (``.vscode``, ``~/.local/bin``)
    made or re-moded by a command."""
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
            if key in judgement.refused or change.action == "delete":
                continue
            # Threat: a directory made writable by others first (nothing guarded in it then), a repository made in
            # it after (``git init``): anyone may then move it away and put theirs, with hooks, in its place.
            if (
                change.action == "create"
                and change.path.rsplit("/", 1)[-1] == ".git"
                and (loose := _loose_above(changes.root, change.path, dirs, default))
            ):
                judgement.refused[key] = f"a repository in {loose}/, which others may write (no sticky bit)"
                continue
            if change.kind == "symlink":
                probe = replace(change, kind="dir")
                if _above_protected(change.path, nested) or _guarded(trees, probe, protection, roots, lookups):
                    judgement.refused[key] = "a link in place of a protected directory: only a directory may be there"
                continue
            if change.kind not in ("file", "dir"):
                continue
            if change.action == "create" and (acl := default_acl_above(changes.root, change.path, acls)) is not None:
                made = acl_mode(acl)  # under a default ACL the mode comes from it, not from the umask
            else:
                made = default
            if change.action == "create" and change.kind == "dir" and _setgid_parent(changes.root, change.path, dirs):
                made |= 0o2000  # the kernel gives it, as natively: a team's shared directory (red team 40q E)
            extra = change.mode & ~(change.old_mode if change.action in ("meta", "modify") else made)
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
                judgement.refused[key] = f"it would set the {bit} bit: a program that runs with {rights} rights"
            elif guarded and extra & _WRITABLE_BY_OTHERS:
                judgement.refused[key] = f"it would make {guarded} writable by others"
            elif guarded and change.kind == "dir" and (remoded or (change.action == "create" and not
                                                                  _of_git(change, trees, protection))):  # fmt: skip
                judgement.refused[key] = f"{guarded}: a command may not make or re-mode it"
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
                judgement.refused[key] = f"it would make {change.path}/ writable by others, and it holds {held}"
            elif extra & _SET_ID:
                asks.append(f"sets the setgid or setuid bit of the directory {shown}")
            elif extra & _WRITABLE_BY_OTHERS and not scratch.name(change.path, changes.root):
                asks.append(f"makes {shown} writable by {'others' if extra & 0o002 else 'its group'}")
    return asks


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


def eviction_ask(gone: Sequence[str]) -> str:
    """The question for an apply whose previous versions would evict the history's only copy of earlier work."""
    return (f"Its previous versions push out of the history the only copy of earlier work git has none of: "
            f"{_list(gone)} (that call could no longer be undone).")  # fmt: skip


def _only_copies(pairs: Sequence[tuple[ChangeSet, Change]], landed: Mapping[str, tuple[int, ...]]) -> list[str]:
    """Of the files an apply replaces or deletes, those (absolute) whose content git has no copy of — but the
    tools' own output, still as they landed it (``landed``: a model editing one file over and over)."""
    by_root: dict[str, list[tuple[ChangeSet, Change]]] = {}
    for changes, change in pairs:
        if (mine := landed.get(posixpath.join(changes.root, change.path))) is not None and (
            (st := lstat_beneath(changes.root, change.path)) is not None
            and (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size) == mine
        ):
            continue
        by_root.setdefault(changes.root, []).append((changes, change))
    found: set[str] = set()
    for root, group in by_root.items():
        outside: list[str] = []
        found.update(posixpath.join(root, path) for path in (*uncommitted(group, outside), *outside))
    return sorted(found)


def _replaced_by_another(root: str, change: Change) -> bool:
    """Whether ``change`` makes its path a name of another real file (``ln -f a b``): what ``b`` held is gone."""
    if not change.link:
        return False
    here, there = lstat_beneath(root, change.path), lstat_beneath(root, change.link)
    # ``there`` missing: a name of a file the command made (``echo x > n; ln -f n b``).
    return (
        here is not None
        and stat.S_ISREG(here.st_mode)
        and (there is None or (here.st_dev, here.st_ino) != (there.st_dev, there.st_ino))
    )


def _was_file(root: str, path: str) -> bool:
    """Whether the real tree holds a regular file at ``path`` (looked at beneath the root, no link followed)."""
    st = lstat_beneath(root, path)
    return st is not None and stat.S_ISREG(st.st_mode)


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


def _stashed(sets: Sequence[ChangeSet]) -> frozenset[tuple[str, str]]:
    """(root, work tree) of every repository whose ``git stash`` the command moved (refs/stash): a stash keeps what
    it takes away there (``git_index.discarded`` checks which files it took)."""
    stashed: set[tuple[str, str]] = set()
    for changes in sets:
        for change in changes.changes:
            for suffix in (".git/refs/stash", ".git/logs/refs/stash"):
                if change.path == suffix or change.path.endswith("/" + suffix):
                    stashed.add((changes.root, change.path[: -len(suffix)].rstrip("/")))
    return frozenset(stashed)


def _sanitize_new_configs(changes: ChangeSet, judgement: Judgement) -> None:
    """A git config the real tree did not have, refused for keys that could make git run programs: applied with
    those keys left out instead (``git init sub && git -C sub config core.fsmonitor …`` keeps a working sub),
    written afresh from what git reads (never an edit of the command's text)."""
    trees = Trees(changes)
    for change in changes.changes:
        key = (changes.root, change.path)
        why = judgement.refused.get(key)
        if why is None or "would gain keys" not in why or change.action != "create" or change.kind != "file":
            continue
        text = trees.read(change.path)
        safe = safe_git_config(text) if text is not None else None
        unsafe = unsafe_git_entries(text)
        if safe is None or unsafe is None:
            continue  # refused as it is
        judgement.rewritten[key] = safe
        judgement.refused.pop(key)
        judgement.dropped_keys[change.path] = sorted({entry.partition("=")[0] for entry in unsafe})


def _refuse(
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


def _shadowing(sets: Sequence[ChangeSet], scratch: _Matcher, refused: Mapping[tuple[str, str], str]) -> list[str]:
    """The question about executables named like programs on the PATH (``_shadows``), if any."""
    paths: dict[str, frozenset[str]] = {}  # read only where an executable lands outside a bin directory

    def on_path(root: str) -> frozenset[str]:
        if root not in paths:
            paths[root] = path_dirs(root)
        return paths[root]

    if shadowing := [c.path for s in sets for c in s.changes if _shadows(s.root, c, scratch, refused, on_path)]:
        return [f"It makes {_list(shadowing)}, named like programs on your PATH: where a tool puts that directory "
                "first (direnv's PATH_add), they run instead."]  # fmt: skip
    return []


def _shadows(
    root: str,
    change: Change,
    scratch: _Matcher,
    refused: Mapping[tuple[str, str], str],
    on_path: Callable[[str], frozenset[str]],
) -> bool:
    """An executable the command made or changed, outside the build and cache directories, with the name of a
    program on the server's PATH, in a directory a tool may put first on PATH: a ``bin``/``.bin``/``sbin``, or one
    the project's direnv or mise configuration names (``on_path``: ``hook_runs.path_dirs``). Threat: ``bin/git`` in
    a project whose ``.envrc`` says ``PATH_add bin``: the user's next ``git status`` there runs it, outside the box
    (red team 5b F5). ``script/test`` elsewhere is a project's own script (red team 8 FA4)."""
    directory = posixpath.dirname(change.path)
    return (
        (change.kind == "symlink" or (change.kind == "file" and bool(change.mode & 0o111)))  # a link too: 6 L7
        and change.action in ("create", "modify", "meta")
        and (root, change.path) not in refused
        and (posixpath.basename(directory) in ("bin", ".bin", "sbin") or (directory or ".") in on_path(root))
        and not scratch.name(change.path, root)
        and shutil.which(change.path.rsplit("/", 1)[-1]) is not None
    )


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
