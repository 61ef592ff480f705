#!/usr/bin/env python3
"""Benchmark of mcp-server-file-read against its floors, in one run.

    uv run python bench/bench.py [--quick]

Measures, each figure beside its floor:

1. cold start, spawn -> initialize result (legacy handshake, protocolVersion 2025-11-25, raw JSON lines):
   mcp-server-file-read vs a bare mcp-SDK server with one trivial tool (bench/bare_server.py);
   `python -c pass` for context. Spawns are interleaved so drift hits all three alike.
2. 4 KiB read, per call over a minimal raw JSON-RPC client: vs a no-MCP in-process read (open+read+sha256)
   and vs the bare server's trivial tool over the same raw client; plus the same read via the SDK's own
   stdio client (`mcp.Client(..., mode="legacy")`).
3. whole 10 MiB text file (80-byte lines) with max_read_bytes raised to 16 MiB by a policy file: per call
   via the raw client (time to the full response line, and with json.loads of it) vs the in-process read;
   the server's peak RSS (VmHWM); and the same read via the SDK client.

Everything runs in a temporary directory; the servers are subprocesses on pipes (no network).
Prints a markdown table and writes bench/results/latest.json.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import importlib.metadata
import json
import os
import platform
import random
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
RESULTS = BENCH_DIR / "results" / "latest.json"
BARE_SERVER = BENCH_DIR / "bare_server.py"
PROTOCOL = "2025-11-25"
INIT_PARAMS = {
    "protocolVersion": PROTOCOL,
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}
SMALL_SIZE = 4096
BIG_SIZE = 10 * 1024 * 1024
LINE_BYTES = 80  # including the newline
BIG_POLICY = "[file_read]\nmax_read_bytes = 16777216\n"


@dataclass(frozen=True)
class Counts:
    spawns: int
    small_calls: int
    small_warmup: int
    sdk_small_calls: int
    big_calls: int
    sdk_big_calls: int
    direct_small: int


FULL = Counts(
    spawns=15, small_calls=2000, small_warmup=200, sdk_small_calls=300, big_calls=10, sdk_big_calls=3, direct_small=2000
)
QUICK = Counts(
    spawns=3, small_calls=200, small_warmup=20, sdk_small_calls=30, big_calls=3, sdk_big_calls=1, direct_small=200
)


# ---------------------------------------------------------------------------------------------------------------
# statistics


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def p95(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return xs[0]
    return statistics.quantiles(xs, n=100, method="inclusive")[94]


def summary(xs: Sequence[float]) -> dict[str, float]:
    return {"n": len(xs), "median_s": median(xs), "p95_s": p95(xs), "min_s": min(xs), "max_s": max(xs)}


# ---------------------------------------------------------------------------------------------------------------
# minimal raw JSON-RPC client over a subprocess's stdio


class RPCError(RuntimeError):
    pass


class RawClient:
    """JSON lines on the child's stdin/stdout; responses matched by id; notifications skipped; bounded reads."""

    def __init__(self, argv: Sequence[str], cwd: Path, stderr: TextIO) -> None:
        self.proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        os.set_blocking(self._out, False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._out, selectors.EVENT_READ)
        self._partial = bytearray()
        self._lines: deque[bytes] = deque()
        self._early: dict[int, dict[str, Any]] = {}
        self._next_id = 0
        self.last_line_at = 0.0  # perf_counter when the last response line was complete
        self.last_line_bytes = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _write(self, obj: dict[str, Any]) -> None:
        data = memoryview(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
        while data:
            n = os.write(self._in, data)
            data = data[n:]

    def _split(self, chunk: bytes) -> None:
        start = 0
        while (nl := chunk.find(b"\n", start)) >= 0:
            if self._partial:
                self._partial += chunk[start:nl]
                self._lines.append(bytes(self._partial))
                self._partial.clear()
            else:
                self._lines.append(chunk[start:nl])
            start = nl + 1
        if start < len(chunk):
            self._partial += chunk[start:]

    def _read_line(self, deadline: float) -> bytes:
        while not self._lines:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError("no complete line from the server in time")
            if not self._sel.select(remaining):
                continue
            try:
                chunk = os.read(self._out, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                raise EOFError(f"server closed stdout (exit code {self.proc.poll()})")
            self._split(chunk)
        return self._lines.popleft()

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._write(msg)

    def request(self, method: str, params: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        self._next_id += 1
        rid = self._next_id
        self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.perf_counter() + timeout
        if rid in self._early:
            msg = self._early.pop(rid)
        else:
            while True:
                line = self._read_line(deadline)
                self.last_line_at = time.perf_counter()
                self.last_line_bytes = len(line)
                if not line.strip():
                    continue
                try:
                    msg = json.loads(line)
                except json.JSONDecodeError:
                    continue  # not ours to judge here; a stray line is skipped
                if not isinstance(msg, dict):
                    continue
                if "method" in msg:
                    if "id" in msg:  # a server->client request we do not serve
                        self._write(
                            {
                                "jsonrpc": "2.0",
                                "id": msg["id"],
                                "error": {"code": -32601, "message": "not supported by bench client"},
                            }
                        )
                    continue  # notification (log, progress, ...)
                if msg.get("id") == rid:
                    break
                if isinstance(msg.get("id"), int):
                    self._early[msg["id"]] = msg
        if "error" in msg:
            raise RPCError(f"{method}: {msg['error']}")
        result: dict[str, Any] = msg["result"]
        return result

    def initialize(self, timeout: float = 60.0) -> dict[str, Any]:
        result = self.request("initialize", INIT_PARAMS, timeout=timeout)
        self.notify("notifications/initialized")
        return result

    def call_tool(self, name: str, arguments: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
        result = self.request("tools/call", {"name": name, "arguments": arguments}, timeout=timeout)
        if result.get("isError"):
            raise RPCError(f"tool {name} failed: {result.get('content')}")
        return result

    def close(self) -> None:
        self._sel.close()
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (subprocess.TimeoutExpired, OSError):
            self.proc.kill()
            self.proc.wait(timeout=5)
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def vm_hwm_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("VmHWM not found")


# ---------------------------------------------------------------------------------------------------------------
# workload


def make_text(size: int, seed: int = 0) -> bytes:
    """`size` bytes of lines of exactly LINE_BYTES bytes (the last may be shorter), pseudo-random words."""
    rng = random.Random(seed)
    words = [
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "golf",
        "hotel",
        "india",
        "juliet",
        "kilo",
        "lima",
        "mike",
        "november",
        "oscar",
        "papa",
        "quebec",
        "romeo",
        "sierra",
        "tango",
    ]
    lines: list[str] = []
    total = 0
    while total < size:
        line = ""
        while len(line) < LINE_BYTES - 1:
            line += rng.choice(words) + " "
        line = line[: LINE_BYTES - 1] + "\n"
        lines.append(line)
        total += len(line)
    data = "".join(lines).encode()[:size]
    return data[:-1] + b"\n"


def direct_read(path: Path) -> str:
    with open(path, "rb") as f:
        data = f.read()
    return hashlib.sha256(data).hexdigest()


def time_loop(fn: Callable[[], object], n: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        fn()
    gc.collect()
    times: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


@dataclass
class Env:
    tmp: Path
    root: Path  # server cwd = jail
    small: Path
    big: Path
    policy: Path
    server_cmd: str
    stderr: TextIO
    small_sha: str = ""
    big_sha: str = ""
    notes: list[str] = field(default_factory=list)

    def audit_path(self, name: str) -> Path:
        return self.tmp / f"audit-{name}.jsonl"

    def ours_argv(self, *, big: bool = False, audit: str = "misc") -> list[str]:
        argv = [self.server_cmd, "--audit-log", str(self.audit_path(audit))]
        if big:
            argv += ["--policy", str(self.policy)]
        return argv

    def bare_argv(self) -> list[str]:
        return [sys.executable, str(BARE_SERVER)]


def find_server() -> str:
    here = Path(sys.executable).parent / "mcp-server-file-read"
    if here.exists():
        return str(here)
    found = shutil.which("mcp-server-file-read") or str(REPO / ".venv" / "bin" / "mcp-server-file-read")
    if not Path(found).exists():
        sys.exit("mcp-server-file-read not found; run `uv sync` in the repo first")
    return found


def audit_durations(path: Path, last: int) -> dict[str, float] | None:
    """Median/p95 of the server's own per-call time (audit ``durationMs``) over its last ``last`` entries.

    That span covers the tool call inside the server (guards, read, result model) but not the JSON encoding
    of the response nor the pipe, so it splits a round trip into handler time and transport time.
    """
    try:
        entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return None
    ms_ = [float(e["durationMs"]) / 1e3 for e in entries[-last:] if isinstance(e.get("durationMs"), int | float)]
    return {"median_s": median(ms_), "p95_s": p95(ms_)} if ms_ else None


def check_read(result: dict[str, Any], sha: str, size: int) -> None:
    sc = result.get("structuredContent") or {}
    if sc.get("sha256") != sha or sc.get("size") != size or sc.get("truncated") or sc.get("nextOffset") is not None:
        raise RuntimeError(f"unexpected file_read result: { {k: v for k, v in sc.items() if k != 'content'} }")
    if len(sc.get("content", "").encode()) != size:
        raise RuntimeError("file_read content length differs from the file size")


# ---------------------------------------------------------------------------------------------------------------
# 1. cold start


def cold_start(env: Env, counts: Counts) -> dict[str, Any]:
    def spawn_init(argv: list[str]) -> float:
        t0 = time.perf_counter()
        with RawClient(argv, env.root, env.stderr) as c:
            c.initialize()
            return time.perf_counter() - t0

    def python_pass() -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        return time.perf_counter() - t0

    kinds: dict[str, Callable[[], float]] = {
        "ours": lambda: spawn_init(env.ours_argv()),
        "bare": lambda: spawn_init(env.bare_argv()),
        "python_pass": python_pass,
    }
    times: dict[str, list[float]] = {k: [] for k in kinds}
    order = list(kinds)
    for i in range(1 + counts.spawns):  # round 0 warms the page cache and is discarded
        rotated = order[i % len(order) :] + order[: i % len(order)]
        for k in rotated:
            dt = kinds[k]()
            if i:
                times[k].append(dt)
    return {k: summary(v) for k, v in times.items()}


# ---------------------------------------------------------------------------------------------------------------
# 2. 4 KiB read


def small_reads(env: Env, counts: Counts) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out["direct"] = summary(time_loop(lambda: direct_read(env.small), counts.direct_small, counts.small_warmup))

    args = {"path": env.small.name}
    with RawClient(env.ours_argv(audit="small"), env.root, env.stderr) as c:
        c.initialize()
        check_read(c.call_tool("file_read", args), env.small_sha, SMALL_SIZE)
        out["ours_raw"] = summary(
            time_loop(lambda: c.call_tool("file_read", args), counts.small_calls, counts.small_warmup)
        )
        out["ours_raw"]["response_bytes"] = c.last_line_bytes
    out["ours_handler_audit"] = audit_durations(env.audit_path("small"), counts.small_calls)

    echo_short = {"text": "x"}
    echo_4k = {"text": env.small.read_text()}
    with RawClient(env.bare_argv(), env.root, env.stderr) as c:
        c.initialize()
        out["bare_echo_raw"] = summary(
            time_loop(lambda: c.call_tool("echo", echo_short), counts.small_calls, counts.small_warmup)
        )
        out["bare_echo4k_raw"] = summary(
            time_loop(lambda: c.call_tool("echo", echo_4k), counts.small_calls, counts.small_warmup)
        )
        out["bare_echo4k_raw"]["response_bytes"] = c.last_line_bytes

    out["ours_sdk"] = summary(
        asyncio.run(
            sdk_calls(
                env,
                env.ours_argv(audit="sdk"),
                args,
                n=counts.sdk_small_calls,
                warmup=max(counts.sdk_small_calls // 10, 3),
                size=SMALL_SIZE,
                sha=env.small_sha,
            )
        )
    )
    return out


async def sdk_calls(
    env: Env, argv: list[str], args: dict[str, Any], *, n: int, warmup: int, size: int, sha: str
) -> list[float]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(env.root))
    times: list[float] = []
    async with Client(params, mode="legacy", read_timeout_seconds=600) as client:
        for i in range(warmup):
            r = await client.call_tool("file_read", args)
            if r.is_error:
                raise RuntimeError(f"SDK client call failed: {r.content}")
            if i == 0:
                check_read({"structuredContent": r.structured_content}, sha, size)
        gc.collect()
        for _ in range(n):
            t0 = time.perf_counter()
            r = await client.call_tool("file_read", args)
            times.append(time.perf_counter() - t0)
            if r.is_error:
                raise RuntimeError(f"SDK client call failed: {r.content}")
    return times


# ---------------------------------------------------------------------------------------------------------------
# 3. 10 MiB read


def big_reads(env: Env, counts: Counts) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out["direct"] = summary(time_loop(lambda: direct_read(env.big), counts.big_calls, 2))

    args = {"path": env.big.name}
    with RawClient(env.ours_argv(big=True, audit="big"), env.root, env.stderr) as c:
        c.initialize()
        check_read(c.call_tool("file_read", args, timeout=120), env.big_sha, BIG_SIZE)
        c.call_tool("file_read", args, timeout=120)
        gc.collect()
        to_line: list[float] = []
        parsed: list[float] = []
        for _ in range(counts.big_calls):
            t0 = time.perf_counter()
            c.call_tool("file_read", args, timeout=120)
            t1 = time.perf_counter()
            to_line.append(c.last_line_at - t0)
            parsed.append(t1 - t0)
        out["ours_raw_to_line"] = summary(to_line)
        out["ours_raw_parsed"] = summary(parsed)
        out["response_bytes"] = c.last_line_bytes
        out["server_vm_hwm_bytes"] = vm_hwm_bytes(c.pid)
    out["ours_handler_audit"] = audit_durations(env.audit_path("big"), counts.big_calls)

    with RawClient(env.bare_argv(), env.root, env.stderr) as c:
        c.initialize()
        out["bare_idle_vm_hwm_bytes"] = vm_hwm_bytes(c.pid)

    out["ours_sdk"] = summary(
        asyncio.run(
            sdk_calls(
                env,
                env.ours_argv(big=True, audit="sdk"),
                args,
                n=counts.sdk_big_calls,
                warmup=1,
                size=BIG_SIZE,
                sha=env.big_sha,
            )
        )
    )
    return out


# ---------------------------------------------------------------------------------------------------------------
# report


def ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s < 0.01 else f"{s * 1e3:.1f} ms"


def mib(b: int) -> str:
    return f"{b / 2**20:.1f} MiB"


def verdict(ok: bool) -> str:
    return "✅ met" if ok else "❌ missed"


def build_table(r: dict[str, Any]) -> tuple[str, list[str]]:
    cs, sm, bg = r["cold_start"], r["read_4k"], r["read_10m"]
    rows: list[tuple[str, str, str, str, str]] = []
    notes: list[str] = []

    ours, bare = cs["ours"]["median_s"], cs["bare"]["median_s"]
    over = ours / bare - 1
    rows.append(
        (
            "1 cold start spawn→initialize (median)",
            ms(ours),
            f"bare SDK server {ms(bare)} (ours {over:+.1%}); `python -c pass` {ms(cs['python_pass']['median_s'])}",
            "≤ +10% over bare",
            verdict(over <= 0.10),
        )
    )

    o = sm["ours_raw"]
    rows.append(
        (
            "2 read 4 KiB, raw client (median)",
            ms(o["median_s"]),
            f"direct read {ms(sm['direct']['median_s'])}; bare echo 'x' {ms(sm['bare_echo_raw']['median_s'])}; "
            f"bare echo 4 KiB {ms(sm['bare_echo4k_raw']['median_s'])}",
            "≤ 0.8 ms",
            verdict(o["median_s"] <= 0.0008),
        )
    )
    rows.append(
        (
            "2 read 4 KiB, raw client (p95)",
            ms(o["p95_s"]),
            f"direct read {ms(sm['direct']['p95_s'])}; bare echo 'x' {ms(sm['bare_echo_raw']['p95_s'])}; "
            f"bare echo 4 KiB {ms(sm['bare_echo4k_raw']['p95_s'])}",
            "—",
            "",
        )
    )
    if sm.get("ours_handler_audit"):
        h = sm["ours_handler_audit"]
        rows.append(
            (
                "2 read 4 KiB, server-side tool time (audit durationMs, median / p95)",
                f"{ms(h['median_s'])} / {ms(h['p95_s'])}",
                f"rest of the round trip (SDK dispatch, JSON, pipes, client) {ms(o['median_s'] - h['median_s'])}",
                "info",
                "",
            )
        )
    sdk = sm["ours_sdk"]
    sdk_x = sdk["median_s"] / o["median_s"]
    rows.append(
        (
            "2 read 4 KiB, SDK stdio client (median / p95)",
            f"{ms(sdk['median_s'])} / {ms(sdk['p95_s'])}",
            f"raw client {ms(o['median_s'])} (SDK client {sdk_x:.1f}× slower)",
            "info",
            "",
        )
    )

    line, parsed = bg["ours_raw_to_line"]["median_s"], bg["ours_raw_parsed"]["median_s"]
    rows.append(
        (
            "3 read 10 MiB, raw client (median, request → full response line)",
            ms(line),
            f"direct read {ms(bg['direct']['median_s'])}; response is {mib(bg['response_bytes'])} of JSON",
            "≤ 100 ms",
            verdict(line <= 0.100),
        )
    )
    rows.append(
        (
            "3 read 10 MiB, raw client incl. client-side json.loads (median)",
            ms(parsed),
            f"json.loads of the response alone ≈ {ms(parsed - line)}",
            "(≤ 100 ms)",
            verdict(parsed <= 0.100),
        )
    )
    if bg.get("ours_handler_audit"):
        h = bg["ours_handler_audit"]
        rows.append(
            (
                "3 read 10 MiB, server-side tool time (audit durationMs, median)",
                ms(h["median_s"]),
                f"rest until the line is received (SDK JSON encoding, pipe, client) {ms(line - h['median_s'])}",
                "info",
                "",
            )
        )
    rows.append(
        (
            "3 server peak RSS (VmHWM) after 10 MiB reads",
            mib(bg["server_vm_hwm_bytes"]),
            f"bare SDK server idle {mib(bg['bare_idle_vm_hwm_bytes'])}",
            "info",
            "",
        )
    )
    bsdk = bg["ours_sdk"]
    big_x = bsdk["median_s"] / parsed
    rows.append(
        (
            f"3 read 10 MiB, SDK stdio client (median of {bsdk['n']})",
            ms(bsdk["median_s"]),
            f"raw client {ms(parsed)} (SDK client {big_x:.1f}× slower)",
            "info",
            "",
        )
    )

    head = ("Measurement", "Ours", "Floor / context", "Target", "Result")
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    notes.append(
        f"The SDK's own stdio client is slower than the raw JSON-lines client: {sdk_x:.1f}× on the 4 KiB "
        f"read, {big_x:.1f}× on the 10 MiB read (its reader is O(n²) in message size)."
    )
    return "\n".join(lines), notes


def git_state() -> dict[str, Any]:
    """Commit and dirtiness of the tree measured (the servers run from it, edits included)."""

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    dirty = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()]
    return {"commit": git("rev-parse", "HEAD") or None, "modified_files": dirty}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small counts, for a smoke run")
    ns = ap.parse_args(argv)
    counts = QUICK if ns.quick else FULL

    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as tmpdir:
        tmp = Path(tmpdir)
        root = tmp / "root"
        root.mkdir()
        small, big, policy = root / "small.txt", root / "big.txt", tmp / "policy.toml"
        small.write_bytes(make_text(SMALL_SIZE, seed=1))
        big.write_bytes(make_text(BIG_SIZE, seed=2))
        policy.write_text(BIG_POLICY)
        stderr_path = tmp / "servers.stderr"
        with open(stderr_path, "w") as stderr:
            env = Env(
                tmp=tmp,
                root=root,
                small=small,
                big=big,
                policy=policy,
                server_cmd=find_server(),
                stderr=stderr,
                small_sha=direct_read(small),
                big_sha=direct_read(big),
            )
            started = time.perf_counter()
            results: dict[str, Any] = {}
            try:
                print("1/3 cold start ...", file=sys.stderr, flush=True)
                results["cold_start"] = cold_start(env, counts)
                print("2/3 4 KiB reads ...", file=sys.stderr, flush=True)
                results["read_4k"] = small_reads(env, counts)
                print("3/3 10 MiB reads ...", file=sys.stderr, flush=True)
                results["read_10m"] = big_reads(env, counts)
            except Exception:
                stderr.flush()
                tail = stderr_path.read_text()[-4000:]
                if tail:
                    print(f"--- server stderr (tail) ---\n{tail}", file=sys.stderr)
                raise
            elapsed = time.perf_counter() - started

    table, notes = build_table(results)
    report = {
        "meta": {
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "quick": ns.quick,
            "counts": counts.__dict__,
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "mcp_version": importlib.metadata.version("mcp"),
            "protocol_version": PROTOCOL,
            "git": git_state(),
            "elapsed_s": elapsed,
            "units": "seconds unless the key says bytes",
        },
        "results": results,
        "table_markdown": table,
        "notes": notes,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")

    print(table)
    print()
    for note in notes:
        print(f"- {note}")
    print(f"\n({'quick' if ns.quick else 'full'} run, {elapsed:.0f} s; JSON in {RESULTS.relative_to(REPO)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
