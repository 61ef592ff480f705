"""Where a link a command made leads, in the tree the command leaves (``refusals.judge_modes``): followed name by name,
through every link on the way — the real tree's and those the same command made — to its end.

Threat (red team 143): a link is judged by its own text alone, so ``up -> /`` then ``mod.py -> ../up/tmp/x.py``, or
``dist/app.cfg -> ../.git/config`` (a protected file the user's next build writes through), landed unasked."""

from __future__ import annotations

import os
import posixpath
import re
import stat

from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.changes.moves import link_target
from mcp_server_guard.paths import printable, within

__all__ = ["climbs_back", "link_end", "open_to_others", "per_process"]

_HOPS = 40  # links followed at most (the kernel's own bound)
_PER_PROCESS = re.compile(r"^/(?:proc|dev/fd|dev/std(?:in|out|err))(?:/|$)")  # names each process sees as its own


def link_end(changes: ChangeSet, path: str) -> str | None:
    """The absolute path the link at ``path`` (root-relative, one the command made) ends at, every link on the way
    followed as the tree the command leaves has it; None for a loop or past the bound."""
    made = {c.path: c for c in changes.changes}
    target = link_target(changes.upper, path)
    if target is None:
        return None
    todo = posixpath.join(posixpath.dirname(posixpath.join(changes.root, path)), target).split("/")
    done = "/"
    hops = 0
    while todo:
        name = todo.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            done = posixpath.dirname(done)
            continue
        here = posixpath.join(done, name)
        if _PER_PROCESS.match(here):
            return here  # (``/proc/self/cwd``, ``/dev/fd/3``: where it leads depends on who follows it — red team 147)
        leads = _after_link(changes, made, here)
        if leads is None:
            done = here
            continue
        hops += 1
        if hops > _HOPS:
            return None
        todo = leads.split("/") + todo
        done = "/" if leads.startswith("/") else done
    return done


def _after_link(changes: ChangeSet, made: dict[str, Change], here: str) -> str | None:
    """The target of ``here`` when it is a link in the tree the command leaves (None: not a link there)."""
    if within(here, changes.root) and here != changes.root:
        rel = posixpath.relpath(here, changes.root)
        change = made.get(rel)
        if change is not None:
            return link_target(changes.upper, rel) if change.kind == "symlink" and change.action != "delete" else None
    try:  # (the real tree: metadata and the link's text only, nothing opened)
        return os.readlink(here) if stat.S_ISLNK(os.lstat(here).st_mode) else None
    except OSError:
        return None


def open_to_others(end: str) -> str | None:
    """Why what is written through a link to ``end`` (outside the roots) would land where nothing is judged (None:
    it would not): a directory anyone may write holding it or its missing parent (``/tmp``, ``/dev/shm``), an entry
    of another user, or one the user — as whom the user's next build runs — may write: the file itself, or, for a
    name not there yet, the directory a write through the link would make it in. Only what the user may not write
    (the system's, to a user who is not root) is left alone. Threat (red team 150): a build copying to
    ``dist/tool -> ~/.local/bin/tool`` replaces the user's program; to ``dist/x.clj -> ~/.lein/profiles.clj``
    (missing) it makes a config every ``lein`` loads; as root, root's own files are the user's."""
    probe = end
    while True:  # (metadata only: nothing outside the roots is opened)
        try:
            st = os.stat(probe)
        except OSError:
            if probe in ("/", ""):
                return None
            probe = posixpath.dirname(probe)
            continue
        if st.st_mode & 0o002:
            return f"others may write {printable(probe)}"
        if st.st_uid not in (0, os.geteuid()):
            return f"{printable(probe)} is another user's"
        if not (st.st_uid == os.geteuid() or os.access(probe, os.W_OK)):
            return None  # (the system's, not the user's to write: what a build writes through it fails)
        if probe == end:
            return f"{printable(end)} lies outside the allowed directories: what is written through it lands there"
        return f"{printable(end)} is not there yet, outside the allowed directories: a write through the link makes it"


def climbs_back(changes: ChangeSet, path: str) -> bool:
    """Whether the link at ``path`` has a target that climbs back out of a directory it names (``a/b/../../x``):
    where it ends then depends on what those names become later — a link made over one by a later call, or by
    another root's change set — which no judgement of this link sees (red team 145 F1). Tools write targets
    without such a turn (``../x``, ``a/b``)."""
    parts = (link_target(changes.upper, path) or "").split("/")
    named = [p for p in parts if p not in ("", ".")]
    return any(p == ".." and any(q != ".." for q in named[:at]) for at, p in enumerate(named))


def per_process(end: str) -> bool:
    """Whether a link's end lies in what each process sees as its own (``/proc``, ``/dev/fd``)."""
    return bool(_PER_PROCESS.match(end))
