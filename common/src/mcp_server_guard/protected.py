"""One protected list and one hidden list, enforced by every tool.

*Protected* paths are what makes git, a shell or an editor run programs later, as the user and outside any
sandbox (git hooks and config, shell start-up files, editor tasks, MCP host configs), plus the guards' own
policy files, audit log and history. ``file_write`` refuses them (:meth:`Protection.write_rule`); so does the
judgement of what a shell_exec command changed on its copy (``changes.effects``), by the same rule. Only where
commands write the real tree directly (no copy can be made) does the box mount each one that exists read-only
(:meth:`Protection.survey`).

*Hidden* paths are credentials: ``file_read`` refuses them (:meth:`Protection.hidden_rule`) and the box
masks every one that exists (an empty, read-only file or directory).

Git is known the way git knows itself: a directory with a ``HEAD`` (a file, or a symlink) and ``objects/`` and
``refs/`` (or a ``commondir`` file) is a git dir wherever it lies; a ``.git`` *file* leads to its ``gitdir:``;
in a git dir, ``config``, ``config.worktree``, ``hooks/``, ``commondir``, ``gitdir`` and the same entries of
``modules/*`` and ``worktrees/*`` are what git runs or follows. Objects, refs, the index and the logs stay
writable: ordinary git work goes on. A config is read by git's own parser (:func:`git_config_entries`), never
by a look-alike. A layout that cannot be read (an unreadable ``.git`` file, a protected path that is a
symlink, which a bind mount would follow) fails closed with ``PROTECTION_UNAVAILABLE``: nothing runs.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import logging
import os
import posixpath
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp_server_guard import linux
from mcp_server_guard.audit import state_dirs
from mcp_server_guard.errors import SecurityError
from mcp_server_guard.paths import within, within_any
from mcp_server_guard.policy import Policy

__all__ = [
    "OWN_AREA",
    "POINTER_LIMIT",
    "Lookups",
    "Protection",
    "Survey",
    "git_config_entries",
    "git_runnable",
    "glob_regex",
    "is_git_dir",
    "makes_git_dir",
    "own_areas",
    "pointer_text",
    "protection_for",
    "safe_git_config",
    "unsafe_git_entries",
]

log = logging.getLogger("mcp_server_guard")

# A root's own area for shell_exec's copies, when the state directory lies on another file system.
OWN_AREA = ".mcp-guard"
# How deep below each writable root the box looks for git dirs (a wider search costs every call).
GIT_SEARCH_DEPTH = 2
# Directories visited per root at most by that search; past it, deeper git dirs are not looked for.
GIT_SEARCH_BUDGET = 2000
_GLOB_CHARS = frozenset("*?[")
# What the servers and the box's supervisor run from, and the system itself: a hidden entry that holds one
# of these is ignored (a path below them, such as /etc/shadow, can still be hidden).
_RUNTIME = (
    *{sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable)), str(Path(__file__).parents[1])},
    *("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc", "/dev", "/tmp"),  # noqa: S108 - never hidden
)
# Entries of a git dir that git runs, or follows to another git dir.
# (A rebase's or a cherry-pick's state lists commands git runs on --continue: file_write never writes it; a
# command's is judged by its content, see changes.effects.)
_GIT_RUNNABLE = re.compile(
    r"^(?:(?:modules/.+|worktrees/[^/]+)/)?"
    r"(?:config|config\.worktree|commondir|gitdir|hooks(?:/.*)?|(?:rebase-merge|rebase-apply|sequencer)(?:/.*)?)$"
)
_GIT_ENTRIES = ("config", "config.worktree", "hooks", "commondir", "gitdir")
# Keys a git config written by a command may carry (section.key; "*" stands for any subsection): none of them
# makes git run a program. Any other key a command adds is refused (a new repository's config is applied
# without them).
_MAX_GIT_CONFIG = 1 << 20
_GIT_TIMEOUT_S = 3.0  # git reads a 1 MiB config in milliseconds; past this it is refused
# Not core.worktree: it sends git's checkouts and resets to any directory (outside the roots: your next
# `git reset --hard` writes there).
_SAFE_GIT_KEYS = frozenset(
    {
        "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates", "core.ignorecase",
        "core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol", "core.safecrlf",
        "user.name", "user.email", "init.defaultbranch", "branch.*.remote", "branch.*.merge",
        "branch.*.rebase",
        "remote.*.url", "remote.*.pushurl", "remote.*.fetch", "remote.*.push", "extensions.objectformat",
        "extensions.worktreeconfig", "extensions.refstorage", "submodule.*.url", "submodule.*.active",
        "commit.verbose", "pull.rebase", "pull.ff", "merge.ff", "gc.auto", "advice.*",
    }
)  # fmt: skip


def glob_regex(pattern: str) -> str:
    """A protected-path pattern as a regex: ``*`` within a component, ``**`` across them, matched as a whole
    path suffix at any depth (``.git/config`` matches ``a/.git/config``)."""
    out = []
    i = 0
    p = pattern.strip("/")
    while i < len(p):
        if p.startswith("**", i):
            out.append(".*")
            i += 2
        elif p[i] == "*":
            out.append("[^/]*")
            i += 1
        elif p[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(p[i]))
            i += 1
    return r"(?:^|/)" + "".join(out) + r"$"


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


_MAX_HIDDEN_IDS = 65536  # identities of hidden entries (and the files in them) remembered at most
_HIDDEN_ID_DEPTH = 4
POINTER_LIMIT = 4096  # bytes of a .git or commondir file read at most; a longer one names nothing we trust


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


def git_runnable(rel: str) -> bool:
    """Whether ``rel`` (a path inside a git dir) is something git runs or follows."""
    return bool(_GIT_RUNNABLE.match(rel))


def _pointer(path: str, gitfile: bool) -> str:
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


def _unavailable(path: str, why: str) -> SecurityError:
    return SecurityError(
        "PROTECTION_UNAVAILABLE",
        f"The protected path '{path}' cannot be guarded: {why}; nothing was run.",
        "Ask the user to fix that path by hand (replace the symlink by the file, or repair the .git file), "
        "or to allow a directory that does not contain it.",
    )


@dataclass
class Survey:
    """What the box does for one command, taken just before it starts."""

    read_only: list[str] = field(default_factory=list)  # protected paths that exist: mounted read-only
    masked: list[str] = field(default_factory=list)  # hidden paths that exist: masked
    roots: tuple[str, ...] = ()


class Protection:
    """The policy's protected and hidden lists, resolved for this server (its HOME, its own files)."""

    def __init__(
        self,
        patterns: Iterable[str],
        hidden: Iterable[str] = (),
        *,
        files: Iterable[Path] = (),
        dirs: Iterable[Path] = (),
        home: str | None = None,
    ) -> None:
        self.patterns = tuple(patterns)
        self._regex = re.compile("|".join(f"(?:{glob_regex(p)})" for p in self.patterns) or r"(?!)", re.IGNORECASE)
        self._files = {os.path.realpath(f) for f in files}
        self._dirs = tuple(os.path.realpath(d) for d in dirs)
        self._inodes: set[tuple[int, int]] = set()
        for f in self._files:
            with contextlib.suppress(OSError):
                st = os.stat(f)
                self._inodes.add((st.st_dev, st.st_ino))
        self.home = os.path.realpath(home) if home else None
        self._hidden = tuple(hidden)
        # Expanded once (HOME is fixed for the server's life): each entry's absolute form, and whether it is a glob.
        expanded = (self.home + e[1:] if self.home and (e == "~" or e.startswith("~/")) else e for e in self._hidden)
        self._hidden_abs = tuple((e, bool(_GLOB_CHARS & set(e))) for e in expanded if e.startswith("/"))
        self._kept = (*([self.home] if self.home else []), *_RUNTIME)
        self._hidden_lock = threading.Lock()
        self._hidden_cache: tuple[str, ...] | None = None
        # Every hidden entry seen, by identity (device, inode): renamed or linked elsewhere, it stays hidden.
        self._hidden_ids: dict[tuple[int, int], str] = {}
        self._hidden_watch = _DirWatch()
        # Literal patterns name one path below a root ("**" at the end: the whole directory); the box can
        # mount those. Patterns with wildcards elsewhere are file_write's alone.
        self._literal = tuple(
            p.strip("/").removesuffix("/**")
            for p in self.patterns
            if not _GLOB_CHARS & set(p.strip("/").removesuffix("/**"))
        )

    # -- file_write and file_read --------------------------------------------------------------------

    def write_rule(
        self,
        candidates: Iterable[str],
        existing: os.stat_result | None,
        roots: Iterable[str],
        lookups: Lookups | None = None,
    ) -> str | None:
        """The rule that protects one of ``candidates`` (paths of one target, the real one last), or None.
        ``lookups``: what a caller judging many paths at once lets us look up once for all of them."""
        roots = tuple(roots)
        real = ""
        hidden: list[str] | None = lookups.hidden if lookups is not None else None  # once for all the candidates
        for path in candidates:
            if not path:
                continue
            real = path
            found = self._regex.search(path)
            if found:
                return next(p for p in self.patterns if re.search(glob_regex(p), path, re.IGNORECASE))
            if path in self._files:
                return "the server's own policy or audit file"
            if within_any(path, self._dirs):
                return "the history store"
            if hidden is None:
                hidden = self.hidden_paths(roots)
                if lookups is not None:
                    lookups.hidden = hidden
            if within_any(path, hidden):
                return "a hidden path"
        if existing is not None and (existing.st_dev, existing.st_ino) in self._inodes:
            return "the server's own policy or audit file (hard link)"
        own = _own_area(real, roots) if real.startswith("/") else None
        if own is not None:
            return f"the copies of shell_exec's commands ({own})"
        if real.startswith("/"):
            return _git_rule(real, tuple(roots), self.home, lookups or Lookups())
        return None

    def hidden_paths(self, roots: Iterable[str] = ()) -> list[str]:
        """The hidden list with ``~`` and globs expanded: existing paths only, never one that holds the
        server's HOME or an allowed root (allowing a directory is the user's explicit choice)."""
        keep = (*roots, *self._kept)
        return [real for real in self._hidden_now() if not any(within(kept, real) for kept in keep)]

    def _hidden_now(self) -> tuple[str, ...]:
        """The real paths of the hidden entries that exist, as the file system is now.

        Looking them up costs ~30 lstat calls; the answer is kept while the kernel reports no change (inotify)
        in any directory the lookup consulted, symlinks followed included. A change between a lookup and its
        watches is caught by looking up again once the watches are in place.
        """
        with self._hidden_lock:
            if self._hidden_cache is not None and self._hidden_watch.unchanged():
                return self._hidden_cache
            self._hidden_cache = None
            consulted: set[str] | None = set()
            found = self._look_up_hidden(consulted)
            for _ in range(3):
                if consulted is None or not self._hidden_watch.arm(consulted):
                    return found  # not watchable (a glob below the last component, no inotify): no cache
                again: set[str] | None = set()
                confirmed = self._look_up_hidden(again)
                if confirmed == found and again is not None and again <= consulted:
                    self._hidden_cache = found
                    return found
                found, consulted = confirmed, again
            return found

    def _look_up_hidden(self, consulted: set[str] | None) -> tuple[str, ...]:
        found: set[str] = set()
        for expanded, is_glob in self._hidden_abs:
            if is_glob:
                parent = posixpath.dirname(expanded)
                if _GLOB_CHARS & set(parent):
                    consulted = None
                if consulted is not None:
                    consulted.add(_resolve(parent, consulted)[0])  # the directory the glob lists
                paths = glob.glob(expanded)
            else:
                paths = [expanded]
            for path in paths:
                real, exists = _resolve(path, consulted if consulted is not None else set())
                if exists:
                    found.add(real)
        for real in found:
            self._remember_identities(real)
        return tuple(sorted(found))

    def _remember_identities(self, real: str) -> None:
        """The identity of a hidden entry, and of the files in it (a hard link to one, ~/.ssh/id_rsa as key.txt,
        is the same file): a few levels down, within a bound; links never followed."""
        level = [real]
        for _ in range(_HIDDEN_ID_DEPTH):
            below: list[str] = []
            for path in level:
                with contextlib.suppress(OSError):
                    st = os.lstat(path)
                    if len(self._hidden_ids) >= _MAX_HIDDEN_IDS:
                        return
                    self._hidden_ids.setdefault((st.st_dev, st.st_ino), real)
                    if stat.S_ISDIR(st.st_mode):
                        with os.scandir(path) as entries:
                            below += [e.path for e in entries if not e.is_symlink()]
            level = below
            if not level:
                return

    def hidden_rule(self, real: str, roots: Iterable[str] = ()) -> str | None:
        """Which hidden entry covers the real path ``real``, or None."""
        roots = tuple(roots)
        own = _own_area(real, roots)
        if own is not None:
            return own
        hidden = self.hidden_paths(roots)
        for path in hidden:
            if within(real, path):
                return path
        # Threat: `mv ~/.docker ~/d2`, `ln ~/.ssh/id_rsa key`: the same directory or file under another name. The
        # path and each directory above it are compared by identity with every hidden entry seen so far.
        if not self._hidden_ids:
            return None
        current = real
        while True:
            with contextlib.suppress(OSError):
                st = os.lstat(current)
                with self._hidden_lock:
                    seen = self._hidden_ids.get((st.st_dev, st.st_ino))
                if seen is not None and not any(within(root, seen) for root in roots):
                    return seen
            parent = posixpath.dirname(current)
            if parent == current:
                return None
            current = parent

    # -- shell_exec's box ----------------------------------------------------------------------------

    def survey(self, roots: Iterable[str]) -> Survey:
        """The mounts one command gets; raises PROTECTION_UNAVAILABLE when the layout cannot be read."""
        survey = Survey(roots=tuple(roots))
        gitfiles: list[str] = []  # .git files: they name the git dir, so they are protected like it
        found: list[str] = []
        bases = list(survey.roots)
        if self.home and within_any(self.home, bases) and self.home not in bases:
            bases.append(self.home)
        for base in bases:
            for rel in self._literal:
                _classify(os.path.join(base, rel), survey)
            found.extend(_git_dirs(base, gitfiles))
        for git_dir in found:
            for current in _git_family(git_dir):
                for name in _GIT_ENTRIES:
                    if within_any(current, survey.roots):
                        _classify(os.path.join(current, name), survey)
        survey.read_only.extend(gitfiles)
        for own in (*self._files, *self._dirs):
            if within_any(own, survey.roots) and os.path.exists(own):
                survey.read_only.append(own)
        survey.masked = self.hidden_paths(survey.roots) + own_areas(survey.roots)
        survey.read_only = sorted(set(survey.read_only))
        return survey


def own_areas(roots: Sequence[str]) -> list[str]:
    """Each root's own area that exists (``<root>/.mcp-guard``: the copies of every shell_exec server whose state
    directory is on another file system), masked whole in every call's view.

    Threat: another server's copies read through the lower layer (its unapplied work), and — where commands write
    the files directly — an area reshaped (``copies`` made a symlink, a live part's lock replaced) so that the
    next start's clean-up removes or follows what it should not. An area that is not a plain directory (a
    symlink a command made before any server did) cannot be masked safely: nothing runs."""
    areas = []
    for root in roots:
        area = posixpath.join(root, OWN_AREA)
        try:
            st = os.lstat(area)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise _unavailable(area, exc.strerror or "unreadable") from None
        if not stat.S_ISDIR(st.st_mode):
            raise _unavailable(area, "it is not a directory (shell_exec keeps the copies of commands there)")
        areas.append(area)
    return areas


def _own_area(path: str, roots: Sequence[str]) -> str | None:
    """The area inside a root where shell_exec keeps the copies its commands work on (see ``changes.area``):
    no tool reads or writes it."""
    for root in roots:
        area = posixpath.join(root, OWN_AREA)
        if within(path, area):
            return area
    return None


def _resolve(path: str, consulted: set[str]) -> tuple[str, bool]:
    """``os.path.realpath(path)``, and whether ``path`` itself exists (``os.path.lexists``: a dangling symlink
    does); every directory one of whose entries was looked up on the way is added to ``consulted``."""
    pending = [part for part in path.split("/") if part]
    own_left = len(pending)  # the path's own components are the tail of ``pending`` (link targets go first)
    resolved, links, exists, missing, is_dir = "/", 0, False, False, True
    while pending:
        own = len(pending) == own_left
        name = pending.pop(0)
        own_left -= own
        if name in (".", ".."):
            missing = missing or not is_dir  # ENOTDIR: "file/.." names nothing
            resolved = posixpath.dirname(resolved) if name == ".." else resolved
            continue
        consulted.add(resolved)
        candidate = posixpath.join(resolved, name)
        try:
            mode = os.lstat(candidate).st_mode
        except OSError:  # the rest is taken as spelled, as realpath does
            resolved, missing, is_dir = candidate, True, True
            continue
        exists = exists or (own and own_left == 0 and not missing)  # its last component is there (a link?)
        if stat.S_ISLNK(mode):
            links += 1
            if links > 40:  # ELOOP, as the kernel would say
                return posixpath.join(candidate, *pending), exists
            target = os.readlink(candidate)
            resolved = "/" if target.startswith("/") else resolved
            pending[:0] = [part for part in target.split("/") if part]
        else:
            resolved, is_dir = candidate, stat.S_ISDIR(mode)
    return resolved, exists or not missing


class _DirWatch:
    """inotify watches on a set of directories: has any entry in them been created, removed, renamed or had
    its attributes changed since they were armed? Without inotify, every question answers "changed"."""

    _MASK = 0x4 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800 | 0x1000000  # ATTRIB MOVED_* CREATE DELETE* ONLYDIR

    def __init__(self) -> None:
        self._fd = -1

    def arm(self, directories: Iterable[str]) -> bool:
        """Watch exactly ``directories`` from now on (ones that do not exist are skipped: their parent is in the
        set). False when inotify cannot watch them all."""
        self.close()
        try:
            fd = linux.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return False
        for directory in directories:
            try:
                linux.inotify_add_watch(fd, directory, self._MASK)
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                    os.close(fd)
                    return False
        self._fd = fd
        return True

    def unchanged(self) -> bool:
        if self._fd < 0:
            return False
        try:
            os.read(self._fd, 1 << 16)
        except BlockingIOError:
            return True  # no event queued
        except OSError:
            pass
        self.close()
        return False

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def protection_for(
    policy: Policy,
    *,
    audit_path: Path | None = None,
    history_dir: Path | None = None,
    others: Sequence[Path] = (),
) -> Protection:
    """The one set-up every server uses: the policy's lists, its own files, the audit log and the history (and
    ``others``: files of the same standing, such as shell_exec's approvals file)."""
    # Threat: a forged history (an apply journal, a call's record) that `mcp-guard undo` or the next start would
    # act on, or a rewritten audit log: the default state directories are hidden from every tool (the server
    # makes them before it serves, so there is something to hide; see launch.make_state_dirs).
    state = [str(d) for d in state_dirs()]
    return Protection(
        policy.paths.protected,
        [*policy.paths.hidden, *state],
        files=[Path(p) for p in policy.source] + ([audit_path] if audit_path else []) + list(others),
        dirs=[history_dir] if history_dir else [],
        home=os.environ.get("HOME"),
    )


def _classify(path: str, survey: Survey) -> None:
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return  # nothing there to mount read-only
    except OSError as exc:
        raise _unavailable(path, exc.strerror or "unreadable") from None
    if stat.S_ISLNK(st.st_mode):
        # A bind mount follows the link, so the link itself would stay replaceable.
        raise _unavailable(path, "it is a symlink")
    survey.read_only.append(path)


@dataclass
class Lookups:
    """What the judgement of many paths looks up once (the tree does not change while it is judged): the hidden
    list, the global hooks directories, each directory's git shape and its repository's hooks directories."""

    hidden: list[str] | None = None
    global_hooks: list[str] | None = None
    git_dirs: dict[str, bool] = field(default_factory=dict)
    hooks: dict[str, list[str]] = field(default_factory=dict)  # work tree (or not one: []) -> its hooks dirs


def _git_rule(real: str, roots: tuple[str, ...], home: str | None, lookups: Lookups) -> str | None:
    """file_write and the judge of effects: whether ``real`` is a runnable entry of a git dir among its
    ancestors inside the roots, or lies in a directory git runs hooks from (``core.hooksPath``)."""
    if lookups.global_hooks is None:
        lookups.global_hooks = _global_hooks_dirs(home)
    hooks = _hooks_rule(real, lookups.global_hooks)
    if hooks is not None:
        return hooks
    directory = posixpath.dirname(real)
    while within_any(directory, roots):
        git_dir = lookups.git_dirs.get(directory)
        if git_dir is None:
            git_dir = lookups.git_dirs[directory] = is_git_dir(directory)
        if git_dir:
            rel = posixpath.relpath(real, directory)
            if git_runnable(rel):
                return f"git's own '{rel}' (git dir {directory})"
            if rel.split("/", 1)[0] not in ("modules", "worktrees"):
                return None
        repo_hooks = lookups.hooks.get(directory)
        if repo_hooks is None:
            dotgit = posixpath.join(directory, ".git")
            repo_hooks = _repo_hooks_dirs(directory, home) if os.path.lexists(dotgit) else []
            lookups.hooks[directory] = repo_hooks
        hooks = _hooks_rule(real, repo_hooks)
        if hooks is not None:
            return hooks
        parent = posixpath.dirname(directory)
        if parent == directory:
            break
        directory = parent
    if posixpath.basename(real) == ".git":
        return ".git"  # a .git file points git at any directory
    return None


_GIT_SHAPE = frozenset({"HEAD", "objects", "refs", "commondir"})


def makes_git_dir(real: str, roots: Sequence[str]) -> str | None:
    """file_write: whether writing ``real`` (creating it and any missing parent) would turn a directory into a
    git dir — a HEAD, objects and refs (or a commondir) — that is not one now; why, or None.

    Threat: building a bare repository file by file (HEAD, a config that runs programs, objects/, refs/): each
    write alone touches no git dir, the last one makes ``src/`` a repository git finds before the project's.
    (The judgement of a command's effects decides the same on the tree the command left: ``_creates_git_dir``.)"""
    parts = real.split("/")
    for depth in range(len(parts) - 1, 0, -1):
        directory, made = "/".join(parts[:depth]) or "/", parts[depth]
        if not within_any(directory, roots):
            break
        if made not in _GIT_SHAPE or os.path.lexists(os.path.join(directory, made)):
            continue

        def present(name: str, directory: str = directory, made: str = made) -> bool:
            return name == made or os.path.lexists(os.path.join(directory, name))

        runnable = any(present(name) for name in ("config", "config.worktree", "hooks"))
        repository = present("objects") and present("refs") and (present("HEAD") or runnable)
        would = repository or (present("HEAD") and present("commondir"))
        if would and not is_git_dir(directory):
            return f"it would make {directory} a git dir (git takes one with HEAD, objects and refs for a repository)"
    return None


# -- core.hooksPath: directories of the project git runs programs from -----------------------------------------
#
# Threat: a repository (or the user's global config) names a hooks directory in the work tree (.githooks/,
# scripts/git-hooks/); a command that writes a file there has it run by the user's next commit, outside the box.
# The configs are the user's own (a command cannot add core.hooksPath: git configs are judged), read by git's own
# parser, includes not followed (a hooksPath set through an include is not seen: docs/security.md says so).

_HOOKS_CACHE: dict[tuple[str, int, int, int, int], tuple[str, ...]] = {}
_HOOKS_LOCK = threading.Lock()


def _hooks_rule(real: str, dirs: Iterable[str]) -> str | None:
    for directory in dirs:
        if within(real, directory) and real != directory:
            return f"a git hook (core.hooksPath {directory})"
    return None


def _config_hooks_paths(path: str, *, follow: bool) -> tuple[str, ...]:
    """The core.hooksPath values of the git config at ``path`` (none when it is missing, unreadable or not a
    regular file; never opened when it is not one), kept while the file keeps its identity."""
    try:
        st = os.stat(path, follow_symlinks=follow)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_GIT_CONFIG:
            return ()
        key = (path, st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
        with _HOOKS_LOCK:
            found = _HOOKS_CACHE.get(key)
        if found is not None:
            return found
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW))
        try:
            now = os.fstat(fd)
            if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                return ()
            data = os.pread(fd, _MAX_GIT_CONFIG + 1, 0)
        finally:
            os.close(fd)
    except OSError:
        return ()
    entries = git_config_entries(data) or []
    found = tuple(value for name, value in entries if name.lower() == "core.hookspath" and value)
    with _HOOKS_LOCK:
        if len(_HOOKS_CACHE) > 256:
            _HOOKS_CACHE.clear()
        _HOOKS_CACHE[key] = found
    return found


def _global_configs(home: str | None) -> list[str]:
    xdg = os.environ.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else "")
    paths = ["/etc/gitconfig"]  # the system's
    if xdg:
        paths.append(os.path.join(xdg, "git", "config"))
    if home:
        paths.append(os.path.join(home, ".gitconfig"))
    return paths


def _expand(value: str, base: str, home: str | None) -> str:
    if home and (value == "~" or value.startswith("~/")):
        value = home + value[1:]
    return os.path.realpath(os.path.join(base, value))  # as the paths it is compared with (no file opened)


def _global_hooks_dirs(home: str | None) -> list[str]:
    """The absolute hooks directories the user's global and system configs name (every repository's)."""
    values = [v for path in _global_configs(home) for v in _config_hooks_paths(path, follow=True)]
    return [_expand(v, "/", home) for v in values if v.startswith(("/", "~"))]


def _repo_hooks_dirs(work_tree: str, home: str | None) -> list[str]:
    """The hooks directories of the repository whose work tree is ``work_tree``: its own config's, and the
    global ones relative to it (git takes a relative core.hooksPath from the top of the work tree)."""
    dotgit = os.path.join(work_tree, ".git")
    git_dir = dotgit
    with contextlib.suppress(OSError, ValueError):
        if not stat.S_ISDIR(os.lstat(dotgit).st_mode):
            git_dir = _pointer(dotgit, gitfile=True)
    configs = [(os.path.join(git_dir, "config"), False)]
    with contextlib.suppress(OSError, ValueError):
        if os.path.lexists(os.path.join(git_dir, "commondir")):
            configs.append((os.path.join(_pointer(os.path.join(git_dir, "commondir"), gitfile=False), "config"), False))
    configs += [(path, True) for path in _global_configs(home)]
    return [_expand(v, work_tree, home) for path, follow in configs for v in _config_hooks_paths(path, follow=follow)]


def _git_dirs(base: str, gitfiles: list[str] | None = None, bad: list[str] | None = None) -> Iterator[str]:
    """Git dirs at or below ``base`` (``.git`` files followed), to GIT_SEARCH_DEPTH levels. An unreadable
    ``.git`` file raises PROTECTION_UNAVAILABLE, or goes to ``bad`` when one is given."""
    budget = GIT_SEARCH_BUDGET
    level = [base]
    for depth in range(GIT_SEARCH_DEPTH + 1):
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
                if entry.name == ".git" and entry.is_file(follow_symlinks=False):
                    try:
                        target = _pointer(entry.path, gitfile=True)
                    except (OSError, ValueError) as exc:
                        if bad is None:
                            raise _unavailable(entry.path, f"unreadable .git file ({exc})") from None
                        bad.append(entry.path)
                        continue
                    if gitfiles is not None:
                        gitfiles.append(entry.path)
                    if is_git_dir(target):
                        yield target
                elif entry.is_dir(follow_symlinks=False) and depth < GIT_SEARCH_DEPTH and budget > 0:
                    budget -= 1
                    below.append(entry.path)
        level = below


def _git_family(git_dir: str) -> Iterator[str]:
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
                dirs.append(_pointer(commondir, gitfile=False))
            except (OSError, ValueError) as exc:
                raise _unavailable(commondir, f"unreadable ({exc})") from None
        for nest in ("modules", "worktrees"):
            with contextlib.suppress(OSError):
                for entry in os.scandir(os.path.join(current, nest)):
                    if entry.is_dir(follow_symlinks=False):
                        dirs.append(entry.path)


def git_config_entries(data: bytes) -> list[tuple[str, str]] | None:
    """The (key, value) pairs git itself reads from config bytes: ``git config --list -z`` over a private copy,
    includes not followed, nothing else run. None when git cannot read them (then nothing may rely on them).

    Threat: a config whose text reads one way to a hand-written parser and another way to git (a backslash at
    the end of a comment, a form feed taken for a line break) — so git's own parser decides."""
    git = shutil.which("git")
    if git is None or len(data) > _MAX_GIT_CONFIG:
        return None
    with tempfile.TemporaryDirectory(prefix="mcp-guard-gitconfig-") as private:
        path = os.path.join(private, "config")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        env = {"PATH": os.defpath, "HOME": private, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
        try:
            done = subprocess.run(
                [git, "config", "--no-includes", "--file", path, "--list", "-z"],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_GIT_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
    if done.returncode != 0:
        return None
    entries: list[tuple[str, str]] = []
    for item in done.stdout.split(b"\0"):
        if item:
            key, _, value = item.decode("utf-8", "surrogateescape").partition("\n")
            entries.append((key, value))
    return entries


def git_key_is_safe(key: str) -> bool:
    """Whether a config key (as git lists it: section[.subsection].name) cannot make git run a program."""
    section, _, rest = key.partition(".")
    name = rest.rsplit(".", 1)[-1].lower()
    has_sub = "." in rest
    plain = f"{section.lower()}.{name}" if not has_sub else f"{section.lower()}.*.{name}"
    return plain in _SAFE_GIT_KEYS or f"{section.lower()}.*" in _SAFE_GIT_KEYS


def unsafe_git_entries(data: bytes | None) -> list[str] | None:
    """The entries of a git config that could make git run programs, as ``key=value`` (sorted); [] for none or no
    file; None when git cannot read it."""
    if data is None:
        return []
    entries = git_config_entries(data)
    if entries is None:
        return None
    return sorted(f"{key}={value}" for key, value in entries if not git_key_is_safe(key))


def safe_git_config(data: bytes) -> bytes | None:
    """A config with only the keys on the safe list, written afresh from what git reads (never an edit of the
    given text); None when git cannot read the given config or would not read the result back the same."""
    entries = git_config_entries(data)
    if entries is None:
        return None
    kept = [(key, value) for key, value in entries if git_key_is_safe(key)]
    lines: list[str] = []
    current: tuple[str, str | None] | None = None
    for key, value in kept:
        section, _, rest = key.partition(".")
        sub, _, name = rest.rpartition(".")
        where = (section, sub or None)
        if where != current:
            current = where
            lines.append(f"[{section}]" if not sub else f'[{section} "{_quoted(sub)}"]')
        lines.append(f'\t{name} = "{_quoted(value)}"')
    text = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape") if lines else b""
    return text if git_config_entries(text) == kept else None


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
