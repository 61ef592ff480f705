"""The egress proxy's cost beside a direct connection, same run: a 4 KiB GET and a 50 MB download from a local
HTTP server, direct and through ``EgressProxy`` (in its own event-loop thread, as in the server).

    uv run python -m bench.egress [--gets 300] [--rounds 5]

The origin runs in a process of its own, as a remote server would (in the proxy's process its thread would
compete with the proxy for the GIL), and so does curl, the 50 MB client.

Targets (issue 13): the proxied GET adds at most 2 ms to the median; the proxied download (by curl, a process of
its own) reaches at least 80% of the direct throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import ipaddress
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.core import median
from mcp_server_guard import NetworkRules
from mcp_server_guard.shell import EgressProxy

SMALL = b"x" * 4096
BIG = 50 << 20
_BIG_BODY = b"y" * BIG


class _Origin(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:
        body = _BIG_BODY if self.path == "/big" else SMALL
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        return None


def _download(host: str, port: int, proxy: int | None) -> int:
    """The 50 MB download by curl, a process of its own as a command's would be (an in-process Python client
    would compete with the proxy's thread for the GIL)."""
    via = ["--noproxy", "*"] if proxy is None else ["--noproxy", "", "--proxy", f"http://bench:x@127.0.0.1:{proxy}"]
    argv = ["curl", "-sS", *via, "-o", "/dev/null", "-w", "%{size_download}", f"http://{host}:{port}/big"]
    return int(subprocess.run(argv, capture_output=True, check=True, timeout=120).stdout)


def _get(host: str, port: int, path: str, proxy: int | None) -> int:
    """One GET on a fresh connection (as a command makes it); returns the body's length."""
    if proxy is None:
        conn = http.client.HTTPConnection(host, port, timeout=60)
        conn.request("GET", path)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", proxy, timeout=60)
        conn.request("GET", f"http://{host}:{port}{path}", headers={"Proxy-Authorization": "Basic YmVuY2g6eA=="})
    response = conn.getresponse()
    size = 0
    while chunk := response.read(1 << 20):
        size += len(chunk)
    conn.close()
    return size


def _serve_origin() -> None:
    """The origin's process: serve on a free port, print it, run until stdin closes."""
    origin = ThreadingHTTPServer(("127.0.0.1", 0), _Origin)
    threading.Thread(target=origin.serve_forever, daemon=True).start()
    print(origin.server_address[1], flush=True)
    sys.stdin.read()


def _through_socat(port: int, rounds: int) -> float:
    """The same download through socat, a plain TCP relay written in C: what any relay costs on this machine (the
    second loopback hop), the floor the proxy's figure stands beside."""
    relay_port = _free_port()
    relay = subprocess.Popen(
        ["socat", "-b", str(1 << 20), f"TCP-LISTEN:{relay_port},bind=127.0.0.1,reuseaddr,fork", f"TCP:127.0.0.1:{port}"]
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", relay_port)) == 0:
                    break
            time.sleep(0.01)
        times = []
        for r in range(rounds + 1):
            t0 = time.perf_counter()
            assert _download("127.0.0.1", relay_port, None) == BIG
            if r:
                times.append(time.perf_counter() - t0)
        return BIG / median(times) / (1 << 20)
    finally:
        relay.terminate()
        relay.wait(10)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def measure(gets: int, rounds: int) -> dict[str, float]:
    origin = subprocess.Popen(
        [sys.executable, "-m", "bench.egress", "--origin"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert origin.stdout is not None and origin.stdin is not None
    port = int(origin.stdout.readline())

    async def resolver(host: str, _port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        return [ipaddress.ip_address("127.0.0.1")]

    proxy = EgressProxy(NetworkRules.parse([f"origin.test:{port}"], []), resolver=resolver)
    loop = asyncio.new_event_loop()
    listener = socket.create_server(("127.0.0.1", 0))
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(proxy.listen_on, listener)
        started.set()
        loop.run_forever()

    threading.Thread(target=run, daemon=True).start()
    started.wait(10)
    pport = listener.getsockname()[1]
    out: dict[str, float] = {}
    try:
        small: dict[str, list[float]] = {"direct": [], "proxy": []}
        for i in range(gets + 20):
            for kind, via in (("direct", None), ("proxy", pport)):
                t0 = time.perf_counter()
                host = "127.0.0.1" if via is None else "origin.test"
                assert _get(host, port, "/small", via) == len(SMALL)
                if i >= 20:
                    small[kind].append(time.perf_counter() - t0)
        out["get_direct_ms"] = median(small["direct"]) * 1000
        out["get_proxy_ms"] = median(small["proxy"]) * 1000
        big: dict[str, list[float]] = {"direct": [], "proxy": []}
        for r in range(rounds + 1):
            for kind, via in (("direct", None), ("proxy", pport)):
                t0 = time.perf_counter()
                host = "127.0.0.1" if via is None else "origin.test"
                assert _download(host, port, via) == BIG
                if r:
                    big[kind].append(time.perf_counter() - t0)
        out["big_direct_mib_s"] = BIG / median(big["direct"]) / (1 << 20)
        out["big_proxy_mib_s"] = BIG / median(big["proxy"]) / (1 << 20)
        if shutil.which("socat"):
            out["big_socat_mib_s"] = _through_socat(port, rounds)
    finally:
        asyncio.run_coroutine_threadsafe(proxy.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        origin.stdin.close()
        origin.wait(30)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gets", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--origin", action="store_true", help=argparse.SUPPRESS)
    ns = ap.parse_args(argv)
    if ns.origin:
        _serve_origin()
        return 0
    r = measure(ns.gets, ns.rounds)
    added = r["get_proxy_ms"] - r["get_direct_ms"]
    share = r["big_proxy_mib_s"] / r["big_direct_mib_s"]
    print("| measurement | direct | through the proxy | target |")
    print("|---|---|---|---|")
    print(
        f"| 4 KiB GET, median of {ns.gets} | {r['get_direct_ms']:.2f} ms | {r['get_proxy_ms']:.2f} ms "
        f"(+{added:.2f} ms) | ≤ +2 ms {'✓' if added <= 2 else '✗'} |"
    )
    print(
        f"| 50 MB download, median of {ns.rounds} | {r['big_direct_mib_s']:.0f} MiB/s | "
        f"{r['big_proxy_mib_s']:.0f} MiB/s ({share:.0%}) | ≥ 80% {'✓' if share >= 0.8 else '✗'} |"
    )
    if "big_socat_mib_s" in r:
        floor = r["big_socat_mib_s"]
        print(
            f"| 50 MB through socat (a C relay: the floor), median of {ns.rounds} | {r['big_direct_mib_s']:.0f} "
            f"MiB/s | {floor:.0f} MiB/s ({floor / r['big_direct_mib_s']:.0%}); the proxy reaches "
            f"{r['big_proxy_mib_s'] / floor:.0%} of it | |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
