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
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
import posixpath
import re
import stat
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from mcp_server_guard.changes.upper import Change, ChangeSet, Kind
from mcp_server_guard.paths import printable, within_any
from mcp_server_guard.policy import EffectsPolicy
from mcp_server_guard.protected import (
    POINTER_LIMIT,
    Lookups,
    Protection,
    git_runnable,
    glob_regex,
    pointer_text,
    safe_git_config,
    unsafe_git_entries,
)

__all__ = ["Counts", "Judgement", "judge", "summary_line"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_GIT_NAMES = frozenset({"HEAD", "config", "config.worktree", "commondir", "gitdir", "objects", "refs"})
_MAX_GIT_CONFIG = 1 << 20
_MAX_HASHED = 64 << 20  # files larger than this count as modified without hashing them


@dataclass
class Counts:
    created: int = 0  # files (not directories) the command made
    modified: int = 0
    deleted: int = 0
    meta: int = 0  # mode or time only
    moved: int = 0  # deleted here and created, same bytes, there (not counted as created or deleted)
    bytes: int = 0  # of the files made or rewritten
    deleted_bytes: int = 0

    @property
    def total(self) -> int:
        return self.created + self.modified + self.deleted + self.meta + self.moved


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
    asks: list[str] = field(default_factory=list)  # each reason a person must agree first, in words
    counts: Counts = field(default_factory=Counts)
    summary: str = ""  # what the change set does, in one line

    @property
    def question(self) -> str:
        return printable(f"The command would {self.summary}. " + " ".join(self.asks) + " Apply these changes?")


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{n} B"


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _under(paths: Sequence[str]) -> str:
    """Where most of ``paths`` are: their longest common directory (named when it is not the root)."""
    if not paths:
        return ""
    common = posixpath.commonpath(["/" + p for p in paths]).lstrip("/")
    if common in paths and len(paths) == 1:
        common = posixpath.dirname(common)
    return f" under {common}/" if common else ""


def summary_line(
    sets: Sequence[ChangeSet], refused: Iterable[tuple[str, str]] = (), moves: Iterable[tuple[str, str]] = ()
) -> tuple[str, Counts]:
    """What the change sets do, in one line ("delete 1,234 files under src/ (12.3 MB), modify 3"), and counts.
    ``moves``: (root, path) of files deleted and of files created that are the same bytes moved."""
    skip = set(refused)
    moved = set(moves)
    counts = Counts()
    deleted: list[str] = []
    made: list[str] = []
    changed: list[str] = []
    origins: list[str] = []
    targets: list[str] = []
    for changes in sets:
        for change in changes.changes:
            if (changes.root, change.path) in skip or change.kind == "dir":
                continue
            if (changes.root, change.path) in moved:
                (origins if change.action == "delete" else targets).append(change.path)
                counts.moved += change.action == "delete"
                continue
            if change.action == "create":
                counts.created += 1
                counts.bytes += change.size
                made.append(change.path)
            elif change.action == "modify":
                counts.modified += 1
                counts.bytes += change.size
                changed.append(change.path)
            elif change.action == "delete":
                counts.deleted += 1
                counts.deleted_bytes += change.size
                deleted.append(change.path)
            else:
                counts.meta += 1
                changed.append(change.path)
    parts = []
    if counts.moved:
        parts.append(
            f"move {_n(counts.moved, 'file')}{_under(origins)}"
            + (f" to{where[6:]}" if (where := _under(targets)) else "")
        )
    if counts.deleted:
        parts.append(f"delete {_n(counts.deleted, 'file')}{_under(deleted)} ({_size(counts.deleted_bytes)})")
    if counts.modified:
        parts.append(f"modify {_n(counts.modified, 'file')}{_under(changed) if counts.modified > 3 else ''}")
    if counts.created:
        parts.append(f"create {_n(counts.created, 'file')}{_under(made) if counts.created > 3 else ''}")
    if counts.meta:
        parts.append(f"change the mode or times of {_n(counts.meta, 'file')}")
    if not parts:
        dirs = sum(1 for s in sets for c in s.changes if c.kind == "dir" and (s.root, c.path) not in skip)
        parts.append(f"change {_n(dirs, 'directory')}" if dirs else "change nothing")
    return printable(", ".join(parts)), counts


class _Matcher:
    def __init__(self, patterns: Iterable[str]) -> None:
        names = [p for p in patterns if "/" not in p.strip("/")]
        paths = [p for p in patterns if "/" in p.strip("/")]
        self._names = re.compile("|".join(f"(?:{fnmatch.translate(n)})" for n in names) or r"(?!)")
        self._paths = re.compile("|".join(f"(?:{glob_regex(p)})" for p in paths) or r"(?!)")

    def name(self, path: str) -> bool:
        """Some component of ``path`` (or a directory path above it) matches."""
        parts = path.split("/")
        for i, part in enumerate(parts):
            if self._names.match(part):
                return True
            if self._paths.search("/".join(parts[: i + 1])):
                return True
        return False

    def path(self, path: str) -> bool:
        return bool(self._paths.search(path)) or bool(self._names.match(path.rsplit("/", 1)[-1]))


class _Trees:
    """The tree as the command left it (its upper layer over the real tree), read without following links."""

    def __init__(self, changes: ChangeSet, roots: Sequence[str] = ()) -> None:
        self.changes = changes
        self.by_path = {c.path: c for c in changes.changes}
        self.pointed: set[str] = set()  # directories this change set points git at (as git dirs)
        for change in changes.changes:
            name = change.path.rsplit("/", 1)[-1]
            if change.action == "delete" or change.kind != "file" or name not in ("commondir", "gitdir", ".git"):
                continue
            target = _pointer(self, change.path, gitfile=name == ".git")
            if target is not None and within_any(target, [changes.root]):
                self.pointed.add(_relative(target, changes.root))

    def _fd(self, base: str, rel: str) -> int | None:
        fd = os.open(base, _DIR)
        try:
            for part in [p for p in rel.split("/") if p]:
                nxt = os.open(part, _DIR, dir_fd=fd)
                os.close(fd)
                fd = nxt
        except OSError:
            os.close(fd)
            return None
        return fd

    def kind(self, rel: str) -> str | None:
        """'file', 'dir' or another kind of what is at ``rel`` in the merged tree; None when nothing is."""
        change = self.by_path.get(rel)
        if change is not None:
            return None if change.action == "delete" else change.kind
        return self.real_kind(rel)  # unchanged (a deleted tree lists every path in it, as deleted)

    def read(self, rel: str, *, real: bool = False, limit: int = _MAX_GIT_CONFIG) -> bytes | None:
        """A regular file's bytes as the command left it (or, ``real``, as the real tree has it)."""
        base = self.changes.root if real or rel not in self.by_path else self.changes.upper
        directory, _, name = rel.rpartition("/")
        fd = self._fd(base, directory)
        if fd is None:
            return None
        try:
            file = os.open(name, _FILE, dir_fd=fd)
        except OSError:
            return None
        finally:
            os.close(fd)
        try:
            if not stat.S_ISREG(os.fstat(file).st_mode):
                return None
            return os.pread(file, limit, 0)
        finally:
            os.close(file)

    def is_git_dir(self, rel: str) -> bool:
        """``protected.is_git_dir`` on the merged tree (a HEAD that is not a directory, and objects + refs or a
        commondir, of any kind: git follows links there); or a directory a pointer of this change set names (a
        commondir, a gitdir file, a .git file)."""
        return rel in self.pointed or _git_dir_shape(self.kind, rel)

    def hooks(self, rel: str) -> list[str]:
        """The hooks of the git dir ``rel`` in the merged tree, git's samples left out."""
        join = f"{rel}/hooks" if rel else "hooks"
        names = set(self.real_names(join))
        for change in self.changes.changes:
            parent, _, name = change.path.rpartition("/")
            if parent == join:
                (names.discard if change.action == "delete" else names.add)(name)
        return sorted(n for n in names if not n.endswith(".sample"))

    def real_kind(self, rel: str) -> str | None:
        """What is at ``rel`` in the real tree (no link followed on the way): 'file', 'dir', 'other' or None."""
        directory, _, name = rel.rpartition("/")
        fd = self._fd(self.changes.root, directory)
        if fd is None:
            return None
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            return None
        finally:
            os.close(fd)
        return _kind_name(st.st_mode)

    def real_names(self, rel: str) -> list[str]:
        fd = self._fd(self.changes.root, rel)
        if fd is None:
            return []
        try:
            with os.scandir(fd) as entries:
                return [entry.name for entry in entries]
        finally:
            os.close(fd)

    def was_git_dir(self, rel: str) -> bool:
        return _git_dir_shape(self.real_kind, rel)


def _git_dir_shape(kind: Callable[[str], str | None], rel: str) -> bool:
    """Whether a tree (``kind`` of a path in it) has a git dir at ``rel``, as ``protected.is_git_dir`` decides:
    objects + refs (a repository, or the common dir another one's commondir may name), or HEAD + commondir."""
    join = (lambda name: f"{rel}/{name}") if rel else (lambda name: name)
    if kind(join("objects")) is not None and kind(join("refs")) is not None:
        return True
    return kind(join("HEAD")) not in (None, "dir") and kind(join("commondir")) is not None


def _relative(path: str, root: str) -> str:
    rel = posixpath.relpath(path, root)
    return "" if rel == "." else rel


def _kind_name(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    return "symlink" if stat.S_ISLNK(mode) else "other"


_ALLOWED = ""  # what _git_verdict says of a git path whose change cannot make git run anything


def _git_verdict(trees: _Trees, change: Change, roots: Sequence[str]) -> str | None:
    """For a path git runs or follows inside a git dir (as the change set leaves the tree, pointers included):
    why the change is refused, or _ALLOWED; None when it is no such path (the protected list decides)."""
    path = change.path
    parts = path.split("/")
    for depth in range(len(parts) - 1, -1, -1):
        directory = "/".join(parts[:depth])
        rel = "/".join(parts[depth:])
        if not git_runnable(rel):
            continue
        if not trees.is_git_dir(directory) and not trees.was_git_dir(directory):
            continue
        where = directory or "."
        if rel.startswith("hooks/") or "/hooks/" in rel:
            if rel.endswith(".sample") or (change.kind == "dir" and change.action != "delete"):
                return _ALLOWED
            return f"a git hook in the git dir {where} (git runs it)"
        if rel == "hooks" or rel.endswith("/hooks"):
            if change.action == "delete":
                return f"the hooks of the git dir {where} deleted"
            # Threat: hooks as a link to a directory of the project's (scripts/), whose files git then runs.
            return _ALLOWED if change.kind == "dir" else f"the hooks of the git dir {where} made a {change.kind}"
        if _GIT_STATE.search(rel):
            return _git_state_verdict(trees, change, where)
        if rel.endswith(("config", "config.worktree")):
            if change.action == "delete":
                return f"git's config in {where} deleted"
            if change.kind != "file":
                return f"git's config in {where} replaced by a {change.kind}"
            new = unsafe_git_entries(trees.read(path))
            old = unsafe_git_entries(trees.read(path, real=True))
            if new is None or old is None:
                return f"git cannot read the config in {where}"
            if new != old:
                added = sorted(set(new) - set(old)) or new
                keys = ", ".join(sorted({entry.partition("=")[0] for entry in added}))
                return f"git's config in {where} would gain keys that can make git run programs: {keys}"
            return _ALLOWED
        if rel.endswith(("commondir", "gitdir")):
            return _pointer_verdict(trees, change, roots, gitfile=False)
    return None


_GIT_STATE = re.compile(r"(?:^|/)(?:rebase-merge|rebase-apply|sequencer)(?:/|$)")
_TODO_NAMES = ("git-rebase-todo", "todo")
_RUNS_A_COMMAND = re.compile(rb"^[ \t]*(?:exec|x)(?:[ \t]|$)", re.MULTILINE)


def _git_state_verdict(trees: _Trees, change: Change, where: str) -> str:
    """A rebase's or a cherry-pick's state (``rebase-merge/``, ``rebase-apply/``, ``sequencer/``): applied, but
    for a todo list with a step that runs a command, and a merge strategy that names a program by path.

    Threat: a todo whose ``exec`` line the user's ``git rebase --continue`` runs, outside the box; a ``strategy``
    file (or ``options.strategy`` in ``sequencer/opts``) of ``/x.sh``, which makes git run ``git-merge-/x.sh``
    from the work tree on --continue."""
    name = change.path.rsplit("/", 1)[-1]
    if change.action == "delete" or name not in (*_TODO_NAMES, *_STRATEGY_NAMES):
        return _ALLOWED
    data = trees.read(change.path) if change.kind == "file" else None
    if data is None or len(data) >= _MAX_GIT_CONFIG:
        return f"git's rebase state {name} in the git dir {where} is not a small regular file"
    if name in _TODO_NAMES and _RUNS_A_COMMAND.search(data):
        return f"a rebase step in the git dir {where} that runs a command (git runs it on --continue)"
    if name in _STRATEGY_NAMES and re.search(rb"[/\\]|\.\.", data):
        return f"a merge strategy in the git dir {where} that names a program by its path (git runs it on --continue)"
    return _ALLOWED


# The rebase and cherry-pick state files that name the merge strategy git runs (as git-merge-<name>).
_STRATEGY_NAMES = ("strategy", "strategy_opts", "opts")


def _pointer(trees: _Trees, path: str, gitfile: bool) -> str | None:
    """The absolute place a pointer file (a ``.git`` file, or a commondir or gitdir file) names, read as git
    reads it (``protected.pointer_text``); None when it names none."""
    data = trees.read(path, limit=POINTER_LIMIT + 1)
    text = pointer_text(data, gitfile) if data is not None else None
    if text is None:
        return None
    base = posixpath.dirname(posixpath.join(trees.changes.root, path))
    return posixpath.normpath(posixpath.join(base, text))


def _pointer_verdict(trees: _Trees, change: Change, roots: Sequence[str], *, gitfile: bool) -> str:
    """A commondir, gitdir or .git file sends git to a directory it then takes as a git dir: allowed only where that
    lies inside the allowed directories and, as the change set leaves it, has no config key and no hook that
    could make git run programs."""
    if change.action == "delete":
        return _ALLOWED
    if change.kind != "file":
        return f"{change.path} is a {change.kind} where git expects a pointer"
    target = _pointer(trees, change.path, gitfile)
    if target is None or not within_any(target, roots) or not within_any(target, [trees.changes.root]):
        return f"{change.path} points git outside the allowed directories"
    rel = _relative(target, trees.changes.root)
    join = (lambda n: f"{rel}/{n}") if rel else (lambda n: n)
    for config in ("config", "config.worktree"):
        unsafe = unsafe_git_entries(trees.read(join(config)))
        if unsafe is None or unsafe:
            return f"{change.path} points git at {rel or '.'}, whose config can make git run programs"
    if trees.hooks(rel):
        return f"{change.path} points git at {rel or '.'}, which has hooks git would run"
    return _ALLOWED


def _creates_git_dir(trees: _Trees, change: Change, roots: Sequence[str]) -> str | None:
    """A change that turns a directory into a git dir (HEAD, objects/, refs/ or commondir appears) whose config or
    hooks, already in the real tree, would make git run programs — its own, or those of the common dir its
    commondir names.

    Threat: a common dir with a config that runs programs and a commondir pointing at it, made in earlier calls;
    the HEAD that makes the pointing directory a git dir comes last."""
    directory, _, name = change.path.rpartition("/")
    if name not in ("HEAD", "objects", "refs", "commondir") or change.action == "delete":
        return None
    if trees.was_git_dir(directory) or not trees.is_git_dir(directory):
        return None
    join = (lambda n: f"{directory}/{n}") if directory else (lambda n: n)
    for config in ("config", "config.worktree"):
        if join(config) not in trees.by_path:
            unsafe = unsafe_git_entries(trees.read(join(config), real=True))
            if unsafe is None or unsafe:
                return f"it makes {directory or '.'} a git dir whose config can make git run programs"
    if [h for h in trees.hooks(directory) if join(f"hooks/{h}") not in trees.by_path]:
        return f"it makes {directory or '.'} a git dir with hooks git would run"
    pointer_kind = trees.kind(join("commondir"))
    if pointer_kind is not None and join("commondir") not in trees.by_path:  # a new one is judged on its own
        kind: Kind = "file" if pointer_kind == "file" else "symlink" if pointer_kind == "symlink" else "dir"
        why = _pointer_verdict(trees, Change(join("commondir"), "modify", kind), roots, gitfile=False)
        if why:
            return f"it makes {directory or '.'} a git dir: {why}"
    return None


def judge(
    sets: Sequence[ChangeSet],
    protection: Protection,
    policy: EffectsPolicy,
    roots: Sequence[str],
) -> Judgement:
    """The judgement of a call's change sets. ``roots``: the allowed directories of the call (narrowed by the
    client's roots if it sent any)."""
    judgement = Judgement()
    scratch = _Matcher(policy.scratch)
    places = _Matcher(policy.executable_places)
    for changes in sets:
        _refuse(changes, protection, roots, judgement.refused, judgement.by_content)
        _sanitize_new_configs(changes, judgement)
    pairs = _moves(sets, judgement.refused)
    moves = {end for pair in pairs for end in pair}
    # Threat: a tree moved into a build or cache directory, then deleted there with no question.
    kept_out = {old for old, new in pairs if scratch.name(new[1]) and not scratch.name(old[1])}
    summary, counts = summary_line(sets, judgement.refused, moves)
    judgement.summary, judgement.counts = summary, counts
    touched: list[str] = []
    trees: list[str] = []
    emptied: list[str] = []
    executables: list[str] = []
    losing: list[tuple[ChangeSet, Change]] = []
    rewritten: list[tuple[ChangeSet, Change]] = []  # files overwritten (perhaps back to what git has)
    for changes in sets:
        for change in changes.changes:
            key = (changes.root, change.path)
            if key in judgement.refused or (key in moves and key not in kept_out) or scratch.name(change.path):
                continue
            if change.action == "delete" and change.kind != "dir":
                touched.append(change.path)
                losing.append((changes, change))
            elif change.action == "meta" and change.kind != "dir":
                touched.append(change.path)
            elif change.action == "modify" and change.kind == "file":
                touched.append(change.path)
                if change.size == 0 and change.old_size > 0:
                    emptied.append(change.path)
                    losing.append((changes, change))
                elif ".git" not in change.path.split("/"):
                    rewritten.append((changes, change))
            if change.action == "delete" and change.kind == "dir" and not change.top:
                held = sum(
                    1
                    for c in changes.changes
                    if c.top == change.path
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
    if len(touched) > policy.max_files:
        judgement.asks.append(
            f"It deletes, overwrites or changes the mode of {_n(len(touched), 'file')} (more than {policy.max_files})."
        )
    if policy.ask_tree_deletion and trees:
        judgement.asks.append(f"It deletes {_list(trees)}.")
    if policy.ask_truncation and emptied:
        judgement.asks.append(f"It empties {_list(emptied)}.")
    if policy.ask_new_executables and executables:
        judgement.asks.append(f"It makes new executables: {_list(executables)}.")
    if policy.ask_uncommitted and losing:
        lost = _uncommitted(losing)
        if lost:
            judgement.asks.append(f"Git has no copy of {_list(lost)} (modified or untracked).")
    if policy.ask_uncommitted and rewritten and not _stashes(sets):
        discarded = _discarded(rewritten)
        if discarded:
            judgement.asks.append(
                f"It discards uncommitted changes to {_list(discarded)} (back to what git has; git reset --hard, "
                "checkout, restore)."
            )
    return judgement


_DISCARD_HASH_BYTES = 64 << 20  # bytes hashed at most to recognise files put back to git's copy


def _stashes(sets: Sequence[ChangeSet]) -> bool:
    """`git stash` keeps what it takes away (refs/stash): nothing is discarded."""
    return any(
        change.path.endswith((".git/refs/stash", ".git/logs/refs/stash")) or change.path in ("refs/stash",)
        for changes in sets
        for change in changes.changes
    )


def _discarded(rewritten: Sequence[tuple[ChangeSet, Change]]) -> list[str]:
    """Of the files overwritten, those that had changes git has no copy of (differing from the index) and now
    hold exactly the index's content: uncommitted work thrown away. Read from the index file itself."""
    found: list[str] = []
    indexes: dict[str, tuple[str, dict[str, bytes]] | None] = {}
    budget = _DISCARD_HASH_BYTES
    for changes, change in rewritten:
        if change.size + change.old_size > budget:
            break
        repository = _repository(changes.root, change.path, indexes)
        if repository is None:
            continue
        work_tree, entries = repository
        blob = entries.get(posixpath.relpath(posixpath.join(changes.root, change.path), work_tree))
        if blob is None:
            continue
        budget -= change.size + change.old_size
        new = _blob_hash(posixpath.join(changes.upper, change.path), changes.upper)
        if new == blob and _blob_hash(posixpath.join(changes.root, change.path), changes.root) != blob:
            found.append(change.path)
    return found


_MOVE_HASH_BYTES = 256 << 20  # bytes hashed at most to recognise moved files


def _moves(
    sets: Sequence[ChangeSet], refused: dict[tuple[str, str], str]
) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """Files deleted in one place and created, byte for byte, in another (``git mv``, ``mv dir new``): (from, to)
    pairs of (root, path). Only files of the same size are compared, within a bound of bytes hashed."""
    created: dict[int, list[tuple[ChangeSet, Change]]] = {}
    for changes in sets:
        for change in changes.changes:
            if change.action == "create" and change.kind == "file" and (changes.root, change.path) not in refused:
                created.setdefault(change.size, []).append((changes, change))
    budget = [_MOVE_HASH_BYTES]
    hashes: dict[tuple[str, str, bool], bytes | None] = {}

    def digest(changes: ChangeSet, path: str, real: bool, size: int) -> bytes | None:
        key = (changes.root, path, real)
        if key not in hashes:
            if budget[0] < size:
                return None
            budget[0] -= size
            base = changes.root if real else changes.upper
            hashes[key] = _blob_hash(posixpath.join(base, path), no_follow_below=base)
        return hashes[key]

    moves: set[tuple[str, str]] = set()
    pairs: list[tuple[tuple[str, str], tuple[str, str]]] = []
    for changes in sets:
        for change in changes.changes:
            if change.action != "delete" or change.kind != "file" or (changes.root, change.path) in refused:
                continue
            name = change.path.rsplit("/", 1)[-1]
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


def _sanitize_new_configs(changes: ChangeSet, judgement: Judgement) -> None:
    """A git config the real tree did not have, refused for keys that could make git run programs: applied with
    those keys left out instead (``git init sub && git -C sub config core.fsmonitor …`` keeps a working sub),
    written afresh from what git reads (never an edit of the command's text)."""
    trees = _Trees(changes)
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


def _list(items: Sequence[str], shown: int = 3) -> str:
    head = ", ".join(items[:shown])
    return head + (f" and {len(items) - shown} more" if len(items) > shown else "")


def _refuse(
    changes: ChangeSet,
    protection: Protection,
    roots: Sequence[str],
    refused: dict[tuple[str, str], str],
    by_content: set[tuple[str, str]],
) -> None:
    trees = _Trees(changes, roots)
    lookups = Lookups()
    root = changes.root
    for change in changes.changes:
        name = change.path.rsplit("/", 1)[-1]
        if change.action != "delete" and name in (
            "config",
            "config.worktree",
            "commondir",
            "gitdir",
            ".git",
            *_TODO_NAMES,
        ):
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
        else:
            why = _protected(trees, change, protection, roots, lookups)
        if why is not None:
            refused[(root, change.path)] = why
    # A deletion or replacement of a tree that holds a refused path is refused whole; so is the tree it came with.
    for change in changes.changes:
        top = change.top
        if top and change.action == "delete" and (root, change.path) in refused and (root, top) not in refused:
            refused[(root, top)] = f"it holds {change.path} ({refused[(root, change.path)]})"
    for change in changes.changes:
        if change.top and change.action == "delete" and (root, change.top) in refused:
            refused.setdefault((root, change.path), refused[(root, change.top)])


def _protected(
    trees: _Trees, change: Change, protection: Protection, roots: Sequence[str], lookups: Lookups
) -> str | None:
    """Why a change is refused (None: it is not). Git's own paths are decided by the git rules, which allow only
    what cannot make git run anything; everything else by the protected list file_write uses."""
    absolute = posixpath.join(trees.changes.root, change.path)
    name = change.path.rsplit("/", 1)[-1]
    if name == ".git" and change.kind == "dir" and change.action != "delete":
        return None  # a git dir of its own (git init, git clone): what is in it is judged path by path
    verdict: str | None = None
    if name == ".git" and change.action != "delete":
        verdict = _pointer_verdict(trees, change, roots, gitfile=True)
    elif name in _GIT_NAMES or "hooks" in change.path.split("/") or _GIT_STATE.search(change.path):
        verdict = _creates_git_dir(trees, change, roots) or _git_verdict(trees, change, roots)
    if verdict is not None:
        return verdict or None  # _ALLOWED (""): cannot make git run anything
    rule = protection.write_rule([change.path, absolute], None, roots, lookups)
    return f"protected ({rule})" if rule is not None else None


# -- what git has ----------------------------------------------------------------------------------------


def _uncommitted(losing: Sequence[tuple[ChangeSet, Change]]) -> list[str]:
    """Of the files being deleted or emptied, those whose current content git does not have (untracked, or
    different from the index), judged from the index file itself: no git program runs."""
    lost: list[str] = []
    indexes: dict[str, tuple[str, dict[str, bytes]] | None] = {}
    for changes, change in losing:
        found = _repository(changes.root, change.path, indexes)
        if found is None:
            continue
        work_tree, entries = found
        rel = posixpath.relpath(posixpath.join(changes.root, change.path), work_tree)
        blob = entries.get(rel)
        if blob is None or _blob_hash(posixpath.join(changes.root, change.path), changes.root) != blob:
            lost.append(change.path)
    return lost


def _repository(
    root: str, path: str, cache: dict[str, tuple[str, dict[str, bytes]] | None]
) -> tuple[str, dict[str, bytes]] | None:
    """The work tree holding ``path`` (a directory with a .git directory, at or above it, inside the root) and
    its index: path -> blob id."""
    parts = path.split("/")[:-1]
    for depth in range(len(parts), -1, -1):
        work_tree = posixpath.join(root, *parts[:depth]) if depth else root
        if work_tree in cache:
            return cache[work_tree]
        with contextlib.suppress(OSError):
            fd = os.open(work_tree, _DIR)  # the root, then one name at a time below it: no link followed
            try:
                git = os.open(".git", _DIR, dir_fd=fd)
            finally:
                os.close(fd)
            try:
                cache[work_tree] = (work_tree, _read_index(git))
            finally:
                os.close(git)
            return cache[work_tree]
    return None


def _read_index(git_dir: int) -> dict[str, bytes]:
    """Path -> blob id from a git dir's index file (versions 2 to 4); empty when it cannot be read."""
    try:
        fd = os.open("index", _FILE, dir_fd=git_dir)
    except OSError:
        return {}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {}
        data = os.pread(fd, 256 << 20, 0)
    finally:
        os.close(fd)
    out: dict[str, bytes] = {}
    if len(data) < 12 or data[:4] != b"DIRC":
        return out
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4):
        return out
    hash_size = 20  # sha-1 repositories; sha-256 ones are judged as having no copy (asked, never lost)
    offset = 12
    previous = b""
    try:
        for _ in range(count):
            start = offset
            blob = data[offset + 40 : offset + 40 + hash_size]
            flags = struct.unpack(">H", data[offset + 40 + hash_size : offset + 42 + hash_size])[0]
            offset += 42 + hash_size
            if version >= 3 and flags & 0x4000:
                offset += 2
            if version == 4:
                strip, used = _varint(data, offset)
                offset += used
                end = data.index(b"\0", offset)
                name = previous[: len(previous) - strip] + data[offset:end]
                offset = end + 1
            else:
                end = data.index(b"\0", offset)
                name = data[offset:end]
                offset = start + ((end - start + 8) & ~7)
            previous = name
            out[name.decode("utf-8", "surrogateescape")] = blob
    except (ValueError, struct.error, IndexError):
        return out
    return out


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    value = data[offset] & 0x7F
    used = 1
    while data[offset + used - 1] & 0x80:
        value = ((value + 1) << 7) | (data[offset + used] & 0x7F)
        used += 1
    return value, used


def _open_below(path: str, base: str) -> int:
    """Open the regular file ``path`` below ``base``, one name at a time: no link followed on the way."""
    rel = posixpath.relpath(path, base)
    fd = os.open(base, _DIR)
    try:
        parts = rel.split("/")
        for part in parts[:-1]:
            nxt = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return os.open(parts[-1], _FILE, dir_fd=fd)
    finally:
        os.close(fd)


def _blob_hash(path: str, no_follow_below: str = "") -> bytes | None:
    """Git's blob id of a regular file's current content (never following a link or opening anything else)."""
    try:
        fd = _open_below(path, no_follow_below or posixpath.dirname(path))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_HASHED:
            return None
        hasher = hashlib.sha1(f"blob {st.st_size}\0".encode(), usedforsecurity=False)
        offset = 0
        while chunk := os.pread(fd, 1 << 20, offset):
            hasher.update(chunk)
            offset += len(chunk)
        return hasher.digest()
    finally:
        os.close(fd)
