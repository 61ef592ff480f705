"""One protected list and one hidden list, enforced by every tool.

*Protected* paths are what makes git, a shell or an editor run programs later, as the user and outside any
sandbox (git hooks and config, shell start-up files, editor tasks, MCP host configs, the directories on the user's
PATH), plus the guards' own policy files, audit log and history. ``file_write`` refuses them
(:meth:`Protection.write_rule`); so does the judgement of what a shell_exec command changed on its copy
(``changes.effects``), by the same rule. Only where commands write the real tree directly (no copy can be made)
does the box mount each one that exists read-only (:meth:`Protection.survey`).

*Hidden* paths are credentials: ``file_read`` refuses them (:meth:`Protection.hidden_rule`) and the box
masks every one that exists (an empty, read-only file or directory).

Git's own files are protected wherever its git dirs lie, known the way git knows itself (``git_dirs``: what makes
a git dir and what in one git runs; ``git_config``: what a config says). This module owns the lists, the box's
search for git dirs below its roots, and the survey. A layout that cannot be read (an unreadable ``.git`` file, a
protected path that is a symlink, which a bind mount would follow) fails closed with ``PROTECTION_UNAVAILABLE``.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import posixpath
import re
import stat
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_server_guard import registry
from mcp_server_guard.audit import state_dirs
from mcp_server_guard.dirwatch import Consulted, DirWatch
from mcp_server_guard.dirwatch import covers as _covers
from mcp_server_guard.dirwatch import mtime_ns as _mtime_ns
from mcp_server_guard.dirwatch import resolve as _resolve
from mcp_server_guard.errors import protection_unavailable
from mcp_server_guard.git_config import safe_git_config, unsafe_git_entries
from mcp_server_guard.git_search import GIT_ENTRIES, NESTED_SEARCH_DEPTH, is_git_dir, pointer_text
from mcp_server_guard.git_search import git_dirs_below as _git_dirs
from mcp_server_guard.git_search import git_family as _git_family
from mcp_server_guard.globs import SuffixMatcher, glob_regex, hidden_named
from mcp_server_guard.paths import (
    code_dirs,
    parent_set,
    path_directories,
    users_program_dir,
    within,
    within_any,
    within_set,
)
from mcp_server_guard.patterns import deferred
from mcp_server_guard.policy import Policy
from mcp_server_guard.rc_files import sourced_by_rc as _sourced_by_rc

if TYPE_CHECKING:
    from mcp_server_guard.git_dirs import GitLookups

# is_git_dir, pointer_text (git_search), safe_git_config, unsafe_git_entries (git_config): importable. The git rule
# (``git_dirs``, and with it the hook reader) loads with the first path it judges: a start never needs it (issue 44).
__all__ = [
    "OWN_AREA",
    "Lookups",
    "Protection",
    "Survey",
    "is_git_dir",
    "own_areas",
    "pointer_text",
    "protection_for",
    "safe_git_config",
    "unsafe_git_entries",
]

log = logging.getLogger("mcp_server_guard")

# A root's own area for shell_exec's copies, when the state directory lies on another file system.
OWN_AREA = ".mcp-guard"
_GLOB_CHARS = frozenset("*?[")
# What the servers and the box's supervisor run from, and the system itself: a hidden entry that holds one
# of these is ignored (a path below them, such as /etc/shadow, can still be hidden).
_RUNTIME = (
    *{sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable)), str(Path(__file__).parents[1])},
    *("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc", "/dev", "/tmp"),  # noqa: S108 - never hidden
)


_MAX_HIDDEN_IDS = 65536  # identities of hidden entries (and the files in them) remembered at most
_HIDDEN_ID_DEPTH = 4
_RECENT_NS = 2_000_000_000  # a directory changed this recently when listed is listed again when asked


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
        self._regex = SuffixMatcher(self.patterns)
        self._files = {os.path.realpath(f) for f in files}
        self._dirs = tuple(os.path.realpath(d) for d in dirs)
        self._dir_set = parent_set(self._dirs)
        self._inodes: set[tuple[int, int]] = set()
        for f in self._files:
            with contextlib.suppress(OSError):
                st = os.stat(f)
                self._inodes.add((st.st_dev, st.st_ino))
        self.home = os.path.realpath(home) if home else None
        xdg = ((os.environ.get(var, ""), usual) for var, usual in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME",
               ".local/share")))  # fmt: skip
        self._xdg = [(os.path.realpath(d), f"{self.home}/{u}") for d, u in xdg if d.startswith("/") and self.home]
        self._hidden = tuple(hidden)
        # Expanded once (HOME is fixed for the server's life): each entry's absolute form, and whether it is a glob.
        expanded = (self.home + e[1:] if self.home and (e == "~" or e.startswith("~/")) else e for e in self._hidden)
        self._hidden_abs = tuple((e, bool(_GLOB_CHARS & set(e))) for e in expanded if e.startswith("/"))
        self._named: dict[tuple[str, ...], re.Pattern[str]] = {}  # kept paths -> the hidden entries by name
        self._kept = (*([self.home] if self.home else []), *_RUNTIME)
        self._hidden_lock = threading.Lock()
        self._hidden_cache: tuple[str, ...] | None = None
        # Every hidden entry seen, by identity (device, inode): renamed or linked elsewhere, it stays hidden.
        self._hidden_ids: dict[tuple[int, int], str] = {}
        self._walked: dict[str, dict[str, int]] = {}  # hidden entry -> the directories listed in it, by mtime
        self._hidden_watch = DirWatch()
        # Literal patterns name one path below a root ("**" at the end: the whole directory); the box can
        # mount those. Patterns with wildcards elsewhere are file_write's alone.
        tops = (p.strip("/").removesuffix("/**") for p in self.patterns)
        self._literal = tuple(top for top in tops if not _GLOB_CHARS & set(top))
        self._on_path = parent_set(path_directories(self.home))
        self._aliases: dict[str, str] = {}  # where a protected name that is a link leads -> that name
        self._anchored: set[str] = set()
        self._links_to([self.home] if self.home else [])
        # Threat: what the user's shell rc files source (``~/.fzf.bash``, ``$NVM_DIR/nvm.sh``, ``~/.aliases``): every
        # interactive shell runs it, outside any box. Judged as the rc file that sources it (red team 42q H).
        for rc, sourced in _sourced_by_rc(self.home) if self.home else []:
            self._aliases.setdefault(sourced, rc)

    def _links_to(self, anchors: Iterable[str]) -> None:
        """Threat: a protected name the user made a link (dotfiles: ``~/.bashrc -> dotfiles/bashrc``, ``~/.config ->
        dotfiles/config``, ``.vscode -> shared/vscode``): what it leads to is written as that name would be. Looked
        up once per directory (HOME, each root), for the literal patterns and the directories on their way."""
        for anchor in anchors:
            if anchor in self._anchored or not anchor.startswith("/"):
                continue
            self._anchored.add(anchor)
            for literal in self._literal:
                parts = literal.split("/")
                for depth in range(1, len(parts) + 1):
                    named = os.path.join(anchor, *parts[:depth])
                    with contextlib.suppress(OSError):
                        if stat.S_ISLNK(os.lstat(named).st_mode):
                            self._aliases.setdefault(os.path.realpath(named), named)

    # -- file_write and file_read --------------------------------------------------------------------

    def listed(self, candidates: Iterable[str]) -> str | None:
        """The protected pattern one of ``candidates`` (paths of one target) falls under, or None: the list alone,
        no git dir, hidden path or own file looked up (what ``write_rule`` also asks)."""
        for given in candidates:
            # Threat: $XDG_CONFIG_HOME (DATA_HOME) elsewhere than ~/.config (~/.local/share): judged as there too.
            named = [f"{name}{given[len(target) :]}" for target, name in (*self._aliases.items(), *self._xdg)
                     if given == target or given.startswith(target + "/")]  # fmt: skip
            for path in (given, *named):
                if path and self._regex.search(path):
                    return next(p for p in self.patterns if re.search(glob_regex(p), path, re.IGNORECASE))
        return None

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
        self._links_to(roots)
        real = ""
        hidden = lookups.hidden if lookups is not None else None  # once for all the candidates
        # Threat: a hidden path not made yet (``~/.kube/config``: every kubectl runs the program its ``exec``
        # names): refused by its name, unless the entry holds a root or HOME, as ``hidden_paths`` keeps them. Once
        # per call, kept for the last roots asked about (a local reference: another thread may replace it).
        keep = (*roots, *self._kept)
        named = self._named.get(keep)
        if named is None:
            named = hidden_named((e for e, _ in self._hidden_abs), keep)
            self._named = {keep: named}
        for path in candidates:
            if not path:
                continue
            real = path
            if (pattern := self.listed([path])) is not None:
                return pattern
            if path in self._files:
                return "the server's own policy or audit file"
            # Threat: a program put in a directory on the user's PATH (``~/go/bin``) runs as the user, outside any
            # box, whenever its name is typed: each one in an allowed root is protected.
            if users_program_dir(path, self._on_path, roots, self.home):
                return "a directory on the user's PATH"
            if within_set(path, self._dir_set):
                return "the history store or the servers' own code"
            if hidden is None:
                # Threat (red team 95 F1): another server's registered state directory that is gone right now (its
                # /tmp emptied at boot) made by a command, a journal key and journals of its choosing in it, which
                # that server's next start would carry out: refused by name, there or not.
                hidden = parent_set((*self.hidden_paths(roots), *_holding_none(registry.state_paths(), keep)))
                if lookups is not None:
                    lookups.hidden = hidden
            if within_set(path, hidden):
                return "a hidden path"
            if path.startswith("/") and named.match(path):
                return "a hidden path"
            if (why := home_config(path, self.home, self._xdg, roots)) is not None:
                return why
        if existing is not None and (existing.st_dev, existing.st_ino) in self._inodes:
            return "the server's own policy or audit file (hard link)"
        if (own := _own_area(real, roots) if real.startswith("/") else None) is not None:
            return f"the copies of shell_exec's commands ({own})"
        if real.startswith("/"):
            from mcp_server_guard.git_dirs import git_rule  # noqa: PLC0415 - with the first path judged (issue 44)

            git = (lookups or Lookups()).git
            if git.nested is None:
                git.nested = self._repositories_within(roots, git)
            return git_rule(real, self.home, git)
        return None

    def _repositories_within(self, roots: tuple[str, ...], git: GitLookups) -> tuple[list[str], list[str]]:
        """The hooks directories and included files of every repository the box's search finds within ``roots``
        (``_git_dirs``: to NESTED_SEARCH_DEPTH levels, GIT_SEARCH_BUDGET directories), for the git rule."""
        from mcp_server_guard.git_dirs import repos_files  # noqa: PLC0415 - (see write_rule)

        trees: set[str] = set()
        bare: set[str] = set()
        for base in roots:
            gitfiles: list[str] = []
            linked: list[str] = []
            for git_dir in _git_dirs(base, gitfiles, bad=[], depth_limit=NESTED_SEARCH_DEPTH, linked=linked):
                (trees.add(posixpath.dirname(git_dir)) if posixpath.basename(git_dir) == ".git" else bare.add(git_dir))
            trees.update(posixpath.dirname(f) for f in (*gitfiles, *linked))
        return repos_files(sorted(trees), sorted(bare), self.home, git)

    def hidden_paths(self, roots: Iterable[str] = ()) -> list[str]:
        """The hidden list with ``~`` and globs expanded: existing paths only, never one that holds the
        server's HOME or an allowed root (allowing a directory is the user's explicit choice)."""
        keep = (*roots, *self._kept)
        # Threat: another server of the user keeping its state (copies, history, audit log) inside this server's
        # roots, where these commands could read or forge it: every registered state directory is hidden too.
        own = self._hidden_now()
        others = [p for p in registry.state_paths() if p not in own and os.path.lexists(p)]
        return _holding_none((*own, *others), keep)

    def look_ahead(self, roots: Iterable[str] = ()) -> None:
        """Look the hidden entries up now, in a thread of its own, while the server goes on starting: the first
        call finds the answer kept (``_hidden_now``) instead of waiting for it — tens of milliseconds where a
        watched directory holds many names the kernel keeps in its cache (inotify marks each of them: ``/tmp``)."""

        def look() -> None:
            try:
                self.hidden_paths(roots)
            except Exception:  # the call looks again, and says what fails
                log.debug("looking the hidden paths up ahead failed", exc_info=True)

        threading.Thread(target=look, name="mcp-guard-hidden-paths", daemon=True).start()

    def _hidden_now(self) -> tuple[str, ...]:
        """The real paths of the hidden entries that exist, as the file system is now.

        Looking them up costs ~30 lstat calls; the answer is kept while the kernel reports no change (inotify)
        to any entry the lookup consulted (each directory passed through and the name looked up in it, symlinks
        followed included; every entry of a directory a glob lists). A change between a lookup and its watches is
        caught by looking up again once the watches are in place. Other entries of those directories (``/tmp``,
        ``$HOME`` change all the time) do not matter to the answer and do not make it be looked up again.
        """
        with self._hidden_lock:
            if self._hidden_cache is not None and self._hidden_watch.unchanged():
                return self._hidden_cache
            self._hidden_cache = None
            consulted: Consulted = {}
            found, watchable = self._look_up_hidden(consulted)
            for _ in range(3):
                if not watchable or not self._hidden_watch.arm(consulted):
                    self._hidden_watch.close()
                    return found  # not watchable (a glob below the last component, no inotify): no cache
                again: Consulted = {}
                confirmed, watchable = self._look_up_hidden(again)
                if confirmed == found and watchable and _covers(consulted, again):
                    self._hidden_cache = found
                    return found
                found, consulted = confirmed, again
            return found

    def _look_up_hidden(self, consulted: Consulted) -> tuple[tuple[str, ...], bool]:
        """The hidden entries that exist, and whether watching ``consulted`` (filled in) tells when that changes:
        not when a glob has a wildcard above its last component (``/home/*/.ssh``: the directories it lists
        change with the matches)."""
        found: set[str] = set()
        watchable = True
        for expanded, is_glob in self._hidden_abs:
            if is_glob:
                parent = posixpath.dirname(expanded)
                if _GLOB_CHARS & set(parent):
                    watchable = False
                else:
                    consulted[_resolve(parent, consulted)[0]] = None  # the directory the glob lists: any entry
                paths = glob.glob(expanded)
            else:
                paths = [expanded]
            for path in paths:
                real, exists = _resolve(path, consulted)
                if exists:
                    found.add(real)
        for real in found:
            if not any(within(kept, real) for kept in self._kept):  # never hidden (HOME's parent): nothing to know
                self._remember_identities(real)
        return tuple(sorted(found)), watchable

    def _remember_identities(self, real: str) -> None:
        """The identity of a hidden entry, and of the files in it (a hard link to one, ~/.ssh/id_rsa as key.txt,
        is the same file): a few levels down, within a bound; links never followed. Each directory listed is kept
        with its modification time (``_refresh_identities``)."""
        listed: dict[str, int] = {}
        self._walked[real] = listed
        started_ns = time.time_ns()
        level = [real]
        for depth in range(_HIDDEN_ID_DEPTH):
            below: list[str] = []
            for path in level:
                with contextlib.suppress(OSError):
                    st = os.lstat(path)
                    if len(self._hidden_ids) >= _MAX_HIDDEN_IDS:
                        return
                    self._hidden_ids.setdefault((st.st_dev, st.st_ino), real)
                    if stat.S_ISDIR(st.st_mode) and depth < _HIDDEN_ID_DEPTH - 1:
                        # A directory changed just before it was listed may change again within the same clock
                        # tick, its time unchanged: such a one is listed again whenever asked.
                        recent = st.st_mtime_ns >= started_ns - _RECENT_NS
                        listed[path] = -1 if recent else st.st_mtime_ns
                        with os.scandir(path) as entries:
                            below += [e.path for e in entries if not e.is_symlink()]
            level = below
            if not level:
                return

    def _refresh_identities(self, entries: Iterable[str]) -> None:
        """Walk again each hidden entry in which a directory listed last time has changed since (a file made,
        renamed or removed there), or that was never walked."""
        for entry in entries:
            listed = self._walked.get(entry)
            if listed is None or any(_mtime_ns(path) != seen for path, seen in listed.items()):
                self._remember_identities(entry)

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
        seen = self._seen_as_hidden(real, roots)
        if seen is not None:
            return seen
        # Threat: a hard link of a credential written since the hidden entries were last walked (a new key in
        # ~/.ssh, credentials a tool rewrote by renaming a new file over them): nothing about the entry's own
        # names changed, so the list was kept. A file with more than one link is looked for again, now.
        with contextlib.suppress(OSError):
            st = os.lstat(real)
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                with self._hidden_lock:  # the walks and the lookup share what they remember
                    self._refresh_identities(hidden)
                return self._seen_as_hidden(real, roots)
        return None

    def _seen_as_hidden(self, real: str, roots: tuple[str, ...]) -> str | None:
        """The hidden entry ``real`` or a directory above it is, by identity (device and inode), or None."""
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
                for name in GIT_ENTRIES:
                    if within_any(current, survey.roots):
                        _classify(os.path.join(current, name), survey)
        survey.read_only.extend(gitfiles)
        for own in (*self._files, *self._dirs):
            if within_any(own, survey.roots) and os.path.exists(own):
                survey.read_only.append(own)
        survey.masked = self.hidden_paths(survey.roots) + own_areas(survey.roots)
        survey.read_only = sorted(set(survey.read_only))
        return survey


# A dotfile at the top of HOME whose name says it configures something (``.inputrc``, ``.lldbinit``, ``.tigrc``,
# ``.wgetrc``, ``.Xresources``), not a history or a cache.
_HOME_CONFIG_NAME = deferred(
    r"^\.[^/]*(rc|init|profile|conf|config|settings|\.(lua|py|sh|el|vim|toml|ya?ml|json|ini))$|^\.x|^\.X", re.I
)
# What tools write under ~/.config at every run — data, not settings: update notifiers' state, Go's telemetry
# counters, wrangler's logs and metrics, Next.js's telemetry id (red team 76 F10).
_CONFIG_DATA = ("configstore/", "go/telemetry/", ".wrangler/", "nextjs-nodejs/")


def home_config(path: str, home: str | None, xdg: Sequence[tuple[str, str]], roots: Sequence[str]) -> str | None:
    """Why ``path`` is the user's own configuration in an allowed HOME (None: it is not). Threat (red team 74 F6):
    configuration a session or a tool reads and that makes it run a program — readline's key macros in
    ``.inputrc``, ``context.exec`` of PipeWire, a bar's ``exec`` module, a notifier's script, an editor's or a
    debugger's init file — named one by one in the protected list, where any could be missed. As a class: every file
    under ``~/.config`` (``$XDG_CONFIG_HOME``) and every configuration dotfile at the top of HOME, where HOME is
    allowed — not in a project served as a root of its own inside it (a dotfiles repository, ``~/.config/mytool``)."""
    if not home or not path.startswith("/"):
        return None
    for real, usual in xdg:  # ($XDG_CONFIG_HOME elsewhere: judged as ~/.config)
        if usual == f"{home}/.config" and within(path, real):
            path = usual + path[len(real.rstrip("/")) :]
    if not path.startswith(home + "/") or any(within(path, r) for r in roots if r != home and not within(home, r)):
        return None
    first, _, rest = path[len(home) + 1 :].partition("/")
    if first == ".config" and rest and not (rest + "/").startswith(_CONFIG_DATA):
        return "the user's configuration (~/.config): what a session or a tool reads there can run programs"
    if not rest and _HOME_CONFIG_NAME.match(first):
        return f"the user's configuration (~/{first}): a tool reads it, and it can make that tool run programs"
    return None


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
            raise protection_unavailable(area, exc.strerror or "unreadable") from None
        if not stat.S_ISDIR(st.st_mode):
            raise protection_unavailable(area, "it is not a directory (shell_exec keeps the copies of commands there)")
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
    state = [str(d) for d in state_dirs()] + [str(registry.directory())]

    return Protection(
        policy.paths.protected,
        [*policy.paths.hidden, *state],
        files=[Path(p) for p in policy.source] + ([audit_path] if audit_path else []) + list(others),
        dirs=[*([history_dir] if history_dir else []), *map(Path, code_dirs())],
        home=os.environ.get("HOME"),
    )


def _classify(path: str, survey: Survey) -> None:
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return  # nothing there to mount read-only
    except OSError as exc:
        raise protection_unavailable(path, exc.strerror or "unreadable") from None
    if stat.S_ISLNK(st.st_mode):
        # A bind mount follows the link, so the link itself would stay replaceable.
        raise protection_unavailable(path, "it is a symlink")
    survey.read_only.append(path)


def _holding_none(paths: Iterable[str], keep: Iterable[str]) -> list[str]:
    """``paths`` but those that hold one of ``keep`` (an allowed root or HOME: allowing a directory is the user's
    explicit choice)."""
    kept = tuple(keep)
    return [path for path in paths if not any(within(k, path) for k in kept)]


def _git_lookups() -> GitLookups:
    from mcp_server_guard.git_dirs import GitLookups  # noqa: PLC0415 - (see Protection.write_rule)

    return GitLookups()


@dataclass
class Lookups:
    """What the judgement of many paths looks up once (the tree does not change while it is judged): the hidden
    list, and what the git rule looks up (``git_dirs.GitLookups``)."""

    hidden: frozenset[str] | None = None  # (paths.parent_set)
    git: GitLookups = field(default_factory=_git_lookups)
