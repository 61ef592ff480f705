"""The front's session (``serving.front_session``): what a call on the loop sends goes out in order, through the
front's thread and then the real transport; our questions' answers reach the call that asked, and only it."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from mcp_server_guard.serving.front_session import FrontSession, Outbox
from mcp_server_guard.shell.approval import Approval


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines()]


def test_what_calls_send_goes_out_in_order_through_the_front_then_the_transport() -> None:
    async def scenario() -> tuple[bytes, bytes, list[bytes], list[bytes], int]:
        wakes = []
        outbox = Outbox(asyncio.get_running_loop(), lambda: wakes.append(1))
        for n in range(3):
            await outbox.send({"n": n})
        first = outbox.take()
        await outbox.send({"n": 3})
        unwritten = outbox.handed_over()  # the front stops: what it did not write goes first through the transport
        await outbox.send({"n": 4})  # between the hand-over and the attach
        written: list[bytes] = []

        async def sink(data: bytes) -> None:
            written.append(data)

        late = outbox.attach(sink)
        await outbox.send({"n": 5})
        return first, unwritten, late, written, len(wakes)

    first, unwritten, late, written, wakes = asyncio.run(scenario())
    assert [m["n"] for m in _lines(first)] == [0, 1, 2]
    assert [m["n"] for m in _lines(unwritten)] == [3]
    assert [m["n"] for m in _lines(b"".join(late))] == [4]
    assert [m["n"] for m in _lines(b"".join(written))] == [5]
    assert wakes == 4  # the front's thread was woken for each line it was to write


def test_a_questions_answer_reaches_the_call_that_asked_and_nothing_else_does() -> None:
    async def scenario() -> tuple[tuple[Any, Any], list[dict[str, Any]], bool]:
        outbox = Outbox(asyncio.get_running_loop(), lambda: None)
        asking = asyncio.create_task(outbox.request("elicitation/create", {"message": "m"}))
        await asyncio.sleep(0)
        [question] = _lines(outbox.take())

        # From the front's thread: an answer to an id never asked, then the answer, then the same answer again.
        def answers() -> None:
            outbox.deliver("mcp-guard-q999", {"action": "accept"}, None)
            outbox.deliver(question["id"], {"action": "decline"}, None)
            outbox.deliver(question["id"], {"action": "accept", "content": {"approve": True}}, None)

        thread = threading.Thread(target=answers)
        thread.start()
        answer = await asyncio.wait_for(asking, 10)
        thread.join()
        return answer, [question], outbox.asks(question["id"])

    answer, [question], still_asked = asyncio.run(scenario())
    assert question["method"] == "elicitation/create" and question["id"] == "mcp-guard-q1"
    assert answer == ({"action": "decline"}, None)  # the first answer counts, once
    assert not still_asked


@pytest.mark.parametrize(
    ("version", "reply", "expected"),
    [
        ("2025-11-25", {"result": {"action": "accept", "content": {"approve": True}}}, ("accept", True)),
        ("2025-06-18", {"result": {"action": "decline"}}, ("decline", None)),
        ("2025-11-25", {"result": {"action": "cancel"}}, ("cancel", None)),
        ("2025-11-25", {"result": {"action": "accept", "content": {"approve": "yes!"}}}, ValueError),
        ("2025-11-25", {"result": {"action": "accept"}}, ValueError),
        ("2025-11-25", {"result": {"action": "maybe"}}, ValueError),
        ("2025-11-25", {"error": {"code": -1, "message": "no"}}, ValueError),
    ],
)
def test_a_form_question_is_sent_as_the_clients_revision_wants_and_its_answer_checked(
    version: str, reply: dict[str, Any], expected: Any
) -> None:
    async def scenario() -> tuple[Any, dict[str, Any]]:
        outbox = Outbox(asyncio.get_running_loop(), lambda: None)
        session = FrontSession(outbox, {"protocolVersion": version, "capabilities": {"elicitation": {}}}, None)
        asking = asyncio.create_task(session.elicit("Run it?", Approval))
        await asyncio.sleep(0)
        [question] = _lines(outbox.take())
        outbox.deliver(question["id"], reply.get("result"), reply.get("error"))
        try:
            answer = await asyncio.wait_for(asking, 10)
        except ValueError as exc:
            return exc, question
        return (answer.action, getattr(answer.data, "approve", None)), question

    outcome, question = asyncio.run(scenario())
    assert ("mode" in question["params"]) == (version == "2025-11-25")
    assert question["params"]["requestedSchema"]["required"] == ["approve"]
    if expected is ValueError:
        assert isinstance(outcome, ValueError)
    else:
        assert outcome == expected


def test_progress_goes_out_only_for_a_call_that_sent_a_token() -> None:
    async def scenario() -> tuple[bytes, bytes]:
        outbox = Outbox(asyncio.get_running_loop(), lambda: None)
        client = {"protocolVersion": "2025-11-25", "capabilities": {}}
        await FrontSession(outbox, client, None).report_progress(1.0, None, "running")
        silent = outbox.take()
        await FrontSession(outbox, client, "t").report_progress(1.5, None, "running 1.5s")
        return silent, outbox.take()

    silent, shown = asyncio.run(scenario())
    assert silent == b""
    assert _lines(shown) == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "t", "progress": 1.5, "message": "running 1.5s"},
        }
    ]
