"""--network policy through the real console script: a command's only way out is the server's egress proxy.

The origin is an HTTP server this test starts on 127.0.0.1; ``MCP_GUARD_TEST_HOSTS`` (set by whoever starts the
server, as a host would set any variable) makes the proxy resolve the test's names to chosen addresses, which
are still judged like any answer. No test needs the internet.
"""

from __future__ import annotations

import shutil
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import ElicitResult

from support import Human, refused_start, serve, text_of, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
SX = "mcp-server-shell-exec"
BIG = 50 << 20
HELD = 1 << 20


class _Held:
    """Downloads of ``/held`` the origin keeps in flight: half the body, then the rest once the test releases them."""

    lock = threading.Lock()
    started = 0
    done = 0
    release = threading.Event()


class _Origin(BaseHTTPRequestHandler):
    dropped: dict[str, str] = {}  # noqa: RUF012 - a dead drop between two calls (/drop/<key>/<value>, /pick/<key>)

    def do_GET(self) -> None:
        if self.path == "/held":
            self._held()
            return
        body = b"x" * BIG if self.path == "/big" else b"hello from the origin\n"
        if self.path.startswith("/drop/"):
            key, _, value = self.path[len("/drop/") :].partition("/")
            self.dropped[key] = urllib.parse.unquote(value)
        elif self.path.startswith("/pick/"):
            body = self.dropped.get(self.path[len("/pick/") :], "").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _held(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(HELD))
        self.end_headers()
        self.wfile.write(b"x" * (HELD // 2))
        self.wfile.flush()
        with _Held.lock:
            _Held.started += 1
        _Held.release.wait(60)
        self.wfile.write(b"x" * (HELD - HELD // 2))
        with _Held.lock:
            _Held.done += 1

    def log_message(self, *_: Any) -> None:
        return None


@dataclass
class Net:
    workspace: Path
    port: int
    flags: tuple[str, ...]
    env: dict[str, str]


@pytest.fixture
def net(workspace: Path, tmp_path: Path) -> Iterator[Net]:
    origin = ThreadingHTTPServer(("127.0.0.1", 0), _Origin)
    # a short poll: shutdown() at teardown waits up to one poll interval (0.5 s by default)
    threading.Thread(target=origin.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    port = origin.server_address[1]
    policy = tmp_path / "policy.toml"
    policy.write_text(
        f'[network]\nallow = ["allowed.test:{port}", "*.allowed.test:{port}"]\ndeny = ["denied.test"]\n',
        encoding="utf-8",
    )
    hosts = "allowed.test=127.0.0.1,denied.test=127.0.0.1,unnamed.test=127.0.0.1,inner.allowed.test=10.0.0.5"
    try:
        yield Net(workspace, port, ("--network", "policy", "--policy", str(policy)), {"MCP_GUARD_TEST_HOSTS": hosts})
    finally:
        origin.shutdown()
        origin.server_close()


async def _approve(_ctx: Any, _params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"approve": True})


async def run(
    net: Net, *commands: str, human: Any = _approve, mode: str = "legacy", timeout: float = 30
) -> list[dict[str, Any]]:
    """Each command's structured result, from one server (``human`` answers the forms; None: no elicitation)."""
    out = []
    kw = {"elicitation_callback": human} if human is not None else {}
    async with serve(SX, net.workspace, *net.flags, mode=mode, env=net.env, **kw) as client:
        for command in commands:
            with anyio.fail_after(60):
                result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": timeout})
            assert not result.is_error, result
            out.append(dict(result.structured_content or {}) | {"text": text_of(result)})
    return out


def _curl(url: str) -> str:
    return f"curl -fsS --max-time 10 {url}"


async def test_an_allowed_name_is_fetched_through_the_proxy(net: Net) -> None:
    (out,) = await run(net, _curl(f"http://allowed.test:{net.port}/"))
    assert out["stdout"] == "hello from the origin\n", out
    assert out["networkDenied"] == []
    assert "netns" in out["sandbox"] and "egress-proxy" in out["sandbox"]


async def test_a_denied_name_and_an_unnamed_name_are_refused_and_reported(net: Net) -> None:
    # A client without elicitation: nobody can be asked about the unnamed host.
    denied, unnamed = await run(
        net, _curl(f"http://denied.test:{net.port}/"), _curl(f"http://unnamed.test:{net.port}/"), human=None
    )
    assert denied["exitCode"] != 0 and "hello" not in denied["stdout"]
    assert [(d["host"], d["port"], d["rule"]) for d in denied["networkDenied"]] == [
        ("denied.test", net.port, "deny:denied.test")
    ]
    assert [(d["host"], d["rule"]) for d in unnamed["networkDenied"]] == [("unnamed.test", "unnamed-host")]
    assert "cannot ask the user" in unnamed["networkDenied"][0]["reason"]
    assert "not a broken package" in unnamed["text"] and "[network].allow" in unnamed["text"]


async def test_an_unnamed_name_approved_for_the_session_is_fetched_again_without_more_questions(
    net: Net, mode: str
) -> None:
    human = Human(network="session")
    fetch = _curl(f"http://unnamed.test:{net.port}/")
    # The name is asked about by itself (it is not looked up before a yes: a lookup carries data out); once
    # allowed it resolves to 127.0.0.1 here, which takes a second question that says so.
    results = await run(net, fetch, fetch, fetch, fetch, human=human, mode=mode)
    (name, name_props), (warned, _) = human.questions
    assert f"unnamed.test:{net.port}" in name and set(name_props) == {"network"} and "127.0.0.1" not in name
    assert name_props["network"]["enum"] == ["command", "session", "deny"]
    assert f"unnamed.test:{net.port}" in warned and "resolves to 127.0.0.1" in warned
    if mode == "legacy":
        # 2025 era: asked while the command runs; the proxy holds the connection until the answers.
        assert [r["stdout"] for r in results] == ["hello from the origin\n"] * 4
    else:
        # 2026-07-28: no question can be sent mid-call; a run is refused, and says how to get asked, until the
        # questions have been asked before a run: about the name, then about the address it resolves to.
        first, second, *rest = results
        for refused in (first, second):
            assert [(d["host"], d["rule"]) for d in refused["networkDenied"]] == [("unnamed.test", "unnamed-host")]
            assert "run the same command again" in refused["text"]
        assert [r["stdout"] for r in rest] == ["hello from the origin\n"] * 2
    assert all(r["networkDenied"] == [] for r in results[-2:])


async def test_a_host_allowed_for_one_command_is_asked_about_once_per_command(net: Net) -> None:
    human = Human(network="command")
    twice = _curl(f"http://unnamed.test:{net.port}/") + " && " + _curl(f"http://unnamed.test:{net.port}/a")
    results = await run(net, twice, twice, human=human)
    assert [r["stdout"] for r in results] == ["hello from the origin\n" * 2] * 2
    # per command, though each connected twice: the name, then the loopback address it resolves to
    assert len(human.questions) == 4 and "resolves to 127.0.0.1" in human.questions[1][0]


async def test_a_host_the_user_refuses_is_reported_as_not_approved(net: Net) -> None:
    (out,) = await run(net, _curl(f"http://unnamed.test:{net.port}/"), human=Human(network="deny"))
    assert [(d["host"], d["rule"]) for d in out["networkDenied"]] == [("unnamed.test", "not-approved")]
    assert "do not retry" in out["text"]


async def test_waiting_for_the_human_does_not_count_against_the_timeout(net: Net) -> None:
    (out,) = await run(
        net, _curl(f"http://unnamed.test:{net.port}/"), human=Human(network="command", delay=2.0), timeout=1
    )
    assert out["stdout"] == "hello from the origin\n" and out["timedOut"] is False, out


async def test_an_ip_literal_and_a_name_resolving_to_a_private_address_are_refused(net: Net) -> None:
    literal, private = await run(
        net, _curl(f"http://127.0.0.1:{net.port}/"), _curl(f"http://inner.allowed.test:{net.port}/")
    )
    assert "hello" not in literal["stdout"]
    assert [d["host"] for d in literal["networkDenied"]] == ["127.0.0.1"]
    assert [(d["host"], d["rule"]) for d in private["networkDenied"]] == [("inner.allowed.test", "private-address")]


async def test_connections_that_bypass_the_proxy_find_no_route(net: Net) -> None:
    # The attack: a program that ignores the proxy variables (or unsets them) and goes straight out.
    probe = (
        "import socket\n"
        "def tcp(a):\n"
        "    try:\n"
        "        socket.create_connection(a, timeout=3); return 'OPEN'\n"
        "    except OSError as e: return type(e).__name__\n"
        "def udp():\n"
        "    try:\n"
        "        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('8.8.8.8', 53)); return 'SENT'\n"
        "    except OSError as e: return type(e).__name__\n"
        "def dns():\n"
        "    try:\n"
        "        socket.getaddrinfo('example.com', 80); return 'RESOLVED'\n"
        "    except OSError as e: return type(e).__name__\n"
        f"print(tcp(('127.0.0.1', {net.port})), tcp(('1.1.1.1', 80)), udp(), dns())\n"
    )
    (script := net.workspace / "probe.py").write_text(probe, encoding="utf-8")
    raw, noproxy = await run(
        net, f"python3 {script.name}", f"curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:{net.port}/"
    )
    assert "OPEN" not in raw["stdout"] and "SENT" not in raw["stdout"] and "RESOLVED" not in raw["stdout"], raw
    assert noproxy["exitCode"] != 0 and "hello" not in noproxy["stdout"]


async def test_a_50_mb_download_through_the_proxy_arrives_whole(net: Net) -> None:
    (out,) = await run(
        net, f"curl -sS --max-time 60 -o /dev/null -w '%{{size_download}}' http://allowed.test:{net.port}/big"
    )
    assert out["stdout"] == str(BIG), out


def test_network_policy_refuses_to_start_without_the_box(workspace: Path) -> None:
    # Fail closed: with no box, nothing would force a command's traffic through the proxy.
    done = refused_start(SX, workspace, "--network", "policy", "--sandbox", "off")
    assert done.returncode == 2
    assert b"--network policy needs the box" in done.stderr


async def test_concurrent_calls_each_report_only_their_own_refusals(net: Net) -> None:
    # Many calls in flight on one connection: the proxy tells them apart by their tokens, never by timing.
    hosts = ["allowed.test", "denied.test", "unnamed.test", "allowed.test", "denied.test", "unnamed.test"]
    results: dict[int, dict[str, Any]] = {}
    async with serve(SX, net.workspace, *net.flags, env=net.env, elicitation_callback=Human(network="deny")) as client:

        async def one(i: int, host: str) -> None:
            command = f"sleep 0.{i}; " + _curl(f"http://{host}:{net.port}/")
            with anyio.fail_after(60):
                result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 30})
            results[i] = dict(result.structured_content or {})

        async with anyio.create_task_group() as tg:
            for i, host in enumerate(hosts):
                tg.start_soon(one, i, host)
    for i, host in enumerate(hosts):
        denied = [d["host"] for d in results[i]["networkDenied"]]  # unnamed.test: asked, and refused
        assert denied == ([] if host == "allowed.test" else [host]), (i, host, results[i])
        assert ("hello" in results[i]["stdout"]) == (host == "allowed.test")


_BORROW = """\
import os, time, urllib.error, urllib.parse, urllib.request
def fetch(url, proxy):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))
    try:
        return opener.open(url, timeout=10).read().decode()
    except urllib.error.HTTPError as e:
        return f"HTTP {e.code}"
    except OSError as e:
        return type(e).__name__
own = os.environ["http_proxy"]
origin = "http://allowed.test:PORT"
theirs = ""
for _ in range(200):  # A's proxy URL, from the dead drop (A runs meanwhile)
    theirs = fetch(origin + "/pick/" + KEY, own)
    if theirs.startswith("http://"):
        break
    time.sleep(0.05)
token = theirs.split("//", 1)[1].split(":", 1)[0]
port = own.rsplit(":", 1)[1]
result = fetch(origin.replace("allowed", "unnamed") + "/", theirs), fetch(origin.replace("allowed", "unnamed") + "/", f"http://{token}:x@127.0.0.1:{port}")
fetch(origin + "/drop/" + KEY + "-done/yes", own)
print(result[0], "|", result[1])
"""

_LENDER = """\
import os, time, urllib.parse, urllib.request
own = os.environ["http_proxy"]
opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": own}))
origin = "http://allowed.test:PORT"
print(opener.open("http://unnamed.test:PORT/", timeout=10).read().decode(), end="")  # approved for this command
opener.open(origin + "/drop/" + KEY + "/" + urllib.parse.quote(own, safe=""), timeout=10).read()
for _ in range(400):  # stay running (its approval live) until B has tried
    if opener.open(origin + "/pick/" + KEY + "-done", timeout=10).read() == b"yes":
        break
    time.sleep(0.05)
"""


async def test_a_call_cannot_borrow_a_running_calls_proxy_address_or_token(net: Net) -> None:
    # The attack: call A, approved to reach a host "for this command", passes its proxy URL (token included) to
    # call B, which runs at the same time and was never approved; B uses A's address, or A's token on its own
    # way out, to reach the host with no question while A's approval is live.
    human = Human(network="command")
    key = f"k{net.port}"
    for name, text in (("a.py", _LENDER), ("b.py", _BORROW)):
        source = text.replace("PORT", str(net.port)).replace("KEY", repr(key))
        (net.workspace / name).write_text(source, encoding="utf-8")
    results: dict[str, dict[str, Any]] = {}
    async with serve(SX, net.workspace, *net.flags, env=net.env, elicitation_callback=human) as client:

        async def one(name: str) -> None:
            with anyio.fail_after(60):
                result = await client.call_tool("shell_exec", {"command": f"python3 {name}", "timeoutSeconds": 40})
            results[name] = dict(result.structured_content or {})

        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "a.py")
            tg.start_soon(one, "b.py")
    a, b = results["a.py"], results["b.py"]
    assert a["stdout"] == "hello from the origin\n", a
    # A's two questions (the name, then the address it resolves to); B was never asked, and never let through
    assert len([q for q, props in human.questions if "network" in props]) == 2, human.questions
    theirs, own = (part.strip() for part in b["stdout"].split("|"))
    assert "hello" not in b["stdout"], b
    assert theirs in {"URLError", "ConnectionRefusedError"}, b  # A's address is nothing in B's network namespace
    assert own == "HTTP 407", b  # A's token on B's own way out: refused outright


async def test_a_burst_of_concurrent_calls_each_gets_its_own_way_out_and_none_stalls(net: Net) -> None:
    # Each call's listener is closed as it ends, while the next calls start: a descriptor number reused before
    # the loop stopped watching it once left calls waiting for their status until their timeout.
    results: dict[int, dict[str, Any]] = {}
    async with serve(SX, net.workspace, *net.flags, env=net.env) as client:

        async def one(i: int) -> None:
            command = f"echo {i}" + (" && " + _curl(f"http://allowed.test:{net.port}/") if i % 10 == 0 else "")
            result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 20})
            results[i] = dict(result.structured_content or {})

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for i in range(100):
                    tg.start_soon(one, i)
    for i in range(100):
        assert results[i]["timedOut"] is False and results[i]["durationMs"] < 15_000, results[i]
        assert results[i]["stdout"].startswith(f"{i}\n"), results[i]
        assert ("hello" in results[i]["stdout"]) == (i % 10 == 0), results[i]


async def test_an_ordinary_call_is_answered_while_downloads_through_the_proxy_are_in_flight(net: Net) -> None:
    # Issue 28: 100 calls downloading through the egress proxy made an ordinary call wait for them. The origin holds
    # every download half done until the echo has been answered: it cannot have waited for them to finish.
    downloads = 25
    _Held.started = _Held.done = 0
    _Held.release.clear()
    fetch = f"curl -sS --max-time 60 -o /dev/null -w '%{{size_download}}' http://allowed.test:{net.port}/held"
    sizes: list[str] = []
    try:
        async with serve(SX, net.workspace, *net.flags, env=net.env) as client:

            async def download() -> None:
                result = await client.call_tool("shell_exec", {"command": fetch, "timeoutSeconds": 60})
                sizes.append(dict(result.structured_content or {})["stdout"])

            with anyio.fail_after(90):
                async with anyio.create_task_group() as tg:
                    for _ in range(downloads):
                        tg.start_soon(download)
                    await wait_until(lambda: _Held.started == downloads, timeout=60)
                    with anyio.fail_after(15):
                        echo = await client.call_tool("shell_exec", {"command": "echo hi"})
                    assert dict(echo.structured_content or {})["stdout"] == "hi\n", echo
                    assert _Held.done == 0 and not sizes  # every download was still in flight
                    _Held.release.set()
    finally:
        _Held.release.set()
    assert sizes == [str(HELD)] * downloads
