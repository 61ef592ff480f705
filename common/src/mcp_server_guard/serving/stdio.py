"""The stdio transport of the guarded servers: the SDK's wire format, plus what the SDK's transport leaves out.

``mcp.server.stdio.stdio_server()`` drops every line it cannot validate, so a client that sent a bad request
waits forever; on stdin EOF it still answers calls in flight (``-32000 Connection closed``), which makes mcp 1.x
clients fail on close; and it has no way to answer pending calls when the server is told to stop. Here:

* every line is answered per JSON-RPC 2.0 unless it is a valid message: ``-32700`` (not JSON; id null, but a
  line that is JSON except for bytes that are not valid UTF-8 is answered to its requests' ids),
  ``-32600`` (not a valid request; its id when one can be read), ``-32602`` (params that are not an object, nested
  too deeply or not valid Unicode), with one warning line on stderr each. A notification or a response is never
  answered; a bad one is only logged.
* stdin EOF (or a broken stdout) means the client is gone: nothing more is written, and the server loop ends,
  which cancels the calls in flight (their handlers kill what they started).
* a stop signal answers every request still pending with ``-32000`` ("server shutting down"), then ends the
  loop and writes nothing more.
* a ``tools/call`` that needs nothing from the session (see ``DirectCalls``) is handed straight to the server once
  the 2025-era handshake is done, beside the SDK's dispatcher, and answered through the SDK's own sieve.

While serving, fd 0 reads /dev/null and fd 1 goes to stderr, as with the SDK: stray prints and children never
touch the wire. What one line is (a message, or a rejection and whom to answer) is decided in ``serving.lines``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import Future
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp.shared.message import SessionMessage
from mcp_types import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    ErrorData,
    InitializeRequestParams,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)
from mcp_types.methods import serialize_server_result
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from mcp_server_guard.serving import deadline
from mcp_server_guard.serving.front import Front, HandOver, take_front
from mcp_server_guard.serving.front_records import record, request_key
from mcp_server_guard.serving.lines import (
    Lines,
    Oversized,
    Rejection,
    decode_line,
    decode_oversized,
    error_line,
)
from mcp_server_guard.serving.wire import CHUNK as _CHUNK
from mcp_server_guard.serving.wire import IOThread as _IOThread
from mcp_server_guard.serving.wire import claimed_stdio as _claimed_stdio
from mcp_server_guard.serving.wire import pipe_empty as _pipe_empty
from mcp_server_guard.serving.wire import pipe_size as _pipe_size
from mcp_server_guard.serving.wire import pollable as _pollable
from mcp_server_guard.serving.wire import read_chunk as _read_chunk
from mcp_server_guard.serving.wire import write_all as _write_all

log = logging.getLogger(__name__)
_ELICITATION_MODES_SINCE = "2025-11-25"  # the protocol version that gave elicitation/create its "mode"

# Defense in depth: a client sending an endless line cannot make the server hold it in memory; longer
# lines are skipped as they stream in and answered -32600.
MAX_MESSAGE_BYTES = 64 << 20
SERVER_SHUTTING_DOWN = CONNECTION_CLOSED  # -32000: the implementation-defined "server error" of JSON-RPC 2.0
SHUTDOWN_FLUSH_S = 0.3  # how long the last answers may take to reach a client that stopped reading
_BIG = 64 << 10  # a line this long is decoded on the reader thread: the event loop keeps serving meanwhile


# -- the connection ------------------------------------------------------------------------------------------


@runtime_checkable
class DirectCalls(Protocol):
    """A server that answers some ``tools/call`` requests itself, beside the SDK's dispatcher.

    The SDK's way to a tool (a stream hop to its dispatcher, a task, the runner's context and middleware, the
    per-version sieve, a stream hop back) costs more than a small tool's own work. A call that needs nothing
    from the session - no question to the human, no roots to fetch, no progress to report - is handed straight
    to the server by the connection; every other message takes the SDK's way.
    """

    def takes_directly(self, name: str, client: InitializeRequestParams) -> bool:
        """Whether a call of tool ``name`` from this client needs nothing from the session right now."""
        ...

    async def call_directly(self, name: str, arguments: dict[str, Any], client: InitializeRequestParams) -> Any:
        """Run the call; returns the result model (raises ``MCPError`` for a protocol error)."""
        ...

    def roots_changed(self) -> None:
        """The client said its roots changed: no call may be taken directly until they are fetched again."""
        ...


@dataclass(slots=True)
class _Session:
    """What the handshake settled, as far as direct calls care."""

    client: InitializeRequestParams
    version: str


OWN_ID_PREFIX = "mcp-guard-"  # the ids of the requests the server sends the client (see docs/agent-cli.md)


def _own_id(rid: object) -> int | None:
    """The number behind one of our request ids (``mcp-guard-7``), or None."""
    digits = rid[len(OWN_ID_PREFIX) :] if isinstance(rid, str) and rid.startswith(OWN_ID_PREFIX) else ""
    # ASCII digits only: "²" is a digit to str.isdigit() and no number to int() (a client must not crash us).
    if isinstance(rid, str) and digits.isascii() and digits.isdigit() and len(digits) < 20:
        return int(digits)
    return None


class _Outbound:
    """The write stream handed to the SDK's server loop: notes which requests got their answer."""

    def __init__(self, connection: StdioConnection) -> None:
        self._connection = connection

    async def send(self, item: SessionMessage, /) -> None:
        await self._connection.send_message(item.message)

    async def aclose(self) -> None:
        return None

    async def __aenter__(self) -> _Outbound:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        return None


class StdioConnection:
    """One client on a pair of file descriptors: reading, answering what the SDK would drop, and shutting down."""

    def __init__(
        self,
        wire_in: int,
        wire_out: int,
        *,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        direct: DirectCalls | None = None,
        front: Front | None = None,
        early: HandOver | None = None,
    ) -> None:
        self._wire_in, self._wire_out, self._limit = wire_in, wire_out, max_message_bytes
        self._direct = direct
        # The start-up front (see ``front``): what it read and answered before this transport existed, and the
        # answers to keep for the next start (request key -> result) with the keys of the requests to take them.
        self._front, self._early = front, early if early is not None else HandOver()
        self._records: dict[str, Any] = dict(front.records) if front is not None else {}
        self._recording: dict[Any, str] = {}  # request id -> its request key (initialize, tools/list)
        self._handshake_key = ""
        self._replayed: dict[str, Any] = {}  # private id of a request the front answered -> the answer it gave
        self._initialize: tuple[RequestId, InitializeRequestParams] | None = None  # the handshake under way
        self._session: _Session | None = None  # the handshake the server accepted (2025-era clients only)
        # Direct calls in flight: plain asyncio tasks (a fifth of the cost of a task group's), cancelled by
        # notifications/cancelled and when the connection ends.
        self._direct_calls: dict[RequestId, asyncio.Task[None]] = {}
        # Calls the front took, still running (answered -32000 at a stop signal); on this loop (``Tools.one_loop``,
        # ``_front_out``), a cancel stops them.
        self._front_out = front.outbox if front is not None else None
        self._early_calls = {coerce_request_id(rid): (rid, answer) for rid, answer in self._early.pending}
        self._inbound_send, self.inbound = anyio.create_memory_object_stream[SessionMessage](0)
        self._outbox_send: MemoryObjectSendStream[bytes]
        self._outbox: MemoryObjectReceiveStream[bytes]
        self._outbox_send, self._outbox = anyio.create_memory_object_stream[bytes](16)
        self.outbound = _Outbound(self)
        self._pending: dict[RequestId, int] = {}  # requests handed to the server and not answered yet
        self._gone = False  # stdin EOF or stdout broken: write nothing more
        self._closing = False  # shutting down: the server's own writes are dropped
        self._written = anyio.Event()
        self._stdin = _IOThread("mcp-guard-stdin")
        # A pipe or socket is read from the event loop when it has data (no thread hop per message); a terminal
        # or a file is read on the thread, since its blocking mode is not ours to change.
        self._in_polled = _pollable(wire_in)
        self._queued = 0  # messages handed to the write loop and not yet written: direct writes wait their turn
        self._stdout = _IOThread("mcp-guard-stdout")
        self._out_pipe_size = _pipe_size(wire_out)

    async def serve(
        self,
        run_server: Callable[[MemoryObjectReceiveStream[SessionMessage], _Outbound], Awaitable[None]],
        stop_signals: Sequence[signal.Signals] = (),
    ) -> signal.Signals | None:
        """Serve until the client leaves (None) or one of ``stop_signals`` arrives (returned)."""
        stopped_by: list[signal.Signals] = []
        with ExitStack() as stack:
            # Received from before the first read until every handler is done: a signal is never left to its
            # default action (death without clean-up) while calls are still winding down.
            received = stack.enter_context(anyio.open_signal_receiver(*stop_signals)) if stop_signals else None
            async with anyio.create_task_group() as tg:
                if received is not None:
                    tg.start_soon(self._stop_on_signal, received, tg.cancel_scope, stopped_by)
                if self._early.unwritten:
                    await self._queue(self._early.unwritten)  # the end of the front's last answer: first out
                if self._front_out is not None:  # the calls the front took write through this transport from now on
                    for data in self._front_out.attach(self._send_raw):
                        await self._queue(data)
                for rid, answer in self._early.pending:  # calls the front took, still running: answered when done
                    tg.start_soon(self._early_answer, rid, answer)
                tg.start_soon(self._write_loop)
                tg.start_soon(self._read_loop)
                try:
                    await run_server(self.inbound, self.outbound)
                finally:
                    await self._cancel_direct_calls()
                tg.cancel_scope.cancel()
        for stream in (self._inbound_send, self.inbound, self._outbox_send, self._outbox):
            stream.close()
        return stopped_by[0] if stopped_by else None

    async def _early_answer(self, rid: RequestId, answer: Future[dict[str, Any]]) -> None:
        """The answer of a call the start-up front took (on a thread of its own, or on this loop), written once it
        is ready; none for a call the client cancelled."""
        message: JSONRPCResponse | JSONRPCError
        await asyncio.wait({asyncio.wrap_future(answer)})
        if self._early_calls.pop(coerce_request_id(rid), None) is None or answer.cancelled():
            return  # cancelled by the client
        try:
            message = JSONRPCResponse(jsonrpc="2.0", id=rid, result=answer.result())
        except Exception:  # every request gets an answer
            log.exception("a call taken before the SDK loaded failed")
            message = JSONRPCError(
                jsonrpc="2.0", id=rid, error=ErrorData(code=INTERNAL_ERROR, message="Internal error")
            )
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self.send_message(message)

    async def _stop_on_signal(
        self, received: AsyncIterator[int], scope: anyio.CancelScope, stopped_by: list[signal.Signals]
    ) -> None:
        async for signum in received:
            if stopped_by:
                continue  # already on the way out
            stopped_by.append(signal.Signals(signum))
            deadline.arm(128 + signum, stopped_by[0].name)
            log.info("%s: answering pending requests and shutting down", stopped_by[0].name)
            await self.shutdown(f"Server shutting down ({stopped_by[0].name})")
            scope.cancel()

    async def shutdown(self, message: str) -> None:
        """Answer every pending request with ``message`` (-32000); after that, nothing more is written."""
        self._closing = True
        answers = [
            error_line(rid, SERVER_SHUTTING_DOWN, message) for rid, count in self._pending.items() for _ in range(count)
        ] + [error_line(rid, SERVER_SHUTTING_DOWN, message) for rid, _ in self._early_calls.values()]
        self._pending.clear()
        with anyio.move_on_after(SHUTDOWN_FLUSH_S):  # a client that stopped reading cannot hold the exit
            for data in answers:
                await self._queue(data)
            self._outbox_send.close()
            await self._written.wait()

    async def send_message(self, message: JSONRPCMessage) -> None:
        """A message from the server loop: written unless the client is gone or the server is shutting down."""
        answered: RequestId | None = None
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            answered = message.id
            self._forget(answered)
            if self._initialize is not None and coerce_request_id(answered) == self._initialize[0]:
                self._settle_handshake(message)
            if self._keep_for_next_start(message):
                return  # the front answered it already (under the client's id): this one is not for the client
        if self._closing or self._gone:
            return
        if isinstance(message, JSONRPCRequest) and isinstance(message.id, int):
            # Our own requests (an elicitation) carry string ids of their own kind: a client that pairs replies by
            # id alone never takes our request's id for its own pending call's (both would be 1).
            message = message.model_copy(update={"id": f"{OWN_ID_PREFIX}{message.id}"})
        message = self._as_the_client_speaks(message)
        try:
            data = message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        except (PydanticSerializationError, UnicodeEncodeError) as exc:
            log.error("a message to the client could not be encoded as JSON: %s", exc)
            if answered is None:
                return
            data = error_line(answered, INTERNAL_ERROR, "Internal error: the answer could not be encoded as JSON")
        if not self._queued and self._fits_now(data):
            # Nothing queued or being written, and an empty pipe takes the whole message at once: written here,
            # in order, without the hop to the write loop.
            try:
                _write_all(self._wire_out, data)
            except OSError as exc:
                self._client_left(f"stdout broken ({exc.strerror})")
            return
        await self._queue(data)

    def _as_the_client_speaks(self, message: JSONRPCMessage) -> JSONRPCMessage:
        """A request of ours in the protocol version the client negotiated. Threat: none — a strict client of
        2025-06-18 rejects an ``elicitation/create`` carrying ``mode`` (defined only from 2025-11-25), and the
        approval question is never seen: a form question is sent without it to such a client."""
        if not isinstance(message, JSONRPCRequest) or message.method != "elicitation/create":
            return message
        version = self._session.version if self._session is not None else None
        params = message.params
        if version is None or version >= _ELICITATION_MODES_SINCE or not params or params.get("mode") != "form":
            return message
        return message.model_copy(update={"params": {k: v for k, v in params.items() if k != "mode"}})

    def _keep_for_next_start(self, answer: JSONRPCResponse | JSONRPCError) -> bool:
        """Record an answer to initialize or tools/list for the next start; True when the front gave it already
        (this one is then dropped: one answer per request)."""
        rid = answer.id
        key = self._recording.pop(rid, None)
        result = answer.result if isinstance(answer, JSONRPCResponse) else None
        front = self._front
        if key is not None and front is not None and isinstance(result, dict) and self._records.get(key) != result:
            self._records[key] = result
            record(front, self._records)
        if not isinstance(rid, str) or rid not in self._replayed:
            return False
        if self._replayed.pop(rid) != result:
            log.warning("a start-up answer differed from the server's own (%s); it is replaced", rid)
        return True

    async def _queue(self, data: bytes) -> None:
        self._queued += 1
        try:
            await self._outbox_send.send(data)
        except BaseException:
            self._queued -= 1
            raise

    def _fits_now(self, data: bytes) -> bool:
        return len(data) <= self._out_pipe_size and _pipe_empty(self._wire_out)

    def _settle_handshake(self, answer: JSONRPCResponse | JSONRPCError) -> None:
        assert self._initialize is not None
        client, self._initialize = self._initialize[1], None
        version = answer.result.get("protocolVersion") if isinstance(answer, JSONRPCResponse) else None
        if isinstance(version, str) and version in HANDSHAKE_PROTOCOL_VERSIONS:
            self._session = _Session(client, version)

    def _take_directly(self, message: JSONRPCRequest) -> tuple[str, dict[str, Any]] | None:
        """The tool and arguments of a call the server answers itself, or None: the SDK's way."""
        params = message.params
        if self._direct is None or self._session is None or message.method != "tools/call" or params is None:
            return None
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict) or params.keys() - {"name", "arguments"}:
            return None  # _meta (a progress token, a task, ...) or anything unusual: the SDK's full treatment
        if not self._direct.takes_directly(name, self._session.client):
            return None
        return name, arguments

    async def _call_directly(self, rid: RequestId, name: str, arguments: dict[str, Any]) -> None:
        assert self._direct is not None and self._session is not None
        session = self._session
        answer: JSONRPCResponse | JSONRPCError
        try:
            result = await self._direct.call_directly(name, arguments, session.client)
            dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            wire = serialize_server_result("tools/call", session.version, dumped)  # the SDK's own sieve
            answer = JSONRPCResponse(jsonrpc="2.0", id=rid, result=wire)
        except MCPError as exc:
            answer = JSONRPCError(jsonrpc="2.0", id=rid, error=exc.error)
        except Exception:  # every request gets an answer; the server goes on serving
            log.exception("a direct call of %s failed", name)
            error = ErrorData(code=INTERNAL_ERROR, message="Internal error")
            answer = JSONRPCError(jsonrpc="2.0", id=rid, error=error)
        try:
            await self.send_message(answer)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.debug("dropped the answer to %r: shutting down", rid)

    def _direct_call_done(self, rid: RequestId, task: asyncio.Task[None]) -> None:
        if self._direct_calls.get(rid) is task:
            del self._direct_calls[rid]

    async def _send_raw(self, data: bytes) -> None:
        """A line a call the front took sends (progress, a question): written unless the client is gone."""
        if not (self._closing or self._gone):
            await self._queue(data)

    async def _cancel_direct_calls(self) -> None:
        """The connection ends: the direct calls still running are cancelled (their handlers kill what they
        started, their audit records say "cancelled") and waited for; so are the front's still running here."""
        for _, early in self._early_calls.values() if self._front_out else ():
            early.cancel()
        tasks = list(self._direct_calls.values())
        for task in tasks:
            task.cancel()
        if tasks:
            with anyio.CancelScope(shield=True):
                await asyncio.gather(*tasks, return_exceptions=True)

    def _forget(self, rid: RequestId) -> None:
        key = coerce_request_id(rid)
        if (count := self._pending.get(key, 0)) > 1:
            self._pending[key] = count - 1
        else:
            self._pending.pop(key, None)

    async def _read_loop(self) -> None:
        lines = Lines(self._limit)
        try:
            answered = list(self._early.answered)
            for number, line in enumerate(lines.feed(self._early.data)):  # what the front read, in order
                if answered and line == answered[0][0]:
                    # Answered by the front: the server still sees the handshake (its session must), under a
                    # private id, so that its answer is recognised and dropped whatever ids the client reuses; a
                    # tool call the front ran is not run again.
                    _, answer, replay = answered.pop(0)
                    if replay:
                        private = f"mcp-guard-front-{number}"
                        self._replayed[private] = answer
                        await self._receive(json.dumps({**json.loads(line), "id": private}).encode())
                else:
                    await self._receive(line)
            if self._early.eof:
                self._client_left("stdin closed")
                return
            while chunk := await self._read():
                for line in lines.feed(chunk):
                    if self._closing:
                        return
                    await self._receive(line)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # the server loop is over
        self._client_left("stdin closed")

    async def _read(self) -> bytes:
        if not self._in_polled:
            return await self._stdin.run(partial(_read_chunk, self._wire_in))
        while True:
            try:
                return os.read(self._wire_in, _CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(self._wire_in)
            except OSError:
                return b""  # EIO, EBADF: the client side is gone, as at EOF

    async def _receive(self, line: bytes | Oversized) -> None:
        if isinstance(line, Oversized):
            outcome: SessionMessage | Rejection = decode_oversized(line.head, line.tail, line.size, self._limit)
            size, shown = line.size, line.head[:60]
        else:
            decode = partial(decode_line, line)
            outcome = decode() if len(line) < _BIG else await self._stdin.run(decode)
            size, shown = len(line), line[:60]
        if isinstance(outcome, SessionMessage):
            message = outcome.message
            if (
                isinstance(message, JSONRPCResponse | JSONRPCError)
                and self._front_out
                and self._front_out.asks(message.id)
            ):
                # The answer to a question of a call the front took (``front_session``): never the SDK's.
                result = message.result if isinstance(message, JSONRPCResponse) else None
                error = message.error.model_dump() if isinstance(message, JSONRPCError) else None
                self._front_out.deliver(message.id, result, error)
                return
            if isinstance(message, JSONRPCResponse | JSONRPCError) and (own := _own_id(message.id)) is not None:
                message = message.model_copy(update={"id": own})  # the answer to one of our requests, as minted
                outcome = SessionMessage(message=message, metadata=outcome.metadata)
            if isinstance(message, JSONRPCRequest):
                key = coerce_request_id(message.id)
                if not (isinstance(message.id, str) and message.id in self._replayed):
                    self._pending[key] = self._pending.get(key, 0) + 1
                if message.method in ("initialize", "tools/list"):
                    request = request_key(message.method, message.params, self._handshake_key)
                    self._recording[message.id] = request
                    if message.method == "initialize":
                        self._handshake_key = request
                if message.method == "initialize" and isinstance(message.params, dict):
                    self._expect_handshake(key, message.params)
                elif (direct := self._take_directly(message)) is not None and key not in self._direct_calls:
                    log.debug("tools/call %r (%s) taken directly", key, direct[0])
                    started = asyncio.create_task(self._call_directly(key, *direct))
                    self._direct_calls[key] = started
                    started.add_done_callback(partial(self._direct_call_done, key))
                    return
            elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
                if (cancelled := cancelled_request_id_from_params(message.params)) is not None:
                    self._forget(cancelled)  # a cancelled request is never answered, not even at shutdown
                    if (running := self._direct_calls.get(coerce_request_id(cancelled))) is not None:
                        running.cancel()
                    early = self._early_calls.pop(coerce_request_id(cancelled), None)  # the front's: never answered
                    if self._front_out and early:
                        early[1].cancel()  # on this loop: stopped
            elif (
                isinstance(message, JSONRPCNotification)
                and message.method == "notifications/roots/list_changed"
                and self._direct is not None
            ):
                # Before the next line is read: a call that follows the notification never runs on the old roots.
                self._direct.roots_changed()
            await self._inbound_send.send(outcome)
            return
        answered = ", ".join("null" if rid is None else json.dumps(rid) for rid in outcome.answer)
        log.warning(
            "bad message from the client (%d bytes: %r%s): %s; %s",
            size,
            shown,
            "..." if size > len(shown) else "",
            outcome.message,
            f"answered {outcome.code} to id {answered}" if outcome.answer else "not answered (not a request)",
        )
        for rid in outcome.answer:
            if not (self._closing or self._gone):
                await self._queue(error_line(rid, outcome.code, outcome.message))

    def _expect_handshake(self, rid: RequestId, params: dict[str, Any]) -> None:
        try:
            client = InitializeRequestParams.model_validate(params, by_name=False)
        except ValidationError:
            return  # the SDK answers it with an error; no direct calls on a handshake it refused
        self._initialize = (rid, client)

    async def _write_loop(self) -> None:
        try:
            async for data in self._outbox:
                if self._gone:
                    self._queued -= 1
                    continue
                try:
                    if self._fits_now(data):
                        # An empty pipe takes the whole answer at once: written here, without the round trip
                        # through the writer thread (a tenth of a small call).
                        _write_all(self._wire_out, data)
                    else:  # it may block (a client that is slow to read): the event loop keeps serving
                        await self._stdout.run(partial(_write_all, self._wire_out, data))
                except OSError as exc:
                    self._client_left(f"stdout broken ({exc.strerror})")
                finally:
                    self._queued -= 1
        finally:
            self._written.set()

    def _client_left(self, why: str) -> None:
        """The client is gone: write nothing more, and end the server loop (which cancels the calls in flight)."""
        if not self._gone:
            log.info("%s: the client is gone; cancelling %d pending request(s)", why, sum(self._pending.values()))
            deadline.arm(0, why)
        self._gone = True
        self._inbound_send.close()

        # wire_in stays open: the daemon reader may still block on it, and a recycled number would mislead it.


@asynccontextmanager
async def stdio_connection(
    *, max_message_bytes: int = MAX_MESSAGE_BYTES, direct: DirectCalls | None = None
) -> AsyncIterator[StdioConnection]:
    front, early = take_front()  # stopped before the wire changes hands
    with _claimed_stdio() as (wire_in, wire_out):
        yield StdioConnection(
            wire_in, wire_out, max_message_bytes=max_message_bytes, direct=direct, front=front, early=early
        )


async def serve_stdio(
    server: MCPServer[Any],
    *,
    stop_signals: Sequence[signal.Signals] = (),
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> signal.Signals | None:
    """Run ``server`` over stdin/stdout, as ``server.run("stdio")`` does, with this module's transport.

    Returns None once the client is gone (stdin EOF), or the stop signal that ended the session.
    """
    # The SDK's run_stdio_async drives this low-level server the same way, on its own transport.
    lowlevel = server._lowlevel_server

    async def run_server(read: MemoryObjectReceiveStream[SessionMessage], write: _Outbound) -> None:
        await lowlevel.run(read, write, lowlevel.create_initialization_options())

    direct = server if isinstance(server, DirectCalls) else None
    async with stdio_connection(max_message_bytes=max_message_bytes, direct=direct) as connection:
        return await connection.serve(run_server, stop_signals)
