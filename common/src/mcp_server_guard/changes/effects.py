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

This module owns the judgement as a whole: refusals, questions, moved files, the summary line. What is refused
path by path, and what the modes a command leaves grant, is decided by ``changes.refusals``; git's own paths are
judged on the tree the command left by ``changes.git_verdicts``; what git has a copy of is read from the index by
``changes.git_index``.
"""

from __future__ import annotations

import fnmatch
import importlib.machinery
import posixpath
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.changes.checkouts import laid_out, odd_path, rounds
from mcp_server_guard.changes.compressed import Decompressed, kept_beside
from mcp_server_guard.changes.git_index import discarded, uncommitted
from mcp_server_guard.changes.git_kept import kept_by_git, unnamed_by_rewrites
from mcp_server_guard.changes.git_refs import Later
from mcp_server_guard.changes.git_verdicts import Trees
from mcp_server_guard.changes.later import runs_later
from mcp_server_guard.changes.moves import moved_pairs
from mcp_server_guard.changes.nofollow import lstat_beneath
from mcp_server_guard.changes.refusals import judge_modes, later_checkouts, refuse, too_deep
from mcp_server_guard.changes.summary import MODES_NAMED, Counts, MoveEnds, count_of, list_of, summary_line
from mcp_server_guard.files.kept import file_kind
from mcp_server_guard.files.planted import OVERFLOW, SHOWN_BY
from mcp_server_guard.git_config import safe_git_config, unsafe_git_entries
from mcp_server_guard.globs import SuffixMatcher
from mcp_server_guard.hook_runs import hook_modules, hook_names, path_dirs
from mcp_server_guard.paths import printable
from mcp_server_guard.policy import EffectsPolicy
from mcp_server_guard.protected import Protection

__all__ = ["Counts", "Judgement", "judge", "judge_laid_out", "summary_line"]
_n, _list = count_of, list_of  # the questions' wording


@dataclass(frozen=True)
class Judgement:
    """What the judge found of a call's change sets: built once (``judge``); ``evicting`` gives a new one."""

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

    def evicting(self, gone: Mapping[str, Sequence[str]]) -> Judgement:
        """Where its apply pushes the history's only copies of earlier work out: the same judgement, that asked and
        those calls noted."""
        if not gone:
            return self
        ask = eviction_ask(sorted({path for paths in gone.values() for path in paths}))
        return replace(self, asks=[*self.asks, ask], evicts=sorted(gone))

    @property
    def question(self) -> str:
        return printable(f"The command would {self.summary}. " + " ".join(self.asks) + " Apply these changes?")


# Names people also give directories of their own (``env/`` of settings, ``tmp/`` and ``out/`` of notes): a build
# or cache directory only where it shows it (a file its tool leaves in it). Threat: ``rm -r env`` deleting the user's
# files unasked because of the directory's name alone (red team 5b F8).
_SHOWN_BY = SHOWN_BY  # (the registry's log of what a tool landed keeps their markers: files.planted)


class _Matcher:
    def __init__(self, patterns: Iterable[str], planted: Mapping[str, tuple[int, ...]] | None = None) -> None:
        self._planted = planted or {}  # files this server landed (absolute paths): a marker there is no tool's
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
            # Threat (red team 82 F3): a marker a command of an earlier call planted (``out/CACHEDIR.TAG``) made the
            # user's out/ a cache directory, deleted unasked by the next call: one this server landed does not count.
            # (the log of what tools landed overflowed: every marker counts as planted — files.planted)
            return bool(root) and OVERFLOW not in self._planted and any(
                lstat_beneath(root, f"{path}/{mark}") and posixpath.join(root, path, mark) not in self._planted
                for mark in _SHOWN_BY[last])  # fmt: skip
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
    *,
    checkouts: bool = True,
) -> Judgement:
    """The judgement of a call's change sets. ``roots``: the call's allowed directories (narrowed by the client's
    roots); ``earlier``: what a job's earlier looks applied of what the counted questions count (``touched``,
    ``unbacked``); ``landed``: what this server last landed, by path (``Applier.landed``: not an only copy)."""
    refused: dict[tuple[str, str], str] = {}
    rewritten: dict[tuple[str, str], bytes] = {}
    dropped_keys: dict[str, list[str]] = {}
    by_content: set[tuple[str, str]] = set()
    asks: list[str] = []
    scratch = _Matcher(policy.scratch, landed)
    places = _Matcher(policy.executable_places)
    for changes in sets:
        refuse(changes, protection, roots, refused, by_content)
        _sanitize_new_configs(changes, refused, rewritten, dropped_keys)
        runs_later(changes, refused, asks, by_content)
        if checkouts:  # (what a later checkout writes: judged here, itself with checkouts=False)
            asks += _checkouts(changes, protection, policy, roots, refused)
    if installed := _hook_programs_installed(refused, scratch):
        asks.append(f"It changes {_list(installed)}, which your git hooks run (installed in the project): your next "
                    "git commit runs them, outside the box.")  # fmt: skip
    granted = judge_modes(sets, protection, roots, scratch.name, refused)
    pairs = moved_pairs(sets, refused)
    moves = {end: old for old, new in pairs for end in (old, new)}
    # Threat: a tree moved into a build or cache directory, then deleted there with no question.
    kept_out = {old for old, new in pairs if scratch.name(new[1], new[0]) and not scratch.name(old[1], old[0])}
    ends = MoveEnds(frozenset(old for old, _new in pairs), frozenset(new for _old, new in pairs))
    summary, counts = summary_line(sets, refused, moves, ends=ends)
    tally = _tally(sets, refused, (moves, ends), kept_out, scratch, places, kept_by_git(sets))
    if len(tally.touched) + earlier[0] > policy.max_files:
        asks.append(f"It deletes, replaces or empties {_n(len(tally.touched) + earlier[0], 'file')} "
                              f"(more than {policy.max_files}).")  # fmt: skip
    if policy.ask_tree_deletion and tally.trees:
        asks.append(f"It deletes {_list(tally.trees)}.")
    if policy.ask_truncation and tally.emptied:
        asks.append(f"It empties {_list(tally.emptied)}.")
    if policy.ask_new_executables and tally.executables:
        asks.append(f"It makes new executables: {_list(tally.executables)}.")
    asks += _shadowing(sets, scratch, refused) + too_deep(sets, refused)
    if granted:
        asks.append(f"It {_list(granted, MODES_NAMED)}.")
    unbacked = 0
    if policy.ask_uncommitted and tally.losing:
        outside: list[str] = []
        lost = uncommitted(tally.losing, outside)
        if lost:
            asks.append(f"Git has no copy of {_list(lost)} (modified or untracked).")
        # Where no repository keeps a copy, a few deletions are as much a loss as uncommitted work.
        unbacked = len(outside)
        if len(outside) + earlier[1] > policy.max_unbacked_files:
            asks.append(f"It deletes or empties {_n(len(outside) + earlier[1], 'file')} no git repository "
                                  f"has a copy of: {_list(outside)}.")  # fmt: skip
    if policy.ask_uncommitted and (unnamed := unnamed_by_rewrites(sets)):
        asks.append(f"It leaves commits named by {_list(unnamed)} with no name (the next git gc deletes them).")
    carried = tally.beside | moves.keys()  # (red team 137 F1: moved or kept beside, the user's work wherever it went)
    kept = [(s, c) for s in sets for c in s.changes if c.action == "delete" and (s.root, c.path) in carried]
    only_copies = _only_copies([*tally.losing, *tally.rewritten, *kept], landed or {}) if policy.ask_uncommitted else []
    if policy.ask_uncommitted and tally.rewritten:
        at_stake: list[tuple[str, str]] = []  # a job's look leaves them to its end (after refuse: no _linked)
        thrown = discarded(tally.rewritten, _stashed(sets), at_stake)
        by_content.update(at_stake)
        if thrown:
            asks.append(f"It discards uncommitted changes to {_list(thrown)} (back to what git has; git "
                                  "reset --hard, checkout, restore).")  # fmt: skip
    by_content.update(tally.beside)
    return Judgement(refused=refused, rewritten=rewritten, dropped_keys=dropped_keys, by_content=by_content,
                     moved=dict(moves), asks=asks, counts=counts, summary=summary, touched=len(tally.touched),
                     unbacked=unbacked, only_copies=only_copies)  # fmt: skip


def _checkouts(
    changes: ChangeSet,
    protection: Protection,
    policy: EffectsPolicy,
    roots: Sequence[str],
    refused: Mapping[tuple[str, str], str],
) -> list[str]:
    """The questions for what the refs, the stash and the index ``changes`` leave would write into the work tree at
    the user's next checkout (``changes.checkouts``): each path judged as a write of it now would be — refused, or
    asked for what it runs later, shadows or makes executable — but for what git can give back (losses, emptied
    files: a checkout over uncommitted work stops). A path the command wrote with those very bytes was judged so
    already: asked only where that write was refused (it would come back by the checkout)."""
    asks, laters = later_checkouts(changes, roots)
    when = "Your next checkout, stash pop or reset of it writes that there, outside the box"
    pending: list[Later] = []
    for later in laters:
        why = refused.get((changes.root, later.path)) if later.same else None
        if later.same and why is None:
            continue
        if why is not None or odd_path(later.path):
            why = why or "a path git itself refuses to check out"
            asks.append(printable(f"It sets {later.what} to content no tool may write in the work tree: {later.path} "
                                  f"({why}). {when} (git may run a hook at once)."))  # fmt: skip
            continue
        pending.append(later)
    for group in rounds(pending):  # (every ref's writes at once: a pull of 200 commits is a few judgements)
        whats = list(dict.fromkeys(later.what for later in group))
        what = ", ".join(whats[:2]) + (f" and {len(whats) - 2} more" if len(whats) > 2 else "")
        try:
            sub = judge_laid_out(changes.root, group, posixpath.dirname(changes.upper), protection, policy, roots)
        except OSError as exc:
            asks.append(printable(f"It sets {what} to content the server could not lay out to judge ({exc})."))
            continue
        by_path = {later.path: later.what for later in group}
        named: dict[str, list[str]] = {}
        for (_root, path), why in sorted(sub.refused.items()):
            named.setdefault(by_path.get(path, what), []).append(f"{path} ({why})")
        asks += [printable(f"It sets {whose} to content no tool may write in the work tree: {_list(paths)}. {when} "
                           "(git may run a hook at once).") for whose, paths in named.items()]  # fmt: skip
        asks += [printable(f"It sets {what} to content whose writing would be asked: {ask} {when}.")
                 for ask in sub.asks]  # fmt: skip
    return asks


def judge_laid_out(
    root: str,
    laters: Sequence[Later],
    under: str,
    protection: Protection,
    policy: EffectsPolicy,
    roots: Sequence[str],
    *,
    executables: bool = True,
) -> Judgement:
    """``laters`` — what something other than a command would write at their paths of ``root`` (a checkout, an
    undo) — laid out in a scratch directory under ``under`` and judged as a command's write of them now would be:
    refused, rewritten, or asked for what they run later, shadow or (``executables``) make executable; never for
    what git or the history gives back (losses, emptied files, tree deletions). OSError: they could not be laid
    out."""
    calm = policy.model_copy(update={"ask_uncommitted": False, "ask_tree_deletion": False, "ask_truncation": False,
                                     "ask_new_executables": policy.ask_new_executables and executables})  # fmt: skip
    scratch = tempfile.mkdtemp(prefix=".laid-out-", dir=under)
    try:
        return judge([laid_out(root, scratch, laters)], protection, calm, roots, checkouts=False)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@dataclass
class _Tally:
    """What the counted questions count of a call's change sets (``_tally``)."""

    touched: list[str] = field(default_factory=list)
    trees: list[str] = field(default_factory=list)
    emptied: list[str] = field(default_factory=list)
    executables: list[str] = field(default_factory=list)
    losing: list[tuple[ChangeSet, Change]] = field(default_factory=list)
    beside: set[tuple[str, str]] = field(default_factory=set)  # deleted files kept beside (compressed) and where
    rewritten: list[tuple[ChangeSet, Change]] = field(default_factory=list)  # overwritten (perhaps back to git's)


def _tally(
    sets: Sequence[ChangeSet],
    refused: Mapping[tuple[str, str], str],
    moved: tuple[Mapping[tuple[str, str], tuple[str, str]], MoveEnds],
    kept_out: set[tuple[str, str]],
    scratch: _Matcher,
    places: _Matcher,
    git_keeps: set[tuple[str, str]],
) -> _Tally:
    """The files a call's change sets lose (deleted, replaced, emptied), rewrite, or make executable, and the
    directory trees they delete — outside the build and cache directories (``scratch``), refusals and moves left
    out (but for what moved into ``scratch``: ``kept_out``), and the object files git still has the objects of
    (``git_keeps``: ``git gc``'s packing)."""
    tally = _Tally()
    moves, ends = moved
    sources = {(s.root, c.path): c for s in sets for c in s.changes if c.action == "delete" and c.kind == "file"}
    decompressed = Decompressed()
    for changes in sets:
        made = {c.path: c for c in changes.changes if c.action == "create" and (changes.root, c.path) not in refused}
        for change in changes.changes:
            key = (changes.root, change.path)
            if key in git_keeps:
                continue
            if (
                key in ends.ends
                and change.action != "delete"
                and key not in refused
                and key not in kept_out
                and _made_executable(change, sources.get(moves[key]), places)
            ):
                # Moved and made executable (``mv a.sh tool && chmod 755 tool``, red team 81 F2): against the mode
                # the file had where it came from (the new end has no mode of its own before).
                tally.executables.append(change.path)
            if (
                change.action == "modify"
                and key in moves
                and key not in refused
                and not scratch.name(change.path, changes.root)
            ):
                # Renamed over (``mv -f template.txt notes.txt``): what the file there held is gone, as deleted.
                tally.touched.append(change.path)
                tally.losing.append((changes, change))
                continue
            if key in refused or (ends.here(key, change) and key not in kept_out) or scratch.name(change.path, key[0]):
                continue
            if change.action == "delete" and change.kind != "dir":
                tally.touched.append(change.path)
                if (beside := kept_beside(changes, change, made, decompressed)) is None:
                    tally.losing.append((changes, change))
                else:  # (`gzip f`: its bytes are in f.gz — both judged by their content: a look lands them together)
                    tally.beside.update({key, (changes.root, beside)})
            elif change.action == "modify" and change.kind == "symlink" and _was_file(changes.root, change.path):
                # A file replaced by a link (``ln -sf /dev/null f``) loses what the file held, as a deletion does.
                tally.touched.append(change.path)
                tally.losing.append((changes, change))
            elif change.action == "modify" and change.kind == "file" and _replaced_by_another(changes.root, change):
                # A file replaced by a name of another file (``ln -f a b``) loses what it held, as a deletion does.
                tally.touched.append(change.path)
                tally.losing.append((changes, change))
            elif change.action == "modify" and change.kind == "file":
                # Rewritten: undo gives the bytes back exactly; applied and shown, not counted (issue 45: questions
                # only where the copy cannot help). Losses are counted: deletions, files replaced or emptied.
                if change.size == 0 and change.old_size > 0:
                    tally.touched.append(change.path)
                    tally.emptied.append(change.path)
                    tally.losing.append((changes, change))
                elif ".git" not in change.path.split("/"):
                    tally.rewritten.append((changes, change))
            # A directory deleted and made again (``rm -r d; mkdir d``) lost what it held all the same.
            if change.action == "delete" and change.kind == "dir" and change.top in ("", change.path):
                held = sum(
                    1
                    for c in changes.changes
                    if c.top == change.path
                    and c.action == "delete"  # what it held, not what was made there again
                    and c.kind != "dir"
                    and (changes.root, c.path) not in git_keeps
                    and (not ends.here((changes.root, c.path), c) or (changes.root, c.path) in kept_out)
                )
                if held:
                    tally.trees.append(f"{change.path}/ ({_n(held, 'file')})")
            if (
                change.kind == "file"
                and change.action in ("create", "modify", "meta")
                and change.mode & 0o111
                and (
                    not change.old_mode & 0o111 or (change.action == "modify" and _was_other_kind(changes.root, change))
                )
                and not places.path(change.path)
            ):
                tally.executables.append(change.path)
    return tally


def _made_executable(change: Change, source: Change | None, places: _Matcher) -> bool:
    """Whether the end of a move ``change`` is a file executable where its ``source`` (the file moved, as it was)
    was not, outside the places executables are expected."""
    return (
        source is not None
        and change.kind == "file"
        and change.action in ("create", "modify")
        and bool(change.mode & 0o111)
        and not source.mode & 0o111
        and not places.path(change.path)
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


def _was_other_kind(root: str, change: Change) -> bool:
    """Whether the real tree holds another kind of entry where ``change`` leaves its own (a link, a socket, a FIFO
    where a file now stands): that entry's mode is no mode the path had — what the change leaves is judged as made
    new (red team 92 F1/F3: a link's 0777; red team 93 F1: a socket's 0755 read as "already executable")."""
    st = lstat_beneath(root, change.path)
    return st is not None and file_kind(st.st_mode) != change.kind


def _was_file(root: str, path: str) -> bool:
    """Whether the real tree holds a regular file at ``path`` (looked at beneath the root, no link followed)."""
    st = lstat_beneath(root, path)
    return st is not None and stat.S_ISREG(st.st_mode)


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


def _sanitize_new_configs(
    changes: ChangeSet,
    refused: dict[tuple[str, str], str],
    rewritten: dict[tuple[str, str], bytes],
    dropped_keys: dict[str, list[str]],
) -> None:
    """A git config the real tree did not have, refused for keys that could make git run programs: applied with
    those keys left out instead (``git init sub && git -C sub config core.fsmonitor …`` keeps a working sub),
    written afresh from what git reads (never an edit of the command's text)."""
    trees = Trees(changes)
    for change in changes.changes:
        key = (changes.root, change.path)
        why = refused.get(key)
        if why is None or "would gain keys" not in why or change.action != "create" or change.kind != "file":
            continue
        text = trees.read(change.path)
        safe = safe_git_config(text) if text is not None else None
        unsafe = unsafe_git_entries(text)
        if safe is None or unsafe is None:
            continue  # refused as it is
        rewritten[key] = safe
        refused.pop(key)
        dropped_keys[change.path] = sorted({entry.partition("=")[0] for entry in unsafe})


_HOOK_PROGRAM = "protected (a program a git hook runs"


def _hook_programs_installed(refused: dict[tuple[str, str], str], scratch: _Matcher) -> list[str]:
    """The programs git hooks run (``hook_runs``: refused as protected) that lie in a build or cache directory
    (``node_modules``, an environment's ``site-packages``), taken out of ``refused`` to be asked about instead: a
    package manager updating the package is everyday work, and refused they would leave it half updated. A command
    changing them unasked is what the question stops (red teams 48, 49: lefthook's binary, pre-commit's module)."""
    installed = [key for key, why in refused.items() if why.startswith(_HOOK_PROGRAM) and scratch.name(key[1], key[0])]
    for key in installed:
        refused.pop(key)
    return [path for _root, path in installed]


def _shadowing(sets: Sequence[ChangeSet], scratch: _Matcher, refused: Mapping[tuple[str, str], str]) -> list[str]:
    """The question about executables named like programs on the PATH (``_shadows``), if any."""
    paths: dict[str, frozenset[str]] = {}  # read only where an executable lands
    names: dict[str, frozenset[str]] = {}

    def on_path(root: str) -> frozenset[str]:
        if root not in paths:
            paths[root] = path_dirs(root)
        return paths[root]

    def hooks_run(root: str) -> frozenset[str]:
        if root not in names:
            names[root] = hook_names(root)
        return names[root]

    asks: list[str] = []
    if shadowing := [c.path for s in sets for c in s.changes
                     if _shadows(s.root, c, scratch, refused, on_path, hooks_run)]:  # fmt: skip
        asks.append(f"It makes {_list(shadowing)}, named like programs on your PATH: where a tool puts that directory "
                    "first (direnv's PATH_add), they run instead.")  # fmt: skip
    modules: dict[str, frozenset[str]] = {}

    def importable(root: str) -> frozenset[str]:
        if root not in modules:
            modules[root] = hook_modules(root)
        return modules[root]

    if own := [c.path for s in sets for c in s.changes
               if (name := _top_module(c)) and (s.root, c.path) not in refused
               and name in importable(s.root)]:  # fmt: skip
        asks.append(
            f"It makes {_list(own)}, named like modules the Python your git hooks run imports, at the top of the "
            "project: those hooks run it there (python -m, pre-commit), which imports them in their place, outside "
            "the box."
        )
    return asks


def _top_module(change: Change) -> str:
    """The module a file the command made or changed at the top of the root is (``argparse.py``, a compiled or
    extension module, ``yaml/__init__.py``), or "": a ``python -m`` run from there imports it in place of one of that
    name (red teams 50 F4, 51 F1: pre-commit's hook)."""
    if change.kind != "file" or change.action not in ("create", "modify"):
        return ""
    parts = change.path.split("/")
    if len(parts) == 2:
        return parts[0] if parts[1] in _PACKAGE_INITS else ""
    suffix = next((s for s in _MODULE_SUFFIXES if parts[0].endswith(s)), None) if len(parts) == 1 else None
    return parts[0][: -len(suffix)] if suffix else ""


_MODULE_SUFFIXES = tuple(importlib.machinery.all_suffixes())
_PACKAGE_INITS = frozenset(f"__init__{suffix}" for suffix in _MODULE_SUFFIXES)


def _shadows(
    root: str,
    change: Change,
    scratch: _Matcher,
    refused: Mapping[tuple[str, str], str],
    on_path: Callable[[str], frozenset[str]],
    hooks_run: Callable[[str], frozenset[str]],
) -> bool:
    """An executable the command made or changed with the name of a program on the server's PATH, in a directory a
    tool may put first on PATH: a ``bin``/``.bin``/``sbin`` outside the build and cache directories, or one the
    project's direnv or mise configuration or a git hook's own text puts there (``on_path``: ``hook_runs.path_dirs``)
    — there, a build or cache directory too, when the name is a system program's. Threat: ``bin/git`` in a project
    whose ``.envrc`` says ``PATH_add bin``: the user's next ``git status`` there runs it, outside the box (red team 5b
    F5); ``node_modules/.bin/sh`` where husky's hook runner exports ``PATH="node_modules/.bin:$PATH"`` before ``sh -e
    .husky/pre-commit`` (red team 48 B), or a tool a hook runs by its name alone (``prettier``: 50 F3; ``hooks_run``:
    ``hook_runs.hook_names``). ``script/test`` elsewhere is a project's own script (red team 8 FA4); a
    package's own program in ``node_modules/.bin`` (``tsc``, ``eslint``) shadows no system program."""
    directory = posixpath.dirname(change.path)
    if not (
        (change.kind == "symlink" or (change.kind == "file" and bool(change.mode & 0o111)))  # a link too: 6 L7
        and change.action in ("create", "modify", "meta")
        and (root, change.path) not in refused
    ):
        return False
    name = change.path.rsplit("/", 1)[-1]
    built = scratch.name(change.path, root)
    if (directory or ".") in on_path(root):
        if built and _ENVIRONMENT_OWN.fullmatch(name):
            return False  # a virtual environment's own programs (``python3 -m venv .venv``: red team 49 F6)
        if built and name in hooks_run(root):
            return True  # a tool a hook runs by its name (``prettier``), made where the hook looks first: 50 F3
        return shutil.which(name, path=_SYSTEM_PATH if built else None) is not None
    return posixpath.basename(directory) in ("bin", ".bin", "sbin") and not built and shutil.which(name) is not None


_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What a Python environment's bin holds of its own (``venv``, ``virtualenv``, ``uv venv``, pip's own entry points).
_ENVIRONMENT_OWN = re.compile(r"(?:python|pip|pydoc|idle|2to3|wheel|easy_install|activate|deactivate)[\w.-]*")
