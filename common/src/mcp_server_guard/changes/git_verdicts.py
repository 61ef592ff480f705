"""Judging what a change set does to git's own files, on the tree as the command left it.

Owns :class:`Trees` (the command's upper layer over the real tree, read one name at a time with no link
followed) and the git verdicts on it: a hook, a config that gains keys that can make git run programs, a pointer
(``.git`` file, ``commondir``, ``gitdir``) that sends git to a directory with such a config or hooks, a rebase's
state that runs a command on ``--continue``, a change that makes a directory a git dir whose config or hooks
would run. Git dirs are recognised as git recognises them (``git_dirs``), configs read by git's own parser
(``git_config``).

Not here: the protected list, the questions and the summary (``changes.effects``, which calls these verdicts
for git's own paths only), nor what git has a copy of (``changes.git_index``).
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Callable, Sequence

from mcp_server_guard.changes.changeset import Change, ChangeSet, Kind
from mcp_server_guard.changes.git_objects import Objects
from mcp_server_guard.git_config import unsafe_git_entries
from mcp_server_guard.git_dirs import POINTER_LIMIT, git_runnable, global_relative_hooks, pointer_text
from mcp_server_guard.paths import within_any
from mcp_server_guard.protected import Lookups

__all__ = [
    "ALLOWED",
    "GIT_STATE",
    "STRATEGY_NAMES",
    "TODO_NAMES",
    "Trees",
    "creates_git_dir",
    "git_verdict",
    "objects_verdict",
    "pointer_place",
    "pointer_verdict",
    "root_relative",
]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_MAX_GIT_CONFIG = 1 << 20


class Trees:
    """The tree as the command left it (its upper layer over the real tree), read without following links."""

    def __init__(self, changes: ChangeSet, roots: Sequence[str] = ()) -> None:
        self.changes = changes
        self.roots = tuple(roots) or (changes.root,)
        self.by_path = {c.path: c for c in changes.changes}
        self.pointed: set[str] = set()  # directories this change set points git at (as git dirs)
        self._git_dir_of: dict[str, str | None] = {}
        for change in changes.changes:
            name = change.path.rsplit("/", 1)[-1]
            if change.action == "delete" or change.kind != "file" or name not in ("commondir", "gitdir", ".git"):
                continue
            target = pointer_place(self, change.path, gitfile=name == ".git")
            if target is not None and within_any(target, [changes.root]):
                self.pointed.add(root_relative(target, changes.root))

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

    def objects(self, rel: str, budget: int = 64 << 20, seconds: float = 5.0) -> Objects:
        """The object store ``rel`` (a git dir's ``objects``) as the call leaves it: its new objects over the real
        ones, without those the call deleted (``git_objects.Objects``'s ``gone``)."""
        upper, real = self.open_dir(self.changes.upper, rel), self.open_dir(self.changes.root, rel)
        dirs = [fd for fd in (upper, real) if fd is not None]
        return Objects(dirs, budget, seconds, lower=real, gone=lambda below: self.kind(f"{rel}/{below}") is None)

    def open_dir(self, base: str, rel: str) -> int | None:
        """The directory ``rel`` below ``base`` (the root or the upper layer), opened with no link followed; None
        where there is none."""
        return self._fd(base, rel)

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

    def git_dir_of(self, rel: str) -> str | None:
        """The nearest of ``rel`` and its ancestors (not the root itself) that :meth:`is_git_dir`, or None;
        remembered per directory (threat: paths 120 levels deep judged by the thousand, each ancestor looked up
        again from the root)."""
        known = self._git_dir_of
        pending: list[str] = []
        found: str | None = None
        while rel:
            if rel in known:
                found = known[rel]
                break
            pending.append(rel)
            if self.is_git_dir(rel):
                found = rel
                break
            rel = rel.rpartition("/")[0]
        for path in pending:
            known[path] = found
        return found

    def is_git_dir(self, rel: str) -> bool:
        """``git_dirs.is_git_dir`` on the merged tree (a HEAD that is not a directory, and objects + refs or a
        commondir, of any kind: git follows links there); or a directory a pointer of this change set names (a
        commondir, a gitdir file, a .git file)."""
        return rel in self.pointed or _git_dir_shape(self.kind, rel)

    def hooks(self, rel: str) -> list[str]:
        """The hooks of the git dir ``rel`` in the merged tree, git's samples left out."""
        return sorted(n for n in self.names(f"{rel}/hooks" if rel else "hooks") if not n.endswith(".sample"))

    def names(self, rel: str) -> set[str]:
        """The names in the directory ``rel`` of the merged tree: the real tree's, with what the change set made
        there and without what it deleted."""
        names = set(self.real_names(rel))
        for change in self.changes.changes:
            parent, _, name = change.path.rpartition("/")
            if parent == rel:
                (names.discard if change.action == "delete" else names.add)(name)
        return names

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
    """Whether a tree (``kind`` of a path in it) has a git dir at ``rel``, as ``git_dirs.is_git_dir`` decides:
    objects + refs (a repository, or the common dir another one's commondir may name), or HEAD + commondir."""
    join = (lambda name: f"{rel}/{name}") if rel else (lambda name: name)
    if kind(join("objects")) is not None and kind(join("refs")) is not None:
        return True
    return kind(join("HEAD")) not in (None, "dir") and kind(join("commondir")) is not None


def root_relative(path: str, root: str) -> str:
    rel = posixpath.relpath(path, root)
    return "" if rel == "." else rel


def _kind_name(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    return "symlink" if stat.S_ISLNK(mode) else "other"


ALLOWED = ""  # what git_verdict says of a git path whose change cannot make git run anything


def git_verdict(trees: Trees, change: Change, roots: Sequence[str]) -> str | None:
    """For a path git runs or follows inside a git dir (as the change set leaves the tree, pointers included):
    why the change is refused, or ALLOWED; None when it is no such path (the protected list decides)."""
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
                return ALLOWED
            return f"a git hook in the git dir {where} (git runs it)"
        if rel == "hooks" or rel.endswith("/hooks"):
            if change.action == "delete":
                return f"the hooks of the git dir {where} deleted"
            # Threat: hooks as a link to a directory of the project's (scripts/), whose files git then runs.
            return ALLOWED if change.kind == "dir" else f"the hooks of the git dir {where} made a {change.kind}"
        if GIT_STATE.search(rel):
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
                if added := sorted(set(new) - set(old)):
                    keys = ", ".join(sorted({entry.partition("=")[0] for entry in added}))
                    return f"git's config in {where} would gain keys that can make git run programs: {keys}"
                # (keys taken out or put in another order: which one git uses changes too — red team 87 F6: the
                # refusal named nothing)
                keys = ", ".join(sorted({entry.partition("=")[0] for entry in (set(old) - set(new)) or old}))
                return f"git's config in {where} would lose or reorder keys that can make git run programs: {keys}"
            return ALLOWED
        if rel.endswith(("commondir", "gitdir")):
            return _worktree_pruned(trees, change, rel) or pointer_verdict(trees, change, roots, gitfile=False)
    return None


_WORKTREE_GITDIR = re.compile(r"^(?:worktrees/[^/]+/)?gitdir$")  # (judged from the common dir, or from its own)


def _worktree_pruned(trees: Trees, change: Change, rel: str) -> str | None:
    """Why a linked work tree's ``gitdir`` file (``rel`` in its git dir) is refused: gone while the work tree's state
    stays, or naming nothing. Threat (red team 110 F5): ``git worktree prune``, which every ``git gc`` runs, deletes
    such a work tree's state — its HEAD, index and reflog: a commit only it names, its staged work. Git never leaves
    one so (``worktree move``/``repair`` write where the work tree is; ``worktree remove`` takes the whole state)."""
    if not _WORKTREE_GITDIR.match(rel):
        return None
    state = posixpath.dirname(change.path)
    if rel == "gitdir" and trees.kind(f"{state}/commondir") is None and "/worktrees/" not in f"/{state}":
        return None  # (not a linked work tree's state)
    if change.action == "delete":
        if trees.kind(f"{state}/HEAD") is None:
            return None
        return f"{change.path} deleted while its work tree's state stays: your next git gc would delete that state"
    target = pointer_place(trees, change.path, False)
    if target is None or not within_any(target, [trees.changes.root]):
        return None  # (pointer_verdict's: it names nothing git reads, or a place outside)
    if trees.kind(root_relative(target, trees.changes.root)) is None:
        return f"{change.path} names a place that is not there: your next git gc would delete that work tree's state"
    return None


# What makes git read other objects or another history for the ones it has: refused (everyday git makes none of
# them in a project; git works without the multi-pack index, a cache). The commit graph, which every `git gc`
# writes, is checked against the commits' own objects instead (``changes.git_refs``).
_REDIRECTS = re.compile(
    r"^(?:info/grafts|objects/info/(?:alternates|http-alternates)|objects/pack/multi-pack-index(?:\.d/.*)?)$"
)  # (``multi-pack-index.d/``: git 2.47's incremental chain, read like the one file)


# What git itself rewrites in place below objects/: the pack list and the commit graph (checked by content).
_REWRITTEN = re.compile(r"^objects/info/(?:packs|commit-graph|commit-graphs/.*)$")


def objects_verdict(trees: Trees, change: Change) -> str | None:
    """For a path in a git dir's objects (or its grafts): why the change is refused, or None. Threat (red team 76
    F5, F6): git checks out what its objects say — an object rewritten in place (``git checkout HEAD~1`` then writes
    a tree the command made, a hook in it), a graft or a commit graph giving a commit other parents or another
    tree, an alternate store the command controls — while the judgement of refs reads objects as never changing."""
    parts = change.path.split("/")
    for depth in range(len(parts) - 1, -1, -1):
        directory, rel = "/".join(parts[:depth]), "/".join(parts[depth:])
        if not (rel.startswith("objects/") or rel == "info/grafts"):
            continue
        if not (trees.is_git_dir(directory) or trees.was_git_dir(directory)):
            continue
        where = directory or "."
        if _REDIRECTS.match(rel) and change.action != "delete":
            return f"git's {rel} in the git dir {where}: git would read other objects or another history through it"
        if change.action == "modify" and not _REWRITTEN.match(rel):
            return f"an object of the git dir {where} changed in place (git's objects never change)"
        return None
    return None


# A rebase's or a cherry-pick's state directory in a path (git runs what its todo list says on --continue).
GIT_STATE = re.compile(r"(?:^|/)(?:rebase-merge|rebase-apply|sequencer)(?:/|$)")
TODO_NAMES = ("git-rebase-todo", "todo")  # the names of the todo lists in that state
_RUNS_A_COMMAND = re.compile(rb"^[ \t]*(?:exec|x)(?:[ \t]|$)", re.MULTILINE)


def _git_state_verdict(trees: Trees, change: Change, where: str) -> str:
    """A rebase's or a cherry-pick's state (``rebase-merge/``, ``rebase-apply/``, ``sequencer/``): applied, but
    for a todo list with a step that runs a command, and a merge strategy that names a program by path.

    Threat: a todo whose ``exec`` line the user's ``git rebase --continue`` runs, outside the box; a ``strategy``
    file (or ``options.strategy`` in ``sequencer/opts``) of ``/x.sh``, which makes git run ``git-merge-/x.sh``
    from the work tree on --continue."""
    name = change.path.rsplit("/", 1)[-1]
    if change.action == "delete" or name not in (*TODO_NAMES, *STRATEGY_NAMES):
        return ALLOWED
    data = trees.read(change.path) if change.kind == "file" else None
    if data is None or len(data) >= _MAX_GIT_CONFIG:
        return f"git's rebase state {name} in the git dir {where} is not a small regular file"
    if name in TODO_NAMES and _RUNS_A_COMMAND.search(data):
        return f"a rebase step in the git dir {where} that runs a command (git runs it on --continue)"
    if name in STRATEGY_NAMES and re.search(rb"[/\\]|\.\.", data):
        return f"a merge strategy in the git dir {where} that names a program by its path (git runs it on --continue)"
    return ALLOWED


# The rebase and cherry-pick state files that name the merge strategy git runs (as git-merge-<name>).
STRATEGY_NAMES = ("strategy", "strategy_opts", "opts")


def pointer_place(trees: Trees, path: str, gitfile: bool) -> str | None:
    """The absolute place a pointer file (a ``.git`` file, or a commondir or gitdir file) names, read as git
    reads it (``git_dirs.pointer_text``); None when it names none."""
    data = trees.read(path, limit=POINTER_LIMIT + 1)
    text = pointer_text(data, gitfile) if data is not None else None
    if text is None:
        return None
    base = posixpath.dirname(posixpath.join(trees.changes.root, path))
    return posixpath.normpath(posixpath.join(base, text))


def pointer_verdict(trees: Trees, change: Change, roots: Sequence[str], *, gitfile: bool) -> str:
    """A commondir, gitdir or .git file sends git to a directory it then takes as a git dir: allowed only where that
    lies inside the allowed directories and, as the change set leaves it, has no config key and no hook that
    could make git run programs."""
    if change.action == "delete":
        return ALLOWED
    if change.kind != "file":
        return f"{change.path} is a {change.kind} where git expects a pointer"
    target = pointer_place(trees, change.path, gitfile)
    if target is None or not within_any(target, roots) or not within_any(target, [trees.changes.root]):
        return f"{change.path} points git outside the allowed directories"
    rel = root_relative(target, trees.changes.root)
    join = (lambda n: f"{rel}/{n}") if rel else (lambda n: n)
    for config in ("config", "config.worktree"):
        unsafe = unsafe_git_entries(trees.read(join(config)))
        if unsafe is None or unsafe:
            return f"{change.path} points git at {rel or '.'}, whose config can make git run programs"
    if trees.hooks(rel):
        return f"{change.path} points git at {rel or '.'}, which has hooks git would run"
    if _state_runs(trees, rel):
        return f"{change.path} points git at {rel or '.'}, whose rebase state runs a command on --continue"
    return ALLOWED


def _state_runs(trees: Trees, directory: str, *, old_only: bool = False) -> bool:
    """Whether the would-be git dir ``directory`` holds a rebase's or cherry-pick's state whose todo runs a command
    or whose strategy names a program (``_git_state_verdict``), as the change set leaves it (``old_only``: only
    what was there before it). Threat: the state written in a plain directory (nothing judges it there), the
    pointer or HEAD that makes it a git dir coming in a later call."""
    join = (lambda n: f"{directory}/{n}") if directory else (lambda n: n)
    for state in ("rebase-merge", "rebase-apply", "sequencer"):
        for name in (*TODO_NAMES, *STRATEGY_NAMES):
            path = join(f"{state}/{name}")
            if old_only and path in trees.by_path:
                continue  # judged on its own, as a path of the new git dir
            kind = trees.kind(path)
            if kind is None:
                continue
            change = Change(path, "modify", "file" if kind == "file" else "symlink" if kind == "symlink" else "dir")
            if _git_state_verdict(trees, change, directory or ".") != ALLOWED:
                return True
    return False


def creates_git_dir(trees: Trees, change: Change, roots: Sequence[str]) -> str | None:
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
    if _state_runs(trees, directory, old_only=True):
        return f"it makes {directory or '.'} a git dir whose rebase state runs a command on --continue"
    pointer_kind = trees.kind(join("commondir"))
    if pointer_kind is not None and join("commondir") not in trees.by_path:  # a new one is judged on its own
        kind: Kind = "file" if pointer_kind == "file" else "symlink" if pointer_kind == "symlink" else "dir"
        why = pointer_verdict(trees, Change(join("commondir"), "modify", kind), roots, gitfile=False)
        if why:
            return f"it makes {directory or '.'} a git dir: {why}"
    return None


def in_relative_hooks(trees: Trees, path: str, home: str | None, lookups: Lookups) -> str | None:
    """Threat: a relative ``core.hooksPath`` in the user's global config (``.githooks``) names a hooks directory in
    every work tree — in a repository the command makes too (``git init tool`` then ``tool/.githooks/pre-commit``):
    the user's next commit there runs it. Why refused, or None."""
    if lookups.git.relative_hooks is None:
        lookups.git.relative_hooks = global_relative_hooks(home)
    if not lookups.git.relative_hooks:
        return None
    parts = path.split("/")
    for depth in range(len(parts) - 1, -1, -1):
        work_tree = "/".join(parts[:depth])
        rest = "/".join(parts[depth:])
        for hooks in lookups.git.relative_hooks:
            if (rest == hooks or rest.startswith(hooks + "/")) and trees.is_git_dir(
                f"{work_tree}/.git" if work_tree else ".git"
            ):
                return f"protected (a hooks directory your global git config names: core.hooksPath = {hooks})"
    return None
