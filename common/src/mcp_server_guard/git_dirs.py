"""Git dirs, known the way git knows itself, and the rule file_write and the judge of effects take from them.

A directory with a ``HEAD`` (a file, or a symlink) and ``objects/`` and ``refs/`` (or a ``commondir`` file) is a
git dir wherever it lies (:func:`is_git_dir`); a ``.git`` *file* leads to its ``gitdir:`` and a ``commondir`` file
to the common dir, each read as git reads it (:func:`pointer_text`); in a git dir, ``config``,
``config.worktree``, ``hooks/``, ``commondir``, ``gitdir`` and the same entries of ``modules/*`` and
``worktrees/*`` are what git runs or follows (:func:`git_runnable`). Objects, refs, the index and the logs stay
writable: ordinary git work goes on. A repository's ``core.hooksPath`` (or the user's global one) names more
directories git runs programs from. :func:`git_rule` puts these together for one path; :func:`makes_git_dir`
says whether a write would make a new git dir.

Not here: the protected and hidden lists and the box's survey (``protected``), nor the reading of a config's
keys (``git_config``: git's own parser decides, never a look-alike).
"""

from __future__ import annotations

import contextlib
import fnmatch
import itertools
import os
import posixpath
import stat
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from mcp_server_guard.errors import protection_unavailable
from mcp_server_guard.git_config import MAX_GIT_CONFIG, git_config_entries
from mcp_server_guard.git_search import (
    GIT_CONFIGS,
    GIT_ENTRIES,
    POINTER_LIMIT,
    git_family,
    is_git_dir,
    pointer_text,
    read_pointer,
)
from mcp_server_guard.hook_runs import ENV_CONFIGS, PART_READ, new_budget, run_by_hooks
from mcp_server_guard.hook_runs import expand_path as _expand
from mcp_server_guard.hook_words import program_words
from mcp_server_guard.paths import within, within_any
from mcp_server_guard.patterns import deferred

__all__ = [
    "GIT_ENTRIES",
    "POINTER_LIMIT",
    "GitLookups",
    "git_rule",
    "git_runnable",
    "is_git_dir",
    "makes_git_dir",
    "pointer_text",
    "read_pointer",
]

# Entries of a git dir that git runs, or follows to another git dir.
# (A rebase's or a cherry-pick's state lists commands git runs on --continue: file_write never writes it; a
# command's is judged by its content, see changes.git_verdicts.)
_GIT_RUNNABLE = deferred(
    r"^(?:(?:modules/.+|worktrees/[^/]+)/)?"
    r"(?:config|config\.worktree|commondir|gitdir|hooks(?:/.*)?|(?:rebase-merge|rebase-apply|sequencer)(?:/.*)?)$"
)


def git_runnable(rel: str) -> bool:
    """Whether ``rel`` (a path inside a git dir) is something git runs or follows."""
    return bool(_GIT_RUNNABLE.match(rel))


@dataclass
class GitLookups:
    """What the git rule looks up once when many paths are judged (the tree does not change while it is judged):
    the global hooks directories, each directory's git shape and its repository's hooks directories."""

    global_hooks: list[str] | None = None
    global_included: list[str] = field(default_factory=list)  # files the user's global configs include
    global_tops: list[str] = field(default_factory=list)  # the user's global configs (as named, and where they lead)
    git_dirs: dict[str, bool] = field(default_factory=dict)
    hooks: dict[str, list[str]] = field(default_factory=dict)  # work tree (or not one: []) -> its hooks dirs
    included: dict[str, list[str]] = field(default_factory=dict)  # work tree -> the files its configs include
    # The hooks directories and included files of every repository found within the roots (``repos_files``):
    # None until looked up.
    nested: tuple[list[str], list[str]] | None = None
    # The path being judged becomes a symlink (the judge sets it per change): on the way to an included file, that
    # is refused whatever stands there now.
    becoming_link: bool = False
    relative_hooks: list[str] | None = None  # global_relative_hooks, once looked up
    chains: dict[str, tuple[tuple[str, bool, list[str], list[str]], ...]] = field(default_factory=dict)  # _ancestors
    # Work tree -> its hooks directories and included files (``_repo_files``), read once a judgement: the search
    # within the roots and the walk up from a path both read the repository that holds the roots (red team 133 F2's
    # makefile took twice its reading).
    repo_files: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)
    env_budget: list[int] = field(default_factory=new_budget)  # what direnv/mise configs without a repository may read


def git_rule(real: str, home: str | None, lookups: GitLookups) -> str | None:
    """file_write and the judge of effects: whether ``real`` is a runnable entry of a git dir among its
    ancestors (inside the roots or above them), or lies in a directory git runs hooks from (``core.hooksPath``)."""
    if lookups.global_hooks is None:
        lookups.global_hooks, lookups.global_included = _global_files(home)
        tops = _global_configs(home)
        lookups.global_tops = sorted({*tops, *(os.path.realpath(path) for path in tops)})
    hooks = _hooks_rule(real, lookups.global_hooks)
    if hooks is not None:
        return hooks
    # Threat: the user's global git config where it really is ($XDG_CONFIG_HOME/git/config, $GIT_CONFIG_GLOBAL, or
    # a dotfiles file ~/.gitconfig links to) written with a core.hooksPath or fsmonitor every repository then runs.
    if real in lookups.global_tops:
        return "the user's global git config"
    if _on_the_way(real, lookups.global_tops, lookups.becoming_link):
        return "a link or directory on the way to the user's global git config"
    if real in lookups.global_included:
        return "a git config the user's global git config includes"
    if _on_the_way(real, lookups.global_included, lookups.becoming_link):
        return "a link or directory on the way to a git config the user's global git config includes"
    # Anything below a directory named .git is judged as git's own, whatever its shape now and wherever the roots
    # begin (an allowed directory inside .git/modules sees no git dir above it; git will).
    parts = real.split("/")
    if ".git" in parts[:-1]:
        at = len(parts) - 1 - parts[::-1].index(".git")
        rel = "/".join(parts[at + 1 :])
        if git_runnable(rel):
            return f"git's own '{rel}' (in {'/'.join(parts[: at + 1])})"
    # Every ancestor, inside the roots and above them: a repository that holds a root (``~/outer`` served as
    # ``~/outer/proj``) reads its hooksPath and its includes from the work tree all the same (threat: a root below
    # the repository's top, whose config includes ``proj/team.gitconfig``). Above the roots nothing is written.
    # Only the ancestors that are git dirs or name hooks directories or included files count: looked up once per
    # directory, and remembered with those of its parent (threat: paths 120 levels deep judged by the thousand).
    for directory, git_dir, repo_hooks, included in _ancestors(posixpath.dirname(real), home, lookups):
        if git_dir:
            rel = posixpath.relpath(real, directory)
            if git_runnable(rel):
                return f"git's own '{rel}' (git dir {directory})"
            if rel.split("/", 1)[0] not in ("modules", "worktrees"):
                break  # no runnable entry of this git dir; what a repository names (hooksPath, includes) is below
        hooks = _hooks_rule(real, repo_hooks)
        if hooks is not None:
            return hooks
        if real in included:
            return f"a git config the repository {directory} includes"
        if _on_the_way(real, included, lookups.becoming_link):
            return f"a link or directory on the way to a git config the repository {directory} includes"
    if lookups.nested is not None:
        # Threat: a repository beside or below the path whose config includes it (``repos/app`` including
        # ``../../../shared.gitconfig``) or names its directory as core.hooksPath: not among its ancestors.
        hooks = _hooks_rule(real, lookups.nested[0])
        if hooks is not None:
            return hooks
        if real in lookups.nested[1]:
            return "a git config a repository within the allowed directories includes"
        if _on_the_way(real, lookups.nested[1], lookups.becoming_link):
            return "a link or directory on the way to a git config a repository within the allowed directories includes"
    if posixpath.basename(real) == ".git":
        return ".git"  # a .git file points git at any directory
    return None


_Ancestor = tuple[str, bool, list[str], list[str]]  # directory, a git dir?, its hooks dirs, the files it includes


def _ancestors(directory: str, home: str | None, lookups: GitLookups) -> tuple[_Ancestor, ...]:
    """``directory`` and its ancestors, nearest first, that are git dirs or whose repository names hooks directories
    or included files (the others change nothing in ``git_rule``), remembered per directory."""
    chains = lookups.chains
    pending: list[tuple[str, _Ancestor | None]] = []
    found: tuple[_Ancestor, ...] = ()
    while True:
        known = chains.get(directory)
        if known is not None:
            found = known
            break
        git_dir = lookups.git_dirs.get(directory)
        if git_dir is None:
            git_dir = lookups.git_dirs[directory] = is_git_dir(directory)
        repo_hooks = lookups.hooks.get(directory)
        if repo_hooks is None:
            dotgit = posixpath.join(directory, ".git")
            repo_hooks, included = _repo_files_once(directory, home, lookups) if os.path.lexists(dotgit) else ([], [])
            if not repo_hooks and any(os.path.lexists(posixpath.join(directory, n)) for n in ENV_CONFIGS):
                # direnv's or mise's config with no repository there (or a monorepo's ``sub/.envrc``): what it runs
                # at every ``cd`` is protected all the same (red team 50 F5) — read with one budget for every such
                # directory of one judgement (red team 51 F4: one each made a judgement take minutes).
                repo_hooks = run_by_hooks([], directory, home, lookups.env_budget)
            lookups.hooks[directory], lookups.included[directory] = repo_hooks, included
        included = lookups.included.get(directory, [])
        pending.append((directory, (directory, git_dir, repo_hooks, included) if git_dir or repo_hooks or included
                        else None))  # fmt: skip
        parent = posixpath.dirname(directory)
        if parent == directory:
            break
        directory = parent
    for path, entry in reversed(pending):
        found = (entry, *found) if entry is not None else found
        chains[path] = found
    return found


def _on_the_way(real: str, included: Sequence[str], becoming_link: bool = False) -> bool:
    """Whether ``real`` lies on the way to an included file and is not a plain directory of the tree now (a link, or
    nothing yet: a command that puts a link there, or a directory with the file in it, makes git read what it
    chose), or becomes a link (``becoming_link``: a directory replaced by one). Threat: ``ln -s elsewhere shared``
    where a config includes ``shared/team.gitconfig``."""
    if not any(inc.startswith(real.rstrip("/") + "/") for inc in included):
        return False
    if becoming_link:
        return True
    try:
        return not stat.S_ISDIR(os.lstat(real).st_mode)
    except OSError:
        return True


def repos_files(
    work_trees: Iterable[str], git_dirs: Iterable[str], home: str | None, lookups: GitLookups | None = None
) -> tuple[list[str], list[str]]:
    """The hooks directories and included files of the repositories whose work trees are ``work_trees``, and of
    the git dirs ``git_dirs`` (bare ones, submodules'), as git would read them (each work tree's once a judgement:
    ``lookups``)."""
    hooks: list[str] = []
    included: list[str] = []
    for tree in work_trees:
        more_hooks, more_included = _repo_files_once(tree, home, lookups or GitLookups())
        hooks += more_hooks
        included += more_included
    for git_dir in git_dirs:
        files = _with_includes(os.path.join(git_dir, "config"), home, follow=True)
        # A relative hooksPath is taken from the work tree: core.worktree's where the config names one (a git dir
        # kept apart from its checkout), else the git dir itself (a bare repository).
        worktrees = [v for _file, entries in files for n, v in entries if n.lower() == "core.worktree" and v]
        base = os.path.normpath(os.path.join(git_dir, worktrees[-1])) if worktrees else git_dir
        hooks += [_expand(v, base, home) for _file, entries in files for v in _hooks_paths(entries)]
        hooks += [p for _file, entries in files for p in _programs(entries, base, home)]
        if worktrees:
            hooks += [_expand(v, git_dir, home) for _file, entries in files for v in _hooks_paths(entries)]
        included += [file for file, _entries in files[1:]]
    return hooks, included


_GIT_SHAPE = frozenset({"HEAD", "objects", "refs", "commondir"})


def makes_git_dir(real: str, roots: Sequence[str]) -> str | None:
    """file_write: whether writing ``real`` (creating it and any missing parent) would turn a directory into a
    git dir — a HEAD, objects and refs (or a commondir) — that is not one now; why, or None.

    Threat: building a bare repository file by file (HEAD, a config that runs programs, objects/, refs/): each
    write alone touches no git dir, the last one makes ``src/`` a repository git finds before the project's.
    (The judgement of a command's effects decides the same on the tree the command left:
    ``changes.git_verdicts.creates_git_dir``.)"""
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
# parser, with the files they include (include.path, includeIf): those are protected like the config itself.

_HOOKS_CACHE: dict[tuple[str, int, int, int, int], tuple[tuple[str, str], ...]] = {}
_HOOKS_LOCK = threading.Lock()


def _hooks_rule(real: str, dirs: Iterable[str]) -> str | None:
    """Whether ``real`` is a git hook: in a hooks directory, or (``=``, then the path) a file a hook links to."""
    for directory in dirs:
        if directory.startswith("="):
            if real == directory[1:]:
                return "a git hook (a hook of the repository is a link to it)"
        elif directory.startswith("@"):
            if real == directory[1:]:
                return "a program git runs (a git config names it by its path)"
        elif directory.startswith("%"):
            if real == directory[1:] or _compiled_copy(real, directory[1:]):
                return "a program a git hook runs (the hook names it by its path)"
        elif directory.startswith("^"):
            if _matches(real, directory[1:]):
                return "a program a git hook runs (the hook names it by a path built with a variable)"
        elif directory.startswith(PART_READ):
            if within(real, directory[1:]) and real != directory[1:]:
                return (
                    f"a file a git hook may run: what the hook runs in {directory[1:]}/ is not known file by "
                    f"file (it runs every file there, or is past what the judge reads), so all of it counts"
                )
        elif directory.startswith("+"):
            if within(real, directory[1:]) and real != directory[1:]:
                return f"git's template directory ({directory[1:]}): every repository made or cloned copies it"
        elif within(real, directory) and real != directory:
            return f"a git hook (core.hooksPath {directory})"
    return None


def _matches(real: str, pattern: str) -> bool:
    """Whether ``real`` matches ``pattern`` name by name (a ``*`` never spans a ``/``; a ``**`` name stands for any
    number of names: a program on a PATH entry the hook reader cannot name, ``hook_words.ANYWHERE``)."""
    return _names_match(real.split("/"), pattern.split("/"))


def _names_match(names: list[str], wanted: list[str]) -> bool:
    if "**" not in wanted:
        return len(names) == len(wanted) and all(fnmatch.fnmatchcase(n, w) for n, w in zip(names, wanted, strict=True))
    at = wanted.index("**")
    head, tail = wanted[:at], wanted[at + 1 :]
    return (
        len(names) >= at + len(tail)
        and _names_match(names[:at], head)
        and any(_names_match(names[start:], tail) for start in range(at, len(names) - len(tail) + 1))
    )


def _compiled_copy(real: str, source: str) -> bool:
    """Whether ``real`` is the compiled copy of the Python file ``source`` (``__pycache__/tasks.cpython-311.pyc``),
    which Python runs in its place while it matches (red team 8 A7)."""
    if not source.endswith(".py") or not real.endswith(".pyc"):
        return False
    directory, name = posixpath.split(source)
    cache = posixpath.join(directory, "__pycache__", name[:-3] + ".")
    return real.startswith(cache) or real == source + "c"


def _linked_hooks(git_dir: str) -> list[str]:
    """Threat: hooks installed as links (``ln -s ../../scripts/pre-commit .git/hooks/pre-commit``, ``.git/hooks ->
    ../githooks``): git runs what they lead to, so that is a hook too — the directory (a hooks directory), or each
    file (``=`` and its path, as ``_hooks_rule`` reads it)."""
    hooks = os.path.join(git_dir, "hooks")
    found: list[str] = []
    with contextlib.suppress(OSError):
        if os.path.islink(hooks):
            return [os.path.realpath(hooks)]
        with os.scandir(hooks) as entries:
            for entry in entries:
                if entry.is_symlink() and len(found) < 256:
                    found.append("=" + os.path.realpath(entry.path))
    return found


def _config_entries(path: str, *, follow: bool) -> tuple[tuple[str, str], ...]:
    """The entries of the git config at ``path`` as git reads them (none when it is missing, unreadable or not a
    regular file; never opened when it is not one), kept while the file keeps its identity."""
    try:
        st = os.stat(path, follow_symlinks=follow)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_GIT_CONFIG:
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
            data = os.pread(fd, MAX_GIT_CONFIG + 1, 0)
        finally:
            os.close(fd)
    except OSError:
        return ()
    found = tuple(git_config_entries(data) or [])
    with _HOOKS_LOCK:
        if len(_HOOKS_CACHE) > 4096:  # (a repository of many submodules: each config read once)
            _HOOKS_CACHE.clear()
        _HOOKS_CACHE[key] = found
    return found


_MAX_MEMBERS = 1024  # work trees and submodules of one repository whose configs are read (``_repo_files``)
_MAX_INCLUDES = 32  # config files followed through include.path / includeIf at most, from one config
_MAX_NAMED = 4096  # files named by includes past that bound, protected without being read


def _with_includes(path: str, home: str | None, *, follow: bool) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    """The config at ``path`` and every file it includes (``include.path``, ``includeIf.<condition>.path``, taken
    whatever the condition: it may hold later), recursively, each as (absolute path, its entries). A relative
    include is relative to the directory of the file that names it, as git takes it.

    Threat: a repository whose config includes a file of the work tree (``[include] path = ../team.gitconfig``):
    a command that appends ``core.fsmonitor`` or ``core.hooksPath`` there has the user's own git run it."""
    found: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    todo = [(path, follow)]
    seen: set[str] = set()
    while todo and len(found) < _MAX_INCLUDES:
        current, follow_it = todo.pop(0)
        if current in seen:
            continue
        seen.add(current)
        entries = _config_entries(current, follow=follow_it)
        found.append((current, entries))
        if current == path and follow_it and os.path.islink(path):
            # Threat: a config git reads through a link (``.git/config`` -> ``../repo.gitconfig``, a dotfiles
            # set-up): the file it names is that config; a command appending ``core.fsmonitor`` there has git run it.
            found.append((os.path.realpath(path), ()))
        for name, value in entries:
            lowered = name.lower()
            if value and (
                lowered == "include.path" or (lowered.startswith("includeif.") and lowered.endswith(".path"))
            ):
                named = _named(value, os.path.dirname(current), home)
                todo.append((named, True))
                real = os.path.realpath(named)
                if real != named:
                    found.append((real, ()))  # the file a link names is what git reads: protected too
    # Past the bound the files named are not read, but protected all the same (git reads every one of them).
    unread = dict.fromkeys(named for named, _follow in todo if named not in seen)
    return found + [(named, ()) for named in list(unread)[:_MAX_NAMED]]


def _hooks_paths(entries: Iterable[tuple[str, str]]) -> list[str]:
    return [value for name, value in entries if name.lower() == "core.hookspath" and value]


# The keys whose value is a command git runs (its first word a program): credential helpers, ssh, editors, pagers,
# signing, diff and merge drivers and tools, clean/smudge filters, shell aliases, proxies, remote helpers, trailers,
# mail and browser programs.
_PROGRAM_KEYS = deferred(
    r"credential(?:\..+)?\.helper|core\.(?:sshcommand|editor|pager|askpass|fsmonitor)|sequence\.editor|pager\..+"
    r"|gpg(?:\..+)?\.program|diff\.external|diff\..+\.(?:textconv|command)|merge\..+\.driver"
    r"|filter\..+\.(?:clean|smudge|process)|alias\..+|interactive\.difffilter"
    r"|(?:diff|merge)tool\..+\.(?:cmd|path)|core\.gitproxy|remote\..+\.(?:uploadpack|receivepack)"
    r"|trailer\..+\.(?:cmd|command)|gpg\.ssh\.defaultkeycommand|sendemail\.(?:sendmailcmd|smtpserver)"
    r"|web\.browser|browser\..+\.(?:cmd|path)"
    # (red team 106 F2: `git submodule update`, `git archive`, fetch and push, imap-send, send-email, instaweb, help)
    r"|submodule\..+\.update|tar\..+\.command|core\.alternaterefscommand|uploadpack\.packobjectshook"
    r"|imap\.tunnel|sendemail\.(?:tocmd|cccmd|headercmd)|instaweb\.(?:httpd|browser)|man\..+\.(?:cmd|path)"
)


def _programs(entries: Iterable[tuple[str, str]], base: str | None, home: str | None) -> list[str]:
    """The programs the configs' commands name by a path (``@`` and the path, as ``_hooks_rule`` reads it): taken
    from ``base`` when relative (the work tree's top, where git runs them; none for the user's global configs).

    Threat: ``credential.helper = ~/scripts/git-cred``, ``core.sshCommand = ~/bin/ssh-wrap``, a filter's
    ``smudge = ./tools/crypt``: rewritten by a command, git runs them outside the box on ordinary fetches, pushes
    and checkouts (red team 42q G)."""
    found: list[str] = []
    for name, value in entries:
        key = name.lower()
        if not _PROGRAM_KEYS.fullmatch(key) or (key.startswith("alias.") and not value.startswith("!")):
            continue
        for word in program_words(value.removeprefix("!")):
            if word.startswith(("/", "~")) or (base is not None and ("/" in word or "." in word.lstrip("."))):
                found.append("@" + _expand(word, base or "/", home))
    return found


def _global_configs(home: str | None) -> list[str]:
    """The system's and the user's git configs, as git finds them (``GIT_CONFIG_GLOBAL`` in place of the user's)."""
    paths = [os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"]
    if os.environ.get("GIT_CONFIG_GLOBAL"):
        return [*paths, os.path.abspath(os.path.expanduser(os.environ["GIT_CONFIG_GLOBAL"]))]
    xdg = os.environ.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else "")
    if xdg:
        paths.append(os.path.join(xdg, "git", "config"))
    if home:
        paths.append(os.path.join(home, ".gitconfig"))
    return paths


def _named(value: str, base: str, home: str | None) -> str:
    """An include as git names it: ``~`` expanded, relative to ``base``, no link resolved (git takes a relative
    include inside an included link relative to the link, and a link re-pointed is another file)."""
    if home and (value == "~" or value.startswith("~/")):
        value = home + value[1:]
    elif value.startswith("~"):
        value = os.path.expanduser(value)
    return os.path.normpath(os.path.join(base, value))


def _global_files(home: str | None) -> tuple[list[str], list[str]]:
    """The absolute hooks directories the user's global and system configs (and what they include) name, every
    repository's; and the files they include."""
    values: list[str] = []
    included: list[str] = []
    # Threat: git's template directory (``init.templateDir``, as ``pre-commit init-templatedir`` sets it up, or
    # GIT_TEMPLATE_DIR): every later ``git init``/``git clone`` copies its hooks and its config (a core.fsmonitor
    # there runs at the new repository's first ``git status``). Marked ``+`` for ``_hooks_rule``: all of it counts.
    templates = [os.environ["GIT_TEMPLATE_DIR"]] if os.environ.get("GIT_TEMPLATE_DIR") else []
    programs: list[str] = []
    for path in _global_configs(home):
        configs = _with_includes(path, home, follow=True)
        values += [v for _file, entries in configs for v in _hooks_paths(entries)]
        programs += [p for _file, entries in configs for p in _programs(entries, None, home)]
        templates += [v for _file, entries in configs for name, v in entries if name.lower() == "init.templatedir"]
        included += [file for file, _entries in configs[1:]]
    hooks = [_expand(v, "/", home) for v in values if v.startswith(("/", "~"))]
    return hooks + programs + ["+" + _expand(v, "/", home) for v in templates if v.startswith(("/", "~"))], included


def global_relative_hooks(home: str | None) -> list[str]:
    """The relative ``core.hooksPath`` values of the user's global and system configs (and what they include): git
    takes each from the top of every work tree, so they name a hooks directory in each repository (one a command
    makes too)."""
    values: list[str] = []
    for path in _global_configs(home):
        for _file, entries in _with_includes(path, home, follow=True):
            values += [v for v in _hooks_paths(entries) if not v.startswith(("/", "~"))]
    return [posixpath.normpath(v) for v in values]


def _family_configs(git_dir: str, work_tree: str) -> list[tuple[str, tuple[str, ...]]]:
    """The configs of a repository's other work trees and submodules, each with the work trees git takes its
    relative paths from. Threat: git reads them in those checkouts, which may lie outside the roots while a file they
    include lies inside (red teams 164 F1, 166: ``worktrees/*``, ``modules/a/b``), and a submodule's relative
    ``core.hooksPath`` names its own checkout's directory (``web/.githooks``: red team 167 F1) — taken from its
    ``core.worktree``, its ``gitdir`` file, its name under ``modules/`` and the top (fail-closed: each of them)."""
    if len(members := list(itertools.islice(git_family(git_dir), _MAX_MEMBERS + 2))) > _MAX_MEMBERS + 1:
        raise protection_unavailable(git_dir, f"more than {_MAX_MEMBERS} work trees and submodules to read")
    found: list[tuple[str, tuple[str, ...]]] = []
    for member in members[1:]:
        trees = [os.path.normpath(os.path.join(member, v)) for n, v in _config_entries(
            os.path.join(member, "config"), follow=True) if n.lower() == "core.worktree" and v]  # fmt: skip
        with contextlib.suppress(OSError, ValueError):
            trees.append(os.path.dirname(read_pointer(os.path.join(member, "gitdir"), gitfile=False)))
        if "/modules/" in member:
            trees.append(os.path.join(work_tree, member.rsplit("/modules/", 1)[1]))
        found += [(os.path.join(member, name), tuple(dict.fromkeys([*trees, work_tree]))) for name in GIT_CONFIGS]
    return found


def _repo_files_once(work_tree: str, home: str | None, lookups: GitLookups) -> tuple[list[str], list[str]]:
    """``_repo_files``, read once per judgement (``GitLookups.repo_files``); copies, for callers that add to them."""
    known = lookups.repo_files.get(work_tree)
    if known is None:
        known = lookups.repo_files[work_tree] = _repo_files(work_tree, home)
    return list(known[0]), list(known[1])


def _repo_files(work_tree: str, home: str | None) -> tuple[list[str], list[str]]:
    """The hooks directories of the repository whose work tree is ``work_tree`` — its own configs' (and what they
    include), and the global ones relative to it (git takes a relative core.hooksPath from the top of the work
    tree) — and the files its configs include."""
    dotgit = os.path.join(work_tree, ".git")
    git_dir = dotgit
    with contextlib.suppress(OSError, ValueError):
        mode = os.lstat(dotgit).st_mode
        if stat.S_ISLNK(mode) and os.path.isdir(dotgit):
            # Threat (red team 89 F1): a ``.git`` that is a link to a git dir elsewhere: git reads a relative include
            # from the real directory (the kernel follows ``.git/..``); joined to the link's own path it named a file
            # that is not there, and the one git reads (``team.gitconfig`` of the work tree) went unprotected.
            git_dir = os.path.realpath(dotgit)
        elif not stat.S_ISDIR(mode):
            git_dir = read_pointer(dotgit, gitfile=True)
    # Read as git reads them: through a link (whose target is then protected as an included file); each with the
    # work trees git takes its relative paths from.
    own_trees: tuple[str, ...] = (work_tree,)
    configs: list[tuple[str, tuple[str, ...]]] = [(os.path.join(git_dir, "config"), own_trees)]
    with contextlib.suppress(OSError, ValueError):
        if os.path.lexists(os.path.join(git_dir, "commondir")):
            common = read_pointer(os.path.join(git_dir, "commondir"), gitfile=False)
            configs.append((os.path.join(common, "config"), own_trees))
    configs.append((os.path.join(git_dir, "config.worktree"), own_trees))
    configs += _family_configs(git_dir, work_tree)
    own = len(configs)
    configs += [(path, own_trees) for path in _global_configs(home)]
    hooks: list[str] = []
    included: list[str] = []
    for index, (path, trees) in enumerate(configs):
        files = _with_includes(path, home, follow=True)
        for tree in trees:
            hooks += [_expand(v, tree, home) for _file, entries in files for v in _hooks_paths(entries)]
            hooks += [p for _file, entries in files for p in _programs(entries, tree if index < own else None, home)]
        if index < own:
            included += [file for file, _entries in files[1:]]
    plain = [h for h in hooks if not h.startswith(("=", "@", "+", "%", "^", PART_READ))]
    programs = [h[1:] for h in hooks if h.startswith("@") and within(h[1:], work_tree)]
    ran = run_by_hooks([os.path.join(git_dir, "hooks"), *plain, os.path.join(work_tree, ".husky")], work_tree, home,
                       programs=programs)  # fmt: skip
    return hooks + _linked_hooks(git_dir) + ran, included
