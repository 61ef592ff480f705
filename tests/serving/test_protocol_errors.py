"""The stdio protocol layer every server shares: bad input is answered per JSON-RPC 2.0, shutdown leaves nothing behind.

* A line that is not a valid message gets -32700 (not JSON, id null; not UTF-8, its id when one can be read),
  -32600 (not a valid request, with its id when one can be read) or -32602 (params unusable), one log line on
  stderr, and the server keeps serving.
* stdin EOF means the client is gone: calls in flight are killed and nothing more is written on stdout.
* SIGTERM/SIGHUP: every pending request gets an error answer, then the server exits within a second.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from support import MODES, RawClient, console_script

SERVERS = {
    "mcp-server-file-read": ("file_read", {"path": "hello.txt"}),
    "mcp-server-file-write": ("file_write", {"path": "after.txt", "content": "ok\n"}),
    "mcp-server-shell-exec": ("shell_exec", {"command": "cat hello.txt"}),
}
SX = "mcp-server-shell-exec"
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, SERVER_ERROR = -32700, -32600, -32602, -32000
HUGE = (64 << 20) + 4096  # above the 64 MiB line limit of the default policy
NULL: Any = None


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def call(id_: Any, arguments: str) -> bytes:
    params = f'{{"name":"file_read","arguments":{arguments}}}'
    return f'{{"jsonrpc":"2.0","id":{id_},"method":"tools/call","params":{params}}}'.encode()


# (what, line, answers expected as (code, id)); an empty list: logged, never answered (not a request).
CASES: list[tuple[str, bytes, list[tuple[int, Any]]]] = [
    ("no jsonrpc member", b'{"id":7,"method":"ping"}', [(INVALID_REQUEST, 7)]),
    ('"jsonrpc": "1.0"', b'{"jsonrpc":"1.0","id":8,"method":"ping"}', [(INVALID_REQUEST, 8)]),
    ("a float id", b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', [(INVALID_REQUEST, 1.5)]),
    ("a null id", b'{"jsonrpc":"2.0","id":null,"method":"ping"}', [(INVALID_REQUEST, NULL)]),
    ("a boolean id", b'{"jsonrpc":"2.0","id":true,"method":"ping"}', [(INVALID_REQUEST, NULL)]),
    ("an object id", b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', [(INVALID_REQUEST, NULL)]),
    ("an array id", b'{"jsonrpc":"2.0","id":[9],"method":"ping"}', [(INVALID_REQUEST, NULL)]),
    (
        "an id nested 5000 deep",
        b'{"jsonrpc":"2.0","id":' + deep(5000).encode() + b',"method":"ping"}',
        [(INVALID_REQUEST, NULL)],
    ),
    ("no method", b'{"jsonrpc":"2.0","id":9}', [(INVALID_REQUEST, 9)]),
    ("a method that is not a string", b'{"jsonrpc":"2.0","id":10,"method":42}', [(INVALID_REQUEST, 10)]),
    ("a method with a lone surrogate", b'{"jsonrpc":"2.0","id":11,"method":"pi\\ud800ng"}', [(INVALID_REQUEST, 11)]),
    (
        "params an array",
        b'{"jsonrpc":"2.0","id":12,"method":"tools/call","params":["file_read"]}',
        [(INVALID_PARAMS, 12)],
    ),
    (
        "params a string",
        b'{"jsonrpc":"2.0","id":13,"method":"tools/call","params":"file_read"}',
        [(INVALID_PARAMS, 13)],
    ),
    ("a lone surrogate in an argument", call(14, '{"path":"\\ud800"}'), [(INVALID_PARAMS, 14)]),
    ("arguments nested 5000 deep", call(15, '{"path":' + deep(5000) + "}"), [(INVALID_PARAMS, 15)]),
    (
        "arguments nested 5000 deep, the id last",
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"file_read","arguments":'
        + deep(5000).encode()
        + b'},"id":16}',
        [(INVALID_PARAMS, 16)],
    ),
    ("an unfinished object", b'{"jsonrpc":"2.0","id":17,', [(PARSE_ERROR, NULL)]),
    ("not JSON at all", b"hello", [(PARSE_ERROR, NULL)]),
    ("an empty line", b"", [(PARSE_ERROR, NULL)]),
    # Not UTF-8, so not JSON: yet a client waits for the id it sent, so the id is answered when it reads beyond doubt.
    (
        "invalid UTF-8 bytes",
        b'{"jsonrpc":"2.0","id":18,"method":"ping","params":{"x":"\xff\xfe"}}',
        [(PARSE_ERROR, 18)],
    ),
    (
        "invalid UTF-8 bytes in the method",
        b'{"jsonrpc":"2.0","id":"u-1","method":"pi\xc0\xa2ng"}',
        [(PARSE_ERROR, "u-1")],
    ),
    ("invalid UTF-8 bytes in the id", b'{"jsonrpc":"2.0","id":"u-\xff","method":"ping"}', [(PARSE_ERROR, NULL)]),
    (
        "invalid UTF-8 bytes and two ids",
        b'{"jsonrpc":"2.0","id":"u-2","method":"\xff","id":"u-3"}',
        [(PARSE_ERROR, NULL)],
    ),
    (
        "a notification with invalid UTF-8 bytes",
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":"\xff"}}',
        [(PARSE_ERROR, NULL)],
    ),
    ("NaN (not JSON)", b'{"jsonrpc":"2.0","id":19,"method":"ping","params":{"x":NaN}}', [(PARSE_ERROR, NULL)]),
    (
        "a raw control character in a string",
        b'{"jsonrpc":"2.0","id":20,"method":"ping","params":{"x":"a\x01"}}',
        [(PARSE_ERROR, NULL)],
    ),
    ("two objects on one line", b'{"jsonrpc":"2.0","id":21,"method":"ping"} {}', [(PARSE_ERROR, NULL)]),
    (
        "a batch array",
        b'[{"jsonrpc":"2.0","id":22,"method":"ping"},{"jsonrpc":"2.0","id":"b","method":"ping"}]',
        [(INVALID_REQUEST, 22), (INVALID_REQUEST, "b")],
    ),
    ("an empty batch", b"[]", [(INVALID_REQUEST, NULL)]),
    ("a bare number", b"42", [(INVALID_REQUEST, NULL)]),
    (
        "a notification with jsonrpc 1.0",
        b'{"jsonrpc":"1.0","method":"notifications/initialized"}',
        [(INVALID_REQUEST, NULL)],
    ),
    # Not requests: a notification's bad params and a broken response are logged, never answered.
    ("a notification with array params", b'{"jsonrpc":"2.0","method":"notifications/progress","params":[1]}', []),
    ("a response that is not one", b'{"jsonrpc":"2.0","id":23,"result":[1]}', []),
]


def huge_cases() -> list[tuple[str, bytes, list[tuple[int, Any]]]]:
    pad = b"a" * HUGE
    head = b'{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"file_read","arguments":{"path":"'
    # TypeScript clients put the id after the params.
    tail_first = b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"file_read","arguments":{"path":"'
    return [
        ("a line over the size limit", head + pad + b'"}}}', [(INVALID_REQUEST, 24)]),
        (
            "a line over the size limit, the id last",
            tail_first + pad + b'"}},"id":"t-25"}',
            [(INVALID_REQUEST, "t-25")],
        ),
    ]


def exchange(raw: RawClient, line: bytes, barrier: int) -> list[dict[str, Any]]:
    """Send one line, then a valid request: every message before that request's answer answers the line."""
    raw.send_raw(line + b"\n")
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": barrier, "method": "tools/list"}
    if (params := raw.envelope(None)) is not None:
        message["params"] = params
    raw.send(message)
    seen = raw.until(barrier, timeout=30)
    assert "result" in seen[-1] or seen[-1]["error"]["code"] != INVALID_REQUEST, seen[-1]  # before initialize: refused
    return seen[:-1]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("script", sorted(SERVERS))
def test_every_malformed_message_is_answered_logged_once_and_survived(
    script: str, mode: str, workspace: Path, tmp_path: Path
) -> None:
    tool, probe = SERVERS[script]
    stderr = tmp_path / "stderr.log"
    raw = RawClient(
        [console_script(script), "--audit-log", str(tmp_path / "audit.jsonl")],
        workspace,
        stderr=stderr,
        modern=mode == "auto",
    )
    failures: list[str] = []
    try:
        # Before anything else, too: the first line of a session may be garbage.
        first = exchange(raw, b"{oops", 1000)
        if [(m.get("error", {}).get("code"), m.get("id", "absent")) for m in first] != [(PARSE_ERROR, None)]:
            failures.append(f"first line of the session: got {first}")
        raw.initialize()
        for n, (what, line, expected) in enumerate([*CASES, *huge_cases()], start=1001):
            logged = len(raw.stderr_lines())
            got = exchange(raw, line, n)
            answers = [(m.get("error", {}).get("code"), m.get("id", "absent")) for m in got]
            if answers != expected or any(m.get("jsonrpc") != "2.0" or "result" in m for m in got):
                failures.append(f"{what}: expected {expected}, got {[json.dumps(m)[:200] for m in got]}")
            new_log = raw.stderr_lines()[logged:]
            if len(new_log) != 1:
                failures.append(f"{what}: expected one stderr line, got {new_log}")
        final = raw.request(2000, "tools/call", {"name": tool, "arguments": probe})
        assert final.get("result", {}).get("isError") is False, final
    finally:
        raw.close()
    assert not failures, "\n".join(failures)
    assert raw.proc.returncode == 0


# -- the client leaves, or the server is told to stop ------------------------------------------------------


def marker() -> str:
    """A sleep duration unique to this test, to find its processes (and only them) in /proc."""
    return f"1000.{uuid.uuid4().int % 10**8}"


def sleepers(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if token.encode() in cmdline:
                found.append(int(entry))
    return found


def wait_for(predicate: Any, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)  # polling a condition with a deadline, not a bare sleep


def kill_leftovers(token: str) -> None:
    for pid in sleepers(token):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def start_sleep_call(workspace: Path, tmp_path: Path, token: str, *, modern: bool = False) -> RawClient:
    raw = RawClient(
        [console_script(SX), "--audit-log", str(tmp_path / "audit.jsonl")],
        workspace,
        stderr=tmp_path / "stderr.log",
        modern=modern,
    )
    raw.initialize()
    raw.send(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": raw.envelope({"name": "shell_exec", "arguments": {"command": f"sleep {token}"}}),
        }
    )
    wait_for(lambda: bool(sleepers(token)))
    return raw


@pytest.mark.parametrize("mode", MODES)
def test_closing_stdin_with_a_call_in_flight_kills_it_and_writes_nothing_more(
    mode: str, workspace: Path, tmp_path: Path
) -> None:
    token = marker()
    raw = start_sleep_call(workspace, tmp_path, token, modern=mode == "auto")
    try:
        assert raw.proc.stdin is not None
        raw.proc.stdin.close()
        closed = time.monotonic()
        after = raw.read_to_eof(timeout=10)
        raw.proc.wait(timeout=10)
        took = time.monotonic() - closed
        assert after == b"", f"the server wrote after the client left: {after[:300]!r}"
        assert raw.proc.returncode == 0
        assert took < 2.0, f"the server took {took:.2f} s to exit"
        wait_for(lambda: not sleepers(token), timeout=5)
    finally:
        raw.close()
        kill_leftovers(token)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("mode", MODES)
def test_shutdown_signal_answers_the_pending_call_and_exits_without_waiting_for_it(
    signum: signal.Signals, mode: str, workspace: Path, tmp_path: Path
) -> None:
    token = marker()
    raw = start_sleep_call(workspace, tmp_path, token, modern=mode == "auto")
    try:
        sent = time.monotonic()
        raw.proc.send_signal(signum)
        answer = raw.recv(timeout=10)
        raw.proc.wait(timeout=10)
        took = time.monotonic() - sent
        after = raw.read_to_eof(timeout=2)
        assert answer["id"] == 7 and answer["error"]["code"] == SERVER_ERROR, answer
        assert "shutting down" in answer["error"]["message"]
        assert after == b"", f"more than one answer: {after[:300]!r}"
        # Well under the call's own sleep: it did not wait for the command (the figure, ~0.1 s, is bench's).
        assert took < 10, f"the server took {took:.2f} s to exit"
        assert raw.proc.returncode == 128 + signum
        wait_for(lambda: not sleepers(token), timeout=5)
    finally:
        raw.close()
        kill_leftovers(token)


def test_a_client_that_stops_reading_cannot_wedge_the_server_against_a_stop_signal(
    workspace: Path, tmp_path: Path
) -> None:
    # The attack: a client fills the stdout pipe (asks for answers it never reads) so that the server's
    # writes block; a server writing on its event loop could then never act on SIGTERM. Answers that do not
    # fit an empty pipe go through the writer thread, so the loop keeps serving and the server stops.
    (workspace / "page.txt").write_text("x" * 100 + "\n" * 2000)
    raw = RawClient(
        [console_script("mcp-server-file-read"), "--audit-log", str(tmp_path / "audit.jsonl")],
        workspace,
        stderr=tmp_path / "stderr.log",
    )
    try:
        raw.initialize()
        for i in range(40):  # ~40 x 4 KiB of answers: beyond a 64 KiB pipe, with nobody reading
            params = {"name": "file_read", "arguments": {"path": "page.txt"}}
            raw.send({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call", "params": params})
        audit = tmp_path / "audit.jsonl"
        wait_for(lambda: audit.read_text().count('"outcome"') >= 17, timeout=10)  # stdout is full by now
        sent = time.monotonic()
        raw.proc.send_signal(signal.SIGTERM)
        raw.proc.wait(timeout=5)
        assert time.monotonic() - sent < 2.0
        assert raw.proc.returncode == 128 + signal.SIGTERM
    finally:
        raw.close()


# -- a client on the mcp 1.x SDK closes cleanly with a call in flight -------------------------------------

V1_CLIENT = """
import os, sys
import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

server, audit = sys.argv[1:3]
token = os.environ["SLEEP_TOKEN"]  # not in our own cmdline, which running() scans


def running() -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if token.encode() in fh.read():
                        return True
            except OSError:
                pass
    return False


async def main() -> None:
    params = StdioServerParameters(command=server, args=["--audit-log", audit], cwd=os.getcwd())
    with anyio.fail_after(30):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.call_tool, "shell_exec", {"command": f"sleep {token}"})
                while not running():
                    await anyio.sleep(0.05)
                tg.cancel_scope.cancel()  # give up on the call; then leave while the server still runs it
    print("closed cleanly")


anyio.run(main)
"""


@pytest.fixture(scope="session")
def mcp_v1_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A throw-away virtualenv with the latest mcp 1.x (skips when it cannot be installed)."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH: cannot build a virtualenv with mcp 1.x")
    venv = tmp_path_factory.mktemp("mcp-v1") / "venv"
    made = subprocess.run([uv, "venv", "-q", str(venv), "--python", sys.executable], capture_output=True, timeout=120)
    python = venv / "bin" / "python"
    if made.returncode == 0:
        made = subprocess.run(
            [uv, "pip", "install", "-q", "--python", str(python), "mcp>=1,<2"], capture_output=True, timeout=300
        )
    if made.returncode != 0:
        pytest.skip(f"cannot install mcp 1.x: {made.stderr.decode(errors='replace')[-500:]}")
    return str(python)


def test_mcp_v1_client_closes_cleanly_with_a_call_in_flight(
    mcp_v1_python: str, workspace: Path, tmp_path: Path
) -> None:
    token = marker()
    script = tmp_path / "v1_client.py"
    script.write_text(V1_CLIENT, encoding="utf-8")
    try:
        proc = subprocess.run(
            [mcp_v1_python, str(script), console_script(SX), str(tmp_path / "audit.jsonl")],
            cwd=workspace,
            env={**os.environ, "SLEEP_TOKEN": token},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, f"rc={proc.returncode}\nstdout:{proc.stdout}\nstderr:{proc.stderr[-3000:]}"
        assert proc.stdout.strip() == "closed cleanly"
        assert "ExceptionGroup" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        wait_for(lambda: not sleepers(token), timeout=5)
    finally:
        kill_leftovers(token)


def test_an_endless_line_is_never_held_in_memory(workspace: Path, tmp_path: Path) -> None:
    raw = RawClient([console_script("mcp-server-file-read"), "--audit-log", str(tmp_path / "a.jsonl")], workspace)
    try:
        raw.initialize()
        raw.send_raw(
            b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"file_read","arguments":{"path":"'
        )
        chunk = b"a" * (1 << 20)
        for _ in range(320):  # 320 MiB, five times the line limit
            raw.send_raw(chunk)
        raw.send_raw(b'"}}}\n')
        answer = raw.until(5, timeout=60)[-1]
        status = Path(f"/proc/{raw.proc.pid}/status").read_text(encoding="ascii")
        peak_mib = int(next(ln for ln in status.splitlines() if ln.startswith("VmHWM")).split()[1]) // 1024
        after = raw.request(6, "tools/call", {"name": "file_read", "arguments": {"path": "hello.txt"}})
    finally:
        raw.close()
    assert answer["error"]["code"] == INVALID_REQUEST, answer
    assert peak_mib < 250, f"the server peaked at {peak_mib} MiB"
    assert after["result"]["isError"] is False


def test_a_forced_exit_ends_what_runs_but_never_removes_what_a_running_apply_still_needs() -> None:
    """The exit watchdog runs only the kills (commands, the box): a clean-up that removes a call's copy while its
    apply is still moving files out of it would leave half the approved changes lost to the next start's recovery."""
    from types import SimpleNamespace

    from mcp_server_guard.serving.launch import _release

    ran: list[str] = []
    server = SimpleNamespace(
        kills=[lambda: ran.append("kill commands"), lambda: ran.append("close the box")],
        cleanups=[lambda: ran.append("remove the copies")],
    )
    _release(server, 1.0, kills_only=True)  # type: ignore[arg-type]
    assert ran == ["kill commands", "close the box"] and len(server.cleanups) == 1
    _release(server, 1.0)  # type: ignore[arg-type]  # the orderly exit, afterwards: the rest, once
    assert ran == ["kill commands", "close the box", "remove the copies"]
