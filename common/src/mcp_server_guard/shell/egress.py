"""The egress proxy of ``--network policy``: built to be a command's only way out of its network namespace.

Each call runs in its own network namespace, with nothing but loopback; inside it, the call's init listens on
127.0.0.1 and hands the listening socket to the server (SCM_RIGHTS, on the call's status socket), so connections
the command opens to the proxy are accepted here, in the server's own namespace, where they are judged and, if
allowed, dialled. A program that ignores ``HTTP_PROXY`` then finds no route at all: it fails closed.

Judging (``policy.NetworkRules``): the ``[network]`` ``allow`` and ``deny`` lists; deny wins. The proxy resolves
names itself and judges the addresses too: loopback, private, link-local, shared, multicast and metadata
addresses are refused unless an entry (or a human's approval of exactly that host) names them, so neither a DNS
answer nor an IP literal reaches the local network behind an allowed glob. A host no entry names is an ``ask``.

Only CONNECT (any protocol inside, TLS untouched) and plain-HTTP requests in absolute form are proxied, one
request per connection; heads are bounded, connections counted, connects and idle relays time out. Sockets are
used directly (no asyncio streams): the head is read into a bounded buffer, and once a connection is allowed its
bytes move in the kernel, ``splice(2)`` through a pipe per direction, never copied into Python.

A call is known by the listener a connection arrives on: no other call's processes can reach it (another network
namespace), so nothing a command can copy (a token, an address) lets another call use its approvals. The token in
the proxy URL is a second check: a ``Proxy-Authorization`` naming another call is refused.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import dataclasses
import errno
import fcntl
import ipaddress
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

import anyio

from mcp_server_guard.policy import HostVerdict, IPAddress, NetworkRules, normal_host

log = logging.getLogger("mcp_server_guard.egress")

HEAD_LIMIT = 64 << 10  # request line and headers
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 15.0
IDLE_TIMEOUT_S = 300.0  # a relay with no byte either way for this long is closed
RELAY_CHUNK = 1 << 20
MAX_CONNECTIONS = 256
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_SPLICE_FLAGS = os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK

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
Asker = Callable[[str | None, str, int, HostVerdict], Awaitable[HostVerdict]]


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


async def _accepted(listener: socket.socket) -> socket.socket:
    """The next connection on a non-blocking listener. (Not ``loop.sock_accept``: on Python 3.11, a listener shut
    by its call's init while its accept task is being cancelled makes the loop log an InvalidStateError.)"""
    while True:
        try:
            return listener.accept()[0]
        except (BlockingIOError, InterruptedError):
            await anyio.wait_readable(listener)


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
    on_decision: Callable[[str | None, str, int, HostVerdict], None] | None = None  # every decision (the audit)
    denied: dict[str, list[Denied]] = field(default_factory=dict)  # call token -> what was refused
    allowed: dict[str, list[str]] = field(default_factory=dict)  # call token -> host:port let through
    # Tokens of the calls running now: only their decisions are kept (a command sending made-up tokens in a loop
    # cannot grow these tables), and each is forgotten when its call takes them.
    live: set[str] = field(default_factory=set)
    # listening sockets: (socket, accept task, the call that owns every connection on it, None: known by token)
    _listeners: list[tuple[socket.socket, asyncio.Task[None], str | None]] = field(default_factory=list)
    _connections: set[asyncio.Task[None]] = field(default_factory=set)

    def listen_on(self, sock: socket.socket, owner: str | None = None) -> None:
        """Accept connections on an already listening socket: a call's own (``owner``, its token: every
        connection on it is that call's), or one shared by tests of the proxy alone (calls known by token)."""
        sock.setblocking(False)
        self._listeners.append((sock, asyncio.create_task(self._accept(sock, owner)), owner))

    def _stop_listening(self, owner: str) -> None:
        """A call ended: nothing can connect through its listener any more (its namespace is going)."""
        for entry in [e for e in self._listeners if e[2] == owner]:
            self._listeners.remove(entry)
            sock, task, _owner = entry
            # Closed once the accept task has let go of it: closed earlier, its descriptor could be given to
            # another call's socket before the loop stops watching the number (that call would never wake).
            task.add_done_callback(partial(_close_after, sock))
            task.cancel()

    async def _accept(self, listener: socket.socket, owner: str | None) -> None:
        while True:
            try:
                conn = await _accepted(listener)
            except OSError as exc:
                if exc.errno == errno.EINVAL:
                    return  # the call's init shut its listener: the call is over
                log.warning("egress proxy: accept failed: %s", exc)
                await asyncio.sleep(0.1)  # e.g. EMFILE: let connections end, then accept again
                continue
            conn.setblocking(False)
            if len(self._connections) >= MAX_CONNECTIONS:
                conn.close()  # bounded: a command opening connections in a loop cannot exhaust the server
                continue
            task = asyncio.create_task(self._serve(conn, owner))
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)

    async def close(self) -> None:
        """Stop accepting, and end every connection still open."""
        for sock, task, _owner in self._listeners:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            sock.close()
        self._listeners.clear()
        for conn_task in list(self._connections):
            conn_task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)

    def take_denied(self, token: str) -> list[Denied]:
        return self.take_decisions(token)[0]

    def open_call(self, token: str) -> None:
        """A call starts: what the proxy decides for ``token`` is kept until ``take_decisions``."""
        self.live.add(token)

    def take_decisions(self, token: str) -> tuple[list[Denied], list[str]]:
        """What the proxy refused and let through for one call, which has ended (forgotten here once taken)."""
        self.live.discard(token)
        self._stop_listening(token)
        return self.denied.pop(token, []), self.allowed.pop(token, [])

    async def _serve(self, conn: socket.socket, owner: str | None) -> None:
        try:
            await self._one(conn, owner)
        except (ConnectionError, TimeoutError):
            pass
        except Exception:  # a connection's failure never takes the proxy down
            log.exception("egress proxy: a connection failed")
        finally:
            conn.close()

    async def _one(self, conn: socket.socket, owner: str | None) -> None:
        try:
            head = await asyncio.wait_for(_read_head(conn), HEAD_TIMEOUT_S)
        except BadRequest as exc:
            await _reply(conn, 400, "Bad Request", str(exc))
            return
        if owner is not None:
            # Threat: a command presenting another call's token (copied from a file that call wrote) to borrow
            # its approvals. The connection arrived on this call's own listener: it is this call's, whatever it
            # says; a token that names another call is refused outright.
            if head.token is not None and head.token != owner:
                await _reply(conn, 407, "Proxy Authentication Required", "mcp-guard: that token is not this call's")
                return
            head.token = owner
        verdict = asked = self.rules.judge(head.host, head.port)
        usable: list[IPAddress] = []
        if verdict.action == "ask":
            # Threat: a lookup is itself a way out (``<secret>.attacker.example`` carries the secret to whoever
            # answers for that domain): a name no rule allows is never resolved before its human allows it. An
            # approved name that then resolves to a special address is refused below (the human saw only a name).
            if self.asker is not None:
                verdict = await self.asker(head.token, head.host, head.port, verdict)
            else:
                verdict = HostVerdict("deny", "unnamed-host", verdict.reason)
        if verdict.action == "allow":
            try:
                addresses = await asyncio.wait_for(self.resolver(head.host, head.port), CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError):
                await _reply(conn, 502, "Bad Gateway", f"{head.host} does not resolve")
                return
            # Threat: DNS rebinding — a human approves "cdn.example" (which resolved to a public address, or to
            # 127.0.0.1 and the question said so); later answers point it at 169.254.169.254. An approval lets
            # the connection reach only the special addresses its human was shown.
            approved = (verdict.rule or "").startswith("approved")
            shown = set(verdict.addresses) if approved else set()
            refusals = [
                self.rules.judge_address(head.host, ip, head.port, approved=str(ip) in shown) for ip in addresses
            ]
            usable = [ip for ip, refused in zip(addresses, refusals, strict=True) if refused is None]
            special = [str(ip) for ip, refused in zip(addresses, refusals, strict=True) if refused is not None]
            if not usable and approved and self.asker is not None and special and not set(special) <= shown:
                # Threat: "innocent.example", approved by name, resolving to 127.0.0.1 or 169.254.169.254: its
                # human is asked again, told what it resolves to; a yes covers exactly those addresses.
                warned = dataclasses.replace(
                    asked, reason=f"{asked.reason}; {warning(special)}", addresses=tuple(special)
                )
                verdict = await self.asker(head.token, head.host, head.port, warned)
                shown = set(verdict.addresses) if verdict.action == "allow" else set()
                refusals = [
                    self.rules.judge_address(head.host, ip, head.port, approved=str(ip) in shown) for ip in addresses
                ]
                usable = [ip for ip, refused in zip(addresses, refusals, strict=True) if refused is None]
            if not usable and verdict.action == "allow":
                verdict = next((r for r in refusals if r is not None), verdict)
        self._decided(head, verdict)
        if verdict.action != "allow":
            await _reply(conn, 403, "Forbidden", f"mcp-guard: {verdict.reason}", rule=verdict.rule)
            return
        upstream = await self._connect(usable, head.port)
        if upstream is None:
            await _reply(conn, 502, "Bad Gateway", f"cannot connect to {head.host}:{head.port}")
            return
        loop = asyncio.get_running_loop()
        try:
            if head.method == "CONNECT":
                await loop.sock_sendall(conn, b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                await loop.sock_sendall(upstream, _origin_form(head))
            if head.rest:
                await loop.sock_sendall(upstream, head.rest)
            await _relay(conn, upstream)
        finally:
            upstream.close()

    def _decided(self, head: _Head, verdict: HostVerdict) -> None:
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

    async def _connect(self, addresses: list[IPAddress], port: int) -> socket.socket | None:
        loop = asyncio.get_running_loop()
        for ip in addresses:
            sock = socket.socket(socket.AF_INET6 if ip.version == 6 else socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                await asyncio.wait_for(loop.sock_connect(sock, (str(ip), port)), CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError):
                sock.close()
                continue
            return sock
        return None


async def _read_head(conn: socket.socket) -> _Head:
    """The request line and headers (bounded), and whatever the client sent after them in the same reads."""
    loop = asyncio.get_running_loop()
    data = b""
    while (end := data.find(b"\r\n\r\n")) < 0:
        if len(data) > HEAD_LIMIT:
            raise BadRequest("request head too long")
        chunk = await loop.sock_recv(conn, HEAD_LIMIT)
        if not chunk:
            raise ConnectionResetError("the client closed the connection before its request was complete")
        data += chunk
    if end > HEAD_LIMIT:
        raise BadRequest("request head too long")
    raw, rest = data[: end + 4], data[end + 4 :]
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
    if not host.isprintable() or " " in host:
        # Threat: a host name carrying an ANSI escape or a bidi control ("pypi.org<ESC>[8m.attacker.example")
        # reads as another host in the question a person answers; no real host name has one.
        raise BadRequest("a host name with a control character")
    return _Head(method, normal_host(host), port, lines, token, rest)


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


async def _reply(conn: socket.socket, status: int, phrase: str, text: str, rule: str | None = None) -> None:
    body = (text + "\n").encode()
    headers = [f"HTTP/1.1 {status} {phrase}", "Content-Type: text/plain; charset=utf-8", f"Content-Length: {len(body)}"]
    if rule is not None:
        headers.append(f"X-Mcp-Guard-Rule: {rule}")
    headers.append("Connection: close")
    with contextlib.suppress(ConnectionError):
        await asyncio.get_running_loop().sock_sendall(conn, "\r\n".join(headers).encode() + b"\r\n\r\n" + body)


async def _ready(fd: int, writable: bool) -> None:
    """Wait until ``fd`` can be read (or written), at most IDLE_TIMEOUT_S."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    add, remove = (loop.add_writer, loop.remove_writer) if writable else (loop.add_reader, loop.remove_reader)

    def wake() -> None:
        if not done.done():
            done.set_result(None)

    add(fd, wake)
    try:
        async with asyncio.timeout(IDLE_TIMEOUT_S):  # no byte either way for this long: the relay is closed
            await done
    finally:
        remove(fd)


async def _splice(src: socket.socket, dst: socket.socket) -> None:
    """Move bytes from ``src`` to ``dst`` through a pipe, in the kernel (splice(2)): no copy into Python."""
    r, w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    with contextlib.suppress(OSError):
        fcntl.fcntl(w, F_SETPIPE_SZ, RELAY_CHUNK)  # fewer, larger moves (the kernel may cap it lower)
    queued = 0  # bytes in the pipe
    try:
        while True:
            if queued == 0:
                try:
                    n = os.splice(src.fileno(), w, RELAY_CHUNK, flags=_SPLICE_FLAGS)
                except BlockingIOError:
                    await _ready(src.fileno(), writable=False)
                    continue
                if n == 0:
                    break
                queued = n
            try:
                queued -= os.splice(r, dst.fileno(), queued, flags=_SPLICE_FLAGS)
            except BlockingIOError:
                await _ready(dst.fileno(), writable=True)
    finally:
        os.close(r)
        os.close(w)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


async def _relay(client: socket.socket, upstream: socket.socket) -> None:
    tasks = [asyncio.create_task(_splice(client, upstream)), asyncio.create_task(_splice(upstream, client))]
    try:
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        for task in tasks:
            task.cancel()


def _close_after(sock: socket.socket, _task: asyncio.Task[None]) -> None:
    sock.close()


def warning(special: Sequence[str]) -> str:
    return f"WARNING: it resolves to {', '.join(special)}, on this machine or its local network"
