"""shell_exec's first calls served before the MCP SDK has loaded (issue 44), through the real console script.

Its calls run on the server's event loop from the start (the box, the jobs live there), so the start-up front hands
them to that loop: the approval question, the questions a running command asks and its progress go out on the wire
as the SDK would send them, the client's answers come back by id — before the hand-over to the real transport and
after it — and a cancel stops a call under way.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from mcp_server_guard.asking import form_schema
from mcp_server_guard.shell.approval import Approval, _form
from mcp_server_guard.tools.shell_questions import ChangesApproval, HostQuestion
from support import RawClient, console_script

SX = "mcp-server-shell-exec"
POLICY = """
[shell_exec]
question_timeout_seconds = 5

[[shell_exec.rules]]
id = "zap"
action = "ask"
reason = "zaps a file"
programs = ["zap"]
"""
NEVER_LOADED = "the front answered the whole session; the SDK was never loaded"


def _start(workspace: Path, tmp_path: Path, capabilities: dict[str, Any], version: str = "2025-11-25") -> RawClient:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    argv = [console_script(SX), "--audit-log", str(tmp_path / "audit.jsonl"), "--policy", str(policy)]
    client = RawClient([*argv, "--log-level", "debug"], workspace, stderr=tmp_path / "stderr.txt")
    info = {"name": "front-shell-test", "version": "1"}
    params = {"protocolVersion": version, "capabilities": capabilities, "clientInfo": info}
    assert client.request(1, "initialize", params, timeout=60)["result"]["protocolVersion"] == version
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return client


def _call(client: RawClient, rid: int, arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> None:
    params: dict[str, Any] = {"name": "shell_exec", "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    client.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


def _next(client: RawClient, method: str) -> dict[str, Any]:
    while True:
        message = client.recv(60)
        if message.get("method") == method:
            return message
        assert "method" in message, f"an answer came before {method}: {message}"


def _end(client: RawClient) -> str:
    """Close stdin, wait for the server to end; its stderr."""
    assert client.proc.stdin is not None
    client.proc.stdin.close()
    rest = client.read_to_eof(timeout=60)
    client.close()
    assert not rest.strip(), rest
    return "\n".join(client.stderr_lines())


def test_a_first_call_that_asks_is_asked_before_the_sdk_loads_as_the_sdk_asks(workspace: Path, tmp_path: Path) -> None:
    client = _start(workspace, tmp_path, {"elicitation": {}})
    _call(client, 2, {"command": "zap x"})
    question = _next(client, "elicitation/create")
    assert question["id"].startswith("mcp-guard-q")
    params = question["params"]
    assert params["mode"] == "form" and "zap x" in params["message"] and "rule: zap" in params["message"]
    assert params["requestedSchema"]["properties"]["approve"]["type"] == "boolean"
    client.send({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"approve": True}}})
    result = client.until(2, 60)[-1]["result"]
    assert result["structuredContent"]["policyDecision"] == "ask-approved", result
    assert result["structuredContent"]["exitCode"] == 127  # (zap is no program: bash's "not found")
    _call(client, 3, {"command": "zap y"})
    question = _next(client, "elicitation/create")
    client.send({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}})
    declined = client.until(3, 60)[-1]["result"]
    assert declined["isError"] and declined["_meta"]["mcp-guard/error"]["policyDecision"] == "ask-declined", declined
    assert NEVER_LOADED in _end(client)


def test_a_2025_06_18_client_gets_the_question_without_the_mode_it_does_not_know(
    workspace: Path, tmp_path: Path
) -> None:
    client = _start(workspace, tmp_path, {"elicitation": {}}, version="2025-06-18")
    _call(client, 2, {"command": "zap x"})
    question = _next(client, "elicitation/create")
    assert "mode" not in question["params"] and "requestedSchema" in question["params"]
    client.send({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "cancel"}})
    assert client.until(2, 60)[-1]["result"]["isError"]
    _end(client)


def test_attack_an_answer_that_does_not_fit_the_form_runs_nothing(workspace: Path, tmp_path: Path) -> None:
    client = _start(workspace, tmp_path, {"elicitation": {}})
    _call(client, 2, {"command": "zap x > zapped.txt"})
    question = _next(client, "elicitation/create")
    client.send(
        {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"approve": "yes!"}}}
    )
    result = client.until(2, 60)[-1]["result"]
    assert result["isError"] and result["_meta"]["mcp-guard/error"]["code"] == "APPROVAL_ANSWER_INVALID", result
    _end(client)
    assert not (workspace / "zapped.txt").exists()


def test_attack_a_question_nobody_answers_ends_within_the_question_timeout(workspace: Path, tmp_path: Path) -> None:
    client = _start(workspace, tmp_path, {"elicitation": {}})
    _call(client, 2, {"command": "zap x > zapped.txt"})
    _next(client, "elicitation/create")
    result = client.until(2, 60)[-1]["result"]  # the policy's question_timeout_seconds is 5
    assert result["isError"] and result["_meta"]["mcp-guard/error"]["code"] == "APPROVAL_TIMEOUT", result
    _end(client)
    assert not (workspace / "zapped.txt").exists()


def test_a_first_call_with_a_progress_token_shows_it_is_running(workspace: Path, tmp_path: Path) -> None:
    client = _start(workspace, tmp_path, {})
    _call(client, 2, {"command": "sleep 1.2; echo done"}, {"progressToken": "tok"})
    progress = _next(client, "notifications/progress")
    assert progress["params"]["progressToken"] == "tok" and progress["params"]["message"].startswith("running")
    result = client.until(2, 60)[-1]["result"]
    assert result["structuredContent"]["stdout"] == "done\n"
    assert NEVER_LOADED in _end(client)


def test_a_cancelled_first_call_is_stopped_and_never_answered(workspace: Path, tmp_path: Path) -> None:
    client = _start(workspace, tmp_path, {})
    _call(client, 2, {"command": "sleep 1; touch late.txt; sleep 60"}, {"progressToken": 7})
    _next(client, "notifications/progress")  # it runs
    client.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
    assert client.request(3, "ping", timeout=30)["result"] == {}
    _end(client)
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["policy_result"] for r in records if r["phase"] == "outcome"] == ["cancelled"]


def test_a_question_answered_after_the_sdk_took_over_reaches_the_call_that_asked(
    workspace: Path, tmp_path: Path
) -> None:
    # The call asks; a line only the real server answers comes next (the SDK loads and takes the wire); the
    # client's answer to the question then reaches the front's call through the real transport.
    client = _start(workspace, tmp_path, {"elicitation": {}})
    _call(client, 2, {"command": "zap x; echo ran > ran.txt"})
    question = _next(client, "elicitation/create")
    client.send({"jsonrpc": "2.0", "id": 3, "method": "resources/list"})
    listed = client.until(3, 60)[-1]
    assert listed["result"]["resources"] == []
    client.send({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"approve": True}}})
    answers = client.until(2, 60)
    assert sum(1 for m in answers if m.get("id") == 2) == 1
    assert answers[-1]["result"]["structuredContent"]["policyDecision"] == "ask-approved"
    assert NEVER_LOADED not in _end(client)
    assert (workspace / "ran.txt").read_text(encoding="utf-8") == "ran\n"


def test_a_job_a_first_call_started_is_looked_at_after_the_sdk_took_over(workspace: Path, tmp_path: Path) -> None:
    client = _start(workspace, tmp_path, {})
    _call(client, 2, {"command": "echo started; read line; echo got $line", "yieldAfterSeconds": 0.5})
    started = client.until(2, 60)[-1]["result"]["structuredContent"]
    assert started["status"] == "running" and started["stdout"] == "started\n", started
    assert client.request(3, "resources/list", timeout=60)["result"]["resources"] == []  # the SDK takes over
    _call(
        client,
        4,
        {"command": "", "jobId": started["jobId"], "stdin": "x\n", "closeStdin": True, "yieldAfterSeconds": 30},
    )
    looked = client.until(4, 60)[-1]["result"]["structuredContent"]
    assert looked["status"] == "exited" and looked["stdout"] == "got x\n", looked
    _end(client)


@pytest.mark.parametrize(
    "form",
    [
        Approval,
        ChangesApproval,
        HostQuestion,
        _form(True, "git push", True, True),
        _form(True, None, False, True),
        _form(False, None, True, False),
    ],
)
def test_a_form_is_asked_with_the_schema_the_sdk_renders(form: type[BaseModel]) -> None:
    from mcp.server.elicitation import render_elicitation_schema

    assert form_schema(form) == render_elicitation_schema(form)


PARITY_CALLS: list[dict[str, Any]] = [
    {"command": "printf 'a\\nb\\n' > made.txt; cat made.txt"},
    {"command": "seq 1 3000", "maxOutputBytes": 1024},  # cut: the full output is linked as a resource
    {"command": "rm -rf /"},  # refused
    {"command": "echo x", "timeoutSeconds": -1},  # a bad argument
    {"command": "echo $((1 + 1)) >&2; exit 3"},
]


def _comparable(result: dict[str, Any]) -> str:
    text = json.dumps(result, sort_keys=True)
    for key in ("auditId", "durationMs"):
        text = text.replace(str(result.get("structuredContent", {}).get(key, "\0")), f"<{key}>")
    meta = result.get("_meta", {}).get("mcp-guard/error", {})
    if "auditId" in meta:
        text = text.replace(meta["auditId"], "<auditId>")
    return re.sub(r"shell-exec://output/[0-9a-f]+/", "shell-exec://output/<id>/", text)


@pytest.mark.parametrize("arguments", PARITY_CALLS, ids=["write", "cut", "refused", "bad-argument", "exit"])
def test_a_call_the_front_serves_answers_as_the_sdks_way_does(
    arguments: dict[str, Any], tmp_path: Path, isolated_home: Path
) -> None:
    _same_either_way(arguments, tmp_path, "2025-11-25")


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
def test_an_older_clients_call_the_front_serves_answers_as_the_sdks_way_does(
    version: str, tmp_path: Path, isolated_home: Path
) -> None:
    _same_either_way(PARITY_CALLS[1], tmp_path, version)  # (links, structured content: what the eras differ in)


def _same_either_way(arguments: dict[str, Any], tmp_path: Path, version: str) -> None:
    answers = []
    for way in ("front", "sdk"):
        project = tmp_path / way / "project"
        project.mkdir(parents=True)
        client = _start(project, tmp_path / way, {}, version)
        if way == "sdk":  # a line only the SDK answers first: the call then takes the SDK's way
            assert client.request(2, "resources/list", timeout=60)["result"]["resources"] == []
        _call(client, 3, arguments)
        answers.append(_comparable(client.until(3, 60)[-1]["result"]).replace(str(project), "<project>"))
        log = _end(client)
        assert (NEVER_LOADED in log) == (way == "front")
    assert answers[0] == answers[1]


def test_a_stop_signal_during_a_first_call_answers_it_and_ends_the_server_and_the_command(
    workspace: Path, tmp_path: Path
) -> None:
    client = _start(workspace, tmp_path, {})
    _call(client, 2, {"command": "sleep 60"}, {"progressToken": 1})
    _next(client, "notifications/progress")  # it runs
    client.proc.send_signal(signal.SIGTERM)
    answer = client.recv(30)
    assert answer == {"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "Server shutting down (SIGTERM)"}}
    assert client.proc.wait(timeout=30) == 128 + signal.SIGTERM
    client.close()
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["phase"] for r in records] == ["intent", "outcome"], records  # the call's record is closed


# -- red team 44 -------------------------------------------------------------------------------------------------


def _answers(client: RawClient) -> list[dict[str, Any]]:
    """Every message the server writes until it closes stdout."""
    return [json.loads(line) for line in client.read_to_eof(timeout=60).splitlines()]


def _records(tmp_path: Path) -> list[dict[str, Any]]:
    audit = tmp_path / "audit.jsonl"
    lines = audit.read_text(encoding="utf-8").splitlines() if audit.exists() else []
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("way", ["front", "sdk"])
def test_attack_a_declined_call_never_runs_on_a_grant_another_call_got_meanwhile(
    way: str, workspace: Path, tmp_path: Path
) -> None:
    # F1: two calls of one "ask" line are asked at once; the person says yes, remember the line, to the first and
    # no to the second: the second's own "no" stands.
    client = _start(workspace, tmp_path, {"elicitation": {}})
    if way == "sdk":
        assert client.request(9, "resources/list", timeout=60)["result"]["resources"] == []
    _call(client, 2, {"command": "zap x; echo ran > ran.txt"})
    _call(client, 3, {"command": "zap x; echo ran > ran.txt"})
    first, second = _next(client, "elicitation/create"), _next(client, "elicitation/create")
    yes = {"action": "accept", "content": {"approve": True, "remember": "line"}}
    client.send({"jsonrpc": "2.0", "id": first["id"], "result": yes})
    assert not client.until(2, 60)[-1]["result"].get("isError")
    (workspace / "ran.txt").unlink()
    client.send({"jsonrpc": "2.0", "id": second["id"], "result": {"action": "decline"}})
    declined = client.until(3, 60)[-1]["result"]
    assert declined["isError"] and declined["_meta"]["mcp-guard/error"]["policyDecision"] == "ask-declined"
    _end(client)
    assert not (workspace / "ran.txt").exists()


def test_attack_two_stop_signals_answer_each_call_under_way_once(workspace: Path, tmp_path: Path) -> None:
    # F2: SIGTERM and SIGHUP back to back answered every call twice.
    client = _start(workspace, tmp_path, {})
    for rid in (2, 3):
        _call(client, rid, {"command": "sleep 60"}, {"progressToken": rid})
    seen = {_next(client, "notifications/progress")["params"]["progressToken"] for _ in range(4)}
    assert seen == {2, 3}  # both run
    client.proc.send_signal(signal.SIGTERM)
    client.proc.send_signal(signal.SIGHUP)
    answers = [m for m in _answers(client) if "method" not in m]
    assert sorted(m["id"] for m in answers) == [2, 3], answers
    client.close()


def test_attack_a_call_sent_after_a_stop_signal_never_runs(workspace: Path, tmp_path: Path) -> None:
    # F3: while a stop waits for the calls it cancelled, the front took and ran new calls.
    client = _start(workspace, tmp_path, {})
    _call(client, 2, {"command": "trap '' TERM; sleep 60"}, {"progressToken": 1})
    _next(client, "notifications/progress")
    client.proc.send_signal(signal.SIGTERM)
    assert client.recv(30)["id"] == 2  # -32000
    _call(client, 3, {"command": "echo late"})
    assert [m["id"] for m in _answers(client) if "method" not in m] == []  # nothing after the stop
    client.close()
    assert [r["arguments"]["command"] for r in _records(tmp_path) if r["phase"] == "intent"] == [
        "trap '' TERM; sleep 60"
    ]


def test_attack_a_first_call_still_running_after_the_hand_over_is_answered_at_a_stop_signal(
    workspace: Path, tmp_path: Path
) -> None:
    # F4: the real transport answered only its own pending requests at a stop signal.
    client = _start(workspace, tmp_path, {})
    _call(client, 2, {"command": "sleep 60"}, {"progressToken": 1})
    _next(client, "notifications/progress")
    assert client.request(3, "resources/list", timeout=60)["result"]["resources"] == []  # the SDK took over
    client.proc.send_signal(signal.SIGTERM)
    answers = [m for m in _answers(client) if "method" not in m]
    assert [(m["id"], m["error"]["code"]) for m in answers] == [(2, -32000)], answers
    client.close()


def test_a_stop_signal_while_the_sdk_loads_answers_every_request_once(workspace: Path, tmp_path: Path) -> None:
    # F5: the line that made the SDK load was left unanswered by a stop signal meanwhile.
    client = _start(workspace, tmp_path, {})
    _call(client, 2, {"command": "sleep 60"}, {"progressToken": 1})
    _next(client, "notifications/progress")
    client.send({"jsonrpc": "2.0", "id": 3, "method": "resources/list"})
    # The signal once the server has read that line (a request still in the pipe is read by no one: on a loaded
    # machine the signal came first, 1 run in 8): the front logs it has handed the line over.
    deadline = time.monotonic() + 30
    while "the SDK loads" not in (tmp_path / "stderr.txt").read_text(encoding="utf-8"):
        assert time.monotonic() < deadline, "the front never took the line that needs the SDK"
        time.sleep(0.01)
    client.proc.send_signal(signal.SIGTERM)
    answers = [m for m in _answers(client) if "method" not in m]
    assert sorted(m["id"] for m in answers) == [2, 3], answers
    client.close()


def test_attack_a_client_that_writes_and_never_reads_meets_back_pressure(workspace: Path, tmp_path: Path) -> None:
    # F6: while its answers could not be written, the front read on and held every byte the client sent.
    client = _start(workspace, tmp_path, {})
    ping = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}).encode() + b"\n"
    assert client.proc.stdin is not None
    os.set_blocking(client.proc.stdin.fileno(), False)
    sent, chunk, stalled_since = 0, ping * 20000, time.monotonic()
    while sent < 96 << 20 and time.monotonic() - stalled_since < 5:  # until the server stops reading (bounded)
        try:
            sent += os.write(client.proc.stdin.fileno(), chunk)
            stalled_since = time.monotonic()
        except BlockingIOError:
            select.select([], [client.proc.stdin.fileno()], [], 0.2)
    client.proc.kill()
    client.close()
    assert sent < 32 << 20, f"the server read {sent >> 20} MiB while writing nothing"


def test_a_progress_token_the_transport_refuses_is_refused_either_way(workspace: Path, tmp_path: Path) -> None:
    # F7: a token of the wrong type ran the command before the SDK loaded; the SDK's way refuses the call.
    client = _start(workspace, tmp_path, {})
    _call(client, 2, {"command": "echo ran > ran.txt"}, {"progressToken": {"a": 1}})
    answer = client.until(2, 60)[-1]
    assert answer["error"]["code"] == -32602, answer
    _end(client)
    assert not (workspace / "ran.txt").exists()


@pytest.mark.parametrize("action", ["decline", "accept"])
def test_a_first_calls_changes_are_asked_about_after_it_ran_and_the_answer_decides(
    action: str, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "d").mkdir()
    for n in range(3):
        (workspace / "d" / f"f{n}.txt").write_text(f"{n}\n", encoding="utf-8")
    client = _start(workspace, tmp_path, {"elicitation": {}})
    _call(client, 2, {"command": "rm -r d"})
    question = _next(client, "elicitation/create")
    assert "Apply these changes?" in question["params"]["message"]
    reply: dict[str, Any] = {"action": action} | ({"content": {"apply": True}} if action == "accept" else {})
    client.send({"jsonrpc": "2.0", "id": question["id"], "result": reply})
    result = client.until(2, 60)[-1]["result"]["structuredContent"]
    assert result["transaction"] == ("applied" if action == "accept" else "declined"), result
    assert NEVER_LOADED in _end(client)
    left = sorted(p.name for p in (workspace / "d").glob("*")) if (workspace / "d").exists() else None
    assert left == (None if action == "accept" else ["f0.txt", "f1.txt", "f2.txt"])
