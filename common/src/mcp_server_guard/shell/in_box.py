"""Running a command in the box: the supervisor starts it (see ``shell.sandbox.supervisor``); this side
feeds its stdin, reads its bounded output and its status, and ends it on timeout.

Nothing a command starts outlives its call: the call's init is PID 1 of the call's own PID namespace, and
when the command exits (or the init is killed) the kernel kills everything left in that namespace. The
pipes then close, so reading ends by itself; a bounded drain covers a box without namespaces.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TypeVar

import anyio

from mcp_server_guard.changes.changeset import NO_RENAMES, Renamed
from mcp_server_guard.shell.output import OutputBuffer, Progress, Ticker, output_buffers
from mcp_server_guard.shell.process import (
    KILL_GRACE_S,
    Control,
    Copy,
    Pause,
    RunResult,
    wait_with_pauses,
    write_stdin,
)
from mcp_server_guard.shell.sandbox.box import Box, Started
from mcp_server_guard.shell.sandbox.frames import received_fds
from mcp_server_guard.shell.sandbox.wire import CallOptions

__all__ = ["Copy", "DiskWatch", "run_boxed"]

log = logging.getLogger("mcp_server_guard.shell.in_box")

_CHUNK = 65536
_FD_SPACE = socket.CMSG_SPACE(4)
_DRAIN_AFTER_EXIT_S = 2.0
_GONE_S = 5.0  # a call's processes are all gone this long after its init ends (the kernel kills them at once)
_DISK_POLL_S = 0.25  # between two looks at the free space, a command writing at a disk's pace (~1 GB/s) adds ~250 MB


def _free_bytes(path: str) -> int:
    fs = os.statvfs(path)  # the server's own area directory: nothing the command can shape is opened
    return fs.f_bavail * fs.f_frsize


def _floor(free: int, least: int) -> int:
    return least if free > least else free // 2


class DiskWatch:
    """Stops a command on a copy before its writes fill the disk holding the copy. Threat: a command that writes
    without end (``yes > f``, a runaway log) fills the user's disk — and with it the room the apply, the history
    and the journals need. RLIMIT_FSIZE cannot bound a command on a copy (see ``shell.sandbox.layers``); instead
    the call is stopped once the free space of an area's file system falls below ``least`` bytes — or, where no more
    than that was free when it started, below half of what was free then — and nothing it did is applied (its copy
    goes: ``ShellExec.execute``), so calls stopped one after another do not fill the disk by steps."""

    def __init__(self, areas: Sequence[str], least: int, kill: Callable[[], None] = lambda: None) -> None:
        self.areas, self.least = list(dict.fromkeys(areas)), least
        self.floors: dict[str, int] = {}
        self.room = 0  # what the disks may take before the first floor, as measured (0: not known)
        self.kill = kill  # stops the call (set once it started)
        self.low = False  # it stopped the command
        self.scope: anyio.CancelScope | None = None  # while it runs (a scope is made on the event loop)
        self.stopped = False

    def measure(self) -> None:
        """Each area's floor, from what is free now (before the command starts), and the room above them: the call's
        RLIMIT_FSIZE (``layers.call_options``), so that no one file (a single ``fallocate``) takes the disk past
        its floor between two looks."""
        rooms = []
        for area in self.areas:
            with contextlib.suppress(OSError):
                free = _free_bytes(area)
                self.floors[area] = _floor(free, self.least)
                rooms.append(free - self.floors[area])
        self.room = min(rooms, default=0)

    def check(self) -> bool:
        """Whether the disk of some area is below its floor now."""
        for area, floor in self.floors.items():
            with contextlib.suppress(OSError):
                if _free_bytes(area) < floor:
                    return True
        return False

    async def look(self, what: Callable[[], object]) -> None:
        """``what`` (``measure``, ``check``) on a worker thread, abandoned past a second: statfs on a network file
        system can hang."""
        with anyio.move_on_after(1.0):
            await anyio.to_thread.run_sync(what, abandon_on_cancel=True)

    async def ended(self) -> None:
        """The command ended: one more look (a fast one, `fallocate` of many files, may end between two)."""
        if self.floors and not self.low:
            with anyio.move_on_after(1.0):
                self.low = await anyio.to_thread.run_sync(self.check, abandon_on_cancel=True)

    async def run(self) -> None:
        if not self.areas:
            return
        with anyio.CancelScope() as self.scope:
            late = 0
            while not self.stopped:
                await anyio.sleep(_DISK_POLL_S)
                if not self.floors:
                    # Its measure before the start came late (a loaded machine: past ``look``'s second) or failed:
                    # measured now instead, from what is free now. Threat: a command left unwatched because one
                    # statfs was slow (the watch used to end here at once, and the command filled the disk).
                    late += 1
                    if late == 1:
                        log.warning("the disk watch measures after the command started (its first look came late)")
                    await anyio.to_thread.run_sync(self.measure, abandon_on_cancel=True)
                    continue
                if await anyio.to_thread.run_sync(self.check, abandon_on_cancel=True):
                    self.low = True
                    self.kill()
                    return

    def stop(self) -> None:
        self.stopped = True
        if self.scope is not None:
            self.scope.cancel()


async def _pump(fd: int, buffer: OutputBuffer) -> None:
    while True:
        await anyio.wait_readable(fd)
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            continue
        if not chunk:
            return
        buffer.feed(chunk)


class _Status:
    """The call's status socket: ``{"net": port}`` with the listener of the call's own network namespace
    (--network policy), ``{"txn": name}`` when the command works on a copy, then one JSON line, ``{"exit": status}``
    or ``{"error": …}``."""

    def __init__(self, fd: int, copy: Copy, network: Callable[[socket.socket], None] | None = None) -> None:
        self.sock = socket.socket(fileno=fd)
        self.sock.setblocking(False)
        self.network = network
        self.buffer = bytearray()
        self.exit_status: int | None = None
        self.error: tuple[int, str] | None = None  # (errno, message)
        self.closed = False
        self.copy = copy

    async def until_done(self) -> None:
        while not self.closed and self.exit_status is None and self.error is None:
            await anyio.wait_readable(self.sock)
            with contextlib.suppress(BlockingIOError):
                self._take()

    def take_what_is_there(self) -> None:
        """Read what the init has said already, without waiting (the call was cancelled before its last line was
        read: whether its init took the copy back decides whether the copy may be removed here)."""
        self.network = None  # the call is over: a listener still on its way is closed, not served
        with contextlib.suppress(OSError):
            while not self.closed and self.exit_status is None and self.error is None:
                self._take()

    def _take(self) -> None:
        chunk, ancillary, _flags, _addr = self.sock.recvmsg(1 << 16, _FD_SPACE, socket.MSG_CMSG_CLOEXEC)
        for fd in received_fds(ancillary):
            listener = socket.socket(fileno=fd)
            if self.network is not None:
                self.network(listener)  # the proxy accepts on it, as this call's
            else:
                listener.close()
        if not chunk:
            self.closed = True
            return
        # Only the new bytes are searched for the line's end (a long line, read in pieces, costs its length once:
        # red team 5a F5, a status line of 40,000 paths took two minutes to read).
        start = len(self.buffer)
        self.buffer += chunk
        while (end := self.buffer.find(b"\n", start)) >= 0:
            line = bytes(self.buffer[:end])
            del self.buffer[: end + 1]
            start = 0
            said = status_line(line)
            if said.txn:
                self.copy.name = said.txn
            elif said.exit is not None:
                self.exit_status = said.exit
                self.copy.stopped = said.stopped
                # The init killed and reaped everything else of the call: nothing writes to the copy any more.
                self.copy.final = said.settled
                self.copy.untouched = said.settled and said.untouched
                self.copy.moved = said.moved
            elif said.error is not None:
                self.error = said.error


@dataclass(frozen=True)
class StatusLine:
    """One line the call's init said on its status socket (``shell.sandbox.worker``), read once (``status_line``):
    the copy's name (``txn``), or how the call ended (``exit`` and what came with it), or an error (errno, message);
    a ``net`` line carries a listener, not data."""

    txn: str = ""
    exit: int | None = None
    stopped: int = 0
    settled: bool = False  # every process of the call killed and reaped: nothing writes to the copy any more
    untouched: bool = False  # the copy as it was: the init took it back
    moved: Renamed = NO_RENAMES
    error: tuple[int, str] | None = None


def status_line(line: bytes) -> StatusLine:
    """A status line as a typed value; what it does not say, or says in another type, is left at its default."""
    message = json.loads(line)
    if not isinstance(message, dict):
        return StatusLine()
    if "txn" in message:
        return StatusLine(txn=str(message["txn"]))
    if "exit" in message:
        stopped = message.get("stopped", 0)
        return StatusLine(
            exit=int(message["exit"]),
            stopped=stopped if isinstance(stopped, int) else 0,
            settled=message.get("settled") is True,
            untouched=message.get("untouched") is True,
            moved=Renamed(
                _said(message.get("moved"), int),
                _said(message.get("renamed"), str),
                _origins(message.get("origins")),
                origins_known=isinstance(message.get("origins"), list),
                remade=_said(message.get("remade"), str),
                relinked=_relinked(message.get("relinked")),
                unfollowed=message.get("unfollowed") is True,
            ),
        )
    if "error" in message:
        return StatusLine(error=(int(message.get("error") or 0), str(message.get("message"))))
    return StatusLine()


_T = TypeVar("_T")


def _said(said: object, kind: type[_T]) -> frozenset[_T]:
    """The items of a list the call's init said (``shell.sandbox.worker``) that are of ``kind``."""
    return frozenset(n for n in said if isinstance(n, kind)) if isinstance(said, list) else frozenset()


def _relinked(said: object) -> frozenset[tuple[str, str]]:
    """The ``relinked`` the call's init said: (a name it linked again, where it was linked from)."""
    if not isinstance(said, list):
        return frozenset()
    return frozenset(
        (item[0], item[1])
        for item in said
        if isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], str)
    )


def _origins(said: object) -> frozenset[tuple[str, str, int]]:
    """The ``origins`` the call's init said: (where a file is, where it was renamed from, its inode number there)."""
    if not isinstance(said, list):
        return frozenset()
    return frozenset(
        (item[0], item[1], item[2])
        for item in said
        if isinstance(item, list)
        and len(item) == 3
        and isinstance(item[0], str)
        and isinstance(item[1], str)
        and isinstance(item[2], int)
        and not isinstance(item[2], bool)
    )


async def _until_final(box: Box, call_id: int, copy: Copy, status: _Status) -> None:
    """Killed (a timeout, a stop): what the command wrote is final only once every process of the call
    is gone, which the supervisor says when it reaps the call's init."""
    copy.final = await box.gone(call_id, _GONE_S)
    if not copy.final:
        box.signal(call_id, signal.SIGKILL)
        copy.final = await box.gone(call_id, _GONE_S)
    if copy.final:
        # Threat: the call ended on its own while it was being cancelled, and its init took the copy
        # back, untouched, for its next call (on a line not read yet): removing it here would remove
        # another call's copy. Its init has said all it will by now.
        status.take_what_is_there()
        copy.final = True


def _exit_of(status: _Status) -> tuple[int, str | None]:
    """A call's exit code and the name of the signal that ended it (None: it exited); killed when it never said."""
    code: int = 128 + signal.SIGKILL
    sig: str | None = "SIGKILL"
    if status.exit_status is not None:
        wait_status = status.exit_status
        if os.WIFSIGNALED(wait_status):
            number = os.WTERMSIG(wait_status)
            code = 128 + number
            sig = signal.Signals(number).name if number in signal.valid_signals() else f"SIG{number}"
        else:
            code, sig = os.waitstatus_to_exitcode(wait_status), None
    return code, sig


async def run_boxed(
    box: Box,
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    stdin: bytes | None,
    timeout: float,
    max_output: int,
    options: CallOptions,
    progress: Progress | None = None,
    pause: Pause | None = None,
    control: Control | None = None,
    copy: Copy | None = None,
    network: Callable[[socket.socket], None] | None = None,
    disk: DiskWatch | None = None,
    linked: Sequence[str] = (),
) -> RunResult:
    """Run ``argv`` in the box with the call's confinement ``options``; return its bounded output. ``copy`` learns
    the copy the command works on (when the options ask for one) and, once the call has ended however it ends,
    whether every process of it is gone. ``network`` takes the listener of the call's own network namespace.
    ``disk``: on a copy, the watch of its disk, measured (see ``DiskWatch``; None: not watched); ``linked``: on a
    copy, the directories that hold files with several names (``LinkedDirs``), whose deletions its init notes."""
    started_at = time.perf_counter()
    copy = copy if copy is not None else Copy()
    out, err = output_buffers(max_output, control.tee if control is not None else None)
    ticker = Ticker(progress, out, err, started_at)
    timed_out = False
    keep = control is not None and control.keep_stdin
    disk = disk if disk is not None and options["overlays"] else DiskWatch([], 0)
    with anyio.CancelScope(shield=True):  # a started call must be tracked and ended, not lost
        call: Started = await box.spawn(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=stdin is not None or keep,
            options=options,
            recycle=control is None or not control.looks,
            linked=linked,
        )
    if control is not None:
        kept, call.stdin = (call.stdin, None) if keep else (None, call.stdin)
        control.attach(partial(box.signal, call.id), kept)
    ours = [call.stdout, call.stderr]
    for fd in ours:
        os.set_blocking(fd, False)
    status = _Status(call.status, copy, network)
    disk.kill = partial(box.signal, call.id, signal.SIGKILL)
    try:
        async with anyio.create_task_group() as readers:
            readers.start_soon(_pump, call.stdout, out)
            readers.start_soon(_pump, call.stderr, err)
            readers.start_soon(ticker.run)
            readers.start_soon(disk.run)
            if stdin is not None and call.stdin is not None:
                fd_in, call.stdin = call.stdin, None
                ours.append(fd_in)

                async def feed() -> None:
                    with contextlib.suppress(OSError):
                        await write_stdin(fd_in, stdin)
                    # Not when cancelled: the finally below closes what is left in ``ours``.
                    ours.remove(fd_in)
                    with contextlib.suppress(OSError):
                        os.close(fd_in)

                readers.start_soon(feed)
            if not await wait_with_pauses(status.until_done, timeout, pause):
                timed_out = True
                box.signal(call.id, signal.SIGTERM)  # passed on to the command's group
                with anyio.move_on_after(KILL_GRACE_S):
                    await status.until_done()
            ticker.stop()
            disk.stop()
            await disk.ended()
            if status.exit_status is None and status.error is None:
                box.signal(call.id, signal.SIGKILL)  # the whole call: its PID namespace dies with its init
                with anyio.move_on_after(KILL_GRACE_S):
                    await status.until_done()
            # A process that escaped the call (no PID namespace) may still hold the pipes: stop reading soon.
            readers.cancel_scope.deadline = anyio.current_time() + _DRAIN_AFTER_EXIT_S
    finally:
        if control is not None:
            control.detach()
        with anyio.CancelScope(shield=True):
            if status.exit_status is None and status.error is None:
                box.signal(call.id, signal.SIGKILL)
            for fd in ours:
                with contextlib.suppress(OSError):
                    os.close(fd)
            if options["overlays"] and not copy.final:
                await _until_final(box, call.id, copy, status)
            else:
                box.forget(call.id)  # its end needs no waiting for (or it was never on a copy)
            status.sock.close()
    if status.error is not None:
        # OSError(errno, …) is the errno's own subclass (FileNotFoundError, PermissionError, …), as from Popen.
        raise OSError(*status.error)
    code, sig = _exit_of(status)
    return replace(RunResult.of(out, err, code, sig, timed_out, started_at), disk_low=disk.low)
