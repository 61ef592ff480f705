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
import ctypes
import os
import resource
import select
import signal
import socket
import time
from collections.abc import Sequence
from typing import Any, NoReturn

from mcp_server_guard import linux
from mcp_server_guard.shell.sandbox import renames, tree_moves, unlinks, wire
from mcp_server_guard.shell.sandbox.call_init import (
    FORWARDED,
    SETTLE_S,
    Inherited,
    StartFailed,
    View,
    call_fds,
    checked_call,
    confine,
    hand_over_listener,
    load_early_filter,
    prepare_view,
    report,
    spawn_command,
)
from mcp_server_guard.shell.sandbox.frames import FrameReader, send_frame
from mcp_server_guard.shell.sandbox.mounts import MQUEUE, left_behind, masks_in_place, own_proc
from mcp_server_guard.shell.sandbox.overlays import MountedCopy, remove_copy, untouched

_MAX_CALLS = 256  # calls one init serves before it leaves
_LAST_CALL_GONE_S = 0.2  # how long a call's thread waits for the last call's threads to end before its copy is taken


class _Stage:
    """The thread that starts the next call, in the call's own mount namespace (see the module docstring); one
    prepared for calls that only read may start several in turn (``fits``)."""

    def __init__(
        self,
        prepared: Inherited,
        warm: bool,
        filtered: bool,
        spare: MountedCopy | None,
        after: list[int | None],
        reading: bool,
    ) -> None:
        self.prepared = prepared
        self.reading = reading  # prepare for a call that only reads (the last one did)
        self.warm = warm
        self.filtered = filtered  # the early part of the seccomp filter is in force (inherited from the init)
        self.spare = spare  # the last call's copy, untouched: taken back for this call's (see ``overlays``)
        self.after = after  # the last call's threads (its own and its rename handler's), which must have ended
        self.tid: int | None = None
        self.request: tuple[wire.CallRequest, list[int], int] | None = None
        self.result: int | StartFailed | None = StartFailed(0, "setup", "the call was not started")
        self.view = View()
        self.serving: list[Any] | None = None  # the options of the calls it started, while it may start another
        self.masks: tuple[object, ...] = ()  # the masks of its view, as its first call's command was started
        self.left: tuple[object, ...] | None = None  # what its view held then (see ``left_behind``)
        self.scheduling: tuple[object, ...] | None = None  # its own scheduling then (see ``_scheduling``)
        self.again = False  # the call is over and the thread waits for the next (see ``fits``)
        self._go, self.started, self._over = (_thread.allocate_lock() for _ in range(3))
        for lock in (self._go, self.started, self._over):
            lock.acquire()
        _thread.start_new_thread(self._run, ())

    def start(self, spec: wire.CallRequest, stdio: list[int], status: int) -> int | StartFailed | None:
        """Start the call's command (from the stage's thread); its pid, or why it could not start; None when a
        stage serving again finds its view not as it was (the thread ends: a fresh one must start the call)."""
        self.request = (spec, stdio, status)
        self._go.release()
        self.started.acquire()
        return self.result

    def fits(self, spec: wire.CallRequest) -> bool:
        """Whether this stage, having served a call, may start ``spec`` too: one that only reads, confined as that
        call was in every respect (the same view, Landlock rules, limits, masks)."""
        return self.serving is not None and self.serving == _view_options(spec)

    def retire(self) -> View:
        """No call comes: the thread ends; what it had prepared."""
        self.request = None
        self._go.release()
        self.started.acquire()
        return self.view

    def over(self, again: bool = False) -> None:
        """The call is over (every process of it reaped): the thread may end, and its mount namespace with it; or,
        ``again``, wait for the next call that ``fits``."""
        self.again = again
        if not again:
            self.serving = None
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
                self.prepared,
                own_pidns=True,
                proc=False,
                warm=self.warm,
                filtered=self.filtered,
                spare=spare,
                reading=self.reading,
            )
        first = True
        while True:
            self._go.acquire()
            if self.request is None:
                self.started.release()
                return
            try:
                spec, stdio, status = self.request
                if entered is not None:
                    raise StartFailed(entered.errno or 0, "setup", f"no mount namespace for the call: {entered}")
                if first:
                    confine(spec, status, True, self.prepared, self.view)
                    self._may_serve_again(spec)
                    self.result = spawn_command(spec, stdio)
                else:
                    self.result = self._start_again(spec, stdio)
            except StartFailed as exc:
                self.result = exc
            except BaseException as exc:  # noqa: BLE001 - the init waits for an answer, whatever happens here
                self.result = StartFailed(0, "setup", f"{type(exc).__name__}: {exc}")
            finally:
                if first and self.view.ruleset >= 0:
                    with contextlib.suppress(OSError):
                        os.close(self.view.ruleset)
                self.started.release()
            if not isinstance(self.result, int):
                return
            self._over.acquire()  # the command's parent until the call is over
            if not self.again:
                return
            first = False

    def _may_serve_again(self, spec: wire.CallRequest) -> None:
        """Once confined for its first call, before its command starts: whether later calls may be started from here
        too. Only in a view prepared for calls that only read (``View.listable``), for one of those: the view as it
        is now is what each later call must find."""
        if self.view.listable and not spec["overlays"] and self.view.options is self.prepared.reading:
            left, masks, scheduling = left_behind(spec), masks_in_place(spec), _scheduling()
            if left is None or scheduling is None:
                return
            if all(isinstance(mask, int) or mask[2] for mask in masks):  # every path there masked, or absent
                self.left, self.masks, self.scheduling, self.serving = left, masks, scheduling, _view_options(spec)

    def _start_again(self, spec: wire.CallRequest, stdio: list[int]) -> int | None:
        """Start a later call's command in this view, confined as the first was: when nothing of the calls before it
        is left there and every mask is still in place; else None."""
        # Threat: a message left for the next call (a file in /tmp or /dev/shm, an attribute or a time set on one of
        # their directories, a System V object or a POSIX message queue); a hidden file replaced or moved since its
        # mask was made (the mask stays on the old one, the new one would show); this thread's own scheduling (a
        # command of the same user, with no capability, may lower its priority, pin it to one CPU or make it idle:
        # every later command started from it would inherit that). Read by this thread, confined as the commands
        # were: nothing they left can make it follow or open anything they could not.
        if left_behind(spec) != self.left or masks_in_place(spec) != self.masks or _scheduling() != self.scheduling:
            return None
        return spawn_command(spec, stdio)


# ioprio_get and sched_getattr by architecture (where the box runs: see seccomp)
_IOPRIO_GET = {"x86_64": 252, "aarch64": 31, "riscv64": 31}
_SCHED_GETATTR = {"x86_64": 315, "aarch64": 275, "riscv64": 275}
_SCHED_ATTR_SIZE = 56  # struct sched_attr with its utilization clamps


def _scheduling() -> tuple[object, ...] | None:
    """The calling thread's scheduling, all that another process of its user may change without a capability:
    niceness, CPU affinity, I/O priority, policy and its attributes. None when the kernel does not tell."""
    machine = os.uname().machine
    try:
        attributes = ctypes.create_string_buffer(_SCHED_ATTR_SIZE)
        linux.syscall(_SCHED_GETATTR[machine], 0, attributes, _SCHED_ATTR_SIZE, 0)
        io = linux.syscall(_IOPRIO_GET[machine], 1, 0)  # IOPRIO_WHO_PROCESS, this thread
        return os.getpriority(os.PRIO_PROCESS, 0), tuple(sorted(os.sched_getaffinity(0))), io, attributes.raw
    except (KeyError, OSError):
        return None


def _view_options(spec: wire.CallRequest) -> list[Any]:
    """What of a call's request its view and confinement are made from (the egress token reaches the command only in
    its environment)."""
    return [spec.get(key) for key in wire.VIEW_KEYS]


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


def _end(
    stage: _Stage, spec: wire.CallRequest, exit_status: int, status: int
) -> tuple[bool, MountedCopy | None, list[int | None]]:
    """The call's command has ended: end every process of it, say how it ended on its status socket. Whether its
    copy settled, and the copy its init keeps for the next call (with the threads that must end first), if any."""
    if not spec["overlays"]:
        stopped = _end_the_call()
        report(status, {"exit": exit_status, **({"stopped": stopped} if stopped else {})})
        unused = stage.view.unused  # prepared for a call that writes; this one only read
        return True, unused, [stage.tid]  # the next call's thread takes it back, or removes it
    # The copy is final once nothing of the call can write to it: every process gone, every rename done.
    stopped = _end_the_call()
    handler = stage.view.handler
    settled = handler is None or handler.idle.acquire(timeout=SETTLE_S)
    if handler is not None and settled:
        handler.idle.release()  # its thread ends once the listener reports the call's filter unused
    # A copy the command left as it was (the usual case) is this init's to take back for its next call: the server
    # is told, and neither reads nor removes it. Not a background job's: the server's looks apply what a job did
    # while it runs, and may have emptied it.
    copy = stage.view.copy
    spare = copy if settled and spec["recycle"] and copy is not None and untouched(copy) else None
    moved, (renamed, origins, (remade, relinked), unfollowed) = tree_moves.moved(), _renamed_in(stage)
    report(status, {"exit": exit_status, "settled": settled, **({"untouched": True} if spare else {}),
                    **({"stopped": stopped} if stopped else {}), **({"moved": moved} if moved else {}),
                    **({"renamed": renamed} if renamed else {}), **({"remade": remade} if remade else {}),
                    **({"relinked": relinked} if relinked else {}), **({"unfollowed": True} if unfollowed else {}),
                    **({"origins": origins} if origins or handler is not None else {})})  # fmt: skip
    return settled, spare, [stage.tid, handler.tid if handler is not None else None]


def _renamed_in(
    stage: _Stage,
) -> tuple[list[str], list[tuple[str, str, int]], tuple[list[str], list[tuple[str, str]]], bool]:
    """Where the regular files the call renamed are (``renames.renamed``), what the names of files with several
    names the call removed, renamed or replaced hold (``unlinks.remade``), looked at in the call's mount namespace
    (its stage thread's, alive until the call is over), and whether those names could not be followed (events
    lost, or more said than the status line carries)."""
    try:
        view = os.open(f"/proc/self/task/{stage.tid}/root", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        view = -1  # none found: nothing said (and the notes forgotten all the same)
    try:
        watched, stage.view.unlinks = stage.view.unlinks, None
        renames.forget_links()
        said = unlinks.remade(watched, view) if view >= 0 else _closed(watched)
        moves, origins, cut = renames.renamed(view)
        return moves, origins, said, cut or (watched is not None and (view < 0 or watched.lost))
    finally:
        if view >= 0:
            os.close(view)


def _closed(watched: unlinks.Watch | None) -> tuple[list[str], list[tuple[str, str]]]:
    if watched is not None:
        watched.close()
    return [], []


def _end_the_call() -> int:
    """As PID 1: kill every other process in the namespace and reap until none is left. An orphan is reparented to
    us before its parent can be reaped, and a fork racing the kill either is signalled or fails, so once
    ``kill(-1)`` finds no process, none of the call is left. Returns how many were still running (the command left
    them behind: what they wrote until now is the call's, nothing after)."""
    stopped = 0
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            return stopped
        except OSError:
            os._exit(0)  # a process this init may not kill: it leaves, and its namespace dies with it
        while True:
            try:
                _pid, wait_status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if os.WIFSIGNALED(wait_status) and os.WTERMSIG(wait_status) == signal.SIGKILL:
                stopped += 1


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


def _call_listener(status: int, spec: wire.CallRequest) -> socket.socket:
    """--network policy: the call's listener for the proxy, in this network namespace, handed over on ``status``."""
    try:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(256)
        hand_over_listener(status, listener.dup(), spec)
    except (OSError, KeyError, TypeError) as exc:
        raise StartFailed(getattr(exc, "errno", 0) or 0, "network", str(exc)) from None
    return listener


def _shut_listener(listener: socket.socket) -> None:
    """A call's listener once the call is over."""
    # Threat: the next call reaching the proxy through this call's listener (approved for this call's
    # hosts) before the server has stopped accepting on it. No process of the call is left: it is shut
    # now, in the kernel, before this init can be offered again.
    with contextlib.suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)
    listener.close()


def serve_calls(sock: socket.socket, control: socket.socket, prepared: Inherited, egress: bool) -> None:
    """Serve calls in turn as PID 1 of this PID namespace (``sock``: the first call's socket; ``control``: to the
    supervisor; ``egress``: a listener for the proxy per call). Never returns."""
    try:
        own_proc()
    except OSError:
        os._exit(1)
    with contextlib.suppress(OSError):
        os.mkdir(MQUEUE, 0o755)  # the box's own /dev: where a view for calls that only read lists its queues
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
    reading = False  # the last call only read (see ``shell.strings.reading``): the next is prepared as one too
    stage: _Stage | None = None  # one that served the last call may serve the next (see ``_Stage.fits``)

    def fresh(spec: wire.CallRequest) -> _Stage:
        """A stage for ``spec`` now, the one at hand being unfit for it."""
        return _Stage(prepared, True, filtered, None, [], reading=not spec["overlays"] and prepared.reading is not None)

    while True:
        listener: socket.socket | None = None
        if stage is None:
            stage = _Stage(prepared, warm=served > 0, filtered=filtered, spare=spare, after=after, reading=reading)
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
                listener = _call_listener(status, spec)
            # What this process's limits must be once the call is over: as now, with the call's own set (the call's
            # thread sets them for the whole process).
            expected = limits | {which: (soft, hard) for which, soft, hard in spec["rlimits"]}
            if stage.again and not stage.fits(spec):
                stage.retire()
                stage = fresh(spec)
            started = stage.start(spec, stdio, status)
            if started is None:  # the view it served the last call in is not as it was
                stage = fresh(spec)
                started = stage.start(spec, stdio, status)
            if not isinstance(started, int):
                raise started or StartFailed(0, "setup", "no view for the call")
        except StartFailed as exc:
            report(status, {"error": exc.errno, "where": exc.where, "message": exc.message})
            os._exit(0)  # the call's thread may have half-made its view: a fresh init serves the next call
        running[0] = started
        for fd in stdio:
            os.close(fd)
        exit_status = _wait_for(started)
        running[0] = 0
        settled, spare, after = _end(stage, spec, exit_status, status)
        reading = not spec["overlays"] and prepared.reading is not None
        os.close(status)
        if listener is not None:
            _shut_listener(listener)
        # A stage that started a call that only read, in a view prepared for those, starts the next that fits.
        again = stage.serving is not None and not spec["overlays"]
        stage.over(again)
        if not again:
            stage = None
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
