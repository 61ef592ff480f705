"""The egress proxy of ``--network policy``: built to be a command's only way out of its network namespace.

The box's network namespace has nothing but loopback; inside it, the supervisor listens on 127.0.0.1 and hands
the listening socket out to the server (SCM_RIGHTS, with its ready byte), so connections a command opens to the
proxy are accepted here, in the server's own namespace, where they are judged and, if allowed, dialled. A
program that ignores ``HTTP_PROXY`` then finds no route at all: it fails closed.

Judging (``policy.NetworkRules``): the ``[network]`` ``allow`` and ``deny`` lists; deny wins. The proxy resolves
names itself and judges the addresses too: loopback, private, link-local, shared, multicast and metadata
addresses are refused unless an entry (or a human's approval of exactly that host) names them, so neither a DNS
answer nor an IP literal reaches the local network behind an allowed glob. A host no entry names is an ``ask``.

Only CONNECT (any protocol inside, TLS untouched) and plain-HTTP requests in absolute form are proxied, one
request per connection; heads are bounded, connections counted, connects and idle relays time out. A call is
known by the user name of its ``Proxy-Authorization`` (the per-call token in its proxy URL).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import dataclasses
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from mcp_server_guard.policy import IPAddress, NetworkRules, Verdict, normal_host, special_address

log = logging.getLogger("mcp_server_guard.egress")

HEAD_LIMIT = 64 << 10  # request line and headers
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 15.0
IDLE_TIMEOUT_S = 300.0  # a relay with no byte either way for this long is closed
RELAY_CHUNK = 1 << 20
MAX_CONNECTIONS = 256

# -- the proxy ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Denied:
    """A connection the proxy refused, reported in the result of the call that made it."""

    host: str
    port: int
    rule: str
    reason: str


Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]
# (call token or None, host, port, the rules' "ask") -> the verdict on a host no rule names
Asker = Callable[[str | None, str, int, Verdict], Awaitable[Verdict]]


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: dict[IPAddress, None] = {}
    for _family, _type, _proto, _name, sockaddr in infos:
        seen.setdefault(ipaddress.ip_address(sockaddr[0]), None)
    return list(seen)


TEST_HOSTS_ENV = "MCP_GUARD_TEST_HOSTS"


def resolver_from_env(environ: Mapping[str, str]) -> Resolver:
    """The system's resolver; for tests, ``MCP_GUARD_TEST_HOSTS="name=address,..."`` (set by whoever starts the
    server, never by a command) answers chosen names with chosen addresses and resolves nothing else. The
    addresses are still judged: a loopback answer is refused unless an allow entry names the host exactly."""
    spec = environ.get(TEST_HOSTS_ENV, "")
    if not spec:
        return system_resolver
    table = {normal_host(name): ipaddress.ip_address(ip) for name, _, ip in (e.partition("=") for e in spec.split(","))}

    async def test_resolver(host: str, port: int) -> list[IPAddress]:
        if (ip := table.get(normal_host(host))) is not None:
            return [ip]
        try:
            return [ipaddress.ip_address(normal_host(host))]
        except ValueError:
            raise OSError(f"{host} is not in {TEST_HOSTS_ENV}") from None

    return test_resolver


class BadRequest(Exception):
    pass


@dataclass
class _Head:
    method: str
    host: str
    port: int
    lines: list[bytes]  # the request line and header lines as received (CRLF stripped)
    token: str | None
    rest: bytes  # bytes after the head that were already read


@dataclass
class EgressProxy:
    rules: NetworkRules
    asker: Asker | None = None
    resolver: Resolver = system_resolver
    on_decision: Callable[[str | None, str, int, Verdict], None] | None = None  # every decision (the audit)
    denied: dict[str, list[Denied]] = field(default_factory=dict)  # call token -> what was refused
    allowed: dict[str, list[str]] = field(default_factory=dict)  # call token -> host:port let through
    # Tokens of the calls running now: only their decisions are kept (a command sending made-up tokens in a loop
    # cannot grow these tables), and each is forgotten when its call takes them.
    live: set[str] = field(default_factory=set)
    _servers: list[asyncio.AbstractServer] = field(default_factory=list)
    _connections: set[asyncio.Task[None]] = field(default_factory=set)

    async def listen_on(self, sock: socket.socket) -> None:
        """Accept connections on an already listening socket (the one the box's supervisor handed out)."""
        sock.setblocking(False)
        self._servers.append(await asyncio.start_server(self._serve, sock=sock, limit=HEAD_LIMIT))

    async def close(self) -> None:
        """Stop accepting, and end every connection still open."""
        for server in self._servers:
            server.close()
        self._servers.clear()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)

    def take_denied(self, token: str) -> list[Denied]:
        return self.take_decisions(token)[0]

    def open_call(self, token: str) -> None:
        """A call starts: what the proxy decides for ``token`` is kept until ``take_decisions``."""
        self.live.add(token)

    def take_decisions(self, token: str) -> tuple[list[Denied], list[str]]:
        """What the proxy refused and let through for one call (forgotten here once taken)."""
        self.live.discard(token)
        return self.denied.pop(token, []), self.allowed.pop(token, [])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if len(self._connections) >= MAX_CONNECTIONS or task is None:
            writer.close()  # bounded: a command opening connections in a loop cannot exhaust the server
            return
        self._connections.add(task)
        try:
            await self._one(reader, writer)
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except Exception:  # a connection's failure never takes the proxy down
            log.exception("egress proxy: a connection failed")
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(_read_head(reader), HEAD_TIMEOUT_S)
        except BadRequest as exc:
            await _reply(writer, 400, "Bad Request", str(exc))
            return
        verdict = self.rules.judge(head.host, head.port)
        usable: list[IPAddress] = []
        if verdict.action == "ask":
            verdict = await self._warned(head, verdict)
            if self.asker is not None:
                verdict = await self.asker(head.token, head.host, head.port, verdict)
            else:
                verdict = Verdict("deny", "unnamed-host", verdict.reason)
        if verdict.action == "allow":
            try:
                addresses = await asyncio.wait_for(self.resolver(head.host, head.port), CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError):
                await _reply(writer, 502, "Bad Gateway", f"{head.host} does not resolve")
                return
            # A human's approval names exactly this host and port, as an exact allow entry would (the question
            # says when the name resolves to a local-network address, see below).
            approved = (verdict.rule or "").startswith("approved")
            refusals = [self.rules.judge_address(head.host, ip, head.port, approved=approved) for ip in addresses]
            usable = [ip for ip, refused in zip(addresses, refusals, strict=True) if refused is None]
            if not usable:
                verdict = next((r for r in refusals if r is not None), verdict)
        self._decided(head, verdict)
        if verdict.action != "allow":
            await _reply(writer, 403, "Forbidden", f"mcp-guard: {verdict.reason}", rule=verdict.rule)
            return
        upstream = await self._connect(usable, head.port)
        if upstream is None:
            await _reply(writer, 502, "Bad Gateway", f"cannot connect to {head.host}:{head.port}")
            return
        up_reader, up_writer = upstream
        for side in (writer, up_writer):  # fewer, larger writes while relaying (bounded: 4 MiB per direction)
            side.transport.set_write_buffer_limits(high=4 * RELAY_CHUNK)
        try:
            if head.method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                up_writer.write(_origin_form(head))
            if head.rest:
                up_writer.write(head.rest)
            await _relay(reader, writer, up_reader, up_writer)
        finally:
            up_writer.close()

    async def _warned(self, head: _Head, verdict: Verdict) -> Verdict:
        """Threat: a human approving "innocent.example" that resolves to 127.0.0.1 or 169.254.169.254 (the
        approval names the host exactly, which unlocks such addresses): the question says what it resolves to."""
        try:
            addresses = await asyncio.wait_for(self.resolver(head.host, head.port), CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError):
            return verdict
        special = [str(ip) for ip in addresses if special_address(ip)]
        if not special:
            return verdict
        return dataclasses.replace(
            verdict,
            reason=f"{verdict.reason}; WARNING: it resolves to {', '.join(special)}, on this machine or "
            "its local network",
        )

    def _decided(self, head: _Head, verdict: Verdict) -> None:
        kept = head.token is not None and head.token in self.live
        if verdict.action != "allow" and kept:
            assert head.token is not None
            refused = self.denied.setdefault(head.token, [])
            if len(refused) < 100:
                refused.append(Denied(head.host, head.port, verdict.rule or "unnamed-host", verdict.reason))
        elif kept:
            assert head.token is not None
            seen = self.allowed.setdefault(head.token, [])
            if f"{head.host}:{head.port}" not in seen and len(seen) < 100:
                seen.append(f"{head.host}:{head.port}")
        if self.on_decision is not None:
            self.on_decision(head.token, head.host, head.port, verdict)

    async def _connect(
        self, addresses: list[IPAddress], port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        for ip in addresses:
            try:
                return await asyncio.wait_for(
                    asyncio.open_connection(str(ip), port, limit=RELAY_CHUNK), CONNECT_TIMEOUT_S
                )
            except (OSError, TimeoutError):
                continue
        return None


async def _read_head(reader: asyncio.StreamReader) -> _Head:
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise BadRequest("request head too long") from None
    lines = raw[:-4].split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise BadRequest("not an HTTP/1.x request line")
    method, target = parts[0].decode("ascii", "replace").upper(), parts[1].decode("ascii", "replace")
    token = None
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"proxy-authorization":
            token = _token(value.strip())
    if method == "CONNECT":
        host, port = _split_host_port(target, None)
    else:
        if not target.lower().startswith("http://"):
            raise BadRequest("only CONNECT and absolute http:// requests go through this proxy")
        authority = target[7:].split("/", 1)[0].rsplit("@", 1)[-1]
        host, port = _split_host_port(authority, 80)
    return _Head(method, normal_host(host), port, lines, token, b"")


def _token(value: bytes) -> str | None:
    scheme, _, data = value.partition(b" ")
    if scheme.lower() != b"basic":
        return None
    try:
        user = base64.b64decode(data.strip(), validate=True).decode("utf-8", "replace").split(":", 1)[0]
    except (binascii.Error, ValueError):
        return None
    return user or None


def _split_host_port(authority: str, default: int | None) -> tuple[str, int]:
    if authority.startswith("["):
        close = authority.find("]")
        host, rest = authority[1:close], authority[close + 1 :]
        port_text = rest.removeprefix(":") if rest else ""
    elif authority.count(":") == 1:
        host, port_text = authority.split(":")
    else:
        host, port_text = authority, ""
    if not port_text:
        if default is None:
            raise BadRequest("CONNECT needs host:port")
        return host, default
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise BadRequest(f"bad port {port_text!r}")
    return host, int(port_text)


_HOP_BY_HOP = {b"proxy-authorization", b"proxy-connection", b"connection", b"keep-alive"}


def _origin_form(head: _Head) -> bytes:
    """The request as the origin server expects it: path only, no proxy headers, one request per connection."""
    method, target, version = head.lines[0].split(b" ")
    path = b"/" + target[7:].split(b"/", 1)[1] if target[7:].count(b"/") else b"/"
    out = [b" ".join([method, path, version])]
    for line in head.lines[1:]:
        name = line.partition(b":")[0].strip().lower()
        if name not in _HOP_BY_HOP:
            out.append(line)
    out.append(b"Connection: close")
    return b"\r\n".join(out) + b"\r\n\r\n"


async def _reply(writer: asyncio.StreamWriter, status: int, phrase: str, text: str, rule: str | None = None) -> None:
    body = (text + "\n").encode()
    headers = [f"HTTP/1.1 {status} {phrase}", "Content-Type: text/plain; charset=utf-8", f"Content-Length: {len(body)}"]
    if rule is not None:
        headers.append(f"X-Mcp-Guard-Rule: {rule}")
    headers.append("Connection: close")
    writer.write("\r\n".join(headers).encode() + b"\r\n\r\n" + body)
    with contextlib.suppress(ConnectionError):
        await writer.drain()


async def _pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while True:
            async with asyncio.timeout(IDLE_TIMEOUT_S):  # no task per read, unlike wait_for
                data = await src.read(RELAY_CHUNK)
            if not data:
                break
            dst.write(data)
            await dst.drain()
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if dst.can_write_eof():
                dst.write_eof()


async def _relay(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    tasks = [asyncio.create_task(_pump(reader, up_writer)), asyncio.create_task(_pump(up_reader, writer))]
    try:
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        for task in tasks:
            task.cancel()


def proxy_env(port: int, token: str) -> Mapping[str, str]:
    """What a command needs to find the proxy (upper and lower case: tools read one or the other)."""
    url = f"http://{token}:x@127.0.0.1:{port}"
    env = {"HTTP_PROXY": url, "HTTPS_PROXY": url, "ALL_PROXY": url, "NO_PROXY": "", "no_proxy": ""}
    env.update({k.lower(): v for k, v in env.items() if k.isupper()})
    return env
