"""The first answers, before the MCP SDK is loaded: an agent CLI that spawns a server waits for ``initialize``.

Importing the SDK (its protocol models for both eras) takes most of a server's start-up. Yet what a client asks
first, ``initialize``, then ``tools/list``, has the same answer every time the same server starts the same way.
So the real server records its answers (``record``), keyed by everything that could change them: the server, its
command line, environment, the code itself (every source file's size and time) and the exact request; the next
start with the same key answers them from that record on a thread while the main thread is still importing,
and hands every line it read to the real transport once that is ready (``hand_over``). The real server then
processes those lines too (its session must see the handshake) and its own answers to the requests already
answered are dropped, after comparison: a difference is logged and the record replaced.

The directories are part of the key, computed as the jail computes them (``where``: with ``--launch-dir``, the
host's working directory is none of them): a record kept under one set of allowed directories is never used for
another. The one place an answer names them (the allowed directories and the launch directory, in
``initialize``'s instructions: ``where_line``) is kept as a template, and a record naming them anywhere else is not
kept; a start whose directories are not all directories (the server will refuse to start) is answered by nobody
but the real server.

Without a record (the first start in a new project, or a state directory inside an allowed root, where records
are never read), a server that hands its tools to the front before the SDK loads (``early_calls``) has its
``initialize`` and ``tools/list`` answers computed from them (``Tools.initialize_result``, ``tools_list_result``:
static, pinned against the SDK's own by a test), for params the SDK would take as they are; the real server's own
answers are compared and recorded the same way.

The front answers only an unbroken run of such requests from the first line on (``initialize``,
``notifications/initialized``, ``tools/list``, ``ping``, and calls: ``take_calls``); the first line it cannot answer
hands the rest to the real server, in order. A call runs on a thread and loop of its own, or, for a server whose
calls hold state on its event loop (``Tools.one_loop``: shell_exec), on that loop, with a session of the front's
for its questions and progress (``front_session``). Standard library only at import. The records live in the state
directory, which no tool of any server can reach (``protected``): a command cannot plant a tool description.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib
import json
import logging
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp_server_guard.serving import code_cache, collector
from mcp_server_guard.serving.front_records import deeper_than as _deeper_than
from mcp_server_guard.serving.front_records import filled as _filled
from mcp_server_guard.serving.front_records import no_constant as _no_constant
from mcp_server_guard.serving.front_records import read_records as _read_records
from mcp_server_guard.serving.front_records import record as _record
from mcp_server_guard.serving.front_records import record_key, request_key, state_within_roots
from mcp_server_guard.serving.front_records import records_path as _records_path

if TYPE_CHECKING:
    import asyncio

    from mcp_server_guard.serving.front_session import Outbox
    from mcp_server_guard.serving.tools import Tools

log = logging.getLogger("mcp_server_guard.front")

ANSWERED = ("initialize", "tools/list", "ping")
_LINE_LIMIT = 1 << 16  # a line longer than this is left to the real transport (read no further)
_SIGNAL_CHECK_S = 0.25  # the main thread, waiting, runs the stop signals that came meanwhile at least this often
_HELD_LIMIT = 4 << 20  # read while stdout is full beyond this, the rest goes to the real transport (back-pressure)
_TOOLS_WAIT_S = 30.0  # a call waits this long for the main thread to build the tools (then the SDK's way)
_CALLS = 4  # calls the front runs at once at most (each on a thread of its own)
_EOF_GRACE_S = 3.0  # at stdin's end, the calls under way have this long to be answered (then the process ends)
_SHUTDOWN_FLUSH_S = 0.3  # a stop signal's answers may take this long to reach the client
_DEPTH = 64  # nesting the front takes at most (the real transport's parser takes about 200)


@dataclass
class HandOver:
    """What the front read (every byte, in order), whether stdin ended, and the lines it answered, in order,
    each with the answer it gave and whether the real server must see it too: the handshake, under private ids
    (its answers never reach the client, whatever ids the client reuses later); a tool call the front ran is
    never run again."""

    data: bytes = b""
    eof: bool = False
    answered: list[tuple[bytes, Any, bool]] = field(default_factory=list)
    unwritten: bytes = b""  # the end of an answer the front could not write before the hand-over: written first
    # Calls the front took whose answers it had not written at the hand-over: (id, the answer to come), for the
    # real transport to write when each is ready (a call runs on a thread of its own: a small read is never held
    # up by a huge one taken before it).
    pending: list[tuple[Any, Future[dict[str, Any]]]] = field(default_factory=list)


class Front:
    """Answers the first requests from the records of an earlier start, on a thread, until ``hand_over``; and,
    once the server's tools are built (``take_calls``), the calls of those that need nothing from the session,
    before the SDK has loaded (``tools.early_call``)."""

    def __init__(self, server_package: str, argv: list[str], wire_in: int = 0, wire_out: int = 1) -> None:
        self.key = record_key(server_package, argv)
        self.usable = not state_within_roots(argv)  # records are read and kept only then
        self.argv = argv
        self.records = _filled(_read_records(_records_path(self.key)), argv) if self.usable else {}
        self._ids: set[Any] = set()  # ids of the requests kept for the real server: a repeated one ends the answering
        self._replayed: set[str] = set()  # request keys kept for the real server (each once)
        self._initialized = False  # notifications/initialized kept for it
        self._in, self._out = wire_in, wire_out
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC)
        self._got = HandOver()
        # The lines the real server must see (the handshake, once: its session must), and what is read but not yet
        # taken as a line: a session served alone keeps nothing of the calls it answered (threat: a long session
        # of large writes held every byte it ever read).
        self._kept, self._buffer = bytearray(), b""
        self._out_lock = threading.RLock()  # one writer of stdout at a time: the front's thread or a stop signal
        self._shut = False  # a stop signal answered the calls under way: nothing more is written
        self._handshake = ""  # the request key of the initialize answered, "" before
        self._client: dict[str, Any] = {}  # the params of the initialize answered
        # Without a record, the handshake is computed from the server's tools (``Tools.initialize_result``).
        self._answering = True
        self._tools: Tools | None = None
        self._tools_known = threading.Event()  # set by take_calls (with the tools, or None: no calls here)
        self._sdk_wanted = threading.Event()  # a call answered, or the front is done: the SDK may load now
        self._done_r, self._done_w = os.pipe2(os.O_CLOEXEC)  # a call thread is done: its answer to write
        self._pending: dict[Any, Future[dict[str, Any]]] = {}  # id -> the answer of a call under way, in order
        # With the server's event loop (``take_calls``): every call runs there, and what it sends the client goes
        # through the outbox (see ``front_session``). Without: each call on a thread and loop of its own.
        self._outbox: Outbox | None = None
        self._thread = threading.Thread(target=self._run, name="mcp-guard-front", daemon=True)

    def start(self) -> Front:
        self._thread.start()
        return self

    def take_calls(self, tools: Tools | None, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """The server's tools, built without the SDK (None: this server takes no call before the SDK loads), and
        the event loop its calls run on (``Tools.one_loop``; None: each on a thread of its own)."""
        if loop is not None:
            from mcp_server_guard.serving.front_session import Outbox  # noqa: PLC0415 - pydantic, loaded by now

            self._outbox = Outbox(loop, self._wake_writer)
        self._tools = tools
        self._tools_known.set()

    def _wake_writer(self) -> None:
        with contextlib.suppress(OSError):  # (after the hand-over the pipe's reader is gone: nothing to wake)
            os.write(self._done_w, b"x")

    @property
    def outbox(self) -> Outbox | None:
        return self._outbox

    def wait_for_sdk(self) -> None:
        """Wait until the SDK is needed: the front is done (a line it does not answer, or the session's end). A
        server whose front answers everything its client sends never loads the SDK (issue 44: what a call does not
        need is not loaded). In steps: a stop signal the kernel gave another thread is run by the main thread only
        when it wakes, and a wait without a bound may never wake (the server then outlived SIGHUP)."""
        while not self._sdk_wanted.wait(_SIGNAL_CHECK_S):
            collector.resume_if_due()  # (a first call that has not ended yet)

    def _run(self) -> None:
        try:
            while self._answering:
                ready, _, _ = select.select([self._in, self._wake_r, self._done_r], [], [])
                if self._wake_r in ready:
                    return
                if self._done_r in ready:
                    os.read(self._done_r, 4096)
                    self._write_done()
                    continue
                if not self._pull():
                    return
                while self._answering and b"\n" in self._buffer:
                    line, self._buffer = self._buffer.split(b"\n", 1)
                    self._answering = self._answer(line)
                    if not self._answering:
                        self._buffer = line + b"\n" + self._buffer  # the first line the real server takes
                        log.debug("a line the front does not answer: the SDK loads")
                if len(self._buffer) > _LINE_LIMIT:
                    self._answering = False  # not a request it answers: the rest stays in the pipe, unread
        except (OSError, _ClientGone, _HandingOver):
            self._answering = False
        finally:
            if self._got.eof and self._outbox is not None:
                # The client is gone: the calls under way on the server's loop stop (their handlers kill what they
                # started) and nothing more is written — as the real transport ends its calls at stdin's end.
                with self._out_lock:
                    self._shut = True
                    for future in self._pending.values():
                        future.cancel()
            elif self._got.eof:  # stdin ended: no transport will take over; the calls under way are answered here
                with contextlib.suppress(
                    OSError, _ClientGone, _HandingOver, TimeoutError, concurrent.futures.CancelledError
                ):
                    ends = time.monotonic() + _EOF_GRACE_S  # as the real transport's exit watchdog bounds it
                    for future in list(self._pending.values()):
                        future.exception(max(0.0, ends - time.monotonic()))
                    self._write_done()
            self._got.data = bytes(self._kept) + self._buffer
            self._sdk_wanted.set()

    def _pull(self) -> bool:
        """Read what stdin has now (one read); False at EOF (the client is gone)."""
        chunk = os.read(self._in, 65536)
        self._buffer += chunk
        if not chunk:
            self._got.eof = True
        return bool(chunk)

    def _write(self, data: bytes) -> None:
        """Write an answer whole, without blocking on a client that does not read: while stdout is full, stdin is
        read on, and its EOF (the client is gone) ends the answering — the process ends as the real transport's
        does (threat: a client that closed stdin and reads nothing more held the process for ever). A hand-over
        asked for meanwhile takes the rest of the answer to the real transport, which writes it first (threat: a
        client that stops reading held the hand-over, and with it the server's stop signals, for ever)."""
        with self._out_lock:
            if not self._shut:
                self._write_whole(memoryview(data))

    def _write_whole(self, view: memoryview) -> None:
        os.set_blocking(self._out, False)
        try:
            while view:
                try:
                    view = view[os.write(self._out, view) :]
                    continue
                except BlockingIOError:
                    pass
                readable, _, _ = select.select([self._in, self._wake_r], [self._out], [])
                if self._wake_r in readable or len(self._buffer) > _HELD_LIMIT:
                    # Threat (red team 44 F6): a client that writes on and never reads had every byte it sent held
                    # here; past the bound the real transport takes over, which reads no faster than it writes.
                    self._got.unwritten = bytes(view)
                    raise _HandingOver
                if self._in in readable and not self._pull():
                    raise _ClientGone
        finally:
            os.set_blocking(self._out, True)

    def _answer(self, line: bytes) -> bool:
        """Answer ``line`` from the records; False when it cannot (the real server takes it and what follows).
        Only a line the real transport would take as it is: strict UTF-8 and JSON (no NaN), nested no deeper than
        it takes, no other member."""
        if self._shut:
            return True  # a stop signal came: nothing more is taken, run or written (as the real transport's)
        try:
            message = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
            json.dumps(message, ensure_ascii=False).encode("utf-8")  # no lone surrogate from a \ud800 escape
        except (ValueError, UnicodeError, RecursionError):
            return False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or _deeper_than(message, _DEPTH):
            return False
        outbox = self._outbox
        if "method" not in message and outbox is not None and outbox.asks(message.get("id")):
            # The client's answer to a question of a call under way (``front_session``).
            if set(message) <= {"jsonrpc", "id", "result", "error"} and ("result" in message) != ("error" in message):
                outbox.deliver(message["id"], message.get("result"), message.get("error"))
                return True
            return False
        if not set(message) <= {"jsonrpc", "id", "method", "params"}:
            return False
        method, rid, params = message.get("method"), message.get("id"), message.get("params", {})
        if not isinstance(params, dict) or (method == "ping" and params):
            return False
        if method == "notifications/cancelled" and "id" not in message:
            return self._cancel(params.get("requestId"))
        if method == "notifications/initialized" and "id" not in message and self._handshake:
            if not self._initialized:
                self._initialized = True
                self._kept += line + b"\n"  # the real server's session must see it (as a line of its own)
            return True
        if not isinstance(rid, str | int) or isinstance(rid, bool) or rid in self._ids or rid in self._pending:
            return False
        if method == "tools/call":
            return self._call(rid, params)  # never run again: nothing of it is kept for the real server
        result: dict[str, Any] | None = {}
        if method not in ANSWERED:
            return False
        if method != "ping":
            if (method == "initialize") == bool(self._handshake):
                return False  # a second handshake, or tools/list before one
            key = request_key(method, message.get("params"), self._handshake)
            recorded = self.records.get(key)
            computed = not isinstance(recorded, dict)
            result = self._computed(method, params) if computed else recorded
            if result is None:
                return False
            if method == "initialize":
                self._handshake, self._client = key, params
            if key not in self._replayed:  # the real server sees each once, under a private id (its answer dropped)
                self._replayed.add(key)
                self._ids.add(rid)
                self._kept += line + b"\n"
                self._got.answered.append((line, result, True))
        self._write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode() + b"\n")
        if method != "ping" and computed:
            # Kept for the next start, which then answers at once, before the server's tools are built (a session the
            # front serves whole never runs the real server, which keeps its own answers; when it runs, it compares
            # and replaces a record that differs).
            self.records[key] = result
            _record(self, self.records)
        return True

    def _cancel(self, rid: Any) -> bool:
        """A cancel of a call under way on the server's loop: it stops (and is never answered). False for any other
        (the real server's to see)."""
        future = self._pending.get(rid) if self._outbox is not None and isinstance(rid, str | int) else None
        if future is None:
            return False
        future.cancel()
        return True

    def _write_done(self) -> None:
        """Write what the calls under way sent (progress, questions), then the answers of those that are done."""
        with self._out_lock:  # a stop signal answers the others, never one that is written here
            if self._outbox is not None and (sent := self._outbox.take()):
                self._write(sent)
            done = False
            for rid, future in list(self._pending.items()):
                if future.cancelled():
                    del self._pending[rid]  # cancelled by the client: never answered
                elif future.done() and not self._shut:
                    del self._pending[rid]
                    done = True
                    answer: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
                    if future.exception() is None:
                        answer["result"] = future.result()
                    else:
                        answer["error"] = {"code": -32603, "message": "Internal error"}
                    self._write(json.dumps(answer).encode() + b"\n")
        if done:  # (outside the lock: a stop signal is not held up by the collection)
            collector.resume("the first call's answer is out")
            code_cache.keep()

    def shutdown(self, message: str) -> None:
        """A stop signal while the front serves alone: every call under way is answered ``-32000`` (as the real
        transport answers its pending requests) and nothing is written after. Bounded: a client that does not
        read gets what fits in ``_SHUTDOWN_FLUSH_S``."""
        if not self._out_lock.acquire(timeout=_SHUTDOWN_FLUSH_S):
            return  # the front's thread is stuck writing to a client that does not read
        try:
            if self._shut:
                return  # answered once (red team 44 F2: a second signal answered every call again)
            self._shut = True
            error = {"code": -32000, "message": message}
            data = b"".join(json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}).encode() + b"\n"
                            for rid in [*self._pending, *self._left_requests()])  # fmt: skip
            view, ends = memoryview(data), time.monotonic() + _SHUTDOWN_FLUSH_S
            os.set_blocking(self._out, False)
            while view and time.monotonic() < ends:
                try:
                    view = view[os.write(self._out, view) :]
                except BlockingIOError:
                    select.select([], [self._out], [], max(0.0, ends - time.monotonic()))
        except OSError:
            pass  # the client is gone
        finally:
            self._out_lock.release()

    def _left_requests(self) -> list[Any]:
        """The requests read and handed to nobody yet: the first line the front did not answer and those after it,
        once its thread is done (red team 44 F5: a stop signal while the SDK loaded left them unanswered)."""
        if self._thread.is_alive():
            return []
        found: dict[Any, bool] = {}
        for line in self._buffer.split(b"\n")[:-1]:
            try:
                message = json.loads(line)
            except (ValueError, UnicodeError, RecursionError):
                continue
            if not isinstance(message, dict) or not isinstance(message.get("method"), str):
                continue
            rid, params = message.get("id"), message.get("params")
            if isinstance(rid, str | int) and not isinstance(rid, bool):
                found[rid] = True
            elif message["method"] == "notifications/cancelled" and isinstance(params, dict):
                found.pop(params.get("requestId"), None)  # a cancelled request is never answered
        return list(found)

    def served_whole(self) -> bool:
        """Whether the session is over and the front answered all of it: stdin ended, every line it read was
        answered (the real server has nothing to take, and the SDK need not load)."""
        self._thread.join(_TOOLS_WAIT_S)  # it is ending (its last step set the event waited for)
        return self._got.eof and self._answering and not self._buffer.strip() and not self._thread.is_alive()

    def _computed(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The answer to ``initialize`` or ``tools/list`` from the server's tools, as the SDK gives it (the first
        start in a new project has no record), or None when the real server must answer: a server that gives the
        front no tools, params the SDK must judge itself, a list with a cursor or ``_meta``."""
        self._tools_known.wait(_TOOLS_WAIT_S)  # the main thread is building them
        tools = self._tools
        if tools is None:
            return None
        result = tools.initialize_result(params) if method == "initialize" else None
        if method == "tools/list" and not params:
            result = tools.tools_list_result()
        if result is not None:
            log.debug("%s answered from the server's tools (no record)", method)
        return result

    def _call(self, rid: Any, params: dict[str, Any]) -> bool:
        """Take a call (run on the server's loop or a thread of its own: ``_take``; its answer written when done), or
        False when the real server must take it: no handshake yet, a tool that asks first on a server without one
        loop, a client that declared roots (they narrow the jail; fetching them is a request to the client, which
        only the real server makes), ``_meta`` beyond a progress token (the 2026-07-28 envelope, which the real
        transport refuses on this connection) or a token it refuses, or a cancel already sent (the real server
        cancels the call; the front would run it whole)."""
        from mcp_server_guard.serving.tools import client_name  # noqa: PLC0415 - pydantic, once needed

        name, arguments, meta = params.get("name"), params.get("arguments", {}), params.get("_meta", {})
        if not self._handshake or not set(params) <= {"name", "arguments", "_meta"} or len(self._pending) >= _CALLS:
            return False  # (a burst past a few calls at once: the real server's, which is loading meanwhile)
        capabilities = self._client.get("capabilities")
        if not isinstance(capabilities, dict) or "roots" in capabilities:
            return False
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return False
        if not isinstance(meta, dict) or not set(meta) <= {"progressToken"}:
            return False
        token = meta.get("progressToken", "")
        if not isinstance(token, str | int) or isinstance(token, bool):
            return False  # (red team 44 F7: a token the real transport refuses is its to answer)
        self._tools_known.wait(_TOOLS_WAIT_S)  # the main thread is building them
        tools, outbox = self._tools, self._outbox
        if tools is None or name not in tools.specs or (tools.specs[name].gate is not None and outbox is None):
            return False  # (a tool that asks first runs on the server's loop only)
        ready, _, _ = select.select([self._in], [], [], 0)
        if ready and not self._pull():
            return False  # the client is gone: nothing is run for it
        if b"notifications/cancelled" in self._buffer:
            return False
        actor = client_name(self._client.get("clientInfo"))
        with self._out_lock:  # a stop signal answers the calls under way: none is taken after it (red team 44 F3)
            return not self._shut and self._take(rid, tools, name, arguments, actor, meta)

    def _take(self, rid: Any, tools: Tools, name: str, arguments: dict[str, Any], actor: Any, meta: Any) -> bool:
        """Start the call: on the server's loop with a session of the front's, or on a thread and loop of its own."""
        outbox = self._outbox
        if outbox is not None:
            import asyncio  # noqa: PLC0415 - loaded by the loop that runs the calls

            from mcp_server_guard.serving.front_session import FrontSession  # noqa: PLC0415
            from mcp_server_guard.serving.tools import early_call  # noqa: PLC0415

            session = FrontSession(outbox, self._client, meta.get("progressToken"))
            call = outbox.run(early_call(tools, name, arguments, actor, session))
            on_loop = asyncio.run_coroutine_threadsafe(call, outbox.loop)
            self._pending[rid] = on_loop
            on_loop.add_done_callback(lambda _: self._wake_writer())
            log.debug("tools/call of %s taken on the server's loop: answered before the SDK loaded", name)
            return True
        future: Future[dict[str, Any]] = Future()
        self._pending[rid] = future
        threading.Thread(target=self._run_call, args=(future, tools, name, arguments, actor), daemon=True).start()
        return True

    def _run_call(self, future: Future[dict[str, Any]], tools: Tools, name: str, arguments: Any, actor: Any) -> None:
        """One call, on its own thread and event loop, as ``tools.early_call`` answers it."""
        import asyncio  # noqa: PLC0415 - not before a call needs it (a tenth of the first answer's time)

        from mcp_server_guard.asking import NoSession  # noqa: PLC0415
        from mcp_server_guard.serving.tools import early_call  # noqa: PLC0415

        try:
            future.set_result(asyncio.run(early_call(tools, name, arguments, actor, NoSession())))
            log.debug("tools/call of %s answered before the SDK loaded", name)
        except Exception as exc:  # noqa: BLE001 - every request gets an answer: the transport says it failed
            future.set_exception(exc)
        with contextlib.suppress(OSError):
            os.write(self._done_w, b"x")

    def hand_over(self) -> HandOver:
        """Stop answering (after the answer being written, if any); everything read so far, and the calls whose
        answers are still to come, for the real transport."""
        self._tools_known.set()
        if self._thread.is_alive():
            os.write(self._wake_w, b"x")
            self._thread.join()
        self._got.pending = list(self._pending.items())
        if self._outbox is not None:
            self._got.unwritten += self._outbox.handed_over()
        for fd in (self._wake_r, self._wake_w, self._done_r):
            os.close(fd)
        return self._got


class _ClientGone(Exception):
    """Stdin ended while an answer was being written."""


class _HandingOver(Exception):
    """The real transport takes over while an answer was being written (the rest is in ``HandOver.unwritten``)."""


_running: Front | None = None


def start_front(server_package: str, argv: list[str] | None = None) -> None:
    """At the top of a server's console script, before anything heavy is imported. Not for --help/--version, nor
    when stdin or stdout is a terminal (a person typing)."""
    global _running  # noqa: PLW0603 - one front per process, taken by the transport
    args = sys.argv[1:] if argv is None else argv
    if _running is not None or any(a in ("--help", "-h", "--version") for a in args):
        return
    with contextlib.suppress(OSError):
        if os.isatty(0) or os.isatty(1):
            return
    with contextlib.suppress(OSError):
        _running = Front(server_package, args).start()
        code_cache.install(_running.usable)  # (what the start's dataclasses compile: read back where records are)


def run_console(server_package: str, argv: Sequence[str] | None = None) -> None:
    """A server's console script: ``sys.path`` without the project (``paths.imports_only_from_code_dirs``), pydantic's
    search for plugins deferred (``distributions``: before the front, whose thread may load pydantic for a call), the
    front (nothing heavy before it), the MCP SDK's client deferred, then the server's own command line, which loads
    the SDK once the front no longer answers alone (``early_calls``)."""
    from mcp_server_guard.paths import imports_only_from_code_dirs  # noqa: PLC0415 - (loaded: the package's)
    from mcp_server_guard.serving import distributions, sdk  # noqa: PLC0415 - standard library, no importlib.abc

    imports_only_from_code_dirs()  # (threat: a module the server imports later planted in the project: see there)
    collector.pause()  # until the first call's answer is out (``collector``), with a front to write it
    distributions.defer_plugin_search()
    start_front(server_package, None if argv is None else list(argv))
    if _running is None:
        collector.resume("no start-up front")
    sdk.defer_sdk_client()
    importlib.import_module(f"{server_package}.cli").main(argv)


def early_calls(
    tools: Tools | None, stop_signals: Sequence[signal.Signals] = (), on_stop: Callable[[int], None] | None = None
) -> bool:
    """The server's tools, built without the SDK, to the front (None: it takes no call), then wait until the SDK
    is needed (see ``Front.wait_for_sdk``). True when the front served the whole session: nothing is left for the
    real server. Meanwhile a stop signal answers the calls under way (``Front.shutdown``), then ``on_stop(signum)``
    (which ends the process) — as the real transport does."""
    front = _running
    if front is None:
        return False
    front.take_calls(tools)
    if tools is None:
        return False

    def stop(signum: int, _frame: object) -> None:
        front.shutdown(f"Server shutting down ({signal.Signals(signum).name})")
        if on_stop is not None:
            on_stop(signum)
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, stop) for sig in stop_signals}
    try:
        front.wait_for_sdk()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return front.served_whole()


async def early_calls_on_loop(tools: Tools) -> bool:
    """``early_calls`` for a server whose calls hold state on its event loop (``Tools.one_loop``: the box and the
    background jobs of shell_exec): the front hands each call it takes to the running loop, which serves them from
    the start and, once the SDK is needed, serves the real transport too. Waits for that without holding the loop;
    True when the front served the whole session."""
    import asyncio  # noqa: PLC0415 - running already

    import anyio.to_thread  # noqa: PLC0415 - not before the loop runs (the front's start stays light)

    front = _running
    if front is None:
        return False
    front.take_calls(tools, asyncio.get_running_loop())
    await anyio.to_thread.run_sync(front.wait_for_sdk, abandon_on_cancel=True)
    return await anyio.to_thread.run_sync(front.served_whole, abandon_on_cancel=True)


def shutdown_front(message: str) -> list[asyncio.Task[Any]]:
    """A stop signal while the front serves: the calls under way are answered ``message`` (``Front.shutdown``)
    and, on the server's loop, cancelled (their handlers kill what they started, their records say so); their
    tasks, to wait for."""
    front = _running
    if front is None:
        return []
    front.shutdown(message)
    if front.outbox is None:
        return []
    for future in list(front._pending.values()):
        future.cancel()
    return list(front.outbox.tasks)


def take_front() -> tuple[Front | None, HandOver | None]:
    """The front of this process, stopped, and what it read (None, None when there was none)."""
    global _running
    front, _running = _running, None
    collector.resume("the SDK takes the wire")
    return (front, front.hand_over()) if front is not None else (None, None)
