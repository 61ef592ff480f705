"""Running a command cleanly: scrubbed environment, own process group, bounded output, no orphans.

* The environment is built from scratch: a short allow-list taken from the server's own environment,
  plus the caller's ``env`` after refusing names that make programs run other code (``LD_*``,
  ``BASH_ENV``, ``PYTHON*``, ``GIT_*`` …) and bash function exports (values starting ``()``).
* Each run is its own session and process group. A timeout sends SIGTERM to the group, then SIGKILL
  after a grace period; when the main process ends, whatever it left in its group is killed too, and
  so is the group when the call is cancelled or the server shuts down.
* stdout and stderr are read concurrently into bounded buffers that keep the head and the tail, so
  the server's memory does not grow with what a command prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import IO, TYPE_CHECKING

import anyio

from mcp_server_guard.errors import SecurityError

if TYPE_CHECKING:
    from mcp_server_guard.sandbox import Confinement

# Taken from the server's own environment; everything else is dropped.
BASE_ENV_NAMES = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TZ")
BASE_ENV_PATTERNS = ("LC_*",)
# Refused in the caller's env: each makes some program load or run code the caller chose.
REFUSED_ENV_PATTERNS = (
    "LD_*", "DYLD_*", "BASH_ENV", "ENV", "BASH_FUNC_*", "PROMPT_COMMAND", "PS4", "IFS", "SHELLOPTS",
    "BASHOPTS", "NODE_OPTIONS", "PYTHON*", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "GIT_*",
    "GCONV_PATH", "MALLOC_*", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "ZDOTDIR", "EDITOR", "VISUAL", "PAGER",
    "SSH_ASKPASS", "LESSOPEN", "LESSCLOSE",
)  # fmt: skip
KILL_GRACE_S = 2.0
_DRAIN_AFTER_EXIT_S = 2.0
_CHUNK = 65536


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def base_env(source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed part of the server's own environment (computed once per server)."""
    source = os.environ if source is None else source
    env = {k: v for k, v in source.items() if k in BASE_ENV_NAMES or _matches(k, BASE_ENV_PATTERNS)}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


def build_env(extra: Mapping[str, str] | None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: the allow-listed basics plus the caller's (filtered) variables."""
    env = dict(base_env() if base is None else base)
    for name, value in (extra or {}).items():
        if not name or "=" in name or "\x00" in name or "\x00" in value:
            raise SecurityError("ENV_REFUSED", f"Environment name {name!r} is not valid.", "Use NAME=value pairs.")
        if _matches(name, REFUSED_ENV_PATTERNS):
            # Defense in depth: these make the shell or an interpreter run code chosen by the caller.
            raise SecurityError(
                "ENV_REFUSED",
                f"Setting {name} is refused: it makes programs load or run other code.",
                "Pass options on the command line instead of through the environment.",
            )
        if value.startswith("()"):
            raise SecurityError(
                "ENV_REFUSED",
                f"The value of {name} looks like an exported bash function.",
                "Pass plain values only.",
            )
        env[name] = value
    return env


class OutputBuffer:
    """Keeps the first and last bytes of a stream, counting the rest."""

    def __init__(self, limit: int) -> None:
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail_size - len(self.tail[0]) >= self.tail_limit:
            self.tail_size -= len(self.tail.popleft())

    @property
    def truncated(self) -> bool:
        return self.total > self.head_limit + self.tail_limit

    def render(self) -> str:
        tail = b"".join(self.tail)
        if not self.truncated:
            return (bytes(self.head) + tail).decode("utf-8", "replace")
        tail = tail[-self.tail_limit :]
        omitted = self.total - len(self.head) - len(tail)
        return (
            bytes(self.head).decode("utf-8", "replace")
            + f"\n[... {omitted} bytes omitted ...]\n"  # ASCII: a non-ASCII marker doubles the string's memory
            + tail.decode("utf-8", "replace")
        )


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


class ProcessRegistry:
    """Process groups still running, so a server shutting down can kill them all."""

    def __init__(self) -> None:
        self._groups: set[int] = set()

    def add(self, pgid: int) -> None:
        self._groups.add(pgid)

    def discard(self, pgid: int) -> None:
        self._groups.discard(pgid)

    def kill_all(self) -> None:
        for pgid in list(self._groups):
            kill_group(pgid, signal.SIGKILL)
        self._groups.clear()
        self.reap_orphans()

    def reap_orphans(self) -> None:
        """Kill what our runs left behind outside their groups (reparented to us as subreaper)."""
        from mcp_server_guard.sandbox import reap_orphans

        reap_orphans(self._groups)


REGISTRY = ProcessRegistry()


def kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _pump(stream: asyncio.StreamReader, buffer: OutputBuffer) -> None:
    while chunk := await stream.read(_CHUNK):
        buffer.feed(chunk)


def _feed(pipe: IO[bytes], data: bytes) -> None:
    """Write stdin from a worker thread; a command that exits early just closes the pipe on us."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
        pipe.write(data)
    with contextlib.suppress(OSError):
        pipe.close()


async def _spawn(
    argv: Sequence[str], cwd: str, env: Mapping[str, str], stdin: bool, confinement: Confinement | None
) -> subprocess.Popen[bytes]:
    """Start the command. A confined spawn runs on a fresh thread that confines itself first, so
    subprocess can still vfork (a preexec_fn would force a fork of the whole server)."""

    def start() -> subprocess.Popen[bytes]:
        if confinement is not None and confinement.in_thread:
            confinement.enter_thread()
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            preexec_fn=confinement.preexec if confinement is not None and confinement.in_child else None,  # noqa: PLW1509
        )
        if confinement is not None:
            confinement.limit(proc.pid)
        return proc

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
) -> RunResult:
    """Run ``argv`` in its own process group (confined when given) and return its bounded output."""
    started = time.perf_counter()
    out, err = OutputBuffer(max_output), OutputBuffer(max_output)
    timed_out = False
    process = await _spawn(argv, cwd, env, stdin is not None, confinement)
    pgid = process.pid  # session leader: its pid is the group id
    registry.add(pgid)
    try:
        stdout, stderr = await _reader(process.stdout), await _reader(process.stderr)
        async with anyio.create_task_group() as readers:
            readers.start_soon(_pump, stdout, out)
            readers.start_soon(_pump, stderr, err)
            if stdin is not None and process.stdin is not None:
                readers.start_soon(
                    partial(anyio.to_thread.run_sync, _feed, process.stdin, stdin, abandon_on_cancel=True)
                )
            with anyio.move_on_after(timeout) as deadline:
                await _exited(process)
            if deadline.cancelled_caught:
                timed_out = True
                kill_group(pgid, signal.SIGTERM)
                with anyio.move_on_after(KILL_GRACE_S):
                    await _exited(process)
            # The call is over: nothing it started may outlive it (and hold our pipes open).
            kill_group(pgid, signal.SIGKILL)
            await _exited(process)
            # A process that left the group (setsid) may still hold the pipes: stop reading soon.
            readers.cancel_scope.deadline = anyio.current_time() + _DRAIN_AFTER_EXIT_S
    finally:
        with anyio.CancelScope(shield=True):
            kill_group(pgid, signal.SIGKILL)
            registry.discard(pgid)
            with anyio.move_on_after(KILL_GRACE_S):
                await _exited(process)
            registry.reap_orphans()
    code = process.returncode if process.returncode is not None else -signal.SIGKILL
    sig = None
    if code < 0:
        sig = signal.Signals(-code).name if -code in signal.valid_signals() else f"SIG{-code}"
        code = 128 - code
    return RunResult(
        stdout=out.render(),
        stderr=err.render(),
        exit_code=code,
        signal=sig,
        timed_out=timed_out,
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        truncated=out.truncated or err.truncated,
        duration_ms=(time.perf_counter() - started) * 1000,
    )
