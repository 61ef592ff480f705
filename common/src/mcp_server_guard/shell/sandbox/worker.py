"""An init that serves several calls in turn: PID 1 of a PID namespace (and, with --network policy, of a network
namespace) of its own, with a mount namespace per call.

Making a call's namespaces is most of what a boxed call costs in CPU (a keeper and an init forked from a Python
process, a PID, mount and network namespace made and torn down, the view mounted): a burst of short commands paid
it for every call. An init with namespaces therefore serves one call after another:

* **Between calls nothing of the last call is left.** When its command ends, the init (PID 1) kills every other
  process in its PID namespace and reaps until ``kill(-1)`` finds none: no process of the call lives on, so none
  holds a socket, a file or a mount of it. Each call has a mount namespace of its own (entered by the thread that
  starts it): its private /tmp and /dev/shm, its copy (overlay), its masks and read-only binds go with it. The
  network namespace is kept: with no process left in it, it holds no socket, and a fresh listener is handed to
  the egress proxy for each call (the proxy knows a connection as the call's by the listener it arrives on).
* **The init itself is not confined, and never in reach of a command.** A command is started by a thread of the
  init that confines *itself* first — Landlock, no capability, the seccomp filter, no new privileges are all per
  thread — and stays the command's parent until the call is over (a parent-death signal the command asked for is
  not sent early). The init is not dumpable, so a command cannot read or trace it; it reads nothing a command
  writes (the rename handler, which does, is a thread confined exactly as the command is). The one thing the
  init takes on itself is the early part of the seccomp filter, which refuses nothing it does: each call's
  thread inherits it rather than loading it anew.
* **Prepared ahead.** While the init waits for its next call, that call's thread has already entered its mount
  namespace and built the usual view, copy and Landlock ruleset.

After each call the init tells the supervisor (``done``, with a new socket for its next call); the supervisor
tells the server the call is gone and offers the init again, or lets it go. An init leaves after a start that
failed, a rename that did not settle, ``_MAX_CALLS`` calls or half its CPU limit: a fresh one is cheap.

Standard library only: the supervisor imports this with no site-packages.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import resource
import select
import signal
import socket
import time
from collections.abc import Sequence
from typing import Any, NoReturn

from mcp_server_guard import linux
from mcp_server_guard.shell.sandbox import wire
from mcp_server_guard.shell.sandbox.call_init import (
    FORWARDED,
    SETTLE_S,
    Inherited,
    StartFailed,
    View,
    call_fds,
    checked_call,
    hand_over_listener,
    load_early_filter,
    prepare_view,
    report,
    start_command,
)
from mcp_server_guard.shell.sandbox.frames import FrameReader, send_frame
from mcp_server_guard.shell.sandbox.mounts import own_proc
from mcp_server_guard.shell.sandbox.overlays import MountedCopy, remove_copy, untouched

_MAX_CALLS = 256  # calls one init serves before it leaves
_LAST_CALL_GONE_S = 0.2  # how long a call's thread waits for the last call's threads to end before its copy is taken


class _Stage:
    """The thread that starts the next call, in the call's own mount namespace (see the module docstring)."""

    def __init__(
        self, prepared: Inherited, warm: bool, filtered: bool, spare: MountedCopy | None, after: list[int | None]
    ) -> None:
        self.prepared = prepared
        self.warm = warm
        self.filtered = filtered  # the early part of the seccomp filter is in force (inherited from the init)
        self.spare = spare  # the last call's copy, untouched: taken back for this call's (see ``overlays``)
        self.after = after  # the last call's threads (its own and its rename handler's), which must have ended
        self.tid: int | None = None
        self.request: tuple[wire.CallRequest, list[int], int] | None = None
        self.result: int | StartFailed = StartFailed(0, "setup", "the call was not started")
        self.view = View()
        self._go, self.started, self._over = (_thread.allocate_lock() for _ in range(3))
        for lock in (self._go, self.started, self._over):
            lock.acquire()
        _thread.start_new_thread(self._run, ())

    def start(self, spec: wire.CallRequest, stdio: list[int], status: int) -> int | StartFailed:
        """Start the call's command (from the stage's thread); its pid, or why it could not start."""
        self.request = (spec, stdio, status)
        self._go.release()
        with self.started:
            return self.result

    def retire(self) -> View:
        """No call comes: the thread ends; what it had prepared."""
        self._go.release()
        with self.started:
            return self.view

    def over(self) -> None:
        """The call is over (every process of it reaped): the thread may end, and its mount namespace with it."""
        self._over.release()

    def _run(self) -> None:
        self.tid = _thread.get_native_id()
        entered: OSError | None = None
        spare, self.spare = self.spare, None
        if spare is not None and not _ended(self.after, _LAST_CALL_GONE_S):
            remove_copy(spare)  # the last call's overlay may still be mounted (its threads are not gone yet)
            spare = None
        try:
            # Threat: a call's mounts (its copy, masks, private /tmp) left in the init's own view would be the next
            # call's; so would its System V shared memory, message queues and semaphores (they outlive every
            # process). Each is made in this thread's own mount and IPC namespaces, which end with the call.
            linux.unshare(linux.CLONE_NEWNS | linux.CLONE_NEWIPC)
        except OSError as exc:
            entered = exc
            if spare is not None:
                remove_copy(spare)
        else:
            self.view = prepare_view(
                self.prepared, own_pidns=True, proc=False, warm=self.warm, filtered=self.filtered, spare=spare
            )
        self._go.acquire()
        if self.request is None:
            self.started.release()
            return
        try:
            spec, stdio, status = self.request
            if entered is not None:
                raise StartFailed(entered.errno or 0, "setup", f"no mount namespace for the call: {entered}")
            self.result = start_command(spec, stdio, status, True, self.prepared, self.view)
        except StartFailed as exc:
            self.result = exc
        except BaseException as exc:  # noqa: BLE001 - the init waits for an answer, whatever happens here
            self.result = StartFailed(0, "setup", f"{type(exc).__name__}: {exc}")
        finally:
            if self.view.ruleset >= 0:
                with contextlib.suppress(OSError):
                    os.close(self.view.ruleset)
            self.started.release()
        if isinstance(self.result, int):
            with self._over:  # the command's parent until the call is over
                pass


_PIDFD_THREAD = os.O_EXCL  # pidfd_open: a pidfd of one thread (Linux 6.9)


def _ended(threads: Sequence[int | None], within: float) -> bool:
    """Whether, within ``within`` seconds, the last call's threads (its own and its rename handler's) have ended,
    and the last call's mount namespace with them: its overlay, which must be unmounted before its directories
    serve another. (A thread is reported ended once it has let go of its namespaces, whichever way it is asked.)"""
    deadline = time.monotonic() + within
    for tid in threads:
        if tid is None:
            return _alone(deadline)
        try:
            pidfd = os.pidfd_open(tid, _PIDFD_THREAD)
        except ProcessLookupError:
            continue  # ended already
        except OSError:
            return _alone(deadline)  # a kernel without thread pidfds
        try:
            waiting = select.poll()
            waiting.register(pidfd, select.POLLIN)
            if not waiting.poll(max(0.0, deadline - time.monotonic()) * 1000):
                return False
        finally:
            os.close(pidfd)
    return True


def _alone(deadline: float) -> bool:
    """Whether, by ``deadline``, the calling thread and the init's main thread are the only threads left."""
    pause = 0.0001
    while len(os.listdir("/proc/self/task")) > 2:
        if time.monotonic() > deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.002)
    return True


def _next_call(sock: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    """The next call's request and fds, or None when the server let this init go (it closed the socket)."""
    reader = FrameReader(sock)
    try:
        while True:
            if not reader.read():
                return None
            frames = reader.frames()
            if frames:
                for _message, extra in frames[1:]:  # one request per socket: anything more is dropped
                    for fd in extra:
                        os.close(fd)
                return frames[0]
    except (OSError, ValueError):
        return None
    finally:
        sock.close()


def _wait_for(child: int) -> int:
    """The command's wait status (orphans reaped along the way)."""
    while True:
        try:
            pid, wait_status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0
        if pid == child:
            return wait_status


def _end_the_call() -> None:
    """As PID 1: kill every other process in the namespace and reap until none is left. An orphan is reparented to
    us before its parent can be reaped, and a fork racing the kill either is signalled or fails, so once
    ``kill(-1)`` finds no process, none of the call is left."""
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            return
        except OSError:
            os._exit(0)  # a process this init may not kill: it leaves, and its namespace dies with it
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break


# Every resource limit the kernel has (RLIMIT_CPU 0 … RLIMIT_RTTIME 15).
_LIMITS = tuple(range(16))


def _limits() -> dict[int, tuple[int, int]]:
    return {which: resource.getrlimit(which) for which in _LIMITS}


def _cpu_spent() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _leave(spare: MountedCopy | None) -> NoReturn:
    if spare is not None:
        remove_copy(spare)
    os._exit(0)


def serve_calls(sock: socket.socket, control: socket.socket, prepared: Inherited, egress: bool) -> None:
    """Serve calls in turn as PID 1 of this PID namespace (``sock``: the first call's socket; ``control``: to the
    supervisor; ``egress``: a listener for the proxy per call). Never returns."""
    try:
        own_proc()
    except OSError:
        os._exit(1)
    linux.prctl(linux.PR_SET_DUMPABLE, 0)  # no command reads or traces this process
    try:
        filtered = load_early_filter(prepared)
    except OSError:
        os._exit(1)
    running = [0]  # the command's pid (and group) while a call runs

    def forward(signum: int, _frame: object) -> None:
        if running[0] > 0:
            with contextlib.suppress(OSError):
                os.killpg(running[0], signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    served = 0
    limits = _limits()  # this process's limits now: each call sets its own on top (see ``expected``)
    spare: MountedCopy | None = None
    after: list[int | None] = []
    while True:
        listener: socket.socket | None = None
        stage = _Stage(prepared, warm=served > 0, filtered=filtered, spare=spare, after=after)
        spare = None
        request = _next_call(sock)
        if request is None:
            copy = stage.retire().copy
            if copy is not None:
                remove_copy(copy)  # prepared for a call that never came
            os._exit(0)
        raw, fds = request
        stdio, status = call_fds(fds)
        try:
            spec = checked_call(raw)
            if egress:
                try:
                    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    listener.bind(("127.0.0.1", 0))
                    listener.listen(256)
                    hand_over_listener(status, listener.dup(), spec)
                except (OSError, KeyError, TypeError) as exc:
                    raise StartFailed(getattr(exc, "errno", 0) or 0, "network", str(exc)) from None
            # What this process's limits must be once the call is over: as now, with the call's own set (the call's
            # thread sets them for the whole process).
            expected = limits | {which: (soft, hard) for which, soft, hard in spec["rlimits"]}
            started = stage.start(spec, stdio, status)
            if isinstance(started, StartFailed):
                raise started
        except StartFailed as exc:
            report(status, {"error": exc.errno, "where": exc.where, "message": exc.message})
            os._exit(0)  # the call's thread may have half-made its view: a fresh init serves the next call
        running[0] = started
        for fd in stdio:
            os.close(fd)
        exit_status = _wait_for(started)
        running[0] = 0
        settled = True
        if spec["overlays"]:
            # The copy is final once nothing of the call can write to it: every process gone, every rename done.
            _end_the_call()
            handler = stage.view.handler
            settled = handler is None or handler.idle.acquire(timeout=SETTLE_S)
            if handler is not None and settled:
                handler.idle.release()  # its thread ends once the listener reports the call's filter unused
            # A copy the command left as it was (the usual case) is this init's to take back for its next call:
            # the server is told, and neither reads nor removes it. Not a background job's: the server's looks
            # apply what a job did while it runs, and may have emptied it.
            copy = stage.view.copy
            if settled and spec["recycle"] and copy is not None and untouched(copy):
                spare = copy
                after = [stage.tid, handler.tid if handler is not None else None]
            report(status, {"exit": exit_status, "settled": settled, **({"untouched": True} if spare else {})})
        else:
            report(status, {"exit": exit_status})
            _end_the_call()
        os.close(status)
        if listener is not None:
            # Threat: the next call reaching the proxy through this call's listener (approved for this call's
            # hosts) before the server has stopped accepting on it. No process of the call is left: it is shut
            # now, in the kernel, before this init can be offered again.
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        stage.over()
        served += 1
        cpu_limit = resource.getrlimit(resource.RLIMIT_CPU)[0]
        spent_half = cpu_limit != resource.RLIM_INFINITY and _cpu_spent() * 2 >= cpu_limit
        # Threat: limits of this process changed from inside the call (lowered or set as a message for the next
        # call): an init whose limits are not what it set leaves.
        if not settled or served >= _MAX_CALLS or spent_half or _limits() != expected:
            _leave(spare)  # the supervisor reaps us and says the call is gone
        limits = expected
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            send_frame(control, {"op": "done", "id": spec["id"], "fds": 1}, [theirs.fileno()])
        except OSError:
            _leave(spare)
        theirs.close()
        sock = ours
