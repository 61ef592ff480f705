"""The server's side of the box: start the supervisor (inside bubblewrap when the plan says so), ask it to
start commands, signal them, and take everything down with the server.

One box per server, prepared once: bubblewrap's namespaces and mounts are paid at start-up. The supervisor
forks each call's init ahead of time and offers it here; a call goes straight to an offered init (see
``supervisor``), and through the supervisor only when none is at hand. The supervisor is
started from the thread that runs the event loop, which lives as long as the server: bubblewrap's
``--die-with-parent`` (a parent-death signal) follows the spawning *thread*, not the process.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from mcp_server_guard.paths import within
from mcp_server_guard.shell.sandbox.frames import FrameReader, send_frame
from mcp_server_guard.shell.sandbox.landlock import SYSTEM_READ_DIRS
from mcp_server_guard.shell.sandbox.sockets import RUN_DIRS
from mcp_server_guard.shell.sandbox.wire import CallOptions, CallRequest

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger("mcp_server_guard.box")

_READY_TIMEOUT_S = 20.0
# A call that finds no ready init waits for one to come back from its call (an init serves calls in turn: see
# ``worker``) for as long as inits keep coming back (one in the last _RETURNS_S; at most _WAIT_FOR_INIT_S in all)
# before asking for a new one: in a burst of short commands, reusing an init costs a few milliseconds of CPU where
# making one costs about ten (and the supervisor makes them one at a time). With _BUSY calls or more running and
# none back yet (the start of a burst) it waits _WAIT_COLD_S for the first; long commands pay at most that.
_RETURNS_S = 0.050
_WAIT_FOR_INIT_S = 1.0
_WAIT_COLD_S = 0.020
_BUSY = max(2, os.cpu_count() or 1)
_ENDED_KEPT = 256  # calls whose end is remembered for a waiter that comes late
_SUPERVISOR = (
    "import sys; sys.path[:0] = [sys.argv[1]]; "
    "from mcp_server_guard.shell.sandbox.supervisor import main; main(sys.argv[2:])"
)
# The environment of bubblewrap and the supervisor: nothing of the server's (API keys stay outside the box).
_BOX_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


class BoxUnavailable(Exception):
    """The box could not be started (and the plan required it)."""


@dataclass(frozen=True)
class BoxSpec:
    """How to build the box, decided once at start-up."""

    bwrap: str | None  # bubblewrap's path; None runs the supervisor directly
    namespaces: bool  # each call in its own PID and mount namespace (fresh /proc, private /tmp)
    network_isolated: bool  # bubblewrap's empty network namespace (--network deny)
    read_all: bool  # the whole file system readable (read-only), or only the system and the jail
    roots: tuple[str, ...]  # the allowed roots: writable, bound into the box at their own paths
    hidden: tuple[str, ...] = ()  # existing paths that commands must not see (credentials)
    readable: tuple[str, ...] = ()  # extra read-only directories for a jail-only read scope
    # the filter every command runs under, in its two parts; and the late part that also sends the rename calls
    # to the init (for commands on a copy)
    seccomp: tuple[bytes, bytes, bytes] | None = None
    usual: str = ""  # a usual call's options (JSON): each ready init sets up that much ahead of its call
    reading: str = ""  # ... and a call that only reads (``shell.strings.reading``): an init back from one prepares that
    # --network policy: every call in its own (empty) network namespace, where its init listens on 127.0.0.1 for
    # the server's egress proxy and hands the listening socket out on the call's status socket.
    egress: bool = False
    areas: tuple[str, ...] = ()  # where the copies commands work on live (bound writable; each call hides them)
    copies: bool = False  # the usual call works on a copy: the supervisor probes that it can, at start

    def bwrap_argv(self, fd: int, passed: dict[str, int] | None = None) -> list[str]:
        """bubblewrap's command line for this spec; the supervisor talks over ``fd``."""
        assert self.bwrap is not None
        argv = [self.bwrap, "--new-session", "--die-with-parent", "--unshare-user", "--disable-userns"]
        argv += ["--assert-userns-disabled", "--cap-drop", "ALL"]
        if self.namespaces:
            # The supervisor builds each call's PID and mount namespaces; commands get no capability at all.
            argv += ["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP"]
            if self.egress:
                argv += ["--cap-add", "CAP_NET_ADMIN"]  # loopback up in each call's network namespace
        if self.copies:
            # overlayfs works in its upper and work directories with its mounter's rights (its work directory has
            # no permission bits at all): the call's init mounts it with these, inside the box's user namespace,
            # and drops them (every one) before the command starts.
            argv += ["--cap-add", "CAP_DAC_OVERRIDE", "--cap-add", "CAP_FOWNER"]
        argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        if self.network_isolated or self.egress:
            argv.append("--unshare-net")
        if self.read_all:
            argv += ["--ro-bind", "/", "/"]
        else:
            for path in (*_system_dirs(), *self.readable):
                argv += ["--ro-bind-try", path, path]
        argv += ["--dev", "/dev"]
        # A per-call /proc can only be mounted where a fully visible one exists; commands never see this one
        # (each call mounts its own over it, and has no capability to unmount).
        argv += ["--dev-bind", "/proc", "/proc"] if self.namespaces else ["--proc", "/proc"]
        argv += ["--tmpfs", "/tmp"]  # noqa: S108 - the box's own, empty
        argv += _empty_run()
        for path in interpreter_dirs_in_tmp(self.roots):
            # Installed (or cloned) under /tmp: what the supervisor runs from, read-only, above the box's own /tmp.
            argv += ["--ro-bind", path, path]
        for root in self.roots:
            argv += ["--bind", root, root]
        for area in self.areas:
            argv += ["--bind", area, area]
        for path in self.hidden:
            argv += ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]
        argv += ["--chdir", "/", "--", *self.supervisor_argv(fd, passed)]
        return argv

    def supervisor_argv(self, fd: int, passed: dict[str, int] | None = None) -> list[str]:
        """The supervisor's command line; ``passed`` names the pipes that carry the seccomp program and the
        usual options (data goes through pipes, not the command line)."""
        options = ["namespaces"] if self.namespaces else []
        options += ["egress"] if self.egress else []
        options += [f"{name}={pipe}" for name, pipe in (passed or {}).items()]
        return [sys.executable, "-I", "-S", "-c", _SUPERVISOR, _package_root(), str(fd), *options]


def _empty_run() -> list[str]:
    """Threat: a daemon's socket under /run (docker's, the buses, journald's, a user's runtime directory), present
    now or bound later, restarted, renamed or nested deep: the box's /run is its own, empty (no socket to name,
    whatever happens there), with only the resolver's configuration bound back when /etc/resolv.conf points there."""
    argv: list[str] = []
    for path in RUN_DIRS:
        if os.path.isdir(path) and not os.path.islink(path):
            argv += ["--tmpfs", path]
    resolv = os.path.realpath("/etc/resolv.conf")
    if any(within(resolv, path) for path in RUN_DIRS) and os.path.isfile(resolv):
        argv += ["--ro-bind", resolv, resolv]
    return argv


def _package_root() -> str:
    """The directory that holds the ``mcp_server_guard`` package (the supervisor runs with no site-packages)."""
    return str(Path(__file__).resolve().parents[3])


def _interpreter_dirs() -> list[str]:
    """Where the server's Python and this package live (a venv, the base installation, the source tree)."""
    python = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable)), _package_root()}
    python.add(os.path.dirname(os.path.abspath(sys.executable)))
    return sorted(python)


def interpreter_dirs_in_tmp(roots: Sequence[str]) -> list[str]:
    """Those of them under /tmp, which the box's own empty /tmp would hide (a clone or an install under the system
    temp dir), other than those inside a root (a root is bound as it is)."""
    tmp = "/tmp"  # noqa: S108 - compared, never written
    return [d for d in _interpreter_dirs() if within(d, tmp) and not any(within(d, root) for root in roots)]


def _system_dirs() -> list[str]:
    return [d for d in SYSTEM_READ_DIRS if d not in ("/proc", "/dev")] + _interpreter_dirs()


class _Relay:
    """The box's stderr: passed on to ours as it comes (the supervisor's warnings), its last lines kept so that a
    box that does not start can say why in bubblewrap's own words. Never blocks the box: a thread reads it."""

    def __init__(self, stream: Any) -> None:
        self._lines: collections.deque[str] = collections.deque(maxlen=8)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._pump, args=(stream,), name="box-stderr", daemon=True)
        self._thread.start()

    def _pump(self, stream: Any) -> None:
        try:
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip("\n")
                self._lines.append(line[:500])
                with contextlib.suppress(OSError, ValueError):
                    sys.stderr.write(line + "\n")
        except (OSError, ValueError):
            pass
        finally:
            self._done.set()
            with contextlib.suppress(OSError):
                stream.close()

    def last(self, timeout: float) -> str:
        """The last lines, once the stream ended (or after ``timeout``)."""
        self._done.wait(timeout)
        return " / ".join(line for line in self._lines if line.strip())


def _pipe_with(data: bytes) -> int:
    """The read end of a pipe that holds ``data`` (a few KiB: fits the pipe's buffer) and then EOF."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, data)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    return read_end


@dataclass
class Started:
    """A command the supervisor is starting: our ends of its pipes."""

    id: int
    stdin: int | None  # write end (None: the command reads /dev/null)
    stdout: int
    stderr: int
    status: int  # JSON lines from the call's init


@dataclass
class Box:
    spec: BoxSpec
    _sock: socket.socket | None = None
    _proc: subprocess.Popen[bytes] | None = None
    _stderr: _Relay | None = None  # the box's stderr, passed on (its last lines kept for a start that fails)
    _ready: bool = False
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _reader: FrameReader | None = None
    _offered: collections.deque[tuple[int, socket.socket]] = field(default_factory=collections.deque)
    notes: list[str] = field(default_factory=list)
    _gone: dict[int, anyio.Event] = field(default_factory=dict)  # calls someone waits to see end
    _ended_recently: dict[int, None] = field(default_factory=dict)  # calls that ended with nobody waiting yet
    _watched: tuple[socket.socket, asyncio.AbstractEventLoop] | None = None  # read by that loop as frames arrive
    copy_error: str | None = None  # whether commands can work on a copy: "" yes, else why not (None: not known yet)
    # Calls waiting for an offered init, first come first served: an offer wakes one (not every waiting call).
    _waiting: collections.deque[anyio.Event] = field(default_factory=collections.deque)
    _running: set[int] = field(default_factory=set)  # calls started and not over (forgotten or gone)
    _returned_at: float = -1.0  # when an init last came back from a call (monotonic)

    # -- life cycle --------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the supervisor; call from the thread that runs the event loop (see the module docstring)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pipes: dict[str, int] = {}
        try:
            fd = theirs.fileno()
            early, late, notify = self.spec.seccomp or (b"", b"", b"")
            usual = self.spec.usual.encode()
            named = {
                "seccomp": early, "seccomp_late": late, "seccomp_notify": notify, "usual": usual,
                "reading": self.spec.reading.encode(),
            }  # fmt: skip
            for name, data in named.items():
                if data:
                    pipes[name] = _pipe_with(data)
            argv = self.spec.bwrap_argv(fd, pipes) if self.spec.bwrap else self.spec.supervisor_argv(fd, pipes)
            self._proc = subprocess.Popen(
                argv,
                pass_fds=[fd, *pipes.values()],
                env=_BOX_ENV,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd="/",
            )
            self._stderr = _Relay(self._proc.stderr)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
            for end in pipes.values():
                os.close(end)
        self._sock, self._ready, self._reader = ours, False, FrameReader(ours)

    def wait_ready(self, timeout: float = _READY_TIMEOUT_S) -> None:
        """Block until the supervisor says it is ready (start-up checks); raise BoxUnavailable if it dies."""
        assert self._sock is not None
        self._sock.settimeout(timeout)
        try:
            data = self._take_ready(self._sock)
        except OSError as exc:
            raise BoxUnavailable(f"the box did not start: {exc}") from None
        finally:
            self._sock.settimeout(None)
        if not data:
            code = self._proc.wait(timeout=5) if self._proc is not None else None
            said = self._stderr.last(timeout=2.0) if self._stderr is not None else ""
            raise BoxUnavailable(
                f"the box did not start (exit status {code}" + (f"; it said: {said})" if said else ")")
            )
        self._ready = True
        if self.spec.copies:
            self._sock.settimeout(timeout)
            try:
                while self.copy_error is None and self._reader is not None and self._reader.read():
                    self._dispatch(self._reader.frames())
            except OSError as exc:
                raise BoxUnavailable(f"the box did not start: {exc}") from None
            finally:
                self._sock.settimeout(None)
            if self.copy_error is None:
                raise BoxUnavailable("the box ended before it said whether commands can work on a copy")

    def _take_ready(self, sock: socket.socket) -> bool:
        """Read the ready byte."""
        return sock.recv(1) == b"R"

    async def ready(self) -> None:
        """Start the box again if its supervisor ended; return once it is ready."""
        await self._ensure()

    async def _ensure(self) -> socket.socket:
        if self._sock is None or (self._proc is not None and self._proc.poll() is not None):
            if self._sock is not None:
                log.warning(
                    "the box supervisor ended (exit status %s); starting a new one",
                    self._proc and self._proc.returncode,
                )
                self.close()
            self.start()
        assert self._sock is not None
        if not self._ready:
            sock = self._sock
            sock.setblocking(False)
            try:
                with anyio.fail_after(_READY_TIMEOUT_S):
                    await anyio.wait_readable(sock)
                ok = self._take_ready(sock)
            finally:
                sock.setblocking(True)
            if not ok:
                raise BoxUnavailable("the box supervisor did not start")
            self._ready = True
        return self._sock

    def close(self, timeout: float = 1.0) -> None:
        """Server exit: closing the socket makes the supervisor kill every call and leave."""
        self._drop_offers()
        self._unwatch()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=5)
            self._proc = None

    def _drop_offers(self) -> None:
        while self._offered:
            self._offered.popleft()[1].close()  # an init whose socket closes leaves

    def _collect_offers(self) -> None:
        """Take what the supervisor sent since the last look (without waiting): ready inits it offers, and the
        calls whose every process has ended."""
        if self._sock is None or self._reader is None:
            return
        while True:
            try:
                if not self._reader.read(socket.MSG_DONTWAIT):
                    break  # the supervisor is gone: the next call notices
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            self._dispatch(self._reader.frames())

    def _dispatch(self, frames: list[tuple[dict[str, Any], list[int]]]) -> None:
        for message, fds in frames:
            op = message.get("op")
            if op == "ready" and len(fds) == 1:
                self._offered.append((int(message["init"]), socket.socket(fileno=fds[0])))
                if message.get("again"):
                    self._returned_at = time.monotonic()
                if self._waiting:
                    self._waiting.popleft().set()
                continue
            if op == "gone":
                self._ended(int(message["id"]))
            elif op == "withdraw":
                self._withdraw(int(message["init"]))
            elif op == "probe":
                self.copy_error = str(message.get("copy", ""))
            for fd in fds:
                os.close(fd)

    def _withdraw(self, init: int) -> None:
        """The box rests (no call for a while): the offered init ``init`` goes, unless a call took it already."""
        for offer in self._offered:
            if offer[0] == init:
                self._offered.remove(offer)
                offer[1].close()  # an init whose socket closes leaves
                return

    def _ended(self, call: int) -> None:
        event = self._gone.get(call)
        if event is not None:
            event.set()
            return
        # Nobody waits (yet): remembered for a while, bounded (most calls' inits say themselves when they end).
        self._ended_recently[call] = None
        while len(self._ended_recently) > _ENDED_KEPT:
            del self._ended_recently[next(iter(self._ended_recently))]

    def _watch(self) -> None:
        """Read the supervisor's messages on the event loop as they arrive (from the loop's thread)."""
        import asyncio  # noqa: PLC0415 - running already; not loaded before the box begins (issue 44)

        loop = asyncio.get_running_loop()
        if self._sock is None or self._watched == (self._sock, loop):
            return
        self._unwatch()
        loop.add_reader(self._sock, self._collect_offers)
        self._watched = (self._sock, loop)

    def _unwatch(self) -> None:
        if self._watched is not None:
            sock, loop = self._watched
            with contextlib.suppress(RuntimeError, ValueError, OSError):
                if not loop.is_closed():
                    loop.remove_reader(sock)
            self._watched = None

    async def gone(self, call: int, timeout: float) -> bool:
        """Wait until every process of ``call`` has ended (its writes are final); False after ``timeout``."""
        self._watch()
        self._collect_offers()
        if self._ended_recently.pop(call, False) is None:
            return True
        event = self._gone[call] = anyio.Event()
        try:
            with anyio.move_on_after(timeout):
                await event.wait()
            return event.is_set()
        finally:
            del self._gone[call]
            self._running.discard(call)

    def forget(self, call: int) -> None:
        """Nobody will wait for ``call``'s end: drop what is kept for it."""
        self._ended_recently.pop(call, None)
        self._running.discard(call)

    async def _await_an_init(self) -> None:
        """No init at hand while inits keep coming back from short calls (or many calls just started): wait a
        moment for the next."""
        now = time.monotonic()
        busy = len(self._running) >= _BUSY
        if self._offered or (now - self._returned_at > _RETURNS_S and not busy):
            return
        self._watch()
        give_up = now + _WAIT_FOR_INIT_S
        cold = now + _WAIT_COLD_S if busy else now
        while not self._offered:
            remaining = min(max(self._returned_at + _RETURNS_S, cold), give_up) - time.monotonic()
            if remaining <= 0:
                return
            offered = anyio.Event()
            self._waiting.append(offered)
            try:
                with anyio.move_on_after(remaining):
                    await offered.wait()
            except BaseException:
                if offered.is_set() and self._waiting:
                    self._waiting.popleft().set()  # woken for an offer it will not take: the next call takes it
                raise
            finally:
                if not offered.is_set():
                    self._waiting.remove(offered)
            self._collect_offers()

    # -- calls -------------------------------------------------------------------------------------

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: dict[str, str],
        stdin: bool,
        options: CallOptions,
        recycle: bool = False,
        linked: Sequence[str] = (),
    ) -> Started:
        """Start ``argv`` in an offered init (or ask the supervisor to); ``options`` carries the call's
        confinement (see supervisor); ``recycle``: the init may take the call's copy back if it stays untouched;
        ``linked``: on a copy, the directories whose deletions its init notes (``unlinks``)."""
        sock = await self._ensure()
        self._watch()  # from now on what the supervisor says is read as it comes (a withdrawn offer lets go at once)
        self._collect_offers()
        await self._await_an_init()
        call = next(self._ids)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        # A socket, not a pipe: with --network policy the call's init sends the listener of the call's own network
        # namespace on it (SCM_RIGHTS).
        status_r, status_w = (s.detach() for s in socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM))
        if stdin:
            in_r, in_w = os.pipe2(os.O_CLOEXEC)
        else:
            in_r, in_w = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC), -1
        theirs = [in_r, out_w, err_w, status_w]
        message: CallRequest = {
            **options,
            "namespaces": self.spec.namespaces and options["namespaces"],
            "id": call,
            "fds": 4,
            "argv": list(argv),
            "cwd": cwd,
            "env": env,
            "gone": bool(options["overlays"]),  # say when every process of a call on the copy has ended
            "recycle": recycle,
            "linked": list(linked) if options["overlays"] else [],
        }
        try:
            while self._offered:
                init, init_sock = self._offered.popleft()
                try:
                    send_frame(init_sock, message, theirs)
                except OSError:
                    continue  # that init is gone; try the next
                finally:
                    init_sock.close()
                send_frame(sock, {"op": "took", "id": call, "init": init, "gone": message["gone"]})
                break
            else:
                send_frame(sock, {"op": "spawn", **message}, theirs)
        except OSError:
            for fd in (out_r, err_r, status_r, *([in_w] if in_w >= 0 else [])):
                os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        self._running.add(call)
        return Started(call, in_w if in_w >= 0 else None, out_r, err_r, status_r)

    def signal(self, call: int, signum: int = signal.SIGKILL) -> None:
        """Send ``signum`` to a call's init: SIGTERM is passed on to the command's group; SIGKILL ends the
        whole call at once (its PID namespace dies with its init)."""
        if self._sock is None:
            return
        with contextlib.suppress(OSError):
            send_frame(self._sock, {"op": "signal", "id": call, "sig": int(signum)})
