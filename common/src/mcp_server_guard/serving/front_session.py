"""The session of a call the start-up front serves before the MCP SDK has loaded (issue 44): its questions to the
person (``elicitation/create``), its progress notifications, on the wire as the SDK sends them. Standard library
and pydantic only.

A server whose calls hold state on its event loop (shell_exec: the box, background jobs) runs every call on one
loop from the start (``Tools.one_loop``): the front reads the wire on its thread and hands each call to that loop,
and what a call sends goes out through ``Outbox``: written by the front's thread while it holds the wire, through
the real transport after the hand-over (``attach``). The client's answers to our questions come back by id
(``mcp-guard-q<N>``, which no request of the SDK's carries), read by the front or, after the hand-over, by the
transport (``Outbox.deliver``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from mcp_server_guard.asking import Answer, answer_of, form_schema

T = TypeVar("T")
QUESTION_ID_PREFIX = "mcp-guard-q"  # our questions' ids: never "mcp-guard-<digits>" (the SDK's own requests)
_MODES_SINCE = "2025-11-25"  # the protocol version that gave elicitation/create its "mode" (as serving.stdio)


class Outbox:
    """What calls on the loop send the client, in order, and the answers to their questions."""

    def __init__(self, loop: asyncio.AbstractEventLoop, wake: Callable[[], None]) -> None:
        self.loop = loop
        self._wake = wake  # tells the front's thread there is something to write
        self._lock = threading.Lock()
        self._queued: list[bytes] = []  # for the front's thread to write
        self._sink: Callable[[bytes], Awaitable[None]] | None = None  # the real transport's queue, once attached
        self._late: list[bytes] | None = None  # sent between the hand-over and the attach
        self._asked: dict[str, asyncio.Future[tuple[Any, Any]]] = {}
        self._ids = itertools.count(1)
        self.tasks: set[asyncio.Task[Any]] = set()  # the calls running on the loop (a stop waits for them)

    async def run(self, call: Awaitable[T]) -> T:
        """Run one call on the loop, known to ``tasks`` while it runs."""
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        try:
            return await call
        finally:
            self.tasks.discard(task)

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode() + b"\n"
        if self._sink is not None:
            await self._sink(data)
            return
        with self._lock:
            if self._late is not None:
                self._late.append(data)
                return
            self._queued.append(data)
        self._wake()

    def take(self) -> bytes:
        """What the front's thread is to write now (in order)."""
        with self._lock:
            data, self._queued = b"".join(self._queued), []
        return data

    def handed_over(self) -> bytes:
        """The front stops writing: what it did not write yet goes first through the real transport."""
        with self._lock:
            data, self._queued, self._late = b"".join(self._queued), [], []
        return data

    def attach(self, sink: Callable[[bytes], Awaitable[None]]) -> list[bytes]:
        """The real transport writes from now on; returns what was sent since the hand-over (to write first)."""
        with self._lock:
            late, self._late, self._sink = self._late or [], None, sink
        return late

    def asks(self, rid: object) -> bool:
        return isinstance(rid, str) and rid in self._asked

    def deliver(self, rid: object, result: Any, error: Any) -> None:
        """The client's answer to one of our questions (from any thread)."""
        future = self._asked.get(rid) if isinstance(rid, str) else None
        if future is not None:
            self.loop.call_soon_threadsafe(_settle, future, (result, error))

    async def request(self, method: str, params: dict[str, Any]) -> tuple[Any, Any]:
        """Send a request to the client and wait for its answer: (result, error)."""
        rid = f"{QUESTION_ID_PREFIX}{next(self._ids)}"
        future: asyncio.Future[tuple[Any, Any]] = self.loop.create_future()
        self._asked[rid] = future
        try:
            await self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            return await future
        finally:
            del self._asked[rid]


def _settle(future: asyncio.Future[tuple[Any, Any]], outcome: tuple[Any, Any]) -> None:
    if not future.done():
        future.set_result(outcome)


class FrontSession:
    """``asking.Session`` of one call the front took: its questions and progress go through ``Outbox``,
    shaped as the SDK shapes them for the client's protocol version."""

    def __init__(self, outbox: Outbox, client: dict[str, Any], token: Any) -> None:
        capabilities = client.get("capabilities")
        self._outbox, self._token = outbox, token
        self._version = str(client.get("protocolVersion", ""))
        self._elicits = isinstance(capabilities, dict) and "elicitation" in capabilities

    @property
    def can_elicit(self) -> bool:
        return self._elicits

    @property
    def can_send_request(self) -> bool:
        return True  # the front serves 2025-era connections only (a request may go out mid-call)

    @property
    def wants_progress(self) -> bool:
        return self._token is not None

    async def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self._token is None:
            return
        params: dict[str, Any] = {"progressToken": self._token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._outbox.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    async def elicit(self, message: str, form: type[BaseModel]) -> Answer:
        """A form question (ValueError for an answer that does not fit it, or an error instead of an answer)."""
        params: dict[str, Any] = {"message": message, "requestedSchema": form_schema(form)}
        if self._version >= _MODES_SINCE:
            params = {"mode": "form", **params}
        result, error = await self._outbox.request("elicitation/create", params)
        if error is not None or not isinstance(result, dict):
            raise ValueError("the client answered the question with an error")
        action = result.get("action")
        if action not in ("accept", "decline", "cancel"):
            raise ValueError("the client's answer to the question has no valid action")
        return answer_of(action, result.get("content"), form)


__all__ = ["QUESTION_ID_PREFIX", "FrontSession", "Outbox"]
