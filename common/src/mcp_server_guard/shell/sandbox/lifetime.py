"""What the server keeps for its commands beyond one call, and clears: the per-call temporary directories (and
those dead servers left), the pids cgroup the server moves into as root, the child subreaper and the sweep of a
call's orphans, and the release of all of it at exit.

Standard library only (the plan imports this at start-up; the in-box supervisor imports the sandbox package).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_server_guard import linux

if TYPE_CHECKING:
    from mcp_server_guard.shell.sandbox.planning import SandboxPlan

log = logging.getLogger("mcp_server_guard.shell.sandbox.lifetime")


_Made = list[Path | BaseException | None]  # what a move begun ahead gave: the cgroup, none, or what it raised
_AHEAD: list[tuple[threading.Thread, _Made]] = []  # the move begun (``pids_cgroup_ahead``), while not taken


def pids_cgroup_ahead() -> None:
    """Begin moving the server into a pids cgroup of its own (``_make_pids_cgroup``, as root) in a thread, while it
    goes on starting: a move waits for an RCU grace period (~15 ms, none of it CPU). Begun before the server's
    configuration is read (issue 44: the wait was on the way to the first result), so without its budget yet:
    ``make_pids_cgroup(limit)`` waits for the move and sets the budget, before the box or any command is born; a
    start that fails or runs no box meanwhile gives it up (``give_up_pids_cgroup``). Once a process."""
    if os.geteuid() != 0 or _AHEAD or _CREATED_CGROUPS:
        return
    made: _Made = []

    def move() -> None:
        try:
            made.append(_make_pids_cgroup(None))
        except BaseException as exc:  # noqa: BLE001 - raised where the plan takes it (``make_pids_cgroup``)
            made.append(exc)

    thread = threading.Thread(target=move, name="mcp-guard-cgroup")
    _AHEAD.append((thread, made))
    thread.start()


def make_pids_cgroup(limit: int) -> Path | None:
    """The server in a pids cgroup whose budget is ``limit`` commands' processes (and its own threads'): the one
    ``pids_cgroup_ahead`` began (waited for: commands must be born inside, under the budget), else made now."""
    if not _AHEAD:
        return _make_pids_cgroup(limit)
    thread, made = _AHEAD.pop()
    thread.join()
    found = made[0] if made else None
    if isinstance(found, BaseException):
        raise found
    if found is None:
        return None
    try:
        _set_budget(found, limit)
    except OSError:  # (the cgroup went meanwhile: left and made again, as at once)
        release_all()
        return _make_pids_cgroup(limit)
    return found


def give_up_pids_cgroup() -> None:
    """The server does not start after all (a usage error, a signal, a module that cannot load: red team 46), or
    starts without the box: the move begun ahead is waited for, and the cgroup it made left and removed."""
    while _AHEAD:
        thread, _made = _AHEAD.pop()
        thread.join()
    release_all()


def _set_budget(group: Path, limit: int) -> None:
    (group / "pids.max").write_text(str(limit + _SERVER_PIDS), encoding="ascii")


def _make_pids_cgroup(limit: int | None) -> Path | None:
    """As root, RLIMIT_NPROC binds nobody: the server moves itself into a pids cgroup, once.

    Its commands are then born inside it (no per-call migration: moving a process between cgroups can
    wait for an RCU grace period, milliseconds on an idle machine). The budget is shared by the server's
    own threads and every command it runs; a fork bomb exhausts it, not the machine. Without ``limit`` (a move
    begun ahead) the cgroup is made with the server's own headroom only, and ``make_pids_cgroup`` gives it the
    commands' budget before the box starts: nothing is ever born in it without a budget (red team 185 F2: a
    probe the plan runs first).
    """
    if os.geteuid() != 0:
        return None
    for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        if not (base / "cgroup.procs").exists() or not os.access(base, os.W_OK):
            continue
        if base == Path("/sys/fs/cgroup") and "pids" not in _read(base / "cgroup.controllers"):
            continue
        _sweep_stale(base)
        group = base / f"mcp-guard-{os.getpid()}"
        try:
            group.mkdir(exist_ok=True)
            _set_budget(group, 0 if limit is None else limit)
            (group / "cgroup.procs").write_text(str(os.getpid()), encoding="ascii")
        except OSError:
            with contextlib.suppress(OSError):
                group.rmdir()
            continue
        _CREATED_CGROUPS.append(group)
        return group
    return None


def _sweep_stale(base: Path) -> None:
    """Remove the cgroups of servers that died without cleaning up (SIGKILL), killing what still runs there."""
    for group in base.glob("mcp-guard-*"):
        pid = group.name.removeprefix("mcp-guard-")
        if not pid.isdigit() or _alive(int(pid)):
            continue
        for child in [*group.glob("run-*"), group]:
            # Commands the dead server left running must not outlive it.
            _kill_cgroup(child)
        for child in group.glob("run-*"):
            _remove_cgroup(child)
        _remove_cgroup(group)


def _kill_cgroup(group: Path) -> None:
    """SIGKILL every process in a cgroup: cgroup.kill on v2, each listed pid (until none is left) on v1."""
    with contextlib.suppress(OSError):
        (group / "cgroup.kill").write_text("1", encoding="ascii")
        return
    deadline = time.monotonic() + 1.0
    while (pids := _read(group / "cgroup.procs").split()) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        time.sleep(0.01)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii")
    except OSError:
        return ""


# Per-call temporary directories: named after the server's pid, so that those of a server that died
# without cleaning up (SIGKILL) are recognised and removed by the next server to start.
_TMPDIR_PREFIX = "mcp-guard-run-"


_LIVE_TMPDIRS: set[str] = set()


def make_tmpdir() -> str:
    tmpdir = tempfile.mkdtemp(prefix=f"{_TMPDIR_PREFIX}{os.getpid()}-")
    _LIVE_TMPDIRS.add(tmpdir)
    return tmpdir


def remove_tmpdir(tmpdir: str) -> None:
    shutil.rmtree(tmpdir, ignore_errors=True)
    _LIVE_TMPDIRS.discard(tmpdir)


def sweep_stale_tmpdirs(base: str | None = None) -> int:
    """Remove the per-call temporary directories of servers that are no longer running. Returns how many."""
    base = base or tempfile.gettempdir()
    removed = 0
    try:
        names = os.listdir(base)
    except OSError:
        return 0
    for name in names:
        pid = name.removeprefix(_TMPDIR_PREFIX).partition("-")[0]
        if not name.startswith(_TMPDIR_PREFIX) or not pid.isdigit() or _alive(int(pid)):
            continue
        path = os.path.join(base, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        # Only real directories of our own (never follow a planted symlink, never another user's).
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_CREATED_CGROUPS: list[Path] = []


_SERVER_PIDS = 64  # headroom in the pids budget for the server's own threads


def become_subreaper() -> None:
    """Orphans of our commands (a daemon that double-forked or called setsid) are reparented to us,
    so they can be found and killed when their call ends instead of living on."""
    with contextlib.suppress(OSError):
        linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)


def reap_orphans(active_groups: Iterable[int]) -> int:
    """Kill and reap our children outside ``active_groups`` (orphans reparented to us). Returns how many.

    The caller guarantees that no command of a running call is among them (see ProcessRegistry.sweep).
    """

    active = set(active_groups)
    count = 0
    for pid in children():
        try:
            if os.getpgid(pid) in active:
                continue
        except ProcessLookupError:
            pass
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        count += 1
    return count


def children() -> list[int]:
    """Our direct children (including orphans reparented to us), from /proc."""
    pids: list[int] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for tid in tasks:
        pids.extend(int(p) for p in _read(Path(f"/proc/self/task/{tid}/children")).split() if p.isdigit())
    return pids


def release(plan_: SandboxPlan) -> None:
    """At server exit: remove the temporary directories and leave and remove the pids cgroup."""
    release_all()


def release_all() -> None:
    """At server exit, however it exits: remove every per-call temporary directory and our pids cgroup.

    The commands must have been killed first (ProcessRegistry.kill_all).
    """
    for tmpdir in list(_LIVE_TMPDIRS):
        remove_tmpdir(tmpdir)
    for group in list(_CREATED_CGROUPS):
        # A cgroup with a member cannot be removed, and the server itself is one: leave it first.
        with contextlib.suppress(OSError):
            (group.parent / "cgroup.procs").write_text(str(os.getpid()), encoding="ascii")
        _remove_cgroup(group)


def _remove_cgroup(group: Path) -> None:

    deadline = time.monotonic() + 2.0
    while True:
        try:
            group.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            if time.monotonic() < deadline:
                time.sleep(0.02)
                continue
            log.warning("could not remove %s", group)
        if group in _CREATED_CGROUPS:
            _CREATED_CGROUPS.remove(group)
        return


__all__ = [
    "become_subreaper",
    "children",
    "give_up_pids_cgroup",
    "make_pids_cgroup",
    "make_tmpdir",
    "pids_cgroup_ahead",
    "reap_orphans",
    "release",
    "release_all",
    "remove_tmpdir",
    "sweep_stale_tmpdirs",
]
