"""shell_exec under load and faults, through the real console script: every call gets its own outcome,
and however the server ends, nothing it started is left behind (processes, temp dirs, cgroups)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from support import RawClient, console_script, marker, processes_with, serve, wait_until

pytestmark = pytest.mark.anyio
SX = "mcp-server-shell-exec"


def _server_env(tmpdir: Path) -> dict[str, str]:
    keep = ("PATH", "HOME", "XDG_STATE_HOME", "LANG", "MCP_GUARD_RUNTIME_DIR")
    return {**{k: v for k, v in os.environ.items() if k in keep}, "TMPDIR": str(tmpdir)}


def _run_dirs(tmpdir: Path) -> list[str]:
    return [name for name in os.listdir(tmpdir) if name.startswith("mcp-guard-run-")]


def _cgroups_of(pid: int) -> list[Path]:
    return [p for base in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/pids")) for p in base.glob(f"mcp-guard-{pid}")]


@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_concurrent_calls_each_report_their_own_process_outcome(workspace: Path, sandbox: str) -> None:
    # Regression: a call's end swept up another call's just-spawned command, which then read as exit 0.
    async with serve(SX, workspace, "--sandbox", sandbox) as client:
        for _round in range(3):
            results: dict[int, Any] = {}

            async def call(i: int, results: dict[int, Any] = results) -> None:
                results[i] = await client.call_tool(
                    "shell_exec", {"command": f"sleep 0.0{i % 10}; echo tok{i}", "timeoutSeconds": 60}
                )

            with anyio.fail_after(120):
                async with anyio.create_task_group() as tg:
                    for i in range(200):
                        tg.start_soon(call, i)
            wrong = {
                i: r.structured_content
                for i, r in results.items()
                if r.is_error or r.structured_content["stdout"] != f"tok{i}\n" or r.structured_content["exitCode"] != 0
            }
            assert not wrong, f"{len(wrong)} of 200 calls got another outcome than their own: {list(wrong.items())[:3]}"


async def test_a_command_killed_by_a_signal_is_reported_killed_under_concurrency(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        results: list[Any] = []

        async def call(command: str) -> None:
            results.append((command, await client.call_tool("shell_exec", {"command": command})))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for i in range(40):
                    tg.start_soon(call, "kill -9 $$" if i % 2 else f"echo ok{i}")
    for command, result in results:
        out = result.structured_content
        if command.startswith("kill"):
            assert (out["signal"], out["exitCode"]) == ("SIGKILL", 137), out
        else:
            assert "signal" not in out and out["stdout"].startswith("ok"), out


def _discard(raw: RawClient) -> None:
    if raw.proc.poll() is None:
        raw.proc.kill()
        raw.proc.wait(timeout=10)
    for pipe in (raw.proc.stdin, raw.proc.stdout):
        if pipe is not None and not pipe.closed:
            with contextlib.suppress(BrokenPipeError):
                pipe.close()


def _start_call_with_a_daemon(tmp_path: Path, workspace: Path, token: str, *flags: str) -> RawClient:
    server_tmp = tmp_path / "server-tmp"
    server_tmp.mkdir(exist_ok=True)
    raw = RawClient(
        [console_script(SX), "--audit-log", str(tmp_path / "a.jsonl"), *flags], workspace, env=_server_env(server_tmp)
    )
    raw.initialize()
    command = f"setsid sleep {token} & sleep {token} & sleep {token}"
    raw.send(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "shell_exec", "arguments": {"command": command, "timeoutSeconds": 300}},
        }
    )
    anyio.run(wait_until, lambda: len(processes_with(token)) >= 3)
    if "off" in flags:  # in the box, the call's /tmp is its own tmpfs: nothing on the host to leave behind
        assert _run_dirs(server_tmp), "the call's private TMPDIR should exist while it runs"
    return raw


@pytest.mark.parametrize("sandbox", ["auto", "off"])
@pytest.mark.parametrize("how", ["stdin-eof", "sigterm", "sighup"])
def test_server_exit_leaves_no_process_tmpdir_or_cgroup(
    tmp_path: Path, workspace: Path, how: str, sandbox: str
) -> None:
    token = marker()
    raw = _start_call_with_a_daemon(tmp_path, workspace, token, "--sandbox", sandbox)
    pid = raw.proc.pid
    try:
        started = time.monotonic()
        if how == "stdin-eof":
            assert raw.proc.stdin is not None
            raw.proc.stdin.close()
        else:
            raw.proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGHUP)
        raw.proc.wait(timeout=10)
        took = time.monotonic() - started
    finally:
        for proc in processes_with(token):
            proc.kill()
        _discard(raw)
        _discard(raw)
    assert not processes_with(token), "a command (or its setsid child) outlived the server"
    assert not _run_dirs(tmp_path / "server-tmp"), "a per-call temporary directory was left behind"
    assert not _cgroups_of(pid), "the server's pids cgroup was left behind"
    assert took < 2.0, f"the server took {took:.2f} s to exit"


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_leftovers_of_a_killed_server_are_cleaned_at_the_next_start(
    tmp_path: Path, workspace: Path, sandbox: str
) -> None:
    token = marker()
    raw = _start_call_with_a_daemon(tmp_path, workspace, token, "--sandbox", sandbox)
    pid = raw.proc.pid
    try:
        raw.proc.kill()
        raw.proc.wait(timeout=10)
        if sandbox == "auto":
            # kill -9: the box dies with the server (a chain of parent-death signals), every command with it.
            anyio.run(wait_until, lambda: not processes_with(token))
        else:
            assert _run_dirs(tmp_path / "server-tmp")
        # The next server to start sweeps what the dead one left: its temp dirs, its cgroup and (as root,
        # through that cgroup) the commands still running in it.
        nxt = subprocess.run(
            [console_script(SX), "--audit-log", str(tmp_path / "a.jsonl")],
            cwd=workspace,
            env=_server_env(tmp_path / "server-tmp"),
            input=b"",
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert nxt.returncode == 0, nxt.stderr
        assert not _run_dirs(tmp_path / "server-tmp")
        assert not _cgroups_of(pid)
        if os.geteuid() == 0 and Path("/sys/fs/cgroup/cgroup.controllers").exists():
            anyio.run(wait_until, lambda: not processes_with(token))
    finally:
        for proc in processes_with(token):
            proc.kill()
        _discard(raw)


async def test_an_oversized_command_line_is_refused_quickly(workspace: Path) -> None:
    # Regression: a 1 MB line of $(a) words took ~14 s of analysis on the event loop.
    from support import error_of

    async with serve(SX, workspace) as client:
        for line in ("echo " + " ".join(["$(a)"] * 200_000), "echo " + " ".join(["$(a)"] * 3000)):
            started = time.monotonic()
            with anyio.fail_after(30):
                result = await client.call_tool("shell_exec", {"command": line})
            assert error_of(result)["code"] == "COMMAND_TOO_COMPLEX"
            assert time.monotonic() - started < 2.0


async def test_a_line_the_parser_recovers_from_slowly_is_refused_within_a_bound(workspace: Path) -> None:
    # Threat: tree-sitter's error recovery is quadratic on some malformed input (256 KiB of ``<<``: minutes of parsing
    # with the server silent; 120 KB: ~20 s). Each parse stops after MAX_PARSE_SECONDS; the line is refused, the next
    # call answered.
    from support import error_of

    async with serve(SX, workspace) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("shell_exec", {"command": "echo " + "<<" * 60_000})
            assert error_of(result)["code"] == "COMMAND_TOO_COMPLEX"
            assert "could not be parsed within" in error_of(result)["message"]
            alive = await client.call_tool("shell_exec", {"command": "echo alive"})
        assert "alive" in str(alive.structured_content)


def test_deep_nesting_is_refused_with_one_log_line_and_no_traceback(tmp_path: Path, workspace: Path) -> None:
    # Regression: 400 levels of $( … ) failed closed, but with a RecursionError traceback on stderr.
    line = "echo " + "$(" * 400 + "a" + ")" * 400
    errors = tmp_path / "stderr.txt"
    raw = RawClient([console_script(SX), "--audit-log", str(tmp_path / "a.jsonl")], workspace, stderr=errors)
    try:
        raw.initialize()
        answer = raw.request(1, "tools/call", {"name": "shell_exec", "arguments": {"command": line}})
        alive = raw.request(2, "tools/call", {"name": "shell_exec", "arguments": {"command": "echo alive"}})
    finally:
        raw.close()
    payload = answer["result"]["_meta"]["mcp-guard/error"]
    assert payload["code"] == "COMMAND_TOO_COMPLEX"
    assert alive["result"]["structuredContent"]["stdout"] == "alive\n"
    assert "Traceback" not in errors.read_text(encoding="utf-8", errors="replace")


def test_a_nul_flood_reply_stays_within_four_times_max_output_bytes(tmp_path: Path, workspace: Path) -> None:
    # Regression: each NUL became a six-byte \u0000 in a text sent twice (text block and structured content):
    # with maxOutputBytes at 16 MiB a reply reached 384 MiB and the server 1.3 GiB.
    limit = 4 << 20
    command = "head -c 50000000 /dev/zero; head -c 50000000 /dev/zero >&2"
    raw = RawClient([console_script(SX), "--audit-log", str(tmp_path / "a.jsonl")], workspace)
    try:
        raw.initialize()
        answer = raw.request(
            1, "tools/call", {"name": "shell_exec", "arguments": {"command": command, "maxOutputBytes": limit}}
        )
        status = Path(f"/proc/{raw.proc.pid}/status").read_text(encoding="ascii")
    finally:
        raw.close()
    reply = len(json.dumps(answer, ensure_ascii=False).encode())
    out = answer["result"]["structuredContent"]
    assert out["truncated"] is True and out["stdoutBytes"] == out["stderrBytes"] == 50_000_000
    assert len(json.dumps(out["stdout"]).encode()) <= limit and len(json.dumps(out["stderr"]).encode()) <= limit
    assert reply <= 4 * limit + 8192, f"reply of {reply} bytes"
    hwm_kib = int(next(ln for ln in status.splitlines() if ln.startswith("VmHWM")).split()[1])
    assert hwm_kib < 250 * 1024, f"server peak RSS {hwm_kib} KiB"


def test_output_spools_of_a_killed_server_go_at_the_next_start_and_a_live_servers_stay(
    tmp_path: Path, workspace: Path
) -> None:
    spool_area = Path(os.environ["XDG_STATE_HOME"]) / "mcp-guard" / "spool"
    env = _server_env(tmp_path / "server-tmp")
    (tmp_path / "server-tmp").mkdir(exist_ok=True)
    args = [console_script(SX), "--audit-log", str(tmp_path / "a.jsonl"), "--sandbox", "off"]
    finished = subprocess.Popen(["true"])
    finished.wait(timeout=10)
    legacy = spool_area / f"{finished.pid}-0badc0de"  # made by a version that took no lock; its process is gone
    (legacy / "outputs").mkdir(parents=True)
    (legacy / "outputs" / "x.stdout").write_bytes(b"y" * 4096)
    live = RawClient(args, workspace, env=env)
    doomed = RawClient(args, workspace, env=env)
    try:
        live.initialize()
        doomed.initialize()
        for raw in (live, doomed):  # a cut result: its full output is kept in the server's spool
            result = raw.request(
                1,
                "tools/call",
                {"name": "shell_exec", "arguments": {"command": "head -c 3000000 /dev/zero | tr '\\0' y"}},
            )
            assert "result" in result, result
        owned = {
            raw.proc.pid: [p for p in spool_area.iterdir() if p.name.startswith(f"{raw.proc.pid}-")]
            for raw in (live, doomed)
        }
        assert all(len(found) == 1 for found in owned.values()), owned
        assert any(f.stat().st_size > 0 for f in owned[doomed.proc.pid][0].rglob("*") if f.is_file())
        doomed.proc.kill()
        doomed.proc.wait(timeout=10)
        nxt = subprocess.run(args, cwd=workspace, env=env, input=b"", capture_output=True, timeout=30, check=False)
        assert nxt.returncode == 0, nxt.stderr
        assert not owned[doomed.proc.pid][0].exists(), "the killed server's spool is still there"
        assert not legacy.exists(), "an older version's spool of a process long gone is still there"
        assert owned[live.proc.pid][0].is_dir(), "a live server's spool was removed"
        # The live server still serves its kept output.
        read = live.request(2, "resources/list")
        assert "result" in read
        live.close()
    finally:
        _discard(live)
        _discard(doomed)
    assert [p.name for p in spool_area.iterdir()] == [], "a clean exit leaves no spool"


@pytest.mark.parametrize("how", ["stdin-eof", "sigterm"])
def test_a_server_stuck_in_a_call_still_ends_within_seconds_of_eof_or_sigterm(
    tmp_path: Path, workspace: Path, how: str
) -> None:
    # A call the server cannot finish: every process of its box is stopped (SIGSTOP), so the call waits on a
    # supervisor that never answers, and the orderly clean-up waits on it too.
    raw = RawClient([console_script(SX), "--audit-log", str(tmp_path / "a.jsonl")], workspace)
    box: list[psutil.Process] = []
    try:
        raw.initialize()
        warm = raw.request(1, "tools/call", {"name": "shell_exec", "arguments": {"command": "echo warm"}})
        assert "warm" in json.dumps(warm), warm
        box = psutil.Process(raw.proc.pid).children(recursive=True)
        assert box, "no box processes to stop"
        for proc in box:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.send_signal(signal.SIGSTOP)
        raw.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "shell_exec", "arguments": {"command": "echo stuck"}},
            }
        )
        with pytest.raises(AssertionError, match="no answer"):
            raw.recv(timeout=1.5)  # stuck indeed
        started = time.monotonic()
        if how == "stdin-eof":
            assert raw.proc.stdin is not None
            raw.proc.stdin.close()
        else:
            raw.proc.send_signal(signal.SIGTERM)
        code = raw.proc.wait(timeout=20)
        took = time.monotonic() - started
    finally:
        for proc in box:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.send_signal(signal.SIGCONT)
        _discard(raw)
    assert took < 6.0, f"the server took {took:.1f} s to end"
    assert code == (0 if how == "stdin-eof" else 128 + signal.SIGTERM)
    anyio.run(wait_until, lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in box))
