"""Background jobs in the one shell_exec tool, and full output kept as a resource, through the real console script."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from support import (
    Human,
    RawClient,
    console_script,
    error_of,
    marker,
    processes_with,
    refused_start,
    serve,
    text_of,
    wait_until,
)

pytestmark = pytest.mark.anyio
SX = "mcp-server-shell-exec"


async def call(client: Any, **arguments: Any) -> dict[str, Any]:
    with anyio.fail_after(60):
        result = await client.call_tool("shell_exec", {"command": "", **arguments})
    assert not result.is_error, text_of(result)
    return dict(result.structured_content or {}) | {"text": text_of(result)}


async def poll_to_end(client: Any, job: str, wait: float = 1.0) -> tuple[str, dict[str, Any]]:
    """Every look's stdout, concatenated, until the job is no longer running (bounded)."""
    seen = ""
    with anyio.fail_after(60):
        while True:
            out = await call(client, jobId=job, yieldAfterSeconds=wait)
            seen += out["stdout"]
            if out["status"] != "running":
                return seen, out


async def test_a_command_still_running_at_its_yield_becomes_a_job_polled_to_its_end(workspace: Path, mode: str) -> None:
    async with serve(SX, workspace, mode=mode) as client:
        started = await call(client, command="sleep 2; echo done", yieldAfterSeconds=0.2)
        assert started["status"] == "running" and started["jobId"] == "j1" and started["exitCode"] == -1
        assert '"jobId": "j1"' in started["text"]  # how to continue, in the text a model reads
        seen, end = await poll_to_end(client, "j1")
    assert seen == "done\n"
    assert (end["status"], end["exitCode"], end["jobId"]) == ("exited", 0, "j1")


async def test_a_quick_command_with_a_yield_returns_its_result_at_once(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        with anyio.fail_after(10):
            out = await call(client, command="echo quick", yieldAfterSeconds=30)
    assert (out["status"], out["exitCode"], out["stdout"]) == ("exited", 0, "quick\n")


async def test_a_dev_server_like_job_is_read_incrementally_without_loss_or_repetition(
    workspace: Path, mode: str
) -> None:
    loop = "for i in $(seq 1 40); do echo line $i; sleep 0.1; done"
    async with serve(SX, workspace, mode=mode) as client:
        started = await call(client, command=loop, yieldAfterSeconds=0.3)
        seen, end = await poll_to_end(client, started["jobId"], wait=0.7)
    looks = started["stdout"] + seen
    assert looks == "".join(f"line {i}\n" for i in range(1, 41))
    assert end["stdoutBytes"] == len(looks)


async def test_stdin_reaches_a_job_and_closing_it_ends_cat(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        started = await call(client, command="cat", yieldAfterSeconds=0.2)
        assert started["status"] == "running"
        first = await call(client, jobId="j1", stdin="hello\n", yieldAfterSeconds=1)
        assert (first["stdout"], first["status"]) == ("hello\n", "running")
        last = await call(client, jobId="j1", stdin="bye\n", closeStdin=True, yieldAfterSeconds=5)
    assert (last["stdout"], last["status"], last["exitCode"]) == ("bye\n", "exited", 0)


async def test_a_job_that_ignores_sigterm_is_stopped_and_leaves_no_process(workspace: Path, mode: str) -> None:
    token = marker()
    stubborn = f"trap '' TERM; sleep {token} & trap '' TERM; while true; do sleep 0.1; done"
    async with serve(SX, workspace, mode=mode) as client:
        await call(client, command=stubborn, yieldAfterSeconds=0.3)
        await wait_until(lambda: processes_with(token))
        with anyio.fail_after(30):
            stopped = await call(client, jobId="j1", signal="TERM")
        assert (stopped["status"], stopped["signal"]) == ("stopped", "SIGKILL")
        await wait_until(lambda: not processes_with(token))
        listed = await call(client, listJobs=True)
    assert [(j["jobId"], j["status"]) for j in listed["jobs"]] == [("j1", "stopped")]


async def test_the_job_limit_refuses_the_next_start_with_a_clear_code(workspace: Path, tmp_path: Path) -> None:
    policy = tmp_path / "jobs.toml"
    policy.write_text("[shell_exec]\nmax_jobs = 2\n", encoding="utf-8")
    async with serve(SX, workspace, "--policy", str(policy)) as client:
        for _ in range(2):
            assert (await call(client, command="sleep 30", yieldAfterSeconds=0))["status"] == "running"
        with anyio.fail_after(30):
            refused = await client.call_tool("shell_exec", {"command": "sleep 30", "yieldAfterSeconds": 0})
        error = error_of(refused)
        assert error["code"] == "JOB_LIMIT" and error["category"] == "RESOURCE"
        assert '"jobId": "j1", "signal": "TERM"' in error["suggestion"]
        await call(client, jobId="j1", signal="KILL")
        assert (await call(client, command="echo room", yieldAfterSeconds=5))["stdout"] == "room\n"


async def test_wrong_job_calls_get_errors_with_a_corrected_example_call(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        await call(client, command="echo hi", yieldAfterSeconds=5)

        async def refusal(**arguments: Any) -> dict[str, Any]:
            with anyio.fail_after(30):
                return error_of(await client.call_tool("shell_exec", {"command": "", **arguments}))

        unknown = await refusal(jobId="j7")
        assert unknown["code"] == "JOB_NOT_FOUND" and "j1 (exited" in unknown["message"]
        assert '{"name": "shell_exec", "arguments": {"command": "", "jobId": "j1"}}' in unknown["suggestion"]
        no_id = await refusal(signal="TERM")
        assert no_id["code"] == "INVALID_ARGUMENT" and '"signal": "TERM"' in no_id["suggestion"]
        closed = await refusal(jobId="j1", stdin="more\n")
        assert closed["code"] == "STDIN_CLOSED" and '"jobId": "j1"' in closed["suggestion"]
        bad_signal = await refusal(jobId="j1", signal="HUP")
        assert bad_signal["code"] == "INVALID_ARGUMENT" and "TERM, INT, KILL" in bad_signal["message"]
        # Slips a small model makes, taken as meant: no command in a call about a job, "sigterm", a bare number.
        with anyio.fail_after(30):
            for arguments in ({"jobId": "j1"}, {"listJobs": True}, {"jobId": 1, "signal": "sigterm"}):
                result = await client.call_tool("shell_exec", arguments)
                assert not result.is_error, (arguments, text_of(result))


async def test_a_jobs_approval_is_asked_at_start_and_does_not_carry_over(workspace: Path, tmp_path: Path) -> None:
    policy = tmp_path / "ask.toml"
    policy.write_text(
        '[[shell_exec.rules]]\nid = "ask-sleep"\naction = "ask"\nreason = "r"\nprograms = ["sleep"]\n', encoding="utf-8"
    )
    human = Human()
    async with serve(SX, workspace, "--policy", str(policy), elicitation_callback=human) as client:
        started = await call(client, command="sleep 0.5", yieldAfterSeconds=0)
        assert started["policyDecision"] == "ask-approved" and started["rule"] == "ask-sleep"
        await poll_to_end(client, "j1")
        await call(client, command="sleep 0.1")
    assert len(human.questions) == 2  # the job's yes did not cover the next command


@pytest.mark.parametrize("how", ["stdin-eof", "sigterm", "sigkill"])
def test_server_exit_leaves_no_job_process(workspace: Path, tmp_path: Path, how: str) -> None:
    token = marker()
    raw = RawClient([console_script(SX), "--audit-log", str(tmp_path / "a.jsonl")], workspace)
    try:
        raw.initialize()
        arguments = {"command": f"sleep {token}", "yieldAfterSeconds": 0.2}
        answer = raw.request(5, "tools/call", {"name": "shell_exec", "arguments": arguments})
        assert answer["result"]["structuredContent"]["status"] == "running"
        anyio.run(wait_until, lambda: processes_with(token))
        if how == "stdin-eof":
            assert raw.proc.stdin is not None
            raw.proc.stdin.close()
        else:
            raw.proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
        raw.proc.wait(timeout=15)
        anyio.run(wait_until, lambda: not processes_with(token))
    finally:
        for proc in processes_with(token):
            proc.kill()
        raw.close()


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
def test_a_cut_output_of_several_ranges_is_readable_in_ranges_until_its_lifetime_ends(
    workspace: Path, tmp_path: Path, modern: bool
) -> None:
    from mcp_server_guard.shell.spools import MAX_RANGE_BYTES

    policy = tmp_path / "keep.toml"
    policy.write_text("[shell_exec]\nkept_output_seconds = 4\n", encoding="utf-8")  # 10x the 4 reads' time
    # Three full ranges and a part of one: answers that name the next range, a middle one, and the end. (The size
    # only needs to exceed a few ranges: 50 MB is read the same way, 13 ranges instead of 4.)
    size = 3 * MAX_RANGE_BYTES + (2 << 20)
    raw = RawClient(
        [console_script(SX), "--audit-log", str(tmp_path / "a.jsonl"), "--policy", str(policy)],
        workspace,
        modern=modern,
    )
    try:
        raw.initialize()
        command = f"python3 -c \"import sys; sys.stdout.write('0123456789abcdef' * {size // 16})\""
        answer = raw.request(1, "tools/call", {"name": "shell_exec", "arguments": {"command": command}})
        result = answer["result"]
        out = result["structuredContent"]
        assert out["truncated"] is True and out["stdoutBytes"] == size
        [cut] = out["omitted"]
        [link] = [c for c in result["content"] if c["type"] == "resource_link"]
        assert link["uri"] == cut["resource"] and cut["stream"] == "stdout"
        assert 0 < cut["start"] < cut["end"] < size
        started = time.monotonic()
        # Read in ranges (each answer at most MAX_RANGE_BYTES), from the first byte the result left out, each
        # answer's first line naming the next: together they are the output's very bytes.
        pattern = "0123456789abcdef"
        uri, rid, text = f"{cut['resource']}&length={MAX_RANGE_BYTES}", 2, ""
        while uri:
            read = raw.request(rid, "resources/read", {"uri": uri})
            first, _, part = read["result"]["contents"][0]["text"].partition("\n")
            assert len(part) <= MAX_RANGE_BYTES and first.startswith(f"[stdout of {uri.split('/')[-2]}: bytes ")
            text += part
            uri, rid = first.split("next range: ")[1].rstrip("]") if "next range: " in first else "", rid + 1
            assert rid < 40, "the ranges never end"
        assert rid - 2 >= 4, "fewer ranges than the output needs"
        assert first.endswith(f"of {size}; the end]")
        assert len(text) == size - cut["start"] and text == (pattern * (size // 16))[cut["start"] :]
        # Its lifetime over, the resource is gone (and so is its spool).
        deadline = started + 45
        while True:
            gone = raw.request(rid, "resources/read", {"uri": cut["resource"]})
            if "error" in gone:
                break
            assert time.monotonic() < deadline, "the kept output outlived its lifetime"
            anyio.run(anyio.sleep, 0.2)
        assert "not kept" in json.dumps(gone["error"])
    finally:
        raw.close()


def test_job_calls_are_audited(workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    raw = RawClient([console_script(SX), "--audit-log", str(log)], workspace)
    try:
        raw.initialize()
        for i, arguments in enumerate(
            [
                {"command": "cat", "yieldAfterSeconds": 0.2},
                {"command": "", "jobId": "j1", "stdin": "x\n"},
                {"command": "", "jobId": "j1", "yieldAfterSeconds": 0.2},
                {"command": "", "jobId": "j1", "signal": "TERM"},
            ]
        ):
            raw.request(10 + i, "tools/call", {"name": "shell_exec", "arguments": arguments})
    finally:
        raw.close()
    outcomes = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    outcomes = [r for r in outcomes if r.get("phase") == "outcome"]
    assert [r["target"] for r in outcomes] == ["cat", "job j1: look", "job j1: look", "job j1: stop (TERM)"]
    assert outcomes[0]["job"] == "j1" and outcomes[0]["job_action"] == "start"
    assert outcomes[1]["stdin_bytes"] == 2
    assert outcomes[3]["stopped_with"] == "TERM" and outcomes[3]["job_status"] == "stopped"


def test_the_policy_keys_for_jobs_are_checked(workspace: Path, tmp_path: Path) -> None:
    policy = tmp_path / "bad.toml"
    policy.write_text("[shell_exec]\nmax_jobs = -1\n", encoding="utf-8")
    done = refused_start(SX, workspace, "--policy", str(policy))
    assert done.returncode == 2 and b"max_jobs" in done.stderr


async def test_jobs_work_the_same_without_the_box(workspace: Path) -> None:
    token = marker()
    async with serve(SX, workspace, "--sandbox", "off") as client:
        started = await call(client, command=f"cat; trap '' TERM; sleep {token}", yieldAfterSeconds=0.2)
        assert started["sandbox"] == "none" and started["status"] == "running"
        echoed = await call(client, jobId="j1", stdin="hi\n", closeStdin=True, yieldAfterSeconds=1)
        assert echoed["stdout"] == "hi\n"
        await wait_until(lambda: processes_with(token))
        stopped = await call(client, jobId="j1", signal="TERM")
        assert stopped["status"] == "stopped"
        await wait_until(lambda: not processes_with(token))


async def test_a_job_that_cannot_start_is_an_error_and_listed_as_failed(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        with anyio.fail_after(30):
            refused = await client.call_tool(
                "shell_exec", {"command": "no-such-program-here", "args": ["x"], "yieldAfterSeconds": 2}
            )
        assert error_of(refused)["code"] == "COMMAND_NOT_FOUND"
        listed = await call(client, listJobs=True)
        started = await call(client, command="sleep 5", yieldAfterSeconds=0, timeoutSeconds=7)
        look = await call(client, jobId=started["jobId"])
    assert [(j["jobId"], j["status"], j["exitCode"]) for j in listed["jobs"]] == [("j1", "failed", -1)]
    assert started["timeoutSeconds"] == look["timeoutSeconds"] == 7  # a look reports the job's own timeout


async def test_a_finished_job_is_forgotten_after_its_time_and_its_spool_removed(
    workspace: Path, tmp_path: Path, isolated_home: Path
) -> None:
    policy = tmp_path / "forget.toml"
    policy.write_text("[shell_exec]\njob_forget_seconds = 1\n", encoding="utf-8")
    state = isolated_home / ".local" / "state"

    def below() -> list[Path]:
        # Walked as os.walk walks (an entry gone meanwhile is skipped: the server takes copies away as it goes).
        return [Path(top) / name for top, dirs, files in os.walk(state) for name in [*dirs, *files]]

    def spooled() -> list[Path]:
        return [p for p in below() if p.is_file() and "spool" in p.parts and "jobs" in p.parts]

    async with serve(SX, workspace, "--policy", str(policy)) as client:
        await call(client, command="echo kept", yieldAfterSeconds=5)
        assert spooled(), "a job's output is spooled under the state directory"
        assert not any(workspace in p.parents for p in below())

        async def forgotten() -> bool:
            result = await client.call_tool("shell_exec", {"command": "", "jobId": "j1"})
            return bool(result.is_error) and error_of(result)["code"] == "JOB_NOT_FOUND"

        with anyio.fail_after(20):
            while not await forgotten():
                await anyio.sleep(0.2)
        assert not spooled()
    assert not [p for p in below() if "spool" in p.parts and p.is_file()]  # nothing left at exit


async def test_stdin_to_a_job_that_does_not_read_returns_instead_of_hanging(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        await call(client, command="sleep 60", yieldAfterSeconds=0)
        with anyio.fail_after(40):
            blocked = await client.call_tool("shell_exec", {"command": "", "jobId": "j1", "stdin": "x" * (4 << 20)})
            error = error_of(blocked)
            assert error["code"] == "STDIN_BLOCKED" and "not reading" in error["message"]
            # The connection is still answering, and the job can still be stopped.
            assert (await call(client, jobId="j1", signal="KILL"))["status"] == "stopped"


def test_kept_outputs_are_bounded_however_many_results_are_cut(tmp_path: Path) -> None:
    from mcp_server_guard.policy import load_policy
    from mcp_server_guard.shell.spools import MAX_KEPT, KeptOutputs, read_output

    kept = KeptOutputs(load_policy().shell_exec, tmp_path / "outputs")
    ids = []
    for _ in range(MAX_KEPT + 5):
        spools = kept.spools(lazy_after=1024)
        spools["stdout"].feed(b"y" * 4096)  # past lazy_after: on disk
        ids.append(kept.keep(spools))
    assert len(list((tmp_path / "outputs").iterdir())) == MAX_KEPT  # stdout files only (stderr never grew)
    assert kept.spool(ids[0], "stdout") is None
    newest = kept.spool(ids[-1], "stdout")
    assert newest is not None
    assert read_output(ids[-1], "stdout", newest, 0, None, growing=False) == (
        f"[stdout of {ids[-1]}: bytes 0-4096 of 4096; the end]\n" + "y" * 4096
    )
    kept.close()
    assert not (tmp_path / "outputs").exists()


async def test_closing_stdin_while_a_write_waits_leaves_the_server_sound(workspace: Path) -> None:
    # A write to a job that is not reading waits for the fd; a closeStdin meanwhile must not close the fd under
    # that wait (the event loop would keep watching a number the next socket or pipe reuses).
    async with serve(SX, workspace) as client:
        await call(client, command="sleep 60", yieldAfterSeconds=0)
        results: dict[str, Any] = {}

        async def write() -> None:
            results["write"] = await client.call_tool(
                "shell_exec", {"command": "", "jobId": "j1", "stdin": "x" * (4 << 20)}
            )

        with anyio.fail_after(40):
            async with anyio.create_task_group() as tg:
                tg.start_soon(write)
                await anyio.sleep(0.5)  # the write is (very likely) waiting on the full pipe by now
                results["close"] = await call(client, jobId="j1", closeStdin=True)
            assert error_of(results["write"])["code"] in ("STDIN_BLOCKED", "STDIN_CLOSED")
            for i in range(5):  # fresh pipes and sockets after the close: every call answers normally
                assert (await call(client, command=f"echo {i}"))["stdout"] == f"{i}\n"
            await call(client, jobId="j1", signal="KILL")


def test_host_questions_per_command_and_the_paused_time_are_bounded() -> None:
    from mcp_server_guard.policy import HostVerdict
    from mcp_server_guard.shell.grants import MAX_QUESTIONS, CallHosts, SessionApprovals
    from mcp_server_guard.shell.process import Pause

    asked: list[str] = []

    async def ask(host: str, port: int, reason: str) -> str:
        asked.append(host)
        return "deny"

    async def scenario() -> list[str]:
        hosts = CallHosts(SessionApprovals(), shown="x", cwd="/", ask=ask)  # type: ignore[arg-type]
        rules = [
            (await hosts.decide(f"h{i}.test", 443, HostVerdict("ask", None, "no rule names it"))).rule or ""
            for i in range(MAX_QUESTIONS + 3)
        ]
        await hosts.close()
        return rules

    rules = anyio.run(scenario)
    assert len(asked) == MAX_QUESTIONS and rules[-1] == "unnamed-host" and rules[0] == "not-approved"
    pause = Pause(most=0.05)
    pause.begin()
    time.sleep(0.1)
    assert pause.total() == 0.05 and not pause.active  # a question open longer no longer stops the timeout
