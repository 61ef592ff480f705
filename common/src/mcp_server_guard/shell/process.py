"""Running a command cleanly: scrubbed environment, own process group, bounded output, no orphans.

* The environment it gets is built from scratch (``environment.build_env``).
* Each run is its own session and process group. A timeout sends SIGTERM to the group, then SIGKILL
  after a grace period; when the main process ends, whatever it left in its group is killed too, and
  so is the group when the call is cancelled or the server shuts down.
* stdout and stderr are read concurrently into bounded buffers that keep the head and the tail (``output``), so
  the server's memory does not grow with what a command prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import IO, TYPE_CHECKING

import anyio

from mcp_server_guard.changes.changeset import NO_RENAMES, Renamed
from mcp_server_guard.shell.output import OutputBuffer, Progress, Ticker, output_buffers
from mcp_server_guard.shell.sandbox.lifetime import children, reap_orphans
from mcp_server_guard.shell.sandbox.planning import Confinement

if TYPE_CHECKING:
    from mcp_server_guard.changes.results import Settled
    from mcp_server_guard.shell.egress import Denied

KILL_GRACE_S = 2.0
_DRAIN_AFTER_EXIT_S = 2.0
_CHUNK = 65536


class Pause:
    """Time a command spends waiting on a human (a question its egress proxy asks): added to its timeout, so a
    slow answer does not kill the command it was asked for."""

    def __init__(self, most: float = 300.0) -> None:
        self.most = most  # at most this much is added, however many questions wait (a bounded timeout)
        self._open = 0
        self._since = 0.0
        self._total = 0.0

    def begin(self) -> None:
        if self._open == 0:
            self._since = time.monotonic()
        self._open += 1

    def end(self) -> None:
        self._open -= 1
        if self._open == 0:
            self._total += time.monotonic() - self._since

    @property
    def active(self) -> bool:
        return self._open > 0 and self.total() < self.most

    def total(self) -> float:
        """Seconds paused so far, the current wait included (at most ``most``)."""
        return min(self.most, self._total + (time.monotonic() - self._since if self._open else 0.0))


async def wait_with_pauses(done: Callable[[], Awaitable[None]], timeout: float, pause: Pause | None) -> bool:
    """Await ``done()`` for ``timeout`` seconds plus the time ``pause`` was paused; False when time ran out."""
    end = time.monotonic() + timeout
    while True:
        paused = pause.total() if pause is not None else 0.0
        left = end + paused - time.monotonic()
        if pause is not None and pause.active:
            left = max(left, 0.25)  # a question is open: look again soon, never time out meanwhile
        if left <= 0:
            return False
        with anyio.move_on_after(left) as deadline:
            await done()
        if not deadline.cancelled_caught:
            return True


@dataclass
class Copy:
    """The copy a boxed command works on: its name in the areas (said by the call's init before the command
    starts), and whether every process of the call has ended (its upper layers are final)."""

    name: str = ""
    final: bool = False
    # Nothing in it, and its init took it back for a later call (see ``shell.sandbox.worker``): neither read nor
    # removed here.
    untouched: bool = False
    stopped: int = 0  # processes the command left running when it ended: stopped then (see ``shell.in_box``)
    moved: Renamed = NO_RENAMES  # what its renames made, by upper inode (``shell.sandbox.renames``)
    started_ns: int = 0  # when the command started, by the file systems' clock
    # A background job's: the ctime each path had when a look applied it (see changes.apply), and the lock that
    # keeps two applies of the same copy apart.
    baseline: dict[str, int] = field(default_factory=dict)
    busy: anyio.Lock = field(default_factory=anyio.Lock)
    discarded: bool = False  # it went (the call applies nothing): no look reads it any more


class Control:
    """Hands on a running command for whoever keeps it past its call (a background job): its output as it comes
    (``tee(stream, chunk)``, stream 1 or 2), its stdin kept open (``keep_stdin``), and signals to its whole group
    (or, in the box, its PID namespace)."""

    def __init__(
        self, tee: Callable[[int, bytes], None] | None = None, *, keep_stdin: bool = False, looks: bool = False
    ) -> None:
        self.tee = tee
        self.keep_stdin = keep_stdin
        self.looks = looks  # a background job's: what it did so far is applied while it runs (its looks)
        self._stdin: int | None = None  # ours alone: only close_stdin closes it
        self._signal: Callable[[int], None] | None = None
        self._write_lock = anyio.Lock()
        self._close_after_write = False
        self.settled = anyio.Event()  # the command started (attach), or never will (see JobTable)
        self.copy = Copy()  # the copy it works on, once it started (a job's looks apply what it did so far)
        # what became of its changes once it ended, and the audit id they were settled under (set by whoever settles
        # them)
        self.outcome: tuple[Settled, str] | None = None

    def attach(self, send_signal: Callable[[int], None], stdin_fd: int | None) -> None:
        """The runner, once the command started: how to signal it, and its stdin (now owned here)."""
        self._signal = send_signal
        self._stdin = stdin_fd
        self.settled.set()

    def detach(self) -> None:
        """The command ended: no more signals; its stdin is closed."""
        self._signal = None
        self.close_stdin()

    def signal(self, signum: int) -> bool:
        if self._signal is None:
            return False
        self._signal(signum)
        return True

    @property
    def stdin_open(self) -> bool:
        return self._stdin is not None and not self._close_after_write

    async def write_stdin(self, data: bytes, within: float = 10.0) -> int:
        """Write to the command's stdin, in order, for at most ``within`` seconds; the bytes written (fewer when
        the command does not read them, closed its stdin or ended). Non-blocking on the event loop: a command
        that never reads cannot hold a call, or a worker thread, forever."""
        await self.settled.wait()
        done = 0
        async with self._write_lock:
            with anyio.move_on_after(within):
                while done < len(data):
                    fd = self._stdin
                    if fd is None or self._close_after_write:
                        break
                    os.set_blocking(fd, False)
                    try:
                        # No await between the check above and this write: close_stdin (on this loop) cannot
                        # slip in, so the fd is still the command's.
                        done += os.write(fd, data[done : done + 65536])
                    except BlockingIOError:
                        with anyio.move_on_after(0.1):  # short: a close_stdin meanwhile is seen at the next turn
                            await anyio.wait_writable(fd)
                    except OSError:
                        break  # the command closed its stdin or ended
            if self._close_after_write:
                self._close_after_write = False
                self._close_now()
        return done

    def close_stdin(self) -> None:
        """EOF for the command. A write in progress (waiting for the fd to be writable) closes it when it stops:
        closing under its wait would leave the event loop watching an fd number the next socket may reuse."""
        if self._write_lock.locked():
            self._close_after_write = True
            return
        self._close_now()

    def _close_now(self) -> None:
        fd, self._stdin = self._stdin, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


@dataclass(frozen=True)
class RunResult:
    stdout: str
    stderr: str
    exit_code: int
    signal: str | None
    timed_out: bool
    stdout_bytes: int
    stderr_bytes: int
    truncated: bool
    duration_ms: float
    copy: str = ""  # the copy the command worked on ("" when it wrote the real tree directly)
    copy_final: bool = False  # every process of the call had ended when it returned: the copy is what it did
    copy_untouched: bool = False  # the copy holds nothing and is its init's again (see ``Copy.untouched``)
    copy_moved: Renamed = NO_RENAMES  # see ``Copy.moved``
    read_only: bool = False  # it only read (see ``shell.strings.reading``): it ran on a read-only view, with no copy
    started_ns: int = 0  # when it started, by the file systems' clock (see changes.nofollow.now_ns)
    network_denied: tuple[Denied, ...] = ()  # --network policy: what the egress proxy refused for this call
    network_allowed: tuple[str, ...] = ()  # --network policy: host:port the proxy let through for this call
    stopped: int = 0  # processes still running when the command's own process ended: stopped with it
    disk_low: bool = False  # stopped because the disk holding its copy ran low (see ``shell.in_box.DiskWatch``)

    def on(self, copy: Copy, started_ns: int) -> RunResult:
        """This result, of a command that worked on ``copy`` (started at ``started_ns``)."""
        return replace(
            self, copy=copy.name, copy_final=copy.final, copy_untouched=copy.untouched, copy_moved=copy.moved,
            started_ns=started_ns,
            stopped=copy.stopped,
        )  # fmt: skip

    @classmethod
    def of(
        cls, out: OutputBuffer, err: OutputBuffer, code: int, sig: str | None, timed_out: bool, started: float
    ) -> RunResult:
        """One run's result from its output buffers (both runners, boxed or not, end here)."""
        stdout_text, stderr_text = out.render(), err.render()  # rendering decides `truncated` too
        return cls(
            stdout=stdout_text,
            stderr=stderr_text,
            exit_code=code,
            signal=sig,
            timed_out=timed_out,
            stdout_bytes=out.total,
            stderr_bytes=err.total,
            truncated=out.truncated or err.truncated,
            duration_ms=(time.perf_counter() - started) * 1000,
        )


class ProcessRegistry:
    """The commands this server runs, so that orphans can be told from them and nothing outlives the server.

    Spawns happen on other threads, so everything here is guarded by one lock. The orphan sweep (kill and
    reap children that belong to no call: daemons reparented to us as subreaper) waits until no spawn is
    in flight and no call is running: a child that a spawn has just created, or a call's own ``setsid``
    helper, is never mistaken for an orphan (doing so reaped other calls' commands, which then read as
    exit 0).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()  # process groups of running calls (their leaders' pids)
        self._spawning = 0
        self._closed = False

    @contextlib.contextmanager
    def spawning(self) -> Iterator[None]:
        """Bracket a spawn: no sweep runs while a child may exist that is not registered yet."""
        with self._lock:
            if self._closed:
                raise ServerClosing
            self._spawning += 1
        try:
            yield
        finally:
            with self._lock:
                self._spawning -= 1

    def add(self, pgid: int) -> None:
        """Register a call's process group; called on the spawning thread, inside :meth:`spawning`."""
        with self._lock:
            self._groups.add(pgid)

    def discard(self, pgid: int) -> None:
        with self._lock:
            self._groups.discard(pgid)

    @property
    def active(self) -> int:
        with self._lock:
            return len(self._groups) + self._spawning

    def sweep(self) -> int:
        """Kill orphans left by finished calls, once no call runs and no spawn is in flight."""
        with self._lock:
            if self._groups or self._spawning:
                return 0  # a running call's children are not orphans yet; the last call to end sweeps
            return reap_orphans(())

    def kill_all(self, *, wait: float = 1.0) -> None:
        """Server shutdown: kill every call's group and every orphan, and refuse new spawns.

        Orphans reach us asynchronously (a ``setsid`` child is reparented only once its parent has died),
        so the sweep repeats until no child is left or ``wait`` seconds have passed.
        """
        with self._lock:
            self._closed = True
            groups = list(self._groups)
            self._groups.clear()
        for pgid in groups:
            kill_group(pgid, signal.SIGKILL)
        deadline = time.monotonic() + wait
        while True:
            reap_orphans(())
            if not children() or time.monotonic() > deadline:
                return
            time.sleep(0.005)


class ServerClosing(Exception):
    """The server is shutting down: no new command starts."""


REGISTRY = ProcessRegistry()


def kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _pump(stream: asyncio.StreamReader, buffer: OutputBuffer) -> None:
    while chunk := await stream.read(_CHUNK):
        buffer.feed(chunk)


async def write_stdin(fd: int, data: bytes) -> None:
    """Write a call's stdin to the pipe ``fd`` as the command reads it: non-blocking writes on the event loop,
    waiting for the pipe to take more in between; returns once all is written, or the command closed its stdin
    or ended (the pipe breaks). The caller closes ``fd`` (once this has returned, or was cancelled: it never
    closes an fd the loop is still watching).

    No worker thread: a command that never reads its stdin held one blocked write for its whole run, and forty
    of them held every thread of anyio's pool, so a call that needed one for a moment (the socket scan, a long
    line's check, reading a changed copy) waited for those commands to end."""
    view = memoryview(data)
    os.set_blocking(fd, False)
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        while view:
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(fd)


async def _feed(pipe: IO[bytes], data: bytes) -> None:
    """Feed an unboxed command's stdin (see ``write_stdin``), then close the pipe."""
    try:
        with contextlib.suppress(OSError):
            await write_stdin(pipe.fileno(), data)
    finally:
        with contextlib.suppress(OSError):
            pipe.close()


async def _spawn(
    argv: Sequence[str],
    cwd: str,
    env: Mapping[str, str],
    stdin: bool,
    confinement: Confinement | None,
    registry: ProcessRegistry,
) -> subprocess.Popen[bytes]:
    """Start the command and register its group before anyone can sweep. A confined spawn runs on a fresh
    thread that confines itself first (Landlock is per thread); its limits are set in the child before exec."""

    def start() -> subprocess.Popen[bytes]:
        with registry.spawning():
            if confinement is not None and confinement.in_thread:
                confinement.enter_thread()
            proc = _popen()
            registry.add(proc.pid)  # session leader: its pid is the group id
        return proc

    def _popen() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            preexec_fn=confinement.preexec if confinement is not None else None,  # noqa: PLW1509
        )

    if confinement is None or not confinement.in_thread:
        return start()
    loop = asyncio.get_running_loop()
    future: asyncio.Future[subprocess.Popen[bytes]] = loop.create_future()

    def settle(proc: subprocess.Popen[bytes] | None, exc: BaseException | None) -> None:
        if future.done():
            return
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(proc)  # type: ignore[arg-type]

    def on_thread() -> None:
        try:
            proc = start()
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            loop.call_soon_threadsafe(settle, None, exc)
        else:
            loop.call_soon_threadsafe(settle, proc, None)

    # A fresh thread each time: once Landlocked (and maybe moved to a new netns) it must never be reused.
    threading.Thread(target=on_thread, name="mcp-guard-spawn", daemon=True).start()
    with anyio.CancelScope(shield=True):  # a started process must be registered and killed, not lost
        proc = await future
    return proc


async def _exited(proc: subprocess.Popen[bytes]) -> None:
    """Wait for the process itself to exit (not for its pipes to close: a background child may hold them)."""
    if proc.returncode is not None:
        return  # already reaped: its pid may belong to someone else now
    loop = asyncio.get_running_loop()
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        while proc.poll() is None:
            await anyio.sleep(0.005)
        return
    event = asyncio.Event()
    loop.add_reader(pidfd, event.set)
    try:
        await event.wait()
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
    proc.wait()


async def _reader(pipe: IO[bytes] | None) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_CHUNK, loop=loop)
    assert pipe is not None
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
    return reader


async def run(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    stdin: bytes | None,
    timeout: float,
    max_output: int,
    confinement: Confinement | None = None,
    registry: ProcessRegistry = REGISTRY,
    progress: Progress | None = None,
    control: Control | None = None,
) -> RunResult:
    """Run ``argv`` in its own process group (confined when given) and return its bounded output."""
    started = time.perf_counter()
    out, err = output_buffers(max_output, control.tee if control is not None else None)
    ticker = Ticker(progress, out, err, started)
    timed_out = False
    keep = control is not None and control.keep_stdin
    process = await _spawn(argv, cwd, env, stdin is not None or keep, confinement, registry)
    pgid = process.pid  # session leader: its pid is the group id
    if control is not None:
        kept = None
        if keep and process.stdin is not None:
            kept = os.dup(process.stdin.fileno())
            process.stdin.close()
            process.stdin = None
        control.attach(partial(kill_group, pgid), kept)
    try:
        stdout, stderr = await _reader(process.stdout), await _reader(process.stderr)
        async with anyio.create_task_group() as readers:
            readers.start_soon(_pump, stdout, out)
            readers.start_soon(_pump, stderr, err)
            readers.start_soon(ticker.run)
            if stdin is not None and process.stdin is not None:
                readers.start_soon(_feed, process.stdin, stdin)
            with anyio.move_on_after(timeout) as deadline:
                await _exited(process)
            if deadline.cancelled_caught:
                timed_out = True
                kill_group(pgid, signal.SIGTERM)
                with anyio.move_on_after(KILL_GRACE_S):
                    await _exited(process)
            # The call is over: nothing it started may outlive it (and hold our pipes open).
            ticker.stop()
            kill_group(pgid, signal.SIGKILL)
            await _exited(process)
            # A process that left the group (setsid) may still hold the pipes: stop reading soon.
            readers.cancel_scope.deadline = anyio.current_time() + _DRAIN_AFTER_EXIT_S
    finally:
        if control is not None:
            control.detach()
        with anyio.CancelScope(shield=True):
            kill_group(pgid, signal.SIGKILL)
            with anyio.move_on_after(KILL_GRACE_S):
                await _exited(process)
            # Only once reaped: until then a sweep could reap it first and its status would be lost.
            registry.discard(pgid)
            registry.sweep()
    code = process.returncode if process.returncode is not None else -signal.SIGKILL
    sig = None
    if code < 0:
        sig = signal.Signals(-code).name if -code in signal.valid_signals() else f"SIG{-code}"
        code = 128 - code
    return RunResult.of(out, err, code, sig, timed_out, started)
