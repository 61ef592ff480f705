"""The box supervisor: one long-lived process per server, inside the box, that starts every command.

The server talks to it over a UNIX stream socket: length-prefixed JSON frames (``frames``), the call's stdio and
status pipes attached with SCM_RIGHTS. Each call runs under an *init* process. With namespaces the init is PID 1
of a PID namespace of its own (and, with --network policy, of a network namespace) and serves calls one after
another, each in a mount namespace of its own, nothing of one left for the next (``worker``); without them it
serves one call and ends with it (``call_init``).

Inits are forked ahead of time: each builds the usual call's mount view, Landlock ruleset and most of the
seccomp filter, then waits for its call. The supervisor offers every ready init to the server (its socket,
with SCM_RIGHTS), and the server hands a call straight to one ("took" tells the supervisor which); so a call
pays no fork and no hop through the supervisor on its way in. An init back from its call says "done" on its
control socket, with a new socket for its next call: the supervisor tells the server the call is gone and offers
the init again (or closes that socket while enough are on offer: the init leaves). When none is ready, the server
asks the supervisor to "spawn" the call. A chain of parent-death signals (supervisor → keeper → init) ends every
call when the supervisor goes, however the server ends; an init whose server closed its socket leaves. This module
owns that pool: forking inits, offering them, reaping them and telling the server when a call is gone.

Standard library only, run with ``python -I -S``: the supervisor starts in tens of milliseconds.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import selectors
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass
from typing import Any

from mcp_server_guard import linux
from mcp_server_guard.shell.sandbox import wire
from mcp_server_guard.shell.sandbox.call_init import Inherited, die_with_parent, prepare, report, run_init
from mcp_server_guard.shell.sandbox.frames import MAX_FDS, FrameReader, send_frame
from mcp_server_guard.shell.sandbox.overlays import start_probe
from mcp_server_guard.shell.sandbox.worker import serve_calls

_POOL_IDLE = 2  # ready inits offered to the server while no call runs
_POOL_RESTING = 1  # ... once no call has started for _RESTING_S (each takes ~7 MiB: issue 44's idle memory)
_RESTING_S = 10.0  # a model thinks for seconds between calls: past this the box rests, and tops up at the next
_POOL_BUSY = 1  # ... and while calls run (a fork then competes with the running command for the CPU)
_POOL_KEEP = 4  # an init back from its call is offered again while fewer than this many are on offer, else let go
_QUIET_S = 0.010  # a pool that is not empty is topped up once the box has been quiet this long


@dataclass
class _Ready:
    init: int  # the init's pid (as we see it)
    reaped: int  # the child we reap for it: the keeper with namespaces, else the init itself
    sock: socket.socket | None  # our end of the init's socket (None once handed to the server)


class Supervisor:
    def __init__(self, sock: socket.socket, namespaces: bool, prepared: Inherited, egress: bool = False) -> None:
        self.sock = sock
        self.namespaces = namespaces
        # --network policy: each call in its own network namespace, whose only way out is a listener the proxy
        # accepts on (one per call: see call_init)
        self.egress = egress
        self.prepared = prepared
        self.reader = FrameReader(sock)
        self.offered: dict[int, _Ready] = {}  # init pid -> a ready init the server holds
        self.calls: dict[int, int] = {}  # call id -> init pid
        self.children: dict[int, int | None] = {}  # reaped pid -> call id (None while ready)
        self.died: dict[int, None] = {}  # offered inits that ended before the server's "took" arrived (bounded)
        self.told: set[int] = set()  # calls whose end the server waits to hear of ("gone")
        # inits that serve several calls in turn (with namespaces: see ``worker``): init pid -> the child we reap
        # for it, and the socket on which it says a call is over
        self.workers: dict[int, int] = {}
        self.controls: dict[int, tuple[int, socket.socket, FrameReader]] = {}  # control fd -> (init, sock, reader)
        self.ended_early: dict[int, None] = {}  # calls an init finished before their "took" arrived (bounded)
        self.killed: set[int] = set()  # inits sent SIGKILL: never offered again
        self.selector = selectors.DefaultSelector()
        self.last_call = time.monotonic()  # when the last call started
        self.resting = False  # the pool was let shrink to _POOL_RESTING (until the next call)

    # -- making inits ahead of time -------------------------------------------------------------

    def _in_child(self, inherited: list[int]) -> None:
        """In a freshly forked child: let go of everything that belongs to the supervisor or to other calls
        (``inherited``: the fds of the request being handled, which the init receives on its socket anyway; a
        copy kept here would hold the call's pipes open past its end)."""
        for fd in inherited:
            with contextlib.suppress(OSError):
                os.close(fd)
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        self.sock.close()
        self.selector.close()
        for _init, control, _reader in self.controls.values():  # other inits' channels
            control.close()
        for fd in self.reader.fds:  # fds of a frame not read in full yet
            with contextlib.suppress(OSError):
                os.close(fd)

    def prefork(self, inherited: list[int] | None = None) -> _Ready:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        if not self.namespaces:
            init = os.fork()
            if init == 0:
                try:
                    self._in_child(inherited or [])
                    ours.close()
                    die_with_parent()
                    run_init(theirs, self.prepared)
                finally:
                    os._exit(1)
            theirs.close()
            return self._track(_Ready(init, init, ours))
        # unshare(CLONE_NEWPID) only affects the caller's future children and cannot be undone in a user
        # namespace: a keeper makes the init (PID 1 of the new namespace) and stays its parent, so that the
        # chain of parent-death signals reaches it.
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        control, control_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        keeper = os.fork()
        if keeper == 0:
            try:
                self._in_child(inherited or [])
                ours.close()
                control.close()
                os.close(read_end)
                die_with_parent()
                if self.egress:
                    linux.unshare(linux.CLONE_NEWPID | linux.CLONE_NEWNS | linux.CLONE_NEWNET)
                    linux.loopback_up()
                else:
                    linux.unshare(linux.CLONE_NEWPID | linux.CLONE_NEWNS)
                init = os.fork()
                if init == 0:
                    os.close(write_end)
                    die_with_parent()
                    serve_calls(theirs, control_theirs, self.prepared, self.egress)
                theirs.close()
                control_theirs.close()
                os.write(write_end, struct.pack("=i", init))
                os.close(write_end)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(init, 0)
            finally:
                os._exit(0)
        theirs.close()
        control_theirs.close()
        os.close(write_end)
        data = os.read(read_end, 4)
        os.close(read_end)
        init = struct.unpack("=i", data)[0] if len(data) == 4 else -1
        if init > 0:
            self.workers[init] = keeper
            self.controls[control.fileno()] = (init, control, FrameReader(control))
            self.selector.register(control, selectors.EVENT_READ)
        else:
            control.close()
        return self._track(_Ready(init, keeper, ours))

    def _track(self, ready: _Ready) -> _Ready:
        self.children[ready.reaped] = None
        return ready

    def short(self) -> int:
        """How many more ready inits to make now. Inits that serve calls in turn come back from their calls: more are
        made only while fewer than the idle pool are alive; single-use inits are topped up to the pool size."""
        idle = _POOL_RESTING if self.resting else _POOL_IDLE
        if self.namespaces:
            return idle - len(self.workers)
        return (_POOL_BUSY if self.calls else idle) - len(self.offered)

    def rest_in(self, now: float) -> float | None:
        """Seconds until the pool may rest (no call for ``_RESTING_S``, none running, more on offer than a resting
        pool keeps), or None when it has nothing to let go."""
        if self.resting or self.calls or len(self.offered) <= _POOL_RESTING:
            return None
        return max(0.0, self.last_call + _RESTING_S - now)

    def rest(self) -> None:
        """Let the inits on offer beyond a resting pool go: the server closes each one's socket (it may have handed
        it a call meanwhile: then "took" follows, as for any offer), and the init leaves."""
        self.resting = True
        for init in list(self.offered)[_POOL_RESTING:]:
            send_frame(self.sock, {"op": "withdraw", "init": init})

    def _started(self) -> None:
        self.last_call, self.resting = time.monotonic(), False

    def refill(self, most: int | None = None, inherited: list[int] | None = None) -> None:
        """Fork ready inits up to the pool size (or ``most`` of them) and offer each to the server (``inherited``: see
        ``prefork``)."""
        made = 0
        while self.short() > 0 and (most is None or made < most):
            made += 1
            ready = self.prefork(inherited)
            assert ready.sock is not None
            try:
                if ready.init <= 0:
                    return
                send_frame(self.sock, {"op": "ready", "init": ready.init, "fds": 1}, [ready.sock.fileno()])
            finally:
                ready.sock.close()
                ready.sock = None
            self.offered[ready.init] = ready

    # -- requests ------------------------------------------------------------------------------

    def took(self, call: int, init: int, tell: bool) -> None:
        """The server handed call ``call`` to the offered init ``init`` (``tell``: say when it is gone)."""
        self._started()
        if tell:
            self.told.add(call)
        if self.ended_early.pop(call, False) is None:
            self._gone(call)  # its init said it was over before this message came (another socket)
            return
        ready = self.offered.pop(init, None)
        if ready is not None and ready.reaped in self.children:
            self.calls[call] = init
            self.children[ready.reaped] = call
        elif init in self.died:
            del self.died[init]
            self._gone(call)  # the call ran and ended before we heard it was taken

    def spawn(self, message: dict[str, Any], fds: list[int]) -> None:
        """No offered init was at hand: start the call with a new one."""
        self._started()
        spec = wire.checked_request(message)
        call = spec["id"]
        spec["namespaces"] = self.namespaces and spec["namespaces"]
        ready = self.prefork(fds)
        assert ready.sock is not None
        try:
            if ready.init <= 0:
                raise OSError(0, "could not make a process for the call")
            send_frame(ready.sock, {**spec, "fds": MAX_FDS}, fds)
        finally:
            ready.sock.close()
        self.calls[call] = ready.init
        self.children[ready.reaped] = call
        if spec["gone"]:
            self.told.add(call)

    def signal(self, call: int, signum: int) -> None:
        init = self.calls.get(call)
        if init is not None:
            if signum == signal.SIGKILL:
                self.killed.add(init)  # should it have said "done" meanwhile, it is not offered again
            with contextlib.suppress(OSError):
                os.kill(init, signum)

    def done(self, init: int, call: int, fds: list[int]) -> None:
        """Init ``init`` (see ``worker``) finished ``call``: every process of it has ended. It waits on the socket
        that came along for its next call: offered to the server, or closed (the init leaves)."""
        reaped = self.workers.get(init)
        next_sock = socket.socket(fileno=fds.pop()) if len(fds) == 1 else None
        try:
            if reaped is not None:
                self.children[reaped] = None  # between calls
            if self.calls.get(call) == init:
                del self.calls[call]
            else:  # the server's "took" is still on its way: it finds the call over
                self.offered.pop(init, None)
                self.ended_early[call] = None
                while len(self.ended_early) > _POOL_IDLE * 64:
                    del self.ended_early[next(iter(self.ended_early))]
            self._gone(call)
            if next_sock is None or reaped is None or init in self.killed or len(self.offered) >= _POOL_KEEP:
                return
            send_frame(self.sock, {"op": "ready", "init": init, "fds": 1, "again": True}, [next_sock.fileno()])
            self.offered[init] = _Ready(init, reaped, None)
        finally:
            if next_sock is not None:
                next_sock.close()

    def _control(self, fd: int) -> None:
        """What an init says on its control socket (EOF: it is gone, and reaped apart)."""
        init, control, reader = self.controls[fd]
        try:
            more = reader.read()
        except OSError:
            more = False
        if not more:
            self.selector.unregister(control)
            del self.controls[fd]
            control.close()
            return
        try:
            frames = reader.frames()
        except ValueError:
            frames = []
        for message, fds in frames:
            try:
                if message.get("op") == "done":
                    self.done(init, int(message["id"]), fds)
            except (KeyError, TypeError, ValueError, OSError) as exc:  # OSError: the server is gone (noticed apart)
                print(f"mcp-guard box: done: {type(exc).__name__}: {exc}", file=sys.stderr)
            finally:
                for extra in fds:
                    with contextlib.suppress(OSError):
                        os.close(extra)

    def reap(self) -> None:
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid not in self.children:
                continue
            for init in [i for i, r in self.workers.items() if r == pid]:
                del self.workers[init]
                self.killed.discard(init)
            call = self.children.pop(pid)
            if call is not None:
                self.calls.pop(call, None)
                self._gone(call)
            else:  # an offered init ended: unused, or with a call whose "took" is still on its way
                for init in [i for i, r in self.offered.items() if r.reaped == pid]:
                    del self.offered[init]
                    self.died[init] = None
                    while len(self.died) > _POOL_IDLE * 64:
                        del self.died[next(iter(self.died))]

    def _gone(self, call: int) -> None:
        """Every process of ``call`` has ended (its init was reaped: a PID namespace's init is reaped only after
        everything in it): what it wrote is final."""
        if call in self.told:
            self.told.discard(call)
            with contextlib.suppress(OSError):
                send_frame(self.sock, {"op": "gone", "id": call})

    def kill_all(self) -> None:
        for init in {*self.offered, *self.calls.values(), *self.workers}:
            with contextlib.suppress(OSError):
                os.kill(init, signal.SIGKILL)
        self.offered.clear()
        deadline = time.monotonic() + 2.0
        while self.children and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.001)

    def handle(self, message: dict[str, Any], fds: list[int]) -> None:
        op = message.get("op")
        try:
            if op == "took":
                self.took(int(message["id"]), int(message["init"]), bool(message.get("gone")))
            elif op == "spawn" and len(fds) == MAX_FDS:
                self.spawn(message, fds)
            elif op == "signal":
                self.signal(int(message["id"]), int(message["sig"]))
        except Exception as exc:  # noqa: BLE001 - a bad request must never end the box
            if len(fds) == MAX_FDS:
                report(fds[3], {"error": getattr(exc, "errno", 0) or 0, "where": "supervisor", "message": str(exc)})
            print(f"mcp-guard box: {op}: {type(exc).__name__}: {exc}", file=sys.stderr)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def serve(self) -> None:
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)  # only the server (by closing the socket) ends the box
        selector = self.selector
        selector.register(self.sock, selectors.EVENT_READ)
        selector.register(wake_r, selectors.EVENT_READ)
        self.sock.sendall(b"R")  # ready; offers follow
        if self.prepared.usual is not None and self.prepared.usual["overlays"]:
            # The first init is made while the probe's child mounts its copy: a first call waits for both (the
            # server takes an offer before the probe's answer as after it). That init lets go of the probe's pipe.
            probe = start_probe(self.prepared.usual)
            try:
                self.refill(most=1, inherited=[probe.fd])
            finally:
                copy = probe.result()  # (its child reaped whatever happens)
            send_frame(self.sock, {"op": "probe", "copy": copy})
        last_busy = 0.0
        while True:
            # Requests first. The pool is refilled at once when it is empty, else once the box has been quiet
            # for a moment: a fork right after a call would compete for the CPU with the server's answer, and
            # with the next call.
            timeout: float | None = None
            now = time.monotonic()
            if self.short() > 0:
                timeout = 0 if not self.offered else max(0.0, last_busy + _QUIET_S - now)
            elif (rest_in := self.rest_in(now)) is not None:
                timeout = rest_in
            events = selector.select(timeout=timeout)
            if not events:
                try:
                    if self.rest_in(time.monotonic()) == 0.0:
                        self.rest()
                    self.refill()
                except OSError as exc:
                    if exc.errno in (errno.EPIPE, errno.ECONNRESET):
                        self.kill_all()  # the server is gone
                        return
                    raise
                continue
            last_busy = time.monotonic()
            # An init back from its call first: the server may be waiting to hand it the next call.
            events.sort(key=lambda event: event[0].fd not in self.controls)
            for key, _ in events:
                if key.fileobj is self.sock:
                    try:
                        more = self.reader.read()
                    except ConnectionResetError:
                        more = False
                    if not more:
                        self.kill_all()
                        return
                    for message, fds in self.reader.frames():
                        self.handle(message, fds)
                elif key.fd in self.controls:
                    self._control(key.fd)
                else:
                    with contextlib.suppress(OSError):
                        os.read(wake_r, 4096)
                    self.reap()


def main(argv: list[str] | None = None) -> None:
    """``supervisor FD [namespaces] [seccomp=FD] [usual=FD] [reading=FD]``: serve the server on socket FD until it
    closes.

    ``usual`` carries the options of a usual call (JSON): each ready init sets up that much before its call
    (``reading``: of a usual call that only reads, what an init back from one sets up);
    ``seccomp`` and ``seccomp_late`` the two parts of the filter."""
    args = sys.argv[1:] if argv is None else argv
    sock = socket.socket(fileno=int(args[0]))
    options = dict(arg.partition("=")[::2] for arg in args[1:])
    die_with_parent()  # the server (or bubblewrap, which dies with the server)
    linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
    prepared = prepare(
        options.get("seccomp"),
        options.get("seccomp_late"),
        options.get("seccomp_notify"),
        options.get("usual"),
        options.get("reading"),
    )
    supervisor = Supervisor(sock, "namespaces" in options, prepared, egress="egress" in options)
    gc.freeze()  # what exists now is shared with every fork, untouched by the collector
    supervisor.serve()


if __name__ == "__main__":
    main()
