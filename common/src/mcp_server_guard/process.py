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
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio

from mcp_server_guard.errors import SecurityError

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


REGISTRY = ProcessRegistry()


def kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Tells when the process itself exits: asyncio's Process.wait() also waits for every pipe to close,
    which a background child holding stdout would delay until the timeout."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


async def _pump(stream: asyncio.StreamReader | None, buffer: OutputBuffer) -> None:
    if stream is None:
        return
    while chunk := await stream.read(_CHUNK):
        buffer.feed(chunk)


async def _feed(process: asyncio.subprocess.Process, data: bytes) -> None:
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        process.stdin.write(data)
        await process.stdin.drain()
    with contextlib.suppress(OSError):
        process.stdin.close()


async def run(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    stdin: bytes | None,
    timeout: float,
    max_output: int,
    preexec: Callable[[], None] | None = None,
    registry: ProcessRegistry = REGISTRY,
) -> RunResult:
    """Run ``argv`` in its own process group and return its bounded output.

    ``preexec`` runs in the child between fork and exec (the sandbox's set-up).
    """
    started = time.perf_counter()
    out, err = OutputBuffer(max_output), OutputBuffer(max_output)
    timed_out = False
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _Protocol(_CHUNK, loop),
        *argv,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
        preexec_fn=preexec,
    )
    process = asyncio.subprocess.Process(transport, protocol, loop)
    pgid = process.pid  # session leader: its pid is the group id
    registry.add(pgid)
    try:
        async with anyio.create_task_group() as readers:
            readers.start_soon(_pump, process.stdout, out)
            readers.start_soon(_pump, process.stderr, err)
            if stdin is not None:
                readers.start_soon(_feed, process, stdin)
            with anyio.move_on_after(timeout) as deadline:
                await protocol.exited.wait()
            if deadline.cancelled_caught:
                timed_out = True
                kill_group(pgid, signal.SIGTERM)
                with anyio.move_on_after(KILL_GRACE_S):
                    await protocol.exited.wait()
            # The call is over: nothing it started may outlive it (and hold our pipes open).
            kill_group(pgid, signal.SIGKILL)
            await protocol.exited.wait()
            # A process that left the group (setsid) may still hold the pipes: stop reading soon.
            readers.cancel_scope.deadline = anyio.current_time() + _DRAIN_AFTER_EXIT_S
    finally:
        with anyio.CancelScope(shield=True):
            kill_group(pgid, signal.SIGKILL)
            registry.discard(pgid)
            with anyio.move_on_after(KILL_GRACE_S):
                await protocol.exited.wait()
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.feed_eof()
            if process.stdin is not None:
                process.stdin.close()
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
