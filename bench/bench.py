#!/usr/bin/env python3
"""Benchmark of mcp-server-file-read, mcp-server-file-write and mcp-server-shell-exec against their floors, in one run.

    uv run python bench/bench.py [--quick] [--only read|write|shell]

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
4. 4 KiB write with fsync (mcp-server-file-write), per call over the raw client, (a) new files (distinct paths,
   overwrite false) and (b) the same file overwritten (overwrite true, which also saves the old content to the
   history store): vs a no-MCP in-process atomic write in the same directory (temp + fsync + rename + fsync dir;
   for (b) also with a durable backup copy as the history store makes) and vs the bare server's trivial tools;
   plus the server-side tool time (audit durationMs).
5. 10 MiB write (one call, 80-byte ASCII lines, policy raises max_write_bytes to 16 MiB): new file and overwrite,
   vs the in-process atomic write (interleaved call by call with the server's, so both meet the same disk
   state); then where the time goes, as a ladder of servers fed the same 10 MiB request into a trivial tool:
   raw JSON lines (1 MiB reads + json.loads, bench/raw_server.py) -> the SDK stdio transport alone
   (bench/transport_server.py) -> a bare MCPServer (`size` tool) -> file_write (with its audit durationMs);
   each with the time until the server had drained the request from the pipe (client write done) and the
   server's CPU time per call. In-process: json.loads and the SDK's validate_json of the same request line,
   sha256, str.encode. The servers' VmHWM.
6. A cProfile of file_write over the 10 MiB writes, all threads (bench/profile_server.py).
7. shell_exec `echo hi` (tree-sitter parse + policy + `/bin/bash --noprofile --norc -c`), per call over the raw
   client: vs no-MCP floors from the same run - `subprocess.run([bash, ..., "echo hi"], capture_output=True)`,
   `subprocess.run(["/bin/true"])`, the server's own process runner (mcp_server_guard.shell.process.run) called
   in-process, parse + policy (PolicyEngine.decide) in-process - and the bare server's trivial tool; the argv form
   (`{"command": "echo", "args": ["hi"]}`, no shell); the server-side tool time (audit durationMs) split into
   process.run (the result's durationMs) and the rest, beside in-process ShellExec.prepare / build_env / result model.
8. shell_exec printing 50 MB (`head -c 50000000 /dev/zero | tr '\0' x`), head + tail returned: per call to the
   response line vs the command to /dev/null, an in-process bounded read (64 KiB reads into head + tail) and the
   server's process.run in-process; the server's peak RSS (VmHWM) vs its idle RSS and the bare server's; where the
   peak comes from, on fresh servers: the 50 MB with maxOutputBytes at 1 KiB (buffers only), 1 MiB of output without
   the flood, the bare server's `blob` tool returning 1 MiB (the SDK serialising a ~2 MiB response), and a
   tracemalloc split of a call (bench/memtrace_server.py); the same 50 MB calls on a `--sandbox off` server and
   on the unconfined one (see 11).
9. 16 concurrent `sleep 1` on one connection (16 requests written at once, wall until the 16th response) vs 16
   `bash -c "sleep 1"` started at once without MCP and the bare server's async `sleep` tool; and on a
   `--sandbox off` server and the unconfined one.
10. A cProfile of shell_exec over `echo hi` calls, all threads.
11. The kernel sandbox's cost on `echo hi`: five shell_exec servers called in turn (interleaved): the floor, the
    server with the sandbox taken out of its spawn (bench/unconfined_server.py: no per-call TMPDIR, ruleset or
    rlimits, a plain vfork on the event loop thread, as process.run(..., confinement=None)); `--sandbox off` (no
    Landlock, but a private TMPDIR per call and the rlimits set on the child by prlimit); the default `--sandbox
    auto` (+ the Landlock ruleset, applied to a fresh thread that then vforks the command; as root the server sits
    in its own pids cgroup, joined once at start-up); `--network deny` (+, as root, an unshare(CLONE_NEWNET) of that
    thread per call) and `--sandbox-read jail`. Round trip, server-side tool time (audit durationMs) and process.run
    (result durationMs) of each, the `sandbox` label each reports and the cgroup each server runs in; then a round
    with SANDBOX_IDLE_S of quiet before every call, as a client that thinks between calls makes them. Then where
    the time goes, in-process: confine() + close() and their parts (TMPDIR, ruleset), the per-call orphan sweep,
    the spawning thread's steps timed on it (hand-off, netns, Landlock, vfork, prlimit; back to back and after
    quiet), process.run as ShellExec.execute calls it beside no confinement and what-ifs (a spawning thread that
    does nothing, a no-op preexec_fn: fork), fork's cost against resident memory, and synchronous what-ifs (the
    previous design: rlimits + Landlock in a preexec_fn, so fork; the current thread + vfork + prlimit; an extra
    exec hop; setns into a namespace made beforehand instead of unshare).

Sections 7-10 run against the default (sandboxed) server, and check that its results say the expected label.

Everything runs in a temporary directory; the servers are subprocesses on pipes (no network).
Prints a markdown table and writes bench/results/latest.json (latest-<part>.json with --only).
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import hashlib
import importlib.metadata
import importlib.util
import itertools
import json
import os
import platform
import pstats
import random
import resource
import secrets
import selectors
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
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
RAW_SERVER = BENCH_DIR / "raw_server.py"
TRANSPORT_SERVER = BENCH_DIR / "transport_server.py"
PROFILER = BENCH_DIR / "profile_server.py"
MEMTRACE_SERVER = BENCH_DIR / "memtrace_server.py"
UNCONFINED_SERVER = BENCH_DIR / "unconfined_server.py"
WRITE_MODULE = "mcp_server_file_write"
SHELL_MODULE = "mcp_server_shell_exec"
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
WRITE_POLICY = "[file_write]\nmax_write_bytes = 16777216\nhistory_max_bytes = 67108864\n"
WRITE_TARGET_S = 0.002  # 4 KiB write, median
BASH = ("/bin/bash", "--noprofile", "--norc", "-c")  # how shell_exec runs a command line
ECHO_LINE = "echo hi"
ECHO_TARGET_S = 0.0025  # `echo hi` round trip, median
BIG_OUT_BYTES = 50_000_000
BIG_OUT_LINE = f"head -c {BIG_OUT_BYTES} /dev/zero | tr '\\0' x"
BIG_OUT_TARGET_S = 0.300  # head + tail of 50 MB of output returned
BIG_OUT_RSS_TARGET = 80 * 2**20  # server VmHWM
SLEEP_LINE = "sleep 1"
CONCURRENCY = 16
CONCURRENT_TARGET_S = 1.1  # 16 concurrent `sleep 1`, wall
SANDBOX_TARGET_S = 0.001  # the sandbox's cost on `echo hi`, median over the unconfined server
SANDBOX_IDLE_S = 0.05  # quiet time before each call of section 11's idle round
# shell_exec flags of each server of section 11 (the default is --sandbox auto --sandbox-read all --network allow).
SANDBOX_VARIANTS: dict[str, tuple[str, ...]] = {
    "off": ("--sandbox", "off"),
    "auto": (),
    "deny": ("--network", "deny"),
    "jail": ("--sandbox-read", "jail"),
}
SANDBOX_TITLES = {
    "unconfined": "unconfined (no TMPDIR, ruleset or rlimits; vfork: bench/unconfined_server.py)",
    "off": "`--sandbox off`",
    "auto": "default `--sandbox auto`",
    "deny": "`--sandbox auto --network deny`",
    "jail": "`--sandbox-read jail`",
}


@dataclass(frozen=True)
class Counts:
    spawns: int
    small_calls: int
    small_warmup: int
    sdk_small_calls: int
    big_calls: int
    sdk_big_calls: int
    direct_small: int
    write_calls: int = 500
    write_warmup: int = 50
    big_write_calls: int = 5
    profile_calls: int = 5
    shell_calls: int = 2000
    shell_warmup: int = 200
    shell_floor_calls: int = 2000
    shell_big_calls: int = 10
    shell_concurrent_rounds: int = 3
    shell_profile_calls: int = 1000
    sandbox_calls: int = 2000
    sandbox_parts_calls: int = 500
    sandbox_idle_calls: int = 100


FULL = Counts(
    spawns=15, small_calls=2000, small_warmup=200, sdk_small_calls=300, big_calls=10, sdk_big_calls=3, direct_small=2000
)
QUICK = Counts(
    spawns=3,
    small_calls=200,
    small_warmup=20,
    sdk_small_calls=30,
    big_calls=3,
    sdk_big_calls=1,
    direct_small=200,
    write_calls=100,
    write_warmup=10,
    big_write_calls=2,
    profile_calls=2,
    shell_calls=200,
    shell_warmup=20,
    shell_floor_calls=200,
    shell_big_calls=3,
    shell_concurrent_rounds=1,
    shell_profile_calls=100,
    sandbox_calls=200,
    sandbox_parts_calls=50,
    sandbox_idle_calls=20,
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
        self.sent_at = 0.0  # perf_counter when the last request was fully written into the pipe
        self.last_line_at = 0.0  # perf_counter when the last response line was complete
        self.last_line_bytes = 0
        self.arrived: dict[int, float] = {}  # response id -> perf_counter when its line was complete

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _write(self, obj: dict[str, Any]) -> None:
        self._write_parts([json.dumps(obj, separators=(",", ":")).encode() + b"\n"])

    def _write_parts(self, parts: Sequence[bytes]) -> None:
        """writev the parts (no joined copy); on a blocking pipe this returns once the reader has taken
        all but the pipe's buffer (64 KiB), so for a big request ``sent_at`` ~ when the server drained it."""
        views = [memoryview(p) for p in parts if p]
        while views:
            n = os.writev(self._in, views)
            while n:
                if n >= len(views[0]):
                    n -= len(views.pop(0))
                else:
                    views[0] = views[0][n:]
                    n = 0
        self.sent_at = time.perf_counter()

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
        return self._response(self.send(method, params), method, time.perf_counter() + timeout)

    def send(self, method: str, params: dict[str, Any]) -> int:
        """Write one request without waiting for its response (see ``wait``); returns its id."""
        self._next_id += 1
        self._write({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    def wait(self, rid: int, method: str = "tools/call", timeout: float = 60.0) -> dict[str, Any]:
        """The result of request ``rid`` (responses to other ids that arrive first are kept for their turn)."""
        return self._response(rid, method, time.perf_counter() + timeout)

    def _response(self, rid: int, method: str, deadline: float) -> dict[str, Any]:
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
                if isinstance(msg.get("id"), int):
                    self.arrived[msg["id"]] = self.last_line_at
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

    def call_tool_encoded(self, name: str, arguments_json: Sequence[bytes], timeout: float = 120.0) -> dict[str, Any]:
        """tools/call whose arguments object is already JSON (in parts), so no client-side encoding is timed."""
        self._next_id += 1
        rid = self._next_id
        head = f'{{"jsonrpc":"2.0","id":{rid},"method":"tools/call","params":{{"name":{json.dumps(name)},"arguments":'
        self._write_parts([head.encode(), *arguments_json, b"}}\n"])
        result = self._response(rid, "tools/call", time.perf_counter() + timeout)
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


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (clock-tick resolution, 10 ms here)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status_bytes(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{key} not found")


def vm_hwm_bytes(pid: int) -> int:
    """Peak resident set of a process so far."""
    return proc_status_bytes(pid, "VmHWM")


def vm_rss_bytes(pid: int) -> int:
    return proc_status_bytes(pid, "VmRSS")


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
    write_cmd: str = ""
    write_root: Path = Path()  # file_write server cwd = jail; the in-process floors write here too
    write_policy: Path = Path()
    shell_cmd: str = ""
    shell_root: Path = Path()  # shell_exec server cwd = jail
    sandbox_labels: dict[str, str] = field(default_factory=dict)  # SANDBOX_VARIANTS key -> expected `sandbox`
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

    def write_flags(self, *, big: bool, audit: str) -> list[str]:
        flags = ["--audit-log", str(self.audit_path(audit)), "--history-dir", str(self.tmp / f"history-{audit}")]
        if big:
            flags += ["--policy", str(self.write_policy)]
        return flags

    def write_argv(self, *, big: bool = False, audit: str = "write") -> list[str]:
        return [self.write_cmd, *self.write_flags(big=big, audit=audit)]

    @property
    def shell_sandbox(self) -> str | None:
        """The label the default (sandboxed) server's results must say."""
        return self.sandbox_labels.get("auto")

    def shell_flags(self, *, audit: str) -> list[str]:
        return ["--audit-log", str(self.audit_path(audit))]

    def shell_argv(self, *, audit: str = "shell") -> list[str]:
        return [self.shell_cmd, *self.shell_flags(audit=audit)]

    def sandbox_argv(self, variant: str, *, audit: str) -> list[str]:
        """A shell_exec server with a SANDBOX_VARIANTS entry's flags, or "unconfined": the server with the sandbox
        taken out of its spawn (bench/unconfined_server.py, vfork as before the sandbox)."""
        if variant != "unconfined":
            return [*self.shell_argv(audit=audit), *SANDBOX_VARIANTS[variant]]
        tmpdir = self.tmp / "unconfined-tmp"
        tmpdir.mkdir(exist_ok=True)
        return [sys.executable, str(UNCONFINED_SERVER), str(tmpdir), *self.shell_flags(audit=audit), "--sandbox", "off"]


def find_server(name: str = "mcp-server-file-read") -> str:
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name) or str(REPO / ".venv" / "bin" / name)
    if not Path(found).exists():
        sys.exit(f"{name} not found; run `uv sync` in the repo first")
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


def audit_series(path: Path) -> list[float]:
    """Every audit ``durationMs`` of a log, in order, in seconds."""
    try:
        entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return []
    return [float(e["durationMs"]) / 1e3 for e in entries if isinstance(e.get("durationMs"), int | float)]


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
# 4. 4 KiB write (file_write)


class DirectWriter:
    """The no-MCP floor of a write: the server's durable steps in-process, in one directory, no guards."""

    def __init__(self, directory: Path, history: Path) -> None:
        self.dirfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        history.mkdir(mode=0o700, exist_ok=True)
        self.history = history

    def close(self) -> None:
        os.close(self.dirfd)

    def _temp(self, data: bytes) -> str:
        tmp = f".floor-{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644, dir_fd=self.dirfd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        return tmp

    def write(self, name: str, data: bytes) -> None:
        """Temp file + fsync + rename (to a new name or over the old file) + fsync of the directory."""
        os.rename(self._temp(data), name, src_dir_fd=self.dirfd, dst_dir_fd=self.dirfd)
        os.fsync(self.dirfd)

    def replace_with_backup(self, name: str, data: bytes) -> None:
        """What an overwrite costs at the file-system level: a durable copy of the old content (data file and
        a small metadata file, each fsynced, in a directory outside) as the history store makes, then write()."""
        backup = self.history / secrets.token_hex(8)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        old = os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=self.dirfd)
        try:
            out = os.open(f"{backup}.data", flags, 0o600)
            try:
                pos = 0
                while chunk := os.pread(old, 1 << 20, pos):
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(out, view) :]
                    pos += len(chunk)
                os.fsync(out)
            finally:
                os.close(out)
        finally:
            os.close(old)
        meta = os.open(f"{backup}.json", flags, 0o600)
        try:
            os.write(meta, json.dumps({"size": pos}).encode())
            os.fsync(meta)
        finally:
            os.close(meta)
        self.write(name, data)


def check_write(result: dict[str, Any], data: bytes, *, created: bool) -> None:
    sc = result.get("structuredContent") or {}
    ok = (
        sc.get("success") is True
        and sc.get("bytesWritten") == len(data)
        and sc.get("sha256") == hashlib.sha256(data).hexdigest()
        and sc.get("created") is created
        and (sc.get("backup") is None) is created
    )
    if not ok:
        raise RuntimeError(f"unexpected file_write result: {sc}")


def trend(times: Sequence[float]) -> dict[str, float]:
    """Median of the first and of the last tenth of a series (growth with the number of calls made)."""
    k = max(len(times) // 10, 1)
    return {"first_tenth_median_s": median(times[:k]), "last_tenth_median_s": median(times[-k:])}


def small_writes(env: Env, counts: Counts) -> dict[str, Any]:
    out: dict[str, Any] = {}
    data = make_text(SMALL_SIZE, seed=3)
    text = data.decode()
    n, warm = counts.write_calls, counts.write_warmup

    floor = DirectWriter(env.write_root, env.tmp / "floor-history-4k")
    os.sync()  # start from a clean write-back state
    try:
        names = itertools.count()
        out["direct_create"] = summary(
            time_loop(lambda: floor.write(f"floor-new-{next(names):06d}.txt", data), n, warm)
        )
        floor.write("floor-same.txt", data)
        out["direct_replace"] = summary(time_loop(lambda: floor.write("floor-same.txt", data), n, warm))
        out["direct_replace_backup"] = summary(
            time_loop(lambda: floor.replace_with_backup("floor-same.txt", data), n, warm)
        )
    finally:
        floor.close()

    paths = itertools.count()
    with RawClient(env.write_argv(audit="w4k-new"), env.write_root, env.stderr) as c:
        c.initialize()
        check_write(c.call_tool("file_write", {"path": "new-check.txt", "content": text}), data, created=True)
        if (env.write_root / "new-check.txt").read_bytes() != data:
            raise RuntimeError("file_write wrote something else than the content")
        out["create_raw"] = summary(
            time_loop(
                lambda: c.call_tool("file_write", {"path": f"new-{next(paths):06d}.txt", "content": text}), n, warm
            )
        )
    out["create_audit"] = audit_durations(env.audit_path("w4k-new"), n)

    same = {"path": "same.txt", "content": text, "overwrite": True}
    with RawClient(env.write_argv(audit="w4k-over"), env.write_root, env.stderr) as c:
        c.initialize()
        check_write(c.call_tool("file_write", {"path": "same.txt", "content": text}), data, created=True)
        check_write(c.call_tool("file_write", same), data, created=False)
        times = time_loop(lambda: c.call_tool("file_write", same), n, warm)
    out["overwrite_raw"] = summary(times) | trend(times)
    out["overwrite_audit"] = audit_durations(env.audit_path("w4k-over"), n)
    out["overwrite_history_entries"] = len(list((env.tmp / "history-w4k-over").glob("*.json")))

    with RawClient(env.bare_argv(), env.write_root, env.stderr) as c:
        c.initialize()
        out["bare_echo_raw"] = summary(time_loop(lambda: c.call_tool("echo", {"text": "x"}), n, warm))
        out["bare_size4k_raw"] = summary(time_loop(lambda: c.call_tool("size", {"text": text}), n, warm))
    return out


# ---------------------------------------------------------------------------------------------------------------
# 5. 10 MiB write, and where its time goes


@dataclass
class BigRequest:
    """A 10 MiB text as ready-made JSON argument parts, so the client never encodes it inside a timing."""

    data: bytes
    text: str
    sha: str
    text_json: bytes

    @classmethod
    def make(cls, size: int, seed: int) -> BigRequest:
        data = make_text(size, seed=seed)
        text = data.decode()
        return cls(data, text, hashlib.sha256(data).hexdigest(), json.dumps(text).encode())

    def write_args(self, path: str, *, overwrite: bool) -> list[bytes]:
        head = f'{{"path":{json.dumps(path)},"overwrite":{json.dumps(overwrite)},"content":'
        return [head.encode(), self.text_json, b"}"]

    def size_args(self) -> list[bytes]:
        return [b'{"text":', self.text_json, b"}"]

    def request_line(self) -> bytes:
        """The whole tools/call line of a write, as the server receives it."""
        head = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"file_write","arguments":'
        return b"".join([head, *self.write_args("big.txt", overwrite=False), b"}}\n"])


def timed_big_calls(
    c: RawClient,
    tool: str,
    args_for: Callable[[int], list[bytes]],
    check: Callable[[dict[str, Any]], None],
    n: int,
    warmup: int = 1,
    floor: Callable[[int], object] | None = None,
) -> dict[str, Any]:
    """``warmup`` + ``n`` calls (args_for(-1 - k) for warm-ups, args_for(i) timed); per call the time until the
    client's write of the request returned (~ the server drained the pipe) and until the response line.
    ``floor(i)``, when given, is timed just before each call, so that it meets the same disk state (write-back,
    journal) as the server does."""
    for k in range(warmup):
        if floor is not None:
            floor(-1 - k)
        check(c.call_tool_encoded(tool, args_for(-1 - k)))
    gc.collect()
    sent: list[float] = []
    line: list[float] = []
    floor_times: list[float] = []
    cpu0 = cpu_seconds(c.pid)
    for i in range(n):
        if floor is not None:
            t0 = time.perf_counter()
            floor(i)
            floor_times.append(time.perf_counter() - t0)
        args = args_for(i)
        t0 = time.perf_counter()
        result = c.call_tool_encoded(tool, args)
        sent.append(c.sent_at - t0)
        line.append(c.last_line_at - t0)
        check(result)
    out: dict[str, Any] = {
        "sent": summary(sent),
        "line": summary(line),
        "server_cpu_per_call_s": (cpu_seconds(c.pid) - cpu0) / n,
    }
    if floor_times:
        out["floor"] = summary(floor_times)
    return out


def big_writes(env: Env, counts: Counts, req: BigRequest) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n = counts.big_write_calls
    out["request_bytes"] = len(req.request_line())

    def check_size(result: dict[str, Any]) -> None:
        if (result.get("structuredContent") or {}).get("result") != len(req.text):
            raise RuntimeError(f"unexpected size result: {result}")

    # The ladder: the same 10 MiB request into a trivial tool, from no SDK to the whole SDK server.
    ladder = {
        "raw": [sys.executable, str(RAW_SERVER)],
        "transport": [sys.executable, str(TRANSPORT_SERVER)],
        "bare": env.bare_argv(),
    }
    for name, argv in ladder.items():
        with RawClient(argv, env.write_root, env.stderr) as c:
            c.initialize()
            out[f"{name}_size"] = timed_big_calls(c, "size", lambda _i: req.size_args(), check_size, n)
            out[f"{name}_vm_hwm_bytes"] = vm_hwm_bytes(c.pid)

    def new_args(i: int) -> list[bytes]:
        return req.write_args(f"big-{i}.txt" if i >= 0 else f"big-warm{-i}.txt", overwrite=False)

    # The in-process floors run interleaved with the server's calls (same bytes, same directory, same disk state).
    floor = DirectWriter(env.write_root, env.tmp / "floor-history-10m")
    os.sync()
    try:
        with RawClient(env.write_argv(big=True, audit="w10m"), env.write_root, env.stderr) as c:
            c.initialize()
            out["write_new"] = timed_big_calls(
                c,
                "file_write",
                new_args,
                lambda r: check_write(r, req.data, created=True),
                n,
                floor=lambda i: floor.write(f"floor-big-{i}.txt", req.data),
            )
            if hashlib.sha256((env.write_root / "big-0.txt").read_bytes()).hexdigest() != req.sha:
                raise RuntimeError("the 10 MiB file on disk differs from the content sent")
            out["write_overwrite"] = timed_big_calls(
                c,
                "file_write",
                lambda _i: req.write_args("big-0.txt", overwrite=True),
                lambda r: check_write(r, req.data, created=False),
                n,
                floor=lambda _i: floor.replace_with_backup("floor-big-0.txt", req.data),
            )
            out["write_vm_hwm_bytes"] = vm_hwm_bytes(c.pid)
    finally:
        floor.close()
    out["direct_new"] = out["write_new"].pop("floor")
    out["direct_replace_backup"] = out["write_overwrite"].pop("floor")
    series = audit_series(env.audit_path("w10m"))  # warm-up, n new, warm-up, n overwrites
    if len(series) == 2 * n + 2:
        out["write_new_audit"] = summary(series[1 : 1 + n])
        out["write_overwrite_audit"] = summary(series[2 + n :])

    import mcp_types

    line = req.request_line()
    line_text = line.decode()
    k = max(n, 10)
    out["json_loads"] = summary(time_loop(lambda: json.loads(line), k, 2))
    out["sdk_validate_json"] = summary(
        time_loop(lambda: mcp_types.jsonrpc_message_adapter.validate_json(line_text, by_name=False), k, 2)
    )
    out["sha256"] = summary(time_loop(lambda: hashlib.sha256(req.data).hexdigest(), k, 2))
    out["str_encode"] = summary(time_loop(req.text.encode, k, 2))
    return out


# ---------------------------------------------------------------------------------------------------------------
# 6. profile of the 10 MiB writes

# cProfile times are wall times. Left out as waits: worker threads idling, the event loop polling; Context.run,
# whose own time is the C it calls directly on a worker thread - the SDK's stdin TextIOWrapper.readline, which
# sits blocked until the client's next request arrives (its decoding shows separately as codecs decode calls);
# socket.send, the asyncio wake-up a worker thread sends, whose wall time is mostly waiting to get the GIL back
# while the event loop runs (in parallel with the work that is counted).
IDLE_FUNCTIONS = (
    "'acquire' of '_thread.lock'",
    "'poll' of 'select.epoll'",
    "'select' of",
    "time.sleep",
    "'run' of '_contextvars.Context'",
    "'send' of '_socket.socket'",
)
LABELS = {
    "<frozen codecs>:319(decode)": "codecs decode: the SDK's stdin TextIOWrapper decoding 8 KiB chunks",
}
KEY_FUNCTIONS = {  # (file suffix, function name) -> label
    ("mcp/server/stdio.py", "stdin_reader"): "SDK stdio stdin_reader (validate_json of each line)",
    ("mcp_server_guard/tooling.py", "call_tool"): "GuardedServer.call_tool (audit span: argument validation + tool)",
    ("mcpserver/utilities/func_metadata.py", "validate_arguments"): "SDK tool-argument validation",
    ("mcp_server_guard/writing.py", "write"): "Writer.write (guards, temp + fsync, link, dir fsync)",
    ("mcp_server_guard/writing.py", "_temp"): "Writer._temp (temp file write + fsync)",
    ("mcp_server_guard/writing.py", "check_executable_content"): "check_executable_content (libmagic on the head)",
    ("mcp_server_guard/audit.py", "to_json"): "AuditRecord.to_json (hashes the content)",
}


def short_function(key: tuple[str, int, str]) -> str:
    text = pstats.func_std_string(key)
    if text in LABELS:
        return LABELS[text]
    for prefix in (str(REPO / ".venv" / "lib"), str(REPO), sys.base_prefix):
        text = text.replace(prefix + "/", "")
    return text


def profile_big_writes(env: Env, counts: Counts, req: BigRequest) -> dict[str, Any] | None:
    if importlib.util.find_spec(WRITE_MODULE) is None:
        return None
    n = counts.profile_calls
    prof = env.tmp / "file_write.prof"
    argv = [sys.executable, str(PROFILER), str(prof), WRITE_MODULE, *env.write_flags(big=True, audit="w10m-prof")]
    times: list[float] = []
    with RawClient(argv, env.write_root, env.stderr) as c:
        c.initialize()
        check_write(
            c.call_tool_encoded("file_write", req.write_args("prof-warm.txt", overwrite=False)), req.data, created=True
        )
        os.kill(c.pid, signal.SIGUSR1)  # drop start-up and warm-up from the profile
        time.sleep(0.3)
        c.request("ping", {})  # completes the stdin readline that began before the clear
        for i in range(n):
            t0 = time.perf_counter()
            c.call_tool_encoded("file_write", req.write_args(f"prof-{i}.txt", overwrite=False))
            times.append(c.last_line_at - t0)
    return summarise_profile(prof, n, KEY_FUNCTIONS) | {"wall_median_s": median(times)}


def summarise_profile(prof: Path, n: int, key_functions: dict[tuple[str, str], str]) -> dict[str, Any]:
    """Per-call own and cumulative times of a merged all-thread profile of ``n`` calls, idle waits left out;
    ``key_functions`` (file suffix, function name) -> label picks the cumulative rows to show, in that order."""
    stats = pstats.Stats(str(prof))
    entries: list[dict[str, Any]] = []
    key_rows: dict[str, dict[str, Any]] = {}
    raw_stats: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    for key, (_cc, nc, tt, ct, _callers) in raw_stats.items():
        name = pstats.func_std_string(key)
        if any(idle in name for idle in IDLE_FUNCTIONS):
            continue
        entries.append(
            {"function": short_function(key), "ncalls": nc, "tottime_per_call_s": tt / n, "cumtime_per_call_s": ct / n}
        )
        for (suffix, func), label in key_functions.items():
            if key[0].endswith(suffix) and key[2] == func:
                row = key_rows.setdefault(label, {"function": label, "cumtime_per_call_s": 0.0, "ncalls": 0})
                row["cumtime_per_call_s"] += ct / n
                row["ncalls"] += nc
    entries.sort(key=lambda e: e["tottime_per_call_s"], reverse=True)
    busy = sum(e["tottime_per_call_s"] for e in entries)
    return {
        "calls": n,
        "busy_per_call_s": busy,
        "top": entries[:14],
        "key": [key_rows[label] for label in key_functions.values() if label in key_rows],
    }


# ---------------------------------------------------------------------------------------------------------------
# 7. shell_exec `echo hi`


def use_pidfd_child_watcher() -> None:
    """What the servers do at start-up on 3.11 (mcp_server_guard.serving.launch): wait for children on a pidfd,
    not a thread, so the in-process floors below spawn exactly as the server does."""
    if sys.version_info < (3, 12) and hasattr(os, "pidfd_open"):
        asyncio.set_child_watcher(asyncio.PidfdChildWatcher())


def sandbox_modes() -> dict[str, tuple[Any, Any, Any]]:
    """(--sandbox, --sandbox-read, --network) of each server of SANDBOX_VARIANTS, as the sandbox module's enums."""
    from mcp_server_guard.shell.sandbox import confine as sb

    return {
        "off": (sb.SandboxMode.OFF, sb.ReadScope.ALL, sb.NetworkMode.ALLOW),
        "auto": (sb.SandboxMode.AUTO, sb.ReadScope.ALL, sb.NetworkMode.ALLOW),
        "deny": (sb.SandboxMode.AUTO, sb.ReadScope.ALL, sb.NetworkMode.DENY),
        "jail": (sb.SandboxMode.AUTO, sb.ReadScope.JAIL, sb.NetworkMode.ALLOW),
    }


def expected_sandbox_labels() -> dict[str, str]:
    """The `sandbox` label each server of SANDBOX_VARIANTS must report on this kernel: Landlock at the kernel's
    ABI unless off, and a network namespace with --network deny where one can be made (else Landlock TCP deny)."""
    from mcp_server_guard.shell.sandbox import confine as sb

    abi = sb.landlock_abi()
    netns = sb._probe_netns()  # what the server's start-up probes too (a throwaway child unshares)
    limits = sb.Limits(1, 1, 1, 1)  # not used by the label
    modes = sandbox_modes()
    boxed = "bwrap+pidns+mountns+nocaps+seccomp+" if shutil.which("bwrap") else ""  # the server's box, when it has one
    return {"unconfined": "none"} | {
        name: ("" if mode[0] is sb.SandboxMode.OFF else boxed)
        + sb.SandboxPlan(*mode, limits, abi=abi if mode[0] is not sb.SandboxMode.OFF else 0,
                         netns=netns and mode[2] is sb.NetworkMode.DENY).label
        for name, mode in modes.items()
    }  # fmt: skip


def check_shell(
    result: dict[str, Any], *, stdout: str | None = None, size: int | None = None, sandbox: str | None = None
) -> dict[str, Any]:
    """A successful, allowed run, with the expected stdout or size; ``sandbox``: the label the result must say."""
    sc: dict[str, Any] = result.get("structuredContent") or {}
    ok = sc.get("exitCode") == 0 and sc.get("decision") == "allow" and not sc.get("timedOut")
    ok = ok and sc.get("limitHit") is None and (sandbox is None or sc.get("sandbox") == sandbox)
    if stdout is not None:
        ok = ok and sc.get("stdout") == stdout and not sc.get("truncated")
    if size is not None:
        ok = ok and sc.get("stdoutBytes") == size and sc.get("truncated") is True
        ok = ok and sc.get("stdout", "").startswith("x" * 256) and sc.get("stdout", "").endswith("x" * 256)
    if not ok:
        raise RuntimeError(f"unexpected shell_exec result: { {k: v for k, v in sc.items() if k != 'stdout'} }")
    return sc


def inprocess_runs(argv: Sequence[str], cwd: Path, n: int, warmup: int, max_output: int = 1 << 20) -> list[float]:
    """The server's own process runner (mcp_server_guard.shell.process.run: own session, pipes read into head+tail
    buffers, anyio on asyncio) called in-process in a loop: shell_exec's spawn without MCP, parsing or policy."""
    from mcp_server_guard.shell.process import build_env, run

    env = build_env(None)
    no_other_children()

    async def loop() -> list[float]:
        times: list[float] = []
        for i in range(warmup + n):
            if i == warmup:
                gc.collect()
            t0 = time.perf_counter()
            result = await run(argv, cwd=str(cwd), env=env, stdin=None, timeout=30, max_output=max_output)
            times.append(time.perf_counter() - t0)
            if result.exit_code != 0:
                raise RuntimeError(f"in-process run failed: {result}")
        return times[warmup:]

    use_pidfd_child_watcher()
    return asyncio.run(loop())


def sandbox_plans(*names: str) -> dict[str, Any]:
    """In-process SandboxPlans as the server's start-up makes them (sandbox.plan), with the default policy's limits,
    for the SANDBOX_VARIANTS ``names``. Like the server, the bench process then is a child subreaper and, as root
    with a plan other than off, sits in its own pids cgroup (mcp-guard-<pid>, its children born there): call
    release_plans() when done, which moves it back out and removes the cgroup."""
    from mcp_server_guard.policy import load_policy
    from mcp_server_guard.shell.sandbox import confine as sb

    pol = load_policy().shell_exec
    limits = sb.Limits(
        memory_bytes=pol.max_memory_bytes,
        file_size_bytes=pol.max_file_size_bytes,
        cpu_seconds=pol.max_cpu_seconds,
        processes=pol.max_processes,
    )
    modes = sandbox_modes()
    return {name: sb.plan(*modes[name], limits) for name in names}


def release_plans(plans: dict[str, Any]) -> None:
    """Undo sandbox_plans: leave the pids cgroup (the plans share one) and remove it, as the server does at exit."""
    from mcp_server_guard.shell.sandbox import confine as sb

    released: set[Path] = set()
    for p in plans.values():
        if p.pids_cgroup is not None and p.pids_cgroup not in released:
            sb.release(p)
            released.add(p.pids_cgroup)
    sb.release_all()


def no_other_children() -> None:
    """process.run ends with the subreaper's orphan sweep, which kills every child of the calling process outside
    the running call's group: the in-process runs must have no other child (a server) alive."""
    from mcp_server_guard.shell.sandbox import confine as sb

    if sb.children():
        raise RuntimeError(f"in-process process.run would kill the bench's other children {sb.children()}")


def tool_parts(env: Env, counts: Counts) -> dict[str, Any]:
    """The shell_exec tool's own steps around the process, in-process: ShellExec.prepare (cwd through the jail,
    build_env, parse + policy, redirect checks; run once per call, in the elicitation gate, and reused by the body),
    build_env alone (from the base environment computed once), confine() + close() of the default sandbox (private
    TMPDIR, Landlock ruleset) and the result (output model, text block, model_dump, CallToolResult)."""
    from mcp.types import CallToolResult, TextContent

    from mcp_server_guard.files.jail import Jail
    from mcp_server_guard.policy import load_policy
    from mcp_server_guard.shell.process import build_env
    from mcp_server_guard.shell.sandbox import confine as sb
    from mcp_server_shell_exec.server import ShellExec, ShellExecInput, ShellExecOutput

    n, warm = counts.shell_floor_calls, counts.shell_warmup
    jail = Jail(str(env.shell_root))
    plans = sandbox_plans("auto")
    plan = plans["auto"]
    shell = ShellExec(jail, load_policy().shell_exec, plan)
    roots = [root.path for root in jail.roots]
    args = ShellExecInput.model_construct(command=ECHO_LINE, args=[], cwd=None, env=None)

    def result() -> CallToolResult:
        o = ShellExecOutput(
            stdout="hi\n",
            stderr="",
            exitCode=0,
            timedOut=False,
            truncated=False,
            stdoutBytes=3,
            stderrBytes=0,
            durationMs=1.0,
            signal=None,
            sandbox=plan.label,
            limitHit=None,
            decision="allow",
            rule=None,
        )
        return CallToolResult(
            content=[TextContent(type="text", text=o.to_text())],
            structured_content=o.model_dump(mode="json", by_alias=True),
        )

    try:
        return {
            "prepare": summary(time_loop(lambda: shell.prepare(args.command, args.args, args.cwd, args.env), n, warm)),
            "build_env": summary(time_loop(lambda: build_env(None, shell.base_env), n, warm)),
            "confine_close": summary(time_loop(lambda: sb.confine(plan, roots).close(), n, warm)),
            "result_model": summary(time_loop(result, n, warm)),
        }
    finally:
        jail.close()
        release_plans(plans)


def shell_echo(env: Env, counts: Counts) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n, warm = counts.shell_calls, counts.shell_warmup
    bash_argv = [*BASH, ECHO_LINE]
    out["subprocess_bash"] = summary(
        time_loop(lambda: subprocess.run(bash_argv, capture_output=True, check=True), counts.shell_floor_calls, warm)
    )
    out["subprocess_true"] = summary(
        time_loop(lambda: subprocess.run(["/bin/true"], check=True), counts.shell_floor_calls, warm)
    )
    out["inprocess_run"] = summary(inprocess_runs(bash_argv, env.shell_root, counts.shell_floor_calls, warm))

    from mcp_server_guard.policy import load_policy
    from mcp_server_guard.shell.rules import PolicyEngine

    engine = PolicyEngine(load_policy().shell_exec)
    if engine.decide(ECHO_LINE).action != "allow":
        raise RuntimeError(f"the default policy does not allow {ECHO_LINE!r}")
    out["policy_decide"] = summary(time_loop(lambda: engine.decide(ECHO_LINE), counts.shell_floor_calls, warm))
    out["policy_decide_argv"] = summary(
        time_loop(lambda: engine.decide("echo", ["hi"]), counts.shell_floor_calls, warm)
    )
    out |= tool_parts(env, counts)

    for form, args in (("bash", {"command": ECHO_LINE}), ("argv", {"command": "echo", "args": ["hi"]})):
        run_ms: list[float] = []
        with RawClient(env.shell_argv(audit=f"echo-{form}"), env.shell_root, env.stderr) as c:
            c.initialize()

            def call(c: RawClient = c, args: dict[str, Any] = args, run_ms: list[float] = run_ms) -> None:
                sc = check_shell(c.call_tool("shell_exec", args), stdout="hi\n", sandbox=env.shell_sandbox)
                run_ms.append(sc["durationMs"] / 1e3)

            out[f"{form}_raw"] = summary(time_loop(call, n, warm))
            out[f"{form}_raw"]["response_bytes"] = c.last_line_bytes
        out[f"{form}_audit"] = audit_durations(env.audit_path(f"echo-{form}"), n)
        out[f"{form}_run"] = summary(run_ms[-n:])

    with RawClient(env.bare_argv(), env.shell_root, env.stderr) as c:
        c.initialize()
        out["bare_echo_raw"] = summary(time_loop(lambda: c.call_tool("echo", {"text": "x"}), n, warm))
    return out


# ---------------------------------------------------------------------------------------------------------------
# 8. shell_exec printing 50 MB


class HeadTail:
    """The in-process floor's bounded buffer: first and last ``limit // 2`` bytes of a stream (as the server keeps)."""

    def __init__(self, limit: int) -> None:
        self.half = limit // 2
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if len(self.head) < self.half:
            room = self.half - len(self.head)
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail.append(chunk)
            self.tail_size += len(chunk)
            while self.tail_size - len(self.tail[0]) >= self.half:
                self.tail_size -= len(self.tail.popleft())

    def text(self) -> str:
        return (bytes(self.head) + b"".join(self.tail)[-self.half :]).decode("utf-8", "replace")


def bounded_read(argv: Sequence[str], limit: int = 1 << 20) -> int:
    """No-MCP floor: run the command on a pipe, read it in 64 KiB chunks into head+tail, decode what is kept."""
    with subprocess.Popen(list(argv), stdout=subprocess.PIPE, stdin=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None
        buf = HeadTail(limit)
        fd = proc.stdout.fileno()
        while chunk := os.read(fd, 65536):
            buf.feed(chunk)
    if proc.returncode != 0 or len(buf.text()) != limit:
        raise RuntimeError("bounded read floor failed")
    return buf.total


def big_output_calls(
    c: RawClient, args: dict[str, Any], n: int, *, size: int | None, sandbox: str | None
) -> dict[str, Any]:
    """One warm-up and ``n`` timed calls: request -> full response line, and with json.loads of it."""
    check_shell(c.call_tool("shell_exec", args, timeout=120), size=size, stdout=None, sandbox=sandbox)
    gc.collect()
    to_line: list[float] = []
    parsed: list[float] = []
    run_ms: list[float] = []
    cpu0 = cpu_seconds(c.pid)
    for _ in range(n):
        t0 = time.perf_counter()
        result = c.call_tool("shell_exec", args, timeout=120)
        t1 = time.perf_counter()
        to_line.append(c.last_line_at - t0)
        parsed.append(t1 - t0)
        run_ms.append(check_shell(result, size=size, sandbox=sandbox)["durationMs"] / 1e3)
    return {
        "line": summary(to_line),
        "parsed": summary(parsed),
        "run": summary(run_ms),
        "response_bytes": c.last_line_bytes,
        "stdout_ascii": result["structuredContent"]["stdout"].isascii(),
        "server_cpu_per_call_s": (cpu_seconds(c.pid) - cpu0) / n,
    }


def shell_big_output(env: Env, counts: Counts) -> dict[str, Any]:
    out: dict[str, Any] = {"output_bytes": BIG_OUT_BYTES}
    n = counts.shell_big_calls
    argv = [*BASH, BIG_OUT_LINE]
    out["subprocess_devnull"] = summary(
        time_loop(lambda: subprocess.run(argv, stdout=subprocess.DEVNULL, check=True), n, 1)
    )
    out["bounded_read"] = summary(time_loop(lambda: bounded_read(argv), n, 1))
    out["inprocess_run"] = summary(inprocess_runs(argv, env.shell_root, n, 1))

    big = {"command": BIG_OUT_LINE}
    with RawClient(env.shell_argv(audit="big-out"), env.shell_root, env.stderr) as c:
        c.initialize()
        out["idle_vm_hwm_bytes"], out["idle_vm_rss_bytes"] = vm_hwm_bytes(c.pid), vm_rss_bytes(c.pid)
        check_shell(c.call_tool("shell_exec", {"command": ECHO_LINE}), stdout="hi\n", sandbox=env.shell_sandbox)
        out["after_echo_vm_hwm_bytes"] = vm_hwm_bytes(c.pid)
        out["ours"] = big_output_calls(c, big, n, size=BIG_OUT_BYTES, sandbox=env.shell_sandbox)
        out["vm_hwm_bytes"], out["vm_rss_bytes"] = vm_hwm_bytes(c.pid), vm_rss_bytes(c.pid)
    series = audit_series(env.audit_path("big-out"))
    if len(series) == n + 2:
        out["ours_audit"] = summary(series[2:])
    # The same calls with the sandbox off, and taken out of the spawn: what the sandbox adds to a big run.
    for variant in ("off", "unconfined"):
        with RawClient(env.sandbox_argv(variant, audit=f"big-out-{variant}"), env.shell_root, env.stderr) as c:
            c.initialize()
            out[f"ours_{variant}"] = big_output_calls(
                c, big, n, size=BIG_OUT_BYTES, sandbox=env.sandbox_labels.get(variant)
            )

    # Where the peak comes from, one fresh server each: the 50 MB through the buffers with a tiny response
    # (maxOutputBytes at its minimum, 1 KiB) / a 1 MiB response without the flood / the bare SDK server
    # returning 1 MiB of text (content + structuredContent, like shell_exec's stdout) / tracemalloc split.
    with RawClient(env.shell_argv(audit="big-out-1k"), env.shell_root, env.stderr) as c:
        c.initialize()
        check_shell(c.call_tool("shell_exec", {"command": ECHO_LINE}), stdout="hi\n", sandbox=env.shell_sandbox)
        out["flood_small_response"] = big_output_calls(
            c, {**big, "maxOutputBytes": 1024}, n, size=BIG_OUT_BYTES, sandbox=env.shell_sandbox
        )
        out["flood_small_response"]["vm_hwm_bytes"] = vm_hwm_bytes(c.pid)
    one_mib = 1 << 20
    with RawClient(env.shell_argv(audit="big-out-1m"), env.shell_root, env.stderr) as c:
        c.initialize()
        check_shell(c.call_tool("shell_exec", {"command": ECHO_LINE}), stdout="hi\n", sandbox=env.shell_sandbox)
        args = {"command": f"head -c {one_mib} /dev/zero | tr '\\0' x"}
        check_shell(c.call_tool("shell_exec", args), stdout="x" * one_mib, sandbox=env.shell_sandbox)
        out["one_mib_output"] = {"vm_hwm_bytes": vm_hwm_bytes(c.pid), "response_bytes": c.last_line_bytes}
    with RawClient(env.bare_argv(), env.shell_root, env.stderr) as c:
        c.initialize()
        out["bare_idle_vm_hwm_bytes"], out["bare_idle_vm_rss_bytes"] = vm_hwm_bytes(c.pid), vm_rss_bytes(c.pid)
        for _ in range(n):
            r = c.call_tool("blob", {"n": one_mib})
            if (r.get("structuredContent") or {}).get("result") != "x" * one_mib:
                raise RuntimeError("unexpected blob result")
        out["bare_blob"] = {"vm_hwm_bytes": vm_hwm_bytes(c.pid), "response_bytes": c.last_line_bytes}
    out["memtrace"] = memtrace(env, big)
    return out


def memtrace(env: Env, args: dict[str, Any]) -> list[dict[str, int]]:
    """tracemalloc's split of two 50 MB calls on a fresh server (bench/memtrace_server.py): our side vs after it."""
    report = env.tmp / "memtrace.jsonl"
    argv = [sys.executable, str(MEMTRACE_SERVER), str(report), *env.shell_flags(audit="memtrace")]
    with RawClient(argv, env.shell_root, env.stderr) as c:
        c.initialize()
        check_shell(c.call_tool("shell_exec", {"command": ECHO_LINE}), stdout="hi\n", sandbox=env.shell_sandbox)
        for _ in range(2):
            check_shell(c.call_tool("shell_exec", args, timeout=120), size=BIG_OUT_BYTES, sandbox=env.shell_sandbox)
            os.kill(c.pid, signal.SIGUSR2)
            c.request("ping", {})  # the handler has run once the event loop answers
    return [json.loads(line) for line in report.read_text().splitlines()]


# ---------------------------------------------------------------------------------------------------------------
# 9. 16 concurrent `sleep 1`


def concurrent_round(c: RawClient, tool: str, args: dict[str, Any], k: int) -> dict[str, Any]:
    """Send ``k`` requests back to back on one connection, then wait for all; times from the first send."""
    t0 = time.perf_counter()
    ids = [c.send("tools/call", {"name": tool, "arguments": args}) for _ in range(k)]
    results = [c.wait(rid, timeout=60) for rid in ids]
    arrived = sorted(c.arrived[rid] - t0 for rid in ids)
    for r in results:
        if r.get("isError"):
            raise RPCError(f"concurrent {tool} failed: {r.get('content')}")
    return {"wall_s": arrived[-1], "first_s": arrived[0], "results": results}


def shell_concurrency(env: Env, counts: Counts) -> dict[str, Any]:
    out: dict[str, Any] = {"k": CONCURRENCY}
    rounds = counts.shell_concurrent_rounds
    argv = [*BASH, SLEEP_LINE]

    def popen_all() -> None:
        procs = [subprocess.Popen(argv) for _ in range(CONCURRENCY)]
        for p in procs:
            if p.wait() != 0:
                raise RuntimeError("sleep failed")

    out["subprocess"] = summary(time_loop(popen_all, rounds, 0))

    walls: list[float] = []
    firsts: list[float] = []
    run_ms: list[float] = []
    with RawClient(env.shell_argv(audit="sleep"), env.shell_root, env.stderr) as c:
        c.initialize()
        check_shell(c.call_tool("shell_exec", {"command": ECHO_LINE}), stdout="hi\n", sandbox=env.shell_sandbox)
        for _ in range(rounds):
            r = concurrent_round(c, "shell_exec", {"command": SLEEP_LINE}, CONCURRENCY)
            walls.append(r["wall_s"])
            firsts.append(r["first_s"])
            run_ms += [check_shell(x, stdout="", sandbox=env.shell_sandbox)["durationMs"] / 1e3 for x in r["results"]]
    out["ours_wall"], out["ours_first"], out["ours_run"] = summary(walls), summary(firsts), summary(run_ms)

    for variant in ("off", "unconfined"):
        walls = []
        with RawClient(env.sandbox_argv(variant, audit=f"sleep-{variant}"), env.shell_root, env.stderr) as c:
            c.initialize()
            for _ in range(rounds):
                r = concurrent_round(c, "shell_exec", {"command": SLEEP_LINE}, CONCURRENCY)
                for x in r["results"]:
                    check_shell(x, stdout="", sandbox=env.sandbox_labels.get(variant))
                walls.append(r["wall_s"])
        out[f"{variant}_wall"] = summary(walls)

    walls = []
    with RawClient(env.bare_argv(), env.shell_root, env.stderr) as c:
        c.initialize()
        for _ in range(rounds):
            walls.append(concurrent_round(c, "sleep", {"seconds": 1.0}, CONCURRENCY)["wall_s"])
    out["bare_wall"] = summary(walls)
    return out


# ---------------------------------------------------------------------------------------------------------------
# 10. profile of `echo hi`

SHELL_KEY_FUNCTIONS = {
    ("mcp/server/stdio.py", "stdin_reader"): "SDK stdio stdin_reader (readline + validate_json of each line)",
    ("mcp/server/stdio.py", "stdout_writer"): "SDK stdio stdout_writer (model_dump_json + write + flush)",
    ("mcp_server_guard/tooling.py", "call_tool"): "GuardedServer.call_tool (the audit span; awaits not counted)",
    ("mcpserver/utilities/func_metadata.py", "validate_arguments"): "SDK tool-argument validation",
    ("mcp_server_shell_exec/server.py", "gate"): "gate resolver (prepare: jail, env, parse + policy)",
    ("mcp_server_shell_exec/server.py", "prepare"): "ShellExec.prepare (in the gate; the body reuses it)",
    ("mcp_server_guard/shellpolicy.py", "decide"): "PolicyEngine.decide (tree-sitter parse + rules)",
    ("mcp_server_guard/shellparse.py", "parse"): "shellparse.parse (tree-sitter-bash)",
    ("mcp_server_guard/jail.py", "open_dir"): "Jail.open_dir (cwd)",
    ("mcp_server_guard/process.py", "build_env"): "build_env",
    ("mcp_server_shell_exec/server.py", "execute"): "ShellExec.execute (confine + process.run + close)",
    ("mcp_server_guard/sandbox.py", "confine"): "sandbox.confine (TMPDIR, ruleset)",
    ("tempfile.py", "mkdtemp"): "tempfile.mkdtemp (the private TMPDIR)",
    ("mcp_server_guard/sandbox.py", "build_ruleset"): "sandbox.build_ruleset (Landlock)",
    ("mcp_server_guard/sandbox.py", "close"): "Confinement.close (ruleset fd, TMPDIR)",
    ("shutil.py", "rmtree"): "shutil.rmtree (the TMPDIR)",
    ("mcp_server_guard/process.py", "run"): "process.run (its frames while running; awaits not counted)",
    ("mcp_server_guard/process.py", "_spawn"): "process._spawn (start the spawning thread, await its result)",
    ("threading.py", "start"): "threading.Thread.start (the spawning thread, waits until it runs)",
    ("mcp_server_guard/process.py", "start"): "process._spawn.start (enter_thread + Popen + limit; spawning thread)",
    ("mcp_server_guard/sandbox.py", "enter_thread"): "Confinement.enter_thread (netns, Landlock on the thread)",
    ("mcp_server_guard/sandbox.py", "_restrict_thread"): "sandbox._restrict_thread (no_new_privs + restrict_self)",
    ("subprocess.py", "_execute_child"): "subprocess Popen._execute_child (vfork/exec, waits for exec)",
    ("~", "<built-in method _posixsubprocess.fork_exec>"): "_posixsubprocess.fork_exec",
    ("mcp_server_guard/sandbox.py", "limit"): "Confinement.limit (5 × prlimit on the child)",
    ("mcp_server_guard/sandbox.py", "reap_orphans"): "sandbox.reap_orphans (the orphan sweep after each call)",
    ("mcp_server_guard/audit.py", "end"): "AuditLog.end (write the audit line)",
    ("mcp_server_shell_exec/server.py", "to_text"): "ShellExecOutput.to_text",
}


def profile_shell_echo(env: Env, counts: Counts) -> dict[str, Any] | None:
    if importlib.util.find_spec(SHELL_MODULE) is None:
        return None
    n = counts.shell_profile_calls
    prof = env.tmp / "shell_exec.prof"
    argv = [sys.executable, str(PROFILER), str(prof), SHELL_MODULE, *env.shell_flags(audit="echo-prof")]
    args = {"command": ECHO_LINE}
    times: list[float] = []
    with RawClient(argv, env.shell_root, env.stderr) as c:
        c.initialize()
        for _ in range(20):
            check_shell(c.call_tool("shell_exec", args), stdout="hi\n", sandbox=env.shell_sandbox)
        os.kill(c.pid, signal.SIGUSR1)  # drop start-up and warm-up from the profile
        time.sleep(0.3)
        c.request("ping", {})  # completes the stdin readline that began before the clear
        for _ in range(n):
            t0 = time.perf_counter()
            c.call_tool("shell_exec", args)
            times.append(c.last_line_at - t0)
    out = summarise_profile(prof, n, SHELL_KEY_FUNCTIONS)
    out["wall_median_s"] = median(times)
    out["audit"] = audit_durations(env.audit_path("echo-prof"), n)
    return out


# ---------------------------------------------------------------------------------------------------------------
# 11. the sandbox's cost on `echo hi`


def p99(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return xs[0]
    return statistics.quantiles(xs, n=100, method="inclusive")[98]


def pids_cgroup(pid: int) -> str | None:
    """The pids cgroup a process is in (v1 `pids` hierarchy, else the v2 path), per /proc/PID/cgroup."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    paths = dict(line.split(":", 2)[1:] for line in lines if line.count(":") >= 2)
    return paths.get("pids", paths.get(""))


def shell_sandbox(env: Env, counts: Counts) -> dict[str, Any]:
    """One shell_exec server per SANDBOX_VARIANTS entry and the unconfined one, called in turn: round i calls each
    server once, in an order rotated every round, so drift and background work (a network namespace's teardown)
    hit all five alike."""
    n, warm = counts.sandbox_calls, counts.shell_warmup
    args = {"command": ECHO_LINE}
    names = ["unconfined", *SANDBOX_VARIANTS]
    trips: dict[str, list[float]] = {name: [] for name in names}
    runs: dict[str, list[float]] = {name: [] for name in names}
    out: dict[str, Any] = {"labels": dict(env.sandbox_labels)}
    clients: dict[str, RawClient] = {}
    try:
        for name in names:
            clients[name] = RawClient(env.sandbox_argv(name, audit=f"sandbox-{name}"), env.shell_root, env.stderr)
            clients[name].initialize()
        for i in range(warm + n):
            if i == warm:
                gc.collect()
            k = i % len(names)
            for name in names[k:] + names[:k]:
                t0 = time.perf_counter()
                result = clients[name].call_tool("shell_exec", args)
                dt = time.perf_counter() - t0
                sc = check_shell(result, stdout="hi\n", sandbox=env.sandbox_labels[name])
                if i >= warm:
                    trips[name].append(dt)
                    runs[name].append(sc["durationMs"] / 1e3)
        for name, c in clients.items():
            out[name] = {
                "raw": summary(trips[name])
                | {"p99_s": p99(trips[name]), "over_10ms": sum(t > 0.010 for t in trips[name])},
                "run": summary(runs[name]),
                "vm_rss_bytes": vm_rss_bytes(c.pid),
                "pids_cgroup": pids_cgroup(c.pid),
                "threads": len(os.listdir(f"/proc/{c.pid}/task")),
            }
        # As a client with think time calls: each call after SANDBOX_IDLE_S in which no server ran anything.
        idle: dict[str, list[float]] = {name: [] for name in names}
        idle_runs: dict[str, list[float]] = {name: [] for name in names}
        for i in range(counts.sandbox_idle_calls):
            k = i % len(names)
            for name in names[k:] + names[:k]:
                time.sleep(SANDBOX_IDLE_S)
                t0 = time.perf_counter()
                result = clients[name].call_tool("shell_exec", args)
                idle[name].append(time.perf_counter() - t0)
                sc = check_shell(result, stdout="hi\n", sandbox=env.sandbox_labels[name])
                idle_runs[name].append(sc["durationMs"] / 1e3)
        for name in names:
            out[name]["idle"] = summary(idle[name]) | {"over_10ms": sum(t > 0.010 for t in idle[name])}
            out[name]["idle_run"] = summary(idle_runs[name])
    finally:
        for c in clients.values():
            c.close()
    for name in names:
        series = audit_series(env.audit_path(f"sandbox-{name}"))
        if len(series) == warm + n + counts.sandbox_idle_calls:
            out[name]["audit"] = summary(series[warm : warm + n])
            out[name]["idle_audit"] = summary(series[warm + n :])
    return out


def in_forked_child(steps: Sequence[Callable[[], object]]) -> list[float]:
    """Run ``steps`` in a forked child - where a preexec_fn runs, after fork and before exec - timing each there;
    the child exits right after. Returns each step's seconds."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            times: list[float] = []
            for step in steps:
                t0 = time.perf_counter()
                step()
                times.append(time.perf_counter() - t0)
            os.write(w, json.dumps(times).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or not data:
        raise RuntimeError("a set-up step failed in the forked child")
    times_: list[float] = json.loads(data)
    return times_


def on_fresh_thread(steps: Sequence[Callable[[], object]]) -> tuple[float, list[float]]:
    """Run ``steps`` on a new thread, timing each there, as process.run's spawning thread runs enter_thread, Popen
    and limit. Returns the hand-off (Thread.start() called -> the thread's first step begins) and each step's
    seconds. The thread ends after the steps: once Landlocked or in another netns it must not be reused."""
    times: list[float] = []
    box: dict[str, Any] = {}

    def body() -> None:
        box["began"] = time.perf_counter()
        try:
            for step in steps:
                t0 = time.perf_counter()
                step()
                times.append(time.perf_counter() - t0)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    started = time.perf_counter()
    thread = threading.Thread(target=body, name="bench-spawn")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["began"] - started, times


def spawn_steps(
    c: Any, argv: Sequence[str], cwd: str, run_env: dict[str, str], netns_fd: int | None, box: dict[str, Any]
) -> dict[str, Callable[[], object]]:
    """process.run's spawn of confinement ``c`` (mcp_server_guard.shell.process._spawn's start: enter_thread's
    parts, the same Popen, limit), step by step; the process lands in ``box["proc"]``. For a root --network deny
    plan, first a what-if: setns into a namespace made beforehand (``netns_fd``), beside the unshare that
    enter_thread does."""
    from mcp_server_guard.shell.sandbox import confine as sb

    def setns() -> None:
        assert sb._LIBC is not None and netns_fd is not None
        if sb._LIBC.setns(ctypes.c_int(netns_fd), ctypes.c_int(sb._CLONE_NEWNET)) != 0:
            raise OSError(ctypes.get_errno(), "setns")

    def popen() -> None:
        box["proc"] = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(run_env),
            start_new_session=True,
            preexec_fn=c.preexec if c.in_child else None,  # noqa: PLW1509 - as process.run does
        )

    steps: dict[str, Callable[[], object]] = {}
    if c.in_thread and c.netns:
        if netns_fd is not None:
            steps["setns"] = setns  # first, so that the unshare after it starts from the same state
        steps["netns"] = sb._unshare_net_thread
    if c.in_thread and c.ruleset is not None:
        steps["landlock"] = lambda: sb._restrict_thread(c.ruleset)
    steps["vfork" if not c.in_child else "fork+preexec"] = popen
    steps["prlimit"] = lambda: c.limit(box["proc"].pid)
    return steps


def timed_spawn(
    plan: Any, roots: Sequence[str], argv: Sequence[str], cwd: str, base: dict[str, str], netns_fd: int | None
) -> tuple[float | None, dict[str, float]]:
    """One spawn of ``argv`` under a fresh confine(plan), step by step where process.run does them (on a fresh
    thread when the confinement says so, else on this one); checks the output and closes. Returns the thread
    hand-off (None without a thread) and each step's seconds."""
    from mcp_server_guard.shell.sandbox import confine as sb

    c = sb.confine(plan, roots)
    box: dict[str, Any] = {}
    try:
        steps = spawn_steps(c, argv, cwd, {**base, "TMPDIR": c.tmpdir}, netns_fd if c.in_thread else None, box)
        handoff: float | None = None
        if c.in_thread:
            handoff, times = on_fresh_thread(list(steps.values()))
        else:
            times = []
            for step in steps.values():
                t0 = time.perf_counter()
                step()
                times.append(time.perf_counter() - t0)
        proc: subprocess.Popen[bytes] = box["proc"]
        out, _ = proc.communicate()
        if out != b"hi\n" or proc.returncode != 0:
            raise RuntimeError(f"timed spawn printed {out!r}, exit {proc.returncode}")
    finally:
        c.close()
    return handoff, dict(zip(steps, times, strict=True))


def ready_netns() -> int | None:
    """An fd of a fresh, empty network namespace (made once by a throwaway child), for the setns what-if; None
    unless root (setns into a namespace needs CAP_SYS_ADMIN over it)."""
    from mcp_server_guard.shell.sandbox import confine as sb

    if os.geteuid() != 0:
        return None
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            sb._enter_netns()
            os.write(w, b"1")
            time.sleep(60)
        finally:
            os._exit(0)
    os.close(w)
    try:
        made = os.read(r, 1)
        return os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC) if made else None
    finally:
        os.close(r)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def fork_exit() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def probe_confinement(env: Env, spawn: Callable[[Sequence[str], Any], bytes], plan: Any, roots: Sequence[str]) -> None:
    """``spawn(argv, confinement)`` must confine: a write outside the roots fails, one inside succeeds."""
    from mcp_server_guard.shell.sandbox import confine as sb

    outside, inside = env.tmp / "outside-probe", env.shell_root / "inside-probe"
    argv = [*BASH, f": > {shlex.quote(str(outside))}; : > {shlex.quote(str(inside))}; echo done"]
    c = sb.confine(plan, roots)
    try:
        spawn(argv, c)
    finally:
        c.close()
    confined = not outside.exists() and inside.exists()
    outside.unlink(missing_ok=True)
    inside.unlink(missing_ok=True)
    if not confined:
        raise RuntimeError("a confined spawn of the bench did not refuse a write outside the roots")


def spawn_ladder(env: Env, plans: dict[str, Any], n: int, warmup: int) -> dict[str, Any]:
    """The server's process.run of `echo hi` in-process, interleaved call by call: confinement=None (vfork on the
    event loop thread, as before the sandbox); two what-ifs through the same process.run: a spawning thread that
    applies nothing (the thread hand-off alone, then vfork) and a no-op preexec_fn (fork instead of vfork, no
    rlimits); and per plan as ShellExec.execute does: confine(), process.run(confinement=...), close()."""
    from mcp_server_guard.shell.process import build_env, run
    from mcp_server_guard.shell.sandbox import confine as sb

    class ThreadOnly(sb.Confinement):
        @property
        def in_thread(self) -> bool:
            return True

        def enter_thread(self) -> None:
            pass

        def limit(self, pid: int) -> None:
            pass

        def close(self) -> None:
            pass

    class ForkNoop(sb.Confinement):
        @property
        def in_child(self) -> bool:
            return True  # so process.run passes preexec as preexec_fn, and limit() sets nothing

        def preexec(self) -> None:
            pass

        def close(self) -> None:
            pass

    argv, base = [*BASH, ECHO_LINE], build_env(None)
    roots = [str(env.shell_root)]
    cwd = str(env.shell_root)
    limits = plans["auto"].limits
    fixed: dict[str, Any] = {
        "vfork": None,
        "thread_noop": ThreadOnly(str(env.tmp), None, "none", limits),
        "fork_noop": ForkNoop(str(env.tmp), None, "none", limits),
    }

    async def spawn(kind: str) -> None:
        plan = plans.get(kind)
        c = sb.confine(plan, roots) if plan is not None else fixed[kind]
        try:
            run_env = base if plan is None else {**base, "TMPDIR": c.tmpdir}
            result = await run(argv, cwd=cwd, env=run_env, stdin=None, timeout=30, max_output=1 << 20, confinement=c)
        finally:
            if c is not None:
                c.close()
        if result.stdout != "hi\n" or result.exit_code != 0:
            raise RuntimeError(f"in-process run ({kind}) failed: {result}")

    async def probe(argv_: Sequence[str], c: Any) -> None:
        await run(argv_, cwd=cwd, env=base, stdin=None, timeout=30, max_output=1 << 20, confinement=c)

    kinds = [*fixed, *plans]
    times: dict[str, list[float]] = {k: [] for k in kinds}

    async def loop() -> None:
        for i in range(warmup + n):
            if i == warmup:
                gc.collect()
            for k in kinds[i % len(kinds) :] + kinds[: i % len(kinds)]:
                t0 = time.perf_counter()
                await spawn(k)
                if i >= warmup:
                    times[k].append(time.perf_counter() - t0)

    no_other_children()
    use_pidfd_child_watcher()
    probe_confinement(env, lambda a, c: asyncio.run(probe(a, c)) or b"", plans["auto"], roots)
    asyncio.run(loop())
    return {k: summary(v) for k, v in times.items()}


def thread_spawn(c: Any, argv: Sequence[str], run_env: dict[str, str]) -> bytes:
    """The current design, synchronously: a fresh thread runs enter_thread (Landlock; netns for root --network
    deny), spawns (vfork) and sets the rlimits with prlimit; then this thread collects the output."""
    box: dict[str, Any] = {}

    def spawn() -> None:
        c.enter_thread()
        box["proc"] = proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=run_env,
            start_new_session=True,
        )
        c.limit(proc.pid)

    on_fresh_thread([spawn])
    proc: subprocess.Popen[bytes] = box["proc"]
    out, _ = proc.communicate()
    return out


def sandbox_whatifs(env: Env, plan: Any, n: int, warmup: int) -> dict[str, Any]:
    """Synchronous spawns of `echo hi`, interleaved: subprocess.run without a preexec_fn (vfork); the previous
    design (rlimits + no_new_privs + Landlock in a preexec_fn, so fork; its per-call pids cgroup join left out);
    the current one (thread_spawn); an extra exec hop (`/usr/bin/env bash ...`: the cost of a helper that would
    confine and exec). confine() + close() around both confined ones."""
    from mcp_server_guard.shell.process import build_env
    from mcp_server_guard.shell.sandbox import confine as sb

    argv, base = [*BASH, ECHO_LINE], build_env(None)
    roots = [str(env.shell_root)]

    def old_setup(c: Any) -> Callable[[], None]:
        def setup() -> None:
            for which, value in sb._rlimits(c.limits):
                resource.setrlimit(which, value)
            if c.ruleset is not None:
                sb._restrict_thread(c.ruleset)

        return setup

    def run_(argv_: Sequence[str] = argv, **kw: Any) -> bytes:
        done: subprocess.CompletedProcess[bytes] = subprocess.run(
            list(argv_), capture_output=True, check=True, env=kw.pop("env", base), start_new_session=True, **kw
        )
        return done.stdout

    probe_confinement(env, lambda a, c: thread_spawn(c, a, {**base, "TMPDIR": c.tmpdir}), plan, roots)
    probe_confinement(env, lambda a, c: run_(a, preexec_fn=old_setup(c), env={**base, "TMPDIR": c.tmpdir}), plan, roots)

    def with_confinement(fn: Callable[[Any], bytes]) -> Callable[[], bytes]:
        def call() -> bytes:
            c = sb.confine(plan, roots)
            try:
                return fn(c)
            finally:
                c.close()

        return call

    kinds: dict[str, Callable[[], bytes]] = {
        "vfork": run_,
        "old_preexec": with_confinement(lambda c: run_(preexec_fn=old_setup(c), env={**base, "TMPDIR": c.tmpdir})),
        "thread": with_confinement(lambda c: thread_spawn(c, argv, {**base, "TMPDIR": c.tmpdir})),
        "exec_hop": lambda: run_(["/usr/bin/env", *argv]),
    }
    if not Path("/usr/bin/env").exists():
        del kinds["exec_hop"]
    times: dict[str, list[float]] = {k: [] for k in kinds}
    order = list(kinds)
    for i in range(warmup + n):
        for k in order[i % len(order) :] + order[: i % len(order)]:
            t0 = time.perf_counter()
            got = kinds[k]()
            if i >= warmup:
                times[k].append(time.perf_counter() - t0)
            if got != b"hi\n":
                raise RuntimeError(f"what-if {k} printed {got!r}")
    return {k: summary(v) for k, v in times.items()}


def sandbox_parts(env: Env, counts: Counts) -> dict[str, Any]:
    """Where the sandbox's time goes, in the bench process (its VmRSS is recorded: fork's cost grows with it)."""
    from mcp_server_guard.shell.process import build_env
    from mcp_server_guard.shell.sandbox import confine as sb

    n, warm = counts.sandbox_parts_calls, max(counts.sandbox_parts_calls // 10, 5)
    k = max(n // 5, 10)  # samples of the step-by-step timings
    out: dict[str, Any] = {}
    no_other_children()
    plans: dict[str, Any] = {}
    out["plan_s"] = {}
    for name in SANDBOX_VARIANTS:  # the server's start-up, once per server: incl. the netns probe, the cgroup join
        t0 = time.perf_counter()
        plans |= sandbox_plans(name)
        out["plan_s"][name] = time.perf_counter() - t0
    out["bench_pids_cgroup"] = pids_cgroup(os.getpid())
    roots = [str(env.shell_root)]
    argv, base, cwd = [*BASH, ECHO_LINE], build_env(None), str(env.shell_root)
    netns_fd = ready_netns()
    try:

        def confine_close(plan: Any) -> Callable[[], None]:
            return lambda: sb.confine(plan, roots).close()

        def ruleset(plan: Any, writable: list[str]) -> Callable[[], None]:
            return lambda: os.close(sb.build_ruleset(plan, writable))

        out["confine_close"] = {name: summary(time_loop(confine_close(p), n, warm)) for name, p in plans.items()}
        out["tmpdir_mkdtemp_rmtree"] = summary(
            time_loop(lambda: shutil.rmtree(tempfile.mkdtemp(prefix="mcp-guard-run-")), n, warm)
        )

        def mkdir_rmdir() -> None:
            path = os.path.join(tempfile.gettempdir(), f"mcp-guard-run-{secrets.token_hex(6)}")
            os.mkdir(path, 0o700)
            os.rmdir(path)

        out["tmpdir_mkdir_rmdir"] = summary(time_loop(mkdir_rmdir, n, warm))
        tmpdir = tempfile.mkdtemp(prefix="mcp-guard-run-")
        try:
            out["ruleset"] = {
                name: summary(time_loop(ruleset(p, [*roots, tmpdir]), n, warm))
                for name, p in plans.items()
                if p.landlock
            }
        finally:
            os.rmdir(tmpdir)
        # The orphan sweep process.run ends every call with (no children here: the listing alone).
        no_other_children()
        out["reap_orphans"] = summary(time_loop(lambda: sb.reap_orphans(()), n, warm))
        out["bench_threads"] = len(os.listdir("/proc/self/task"))

        # The spawn step by step, where process.run does it: on a fresh thread (hand-off, netns, Landlock, vfork,
        # prlimit), or on the calling thread for a plan with nothing to apply to a thread (off).
        spawn: dict[str, Any] = {}
        for name, plan in plans.items():
            handoffs: list[float] = []
            steps: dict[str, list[float]] = {}
            for _ in range(k):
                handoff, named = timed_spawn(plan, roots, argv, cwd, base, netns_fd)
                if handoff is not None:
                    handoffs.append(handoff)
                for step, dt in named.items():
                    steps.setdefault(step, []).append(dt)
            spawn[name] = ({"handoff": summary(handoffs)} if handoffs else {}) | {
                step: summary(v) for step, v in steps.items()
            }
            if plan.netns and os.geteuid() != 0:  # the preexec_fn path: time it whole inside a forked child
                c = sb.confine(plan, roots)
                try:
                    spawn[name]["preexec_in_child"] = summary([in_forked_child([c.preexec])[0] for _ in range(k)])
                finally:
                    c.close()
        out["spawn_steps"] = spawn
        # The same steps of the default plan, each sample after SANDBOX_IDLE_S of quiet.
        idle_handoffs: list[float] = []
        idle_steps: dict[str, list[float]] = {}
        for _ in range(k):
            time.sleep(SANDBOX_IDLE_S)
            handoff, named = timed_spawn(plans["auto"], roots, argv, cwd, base, None)
            if handoff is not None:
                idle_handoffs.append(handoff)
            for step, dt in named.items():
                idle_steps.setdefault(step, []).append(dt)
        out["spawn_steps_idle_auto"] = ({"handoff": summary(idle_handoffs)} if idle_handoffs else {}) | {
            step: summary(v) for step, v in idle_steps.items()
        }

        out["bench_vm_rss_bytes"] = vm_rss_bytes(os.getpid())
        out["fork_exit"] = summary(time_loop(fork_exit, k * 2, 10))
        ballast = bytearray(64 << 20)
        for i in range(0, len(ballast), 4096):
            ballast[i] = 1
        out["bench_vm_rss_ballast_bytes"] = vm_rss_bytes(os.getpid())
        out["fork_exit_ballast"] = summary(time_loop(fork_exit, k * 2, 10))
        del ballast

        out["spawn"] = spawn_ladder(env, plans, n, warm)
        out["whatif"] = sandbox_whatifs(env, plans["auto"], n, warm)
    finally:
        if netns_fd is not None:
            os.close(netns_fd)
        release_plans(plans)
    return out


# ---------------------------------------------------------------------------------------------------------------
# report


def ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s < 0.01 else f"{s * 1e3:.1f} ms"


# ---------------------------------------------------------------------------------------------------------------
# 12. memory bounds: each server's peak RSS under its worst documented case, beside its idle figure

HUGE_READ_SIZE = 1 << 30  # file_read: one page (default limits) of a 1 GiB text file, first and last page
NUL_FLOOD = "head -c {n} /dev/zero; head -c {n} /dev/zero >&2"  # every byte costs 6 in JSON (\\u0000)


def memory_bounds(env: Env, counts: Counts) -> dict[str, Any]:
    """Peak RSS (VmHWM) of each server, one fresh server per case: idle after initialize, then the case. The reply
    size is the bound the README documents (shell_exec: at most 4 x maxOutputBytes of JSON)."""
    out: dict[str, Any] = {}
    huge = env.tmp / "huge-root" / "huge.txt"
    huge.parent.mkdir(exist_ok=True)
    block = make_text(BIG_SIZE, seed=7)
    with huge.open("wb") as f:
        for _ in range(HUGE_READ_SIZE // len(block)):
            f.write(block)
    if env.server_cmd:
        with RawClient(env.ours_argv(audit="mem-read"), huge.parent, env.stderr) as c:
            c.initialize()
            case: dict[str, Any] = {"idle_vm_hwm_bytes": vm_hwm_bytes(c.pid)}
            first = c.call_tool("file_read", {"path": huge.name}, timeout=300)
            total = (first.get("structuredContent") or {}).get("totalLines")
            if not isinstance(total, int) or total < 2:
                raise RuntimeError(f"unexpected file_read result: {first.get('structuredContent')}")
            c.call_tool("file_read", {"path": huge.name, "offset": total - 100}, timeout=300)
            case |= {"vm_hwm_bytes": vm_hwm_bytes(c.pid), "response_bytes": c.last_line_bytes}
            out["read_1gib_pages"] = case
        with RawClient(env.ours_argv(big=True, audit="mem-read-10m"), env.root, env.stderr) as c:
            c.initialize()
            case = {"idle_vm_hwm_bytes": vm_hwm_bytes(c.pid)}
            check_read(c.call_tool("file_read", {"path": env.big.name}, timeout=120), env.big_sha, BIG_SIZE)
            out["read_10m_whole"] = case | {"vm_hwm_bytes": vm_hwm_bytes(c.pid), "response_bytes": c.last_line_bytes}
    if env.write_cmd:
        data = make_text(BIG_SIZE, seed=8)
        with RawClient(env.write_argv(big=True, audit="mem-write"), env.write_root, env.stderr) as c:
            c.initialize()
            case = {"idle_vm_hwm_bytes": vm_hwm_bytes(c.pid)}
            args = {"path": "mem-10m.txt", "content": data.decode(), "overwrite": True}
            check_write(c.call_tool("file_write", args, timeout=120), data, created=True)
            check_write(c.call_tool("file_write", args, timeout=120), data, created=False)
            out["write_10m_overwrite"] = case | {"vm_hwm_bytes": vm_hwm_bytes(c.pid)}
    if env.shell_cmd:
        for name, max_output in (("shell_nul_flood_default", None), ("shell_nul_flood_16m", 16 << 20)):
            with RawClient(env.shell_argv(audit=f"mem-{name}"), env.shell_root, env.stderr) as c:
                c.initialize()
                case = {"idle_vm_hwm_bytes": vm_hwm_bytes(c.pid)}
                args: dict[str, Any] = {"command": NUL_FLOOD.format(n=64 << 20)}
                if max_output is not None:
                    args["maxOutputBytes"] = max_output
                sc = c.call_tool("shell_exec", args, timeout=300).get("structuredContent") or {}
                if sc.get("exitCode") != 0 or sc.get("stdoutBytes") != 64 << 20:
                    brief = {k: v for k, v in sc.items() if "std" not in k}
                    raise RuntimeError(f"unexpected shell_exec result: {brief}")
                case |= {"vm_hwm_bytes": vm_hwm_bytes(c.pid), "response_bytes": c.last_line_bytes}
                case["max_output_bytes"] = max_output or 1 << 20  # the documented default
                out[name] = case
    return out


def memory_rows(r: dict[str, Any], rows: list[Row], notes: list[str]) -> None:
    labels = {
        "read_1gib_pages": "file_read first + last page of a 1 GiB text file",
        "read_10m_whole": "file_read whole 10 MiB file (max_read_bytes 16 MiB)",
        "write_10m_overwrite": "file_write 10 MiB new + overwrite (history copy)",
        "shell_nul_flood_default": "shell_exec 64 MiB of NUL on both streams, default maxOutputBytes",
        "shell_nul_flood_16m": "shell_exec 64 MiB of NUL on both streams, maxOutputBytes 16 MiB",
    }
    for key, label in labels.items():
        case = r["memory"].get(key)
        if case is None:
            continue
        reply = case.get("response_bytes")
        bound = 4 * case["max_output_bytes"] if "max_output_bytes" in case else None
        target = f"reply ≤ {mib(bound)}" if bound else "recorded"
        rows.append(
            (
                f"12 peak RSS: {label}",
                mib(case["vm_hwm_bytes"]),
                f"idle {mib(case['idle_vm_hwm_bytes'])}" + (f"; reply {mib(reply)}" if reply else ""),
                target,
                verdict(reply <= bound) if bound and reply else "—",
            )
        )
    notes.append("12: one fresh server per case; VmHWM read from /proc after the calls, idle after initialize.")


def delta(s: float) -> str:
    return ("+" if s >= 0 else "−") + ms(abs(s))


def mib(b: int) -> str:
    return f"{b / 2**20:.1f} MiB"


def verdict(ok: bool) -> str:
    return "✅ met" if ok else "❌ missed"


Row = tuple[str, str, str, str, str]


def build_table(r: dict[str, Any]) -> tuple[str, list[str]]:
    rows: list[Row] = []
    notes: list[str] = []
    if "read_4k" in r:
        read_rows(r, rows, notes)
    if "write_4k" in r:
        write_rows(r, rows, notes)
    if "shell_echo" in r:
        shell_rows(r, rows, notes)
    if "shell_sandbox" in r:
        sandbox_rows(r, rows, notes)
    if "memory" in r:
        memory_rows(r, rows, notes)
    head = ("Measurement", "Ours", "Floor / context", "Target", "Result")
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines), notes


def read_rows(r: dict[str, Any], rows: list[Row], notes: list[str]) -> None:
    cs, sm, bg = r["cold_start"], r["read_4k"], r["read_10m"]

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

    notes.append(
        f"The SDK's own stdio client is slower than the raw JSON-lines client: {sdk_x:.1f}× on the 4 KiB "
        f"read, {big_x:.1f}× on the 10 MiB read (its reader is O(n²) in message size)."
    )


def write_rows(r: dict[str, Any], rows: list[Row], notes: list[str]) -> None:
    sw, bw = r["write_4k"], r["write_10m"]
    echo, size4k = sw["bare_echo_raw"], sw["bare_size4k_raw"]
    for key, label, floor in (
        ("create", "4 write 4 KiB new file + fsync, raw client", "in-process atomic write {}"),
        (
            "overwrite",
            "4 overwrite 4 KiB + history copy + fsync, raw client",
            "in-process atomic replace {}; + durable backup copy {}",
        ),
    ):
        o = sw[f"{key}_raw"]
        for stat, target in (("median_s", f"≤ {ms(WRITE_TARGET_S)}"), ("p95_s", "—")):
            floors = (
                floor.format(ms(sw["direct_create"][stat]))
                if key == "create"
                else floor.format(ms(sw["direct_replace"][stat]), ms(sw["direct_replace_backup"][stat]))
            )
            rows.append(
                (
                    f"{label} ({stat[:-2]} of {o['n']})",
                    ms(o[stat]),
                    f"{floors}; bare echo 'x' {ms(echo[stat])}; bare size(4 KiB) {ms(size4k[stat])}",
                    target,
                    verdict(o[stat] <= WRITE_TARGET_S) if stat == "median_s" else "",
                )
            )
        h = sw.get(f"{key}_audit")
        if h:
            extra = ""
            if key == "overwrite":
                extra = (
                    f"; round trip first/last tenth {ms(o['first_tenth_median_s'])} / "
                    f"{ms(o['last_tenth_median_s'])} ({sw['overwrite_history_entries']} history entries at the end)"
                )
            rows.append(
                (
                    f"4 {key} 4 KiB, server-side tool time (audit durationMs, median / p95)",
                    f"{ms(h['median_s'])} / {ms(h['p95_s'])}",
                    f"rest of the round trip (SDK read/dispatch, JSON, pipes, client) "
                    f"{ms(o['median_s'] - h['median_s'])}{extra}",
                    "info",
                    "",
                )
            )

    req_mib = mib(bw["request_bytes"])
    for key, label, floor in (
        ("new", "5 write 10 MiB new file, raw client", f"in-process atomic write {ms(bw['direct_new']['median_s'])}"),
        (
            "overwrite",
            "5 overwrite 10 MiB + history copy, raw client",
            f"in-process atomic replace + durable backup copy {ms(bw['direct_replace_backup']['median_s'])}",
        ),
    ):
        w = bw[f"write_{key}"]
        h = bw.get(f"write_{key}_audit")
        split = ""
        if h:
            split = (
                f"; split: request drained from the pipe at {ms(w['sent']['median_s'])}, tool (audit) "
                f"{ms(h['median_s'])}, rest (SDK parse + dispatch + response) "
                f"{ms(w['line']['median_s'] - w['sent']['median_s'] - h['median_s'])}"
            )
        rows.append(
            (
                f"{label} (median of {w['line']['n']}, request → response line)",
                ms(w["line"]["median_s"]),
                f"{floor}; request {req_mib} of JSON{split}; server CPU {ms(w['server_cpu_per_call_s'])} per call",
                "info",
                "",
            )
        )
    ladder = (
        ("raw", "raw JSON lines, no SDK (1 MiB os.read + json.loads)"),
        ("transport", "SDK stdio transport only (stdio_server: TextIOWrapper readline + validate_json)"),
        ("bare", "bare MCPServer `size` tool (+ session, dispatch, argument validation)"),
    )
    for key, label in ladder:
        b = bw[f"{key}_size"]
        rows.append(
            (
                f"5 10 MiB request into a trivial tool: {label} (median, request → response line)",
                ms(b["line"]["median_s"]),
                f"drained from the pipe at {ms(b['sent']['median_s'])}; server CPU {ms(b['server_cpu_per_call_s'])} "
                "per call",
                "info",
                "",
            )
        )
    rows.append(
        (
            "5 in-process on the same 10 MiB request line: json.loads / SDK validate_json / sha256 / str.encode",
            f"{ms(bw['json_loads']['median_s'])} / {ms(bw['sdk_validate_json']['median_s'])} / "
            f"{ms(bw['sha256']['median_s'])} / {ms(bw['str_encode']['median_s'])}",
            "no MCP, no pipe",
            "info",
            "",
        )
    )
    rows.append(
        (
            "5 file_write server peak RSS (VmHWM) after the 10 MiB writes",
            mib(bw["write_vm_hwm_bytes"]),
            f"bare SDK server after 10 MiB `size` calls {mib(bw['bare_vm_hwm_bytes'])}; SDK transport only "
            f"{mib(bw['transport_vm_hwm_bytes'])}; raw JSON lines {mib(bw['raw_vm_hwm_bytes'])}",
            "info",
            "",
        )
    )

    new, raw, tr, bare = bw["write_new"], bw["raw_size"], bw["transport_size"], bw["bare_size"]
    h = bw.get("write_new_audit")
    tool = h["median_s"] if h else 0.0
    total = new["line"]["median_s"]
    notes.append(
        f"10 MiB new-file write, {ms(total)} in all (in-process atomic write {ms(bw['direct_new']['median_s'])}): "
        f"a raw JSON-lines reader answers the same request in {ms(raw['line']['median_s'])}, the SDK stdio "
        f"transport alone in {ms(tr['line']['median_s'])} ({delta(tr['line']['median_s'] - raw['line']['median_s'])}"
        f" for its stdin read + validate_json instead of json.loads), a bare MCPServer tool in "
        f"{ms(bare['line']['median_s'])} ({delta(bare['line']['median_s'] - tr['line']['median_s'])} for session, "
        "dispatch, argument validation); "
        f"file_write's tool span (audit) is {ms(tool)}, so SDK receive/parse/dispatch ≈ {ms(total - tool)} "
        f"= {(total - tool) / total:.0%} of the call."
    )


def shell_rows(r: dict[str, Any], rows: list[Row], notes: list[str]) -> None:
    se, bo, cc = r["shell_echo"], r["shell_big_output"], r["shell_concurrency"]
    o, a = se["bash_raw"], se["argv_raw"]
    for stat in ("median_s", "p95_s"):
        rows.append(
            (
                f"7 shell_exec `echo hi`, default sandbox, raw client ({stat[:-2]} of {o['n']})",
                ms(o[stat]),
                f"no MCP: subprocess.run(bash -c 'echo hi', capture_output) {ms(se['subprocess_bash'][stat])}, "
                f"`/bin/true` {ms(se['subprocess_true'][stat])}, the server's process.run in-process, unconfined "
                f"(vfork) {ms(se['inprocess_run'][stat])}, parse + policy in-process {ms(se['policy_decide'][stat])}; "
                f"bare SDK echo 'x' {ms(se['bare_echo_raw'][stat])}",
                f"≤ {ms(ECHO_TARGET_S)}" if stat == "median_s" else "—",
                verdict(o[stat] <= ECHO_TARGET_S) if stat == "median_s" else "",
            )
        )
    rows.append(
        (
            "7 shell_exec argv form {command: echo, args: [hi]}, no shell, raw client (median / p95)",
            f"{ms(a['median_s'])} / {ms(a['p95_s'])}",
            f"bash form {ms(o['median_s'])}; policy on the argv in-process {ms(se['policy_decide_argv']['median_s'])}",
            "info",
            "",
        )
    )
    for form, label in (("bash", "`echo hi`"), ("argv", "argv form")):
        h, run_, trip = se.get(f"{form}_audit"), se[f"{form}_run"], se[f"{form}_raw"]
        if not h:
            continue
        rows.append(
            (
                f"7 {label}, server-side tool time (audit durationMs, median / p95)",
                f"{ms(h['median_s'])} / {ms(h['p95_s'])}",
                f"of which process.run (result durationMs) {ms(run_['median_s'])}, the rest "
                f"{ms(h['median_s'] - run_['median_s'])} (in-process: ShellExec.prepare {ms(se['prepare']['median_s'])}"
                f" once (the body reuses the gate's), of it build_env {ms(se['build_env']['median_s'])}; sandbox "
                f"confine() + close() {ms(se['confine_close']['median_s'])}; result model + text + dump "
                f"{ms(se['result_model']['median_s'])}); outside the tool (SDK, JSON, pipes, client) "
                f"{ms(trip['median_s'] - h['median_s'])}",
                "info",
                "",
            )
        )

    ours = bo["ours"]
    line = ours["line"]["median_s"]
    off_line = ""
    if bo.get("ours_off") and bo.get("ours_unconfined"):
        off, base = bo["ours_off"]["line"]["median_s"], bo["ours_unconfined"]["line"]["median_s"]
        off_line = (
            f"the server unconfined (vfork) {ms(base)} (default sandbox {delta(line - base)}), `--sandbox off` "
            f"{ms(off)}; "
        )
    rows.append(
        (
            f"8 50 MB of output, head + tail returned, default sandbox, raw client (median of {ours['line']['n']}, "
            "request → response line)",
            ms(line),
            f"no MCP: bash → /dev/null {ms(bo['subprocess_devnull']['median_s'])}; in-process bounded read (64 KiB "
            f"reads, head + tail) {ms(bo['bounded_read']['median_s'])}; the server's process.run in-process, "
            f"unconfined {ms(bo['inprocess_run']['median_s'])}; {off_line}response {mib(ours['response_bytes'])} of "
            "JSON",
            f"≤ {ms(BIG_OUT_TARGET_S)}",
            verdict(line <= BIG_OUT_TARGET_S),
        )
    )
    split = f"process.run (result durationMs) {ms(ours['run']['median_s'])}"
    if bo.get("ours_audit"):
        h = bo["ours_audit"]["median_s"]
        split = f"tool (audit) {ms(h)}, of which {split}; after the tool (SDK encoding, pipe, client) {ms(line - h)}"
    rows.append(
        (
            "8 50 MB of output, split (median)",
            split,
            f"incl. client json.loads {ms(ours['parsed']['median_s'])}; server CPU "
            f"{ms(ours['server_cpu_per_call_s'])} per call",
            "info",
            "",
        )
    )
    hwm = bo["vm_hwm_bytes"]
    rows.append(
        (
            "8 shell_exec server peak RSS (VmHWM) after the 50 MB calls",
            mib(hwm),
            f"same server idle after initialize {mib(bo['idle_vm_hwm_bytes'])} (VmRSS {mib(bo['idle_vm_rss_bytes'])}),"
            f" after one `echo hi` {mib(bo['after_echo_vm_hwm_bytes'])}; bare SDK server idle "
            f"{mib(bo['bare_idle_vm_hwm_bytes'])} (VmRSS {mib(bo['bare_idle_vm_rss_bytes'])})",
            f"≤ {mib(BIG_OUT_RSS_TARGET)}",
            verdict(hwm <= BIG_OUT_RSS_TARGET),
        )
    )
    flood, one, blob = bo["flood_small_response"], bo["one_mib_output"], bo["bare_blob"]
    rows.append(
        (
            "8 where the peak comes from: VmHWM of fresh servers",
            f"{mib(flood['vm_hwm_bytes'])} / {mib(one['vm_hwm_bytes'])} / {mib(blob['vm_hwm_bytes'])}",
            f"shell_exec: 50 MB with maxOutputBytes 1 KiB (the flood through the buffers, "
            f"{ms(flood['line']['median_s'])} per call) / 1 MiB of output, no flood ({mib(one['response_bytes'])} "
            f"response); bare SDK `blob` tool returning 1 MiB ({mib(blob['response_bytes'])} response)",
            "info",
            "",
        )
    )
    if bo.get("memtrace"):
        m = bo["memtrace"][-1]
        rows.append(
            (
                "8 tracemalloc of a 50 MB call (Python heap, over the start of process.run)",
                f"{mib(m['run_peak'])} / {mib(m['after_run_peak'])}",
                f"peak inside process.run (buffers + render) / peak after it (output model, text block, model_dump, "
                f"SDK JSON encoding + write); {mib(m['run_retained'])} still held when run returns",
                "info",
                "",
            )
        )

    if not ours.get("stdout_ascii", True):
        notes.append(
            "The kept stdout of the 50 MB call is not ASCII: the truncation marker '[… N bytes omitted …]' has "
            "U+2026, so CPython stores the whole ~1 MiB head + tail string at 2 bytes per character; every copy "
            'of it in the server (render, the text block, the JSON line and `json + "\\n"`) is twice the size '
            "an ASCII marker would give."
        )
    wall, first, runs = cc["ours_wall"], cc["ours_first"], cc["ours_run"]
    rows.append(
        (
            f"9 {cc['k']} concurrent `sleep 1`, default sandbox, one connection, wall to the last response "
            f"(median / max of "
            f"{wall['n']})",
            f"{ms(wall['median_s'])} / {ms(wall['max_s'])}",
            f"no MCP: {cc['k']} × Popen(bash -c 'sleep 1') at once {ms(cc['subprocess']['median_s'])}; bare SDK "
            f"{cc['k']} × anyio.sleep(1) {ms(cc['bare_wall']['median_s'])}; first response "
            f"{ms(first['median_s'])}; per call process.run {ms(runs['min_s'])}–{ms(runs['max_s'])}"
            + (
                f"; the server unconfined (vfork) {ms(cc['unconfined_wall']['median_s'])}, `--sandbox off` "
                f"{ms(cc['off_wall']['median_s'])}"
                if cc.get("off_wall") and cc.get("unconfined_wall")
                else ""
            ),
            f"≤ {ms(CONCURRENT_TARGET_S)}",
            verdict(wall["median_s"] <= CONCURRENT_TARGET_S),
        )
    )

    h = se.get("bash_audit")
    if h:
        spawn = se["inprocess_run"]["median_s"]
        notes.append(
            f"`echo hi` round trip {ms(o['median_s'])} = tool span (audit) {ms(h['median_s'])} + SDK/JSON/pipes "
            f"{ms(o['median_s'] - h['median_s'])} (a bare SDK tool round trip is {ms(se['bare_echo_raw']['median_s'])}"
            f"). Inside the tool, process.run takes {ms(se['bash_run']['median_s'])} (in-process, outside the server: "
            f"{ms(spawn)}; subprocess.run of the same bash line {ms(se['subprocess_bash']['median_s'])}), parse + "
            f"policy {ms(se['policy_decide']['median_s'])} per decide, done once (the body reuses the gate's)."
        )


def sandbox_rows(r: dict[str, Any], rows: list[Row], notes: list[str]) -> None:
    sx = r["shell_sandbox"]
    base, off = sx["unconfined"], sx["off"]
    b_raw, o_raw = base["raw"], off["raw"]

    def parts(v: dict[str, Any], ref: dict[str, Any]) -> str:
        h, href = v.get("audit"), ref.get("audit")
        tool = ""
        if h and href:
            tool = f"tool span (audit) {ms(h['median_s'])} ({delta(h['median_s'] - href['median_s'])}); "
        return (
            f"{tool}process.run (result durationMs) {ms(v['run']['median_s'])} "
            f"({delta(v['run']['median_s'] - ref['run']['median_s'])}); calls > 10 ms: {v['raw']['over_10ms']}"
        )

    rows.append(
        (
            f"11 `echo hi`, {SANDBOX_TITLES['unconfined']}, raw client (median / p95 of {b_raw['n']}, five servers "
            "interleaved)",
            f"{ms(b_raw['median_s'])} / {ms(b_raw['p95_s'])}",
            (f"tool span (audit) {ms(base['audit']['median_s'])}; " if base.get("audit") else "")
            + f"process.run (result durationMs) {ms(base['run']['median_s'])}; calls > 10 ms: {b_raw['over_10ms']}; "
            f"sandbox `{sx['labels']['unconfined']}` ✓",
            "the floor",
            "",
        )
    )
    rows.append(
        (
            f"11 `echo hi`, {SANDBOX_TITLES['off']}, raw client (median / p95 of {o_raw['n']}, interleaved)",
            f"{ms(o_raw['median_s'])} / {ms(o_raw['p95_s'])}",
            f"over unconfined: {delta(o_raw['median_s'] - b_raw['median_s'])} median, "
            f"{delta(o_raw['p95_s'] - b_raw['p95_s'])} p95 (off still makes a private TMPDIR per call and sets the "
            f"rlimits by prlimit after a vfork); {parts(off, base)}; sandbox `{sx['labels']['off']}` ✓",
            "info",
            "",
        )
    )
    for name in ("auto", "deny", "jail"):
        v = sx[name]
        raw = v["raw"]
        d_base, d_off = raw["median_s"] - b_raw["median_s"], raw["median_s"] - o_raw["median_s"]
        rows.append(
            (
                f"11 `echo hi`, {SANDBOX_TITLES[name]}, raw client (median / p95 of {raw['n']}, interleaved)",
                f"{ms(raw['median_s'])} / {ms(raw['p95_s'])}",
                f"over unconfined: **{delta(d_base)} median**, {delta(raw['p95_s'] - b_raw['p95_s'])} p95, "
                f"{delta(raw['p99_s'] - b_raw['p99_s'])} p99; over `--sandbox off`: **{delta(d_off)} median**, "
                f"{delta(raw['p95_s'] - o_raw['p95_s'])} p95; {parts(v, base)}; sandbox `{sx['labels'][name]}` ✓",
                f"≤ +{ms(SANDBOX_TARGET_S)} median over unconfined (over off)",
                f"{verdict(d_base <= SANDBOX_TARGET_S)} ({verdict(d_off <= SANDBOX_TARGET_S)} over off)",
            )
        )
    names = ["unconfined", *SANDBOX_VARIANTS]
    if all("idle" in sx[name] for name in names):
        idle = {name: sx[name]["idle"] for name in names}
        d_idle = idle["auto"]["median_s"] - idle["unconfined"]["median_s"]
        rows.append(
            (
                f"11 `echo hi` after {ms(SANDBOX_IDLE_S)} of quiet before each call (a client with think time), "
                f"median / p95 of {idle['auto']['n']}: {' / '.join(names)}",
                " / ".join(f"{ms(idle[k]['median_s'])} / {ms(idle[k]['p95_s'])}" for k in names),
                "over unconfined (median): "
                + ", ".join(f"{k} {delta(idle[k]['median_s'] - idle['unconfined']['median_s'])}" for k in names[1:])
                + "; process.run (median): "
                + ", ".join(f"{k} {ms(sx[k]['idle_run']['median_s'])}" for k in names)
                + "; calls > 10 ms: "
                + ", ".join(f"{k} {idle[k]['over_10ms']}" for k in names),
                f"≤ +{ms(SANDBOX_TARGET_S)} median over unconfined (default)",
                verdict(d_idle <= SANDBOX_TARGET_S),
            )
        )
    sp = r.get("shell_sandbox_parts")
    if not sp:
        return
    spawn, cc, st = sp["spawn"], sp["confine_close"], sp["spawn_steps"]
    rss = {name: sx[name]["vm_rss_bytes"] for name in names}
    plan_names = [name for name in SANDBOX_VARIANTS if name in spawn]
    ladder = ("vfork", "thread_noop", "fork_noop", *plan_names)
    vf = spawn["vfork"]["median_s"]
    rows.append(
        (
            f"11 in-process process.run of `echo hi` (median of {spawn['vfork']['n']}, interleaved): confinement=None "
            "(vfork on the event loop thread) / what-ifs: a spawning thread that applies nothing, a no-op preexec_fn "
            f"(fork) / ShellExec.execute's way per plan: {' / '.join(plan_names)}",
            " / ".join(ms(spawn[k]["median_s"]) for k in ladder),
            "over confinement=None: "
            + ", ".join(f"{k} {delta(spawn[k]['median_s'] - vf)}" for k in ladder[1:])
            + f"; confine() + close() included for the plans (auto's spawn checked to refuse a write outside the "
            f"roots); bench process VmRSS {mib(sp['bench_vm_rss_bytes'])} (the servers': "
            f"{', '.join(f'{k} {mib(b)}' for k, b in rss.items())}); fork's cost grows with it",
            "info",
            "",
        )
    )
    rows.append(
        (
            f"11 in-process confine() + close() per call (median): {' / '.join(cc)}",
            " / ".join(ms(cc[k]["median_s"]) for k in cc),
            f"parts: TMPDIR mkdtemp + rmtree {ms(sp['tmpdir_mkdtemp_rmtree']['median_s'])} (os.mkdir + os.rmdir "
            f"{ms(sp['tmpdir_mkdir_rmdir']['median_s'])}); Landlock ruleset build "
            + ", ".join(f"{k} {ms(v['median_s'])}" for k, v in sp["ruleset"].items())
            + "; no per-call pids cgroup any more (joined once at start-up, see below)",
            "info",
            "",
        )
    )
    threads = ", ".join(f"{k} {sx[k]['threads']}" for k in names if sx[k].get("threads"))
    rows.append(
        (
            f"11 orphan sweep after every process.run (sandbox.reap_orphans, no children; median of "
            f"{sp['reap_orphans']['n']})",
            ms(sp["reap_orphans"]["median_s"]),
            f"reads /proc/self/task/*/children of each thread (bench: {sp['bench_threads']}; the servers at the end "
            f"of their round: {threads}); every server pays it, the unconfined floor included",
            "info",
            "",
        )
    )

    def steps_text(v: dict[str, Any]) -> str:
        return ", ".join(f"{step} {ms(x['median_s'])}" for step, x in v.items() if step != "preexec_in_child")

    def steps_sum(v: dict[str, Any]) -> float:
        return sum(float(x["median_s"]) for step, x in v.items() if step not in ("setns", "preexec_in_child"))

    idle_st = sp.get("spawn_steps_idle_auto", {})
    k_steps = next(iter(st["auto"].values()))["n"]
    rows.append(
        (
            f"11 the spawn step by step, timed where process.run does it (sum of the step medians, {k_steps} samples "
            f"each; confine() + close() not included): {' / '.join(st)}",
            " / ".join(ms(steps_sum(st[k])) for k in st),
            "; ".join(f"{k}: {steps_text(v)}" for k, v in st.items())
            + " (hand-off: Thread.start() → the spawning thread runs; setns: into a namespace made beforehand, a "
            f"what-if, not in the sum; without a hand-off the plan spawns on the calling thread); auto with "
            f"{ms(SANDBOX_IDLE_S)} of quiet before each: {steps_text(idle_st)}",
            "info",
            "",
        )
    )
    cgroups = ", ".join(f"{k} {sx[k].get('pids_cgroup')}" for k in names)
    rows.append(
        (
            "11 once per server, at start-up: in-process sandbox.plan as the server calls it: "
            + " / ".join(sp["plan_s"]),
            " / ".join(ms(v) for v in sp["plan_s"].values()),
            "deny: incl. the network-namespace probe (a Python child); as root, joining the server's pids cgroup "
            f"(bench then in `{sp.get('bench_pids_cgroup')}`); the servers' pids cgroups in the run: {cgroups}",
            "info",
            "",
        )
    )
    f0, f1 = sp["fork_exit"]["median_s"], sp["fork_exit_ballast"]["median_s"]
    r0, r1 = sp["bench_vm_rss_bytes"], sp["bench_vm_rss_ballast_bytes"]
    per_mib = (f1 - f0) / ((r1 - r0) / 2**20)
    rows.append(
        (
            "11 fork's cost against resident memory: os.fork + child _exit + waitpid (median)",
            f"{ms(f0)} / {ms(f1)}",
            f"at VmRSS {mib(r0)} / {mib(r1)} (64 MiB touched ballast): ≈ {per_mib * 1e6:.1f} µs per MiB resident; "
            "what any preexec_fn costs; vfork copies no page tables, and exec then has no copy to tear down",
            "info",
            "",
        )
    )
    wi = sp["whatif"]
    rows.append(
        (
            f"11 what-if, synchronous subprocess.run of `echo hi` (median of {wi['vfork']['n']}, interleaved): "
            "vfork / the previous design, rlimits + Landlock in a preexec_fn (fork; its per-call cgroup join left "
            "out) / the current one, Landlock on a fresh thread + vfork + prlimit"
            + (" / extra exec hop (`/usr/bin/env bash …`)" if "exec_hop" in wi else ""),
            " / ".join(ms(wi[k]["median_s"]) for k in ("vfork", "old_preexec", "thread", "exec_hop") if k in wi),
            f"current over vfork {delta(wi['thread']['median_s'] - wi['vfork']['median_s'])}, previous over vfork "
            f"{delta(wi['old_preexec']['median_s'] - wi['vfork']['median_s'])} (confine() + close() in both; both "
            "checked to refuse a write outside the roots)",
            "info",
            "",
        )
    )

    auto = spawn["auto"]["median_s"]
    d_base = sx["auto"]["raw"]["median_s"] - b_raw["median_s"]
    a_st = st["auto"]
    notes.append(
        f"Sandbox cost on `echo hi`: the default server is {delta(d_base)} (median) over the unconfined server "
        f"(target ≤ +{ms(SANDBOX_TARGET_S)}: {'met' if d_base <= SANDBOX_TARGET_S else 'missed'}); "
        + ", ".join(
            f"{SANDBOX_TITLES[k]} {delta(sx[k]['raw']['median_s'] - b_raw['median_s'])}"
            for k in ("off", "deny", "jail")
        )
        + f". In-process, ShellExec.execute's way with the default plan takes {ms(auto)} against {ms(vf)} for "
        f"process.run with confinement=None ({delta(auto - vf)}): a spawning thread that applies nothing alone is "
        f"{delta(spawn['thread_noop']['median_s'] - vf)}, confine() + close() {ms(cc['auto']['median_s'])}; on the "
        f"thread, hand-off {ms(a_st.get('handoff', {}).get('median_s', 0))}, Landlock "
        f"{ms(a_st.get('landlock', {}).get('median_s', 0))}, 5 × prlimit {ms(a_st['prlimit']['median_s'])}. The "
        f"orphan sweep after each call ({ms(sp['reap_orphans']['median_s'])} in the bench) is in the floor too. A "
        f"fork instead of vfork (a no-op preexec_fn) would add {delta(spawn['fork_noop']['median_s'] - vf)} at the "
        f"bench's VmRSS {mib(sp['bench_vm_rss_bytes'])} (≈ {per_mib * 1e6:.0f} µs per MiB resident); synchronously, "
        f"the previous design (rlimits + Landlock in a preexec_fn) took {ms(wi['old_preexec']['median_s'])} against "
        f"{ms(wi['thread']['median_s'])} for the current one and {ms(wi['vfork']['median_s'])} for a bare vfork."
    )
    if all("idle" in sx[k] for k in names) and idle_st:
        i_base = sx["unconfined"]["idle"]["median_s"]
        notes.append(
            f"With {ms(SANDBOX_IDLE_S)} of quiet before each call: "
            + ", ".join(
                f"{k} {ms(sx[k]['idle']['median_s'])} ({delta(sx[k]['idle']['median_s'] - i_base)})" for k in names[1:]
            )
            + f" against unconfined {ms(i_base)}; process.run (result durationMs) default "
            f"{ms(sx['auto']['idle_run']['median_s'])} vs unconfined {ms(sx['unconfined']['idle_run']['median_s'])}. "
            f"The default plan's spawn steps in-process after the same quiet: {steps_text(idle_st)} (back to back: "
            f"{steps_text(a_st)}). The pids cgroup is no longer joined per call (no cgroup migration per spawn): the "
            f"default server ran in `{sx['auto'].get('pids_cgroup')}`, its commands born there."
        )


def shell_profile_table(p: dict[str, Any]) -> str:
    audit = f"; tool span (audit) {ms(p['audit']['median_s'])}" if p.get("audit") else ""
    lines = [
        f"cProfile of mcp-server-shell-exec, all threads, {p['calls']} × `echo hi` (wall "
        f"{ms(p['wall_median_s'])} per call under the profiler{audit}; waits - idle threads, epoll while bash runs, "
        f"stdin readline blocked on the pipe - left out; busy {ms(p['busy_per_call_s'])} per call):",
        "",
        "| Function (own time) | Own time per call | Cumulative per call | Calls |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {e['function']} | {ms(e['tottime_per_call_s'])} | {ms(e['cumtime_per_call_s'])} | {e['ncalls']} |"
        for e in p["top"]
    ]
    lines += ["", "| Key function (cumulative, wall) | Per call | Calls |", "|---|---|---|"]
    lines += [f"| {e['function']} | {ms(e['cumtime_per_call_s'])} | {e['ncalls']} |" for e in p["key"]]
    return "\n".join(lines)


def profile_table(p: dict[str, Any]) -> str:
    lines = [
        f"cProfile of mcp-server-file-write, all threads, {p['calls']} × 10 MiB new-file write "
        f"(wall {ms(p['wall_median_s'])} per call under the profiler; waits - idle threads, stdin readline "
        "blocked on the pipe, worker threads' GIL waits in socket.send - left out; "
        f"busy {ms(p['busy_per_call_s'])} per call):",
        "",
        "| Function (own time) | Own time per write | Cumulative per write | Calls |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {e['function']} | {ms(e['tottime_per_call_s'])} | {ms(e['cumtime_per_call_s'])} | {e['ncalls']} |"
        for e in p["top"]
    ]
    lines += ["", "| Key function (cumulative) | Per write |", "|---|---|"]
    lines += [f"| {e['function']} | {ms(e['cumtime_per_call_s'])} |" for e in p["key"]]
    return "\n".join(lines)


def fs_type(path: Path) -> str:
    """File system type of the mount holding ``path`` (fsync costs depend on it)."""
    real, best, kind = os.path.realpath(path), "", "?"
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                mount = parts[1]
                if (real == mount or real.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best):
                    best, kind = mount, f"{parts[2]} ({parts[0]} on {mount})"
    except OSError:
        pass
    return kind


def git_state() -> dict[str, Any]:
    """Commit and dirtiness of the tree measured (the servers run from it, edits included)."""

    def git(*args: str) -> str:
        try:
            # rstrip only: porcelain status lines start with a space that is part of their format.
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.rstrip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    dirty = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()]
    return {"commit": git("rev-parse", "HEAD") or None, "modified_files": dirty}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small counts, for a smoke run")
    ap.add_argument(
        "--only",
        choices=("read", "write", "shell", "memory"),
        help="run only the file_read (1-3), file_write (4-6), shell_exec (7-11) or memory (12) part",
    )
    ns = ap.parse_args(argv)
    counts = QUICK if ns.quick else FULL
    do_read, do_write, do_shell = (ns.only in (None, part) for part in ("read", "write", "shell"))
    do_memory = ns.only in (None, "memory")
    results_path = RESULTS if ns.only is None else RESULTS.with_name(f"latest-{ns.only}.json")

    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as tmpdir:
        tmp = Path(tmpdir)
        root = tmp / "root"
        root.mkdir()
        small, big, policy = root / "small.txt", root / "big.txt", tmp / "policy.toml"
        small.write_bytes(make_text(SMALL_SIZE, seed=1))
        big.write_bytes(make_text(BIG_SIZE, seed=2))
        policy.write_text(BIG_POLICY)
        write_root, write_policy = tmp / "wroot", tmp / "write-policy.toml"
        write_root.mkdir()
        write_policy.write_text(WRITE_POLICY)
        shell_root = tmp / "sroot"
        shell_root.mkdir()
        filesystem = fs_type(write_root)
        stderr_path = tmp / "servers.stderr"
        with open(stderr_path, "w") as stderr:
            env = Env(
                tmp=tmp,
                root=root,
                small=small,
                big=big,
                policy=policy,
                server_cmd=find_server() if do_read or do_memory else "",
                stderr=stderr,
                small_sha=direct_read(small),
                big_sha=direct_read(big),
                write_cmd=find_server("mcp-server-file-write") if do_write or do_memory else "",
                write_root=write_root,
                write_policy=write_policy,
                shell_cmd=find_server("mcp-server-shell-exec") if do_shell or do_memory else "",
                shell_root=shell_root,
                sandbox_labels=expected_sandbox_labels() if do_shell else {},
            )
            started = time.perf_counter()
            results: dict[str, Any] = {}
            try:
                if do_read:
                    print("1/12 cold start ...", file=sys.stderr, flush=True)
                    results["cold_start"] = cold_start(env, counts)
                    print("2/12 4 KiB reads ...", file=sys.stderr, flush=True)
                    results["read_4k"] = small_reads(env, counts)
                    print("3/12 10 MiB reads ...", file=sys.stderr, flush=True)
                    results["read_10m"] = big_reads(env, counts)
                if do_write:
                    print("4/12 4 KiB writes ...", file=sys.stderr, flush=True)
                    results["write_4k"] = small_writes(env, counts)
                    req = BigRequest.make(BIG_SIZE, seed=4)
                    print("5/12 10 MiB writes ...", file=sys.stderr, flush=True)
                    results["write_10m"] = big_writes(env, counts, req)
                    print("6/12 profile of the 10 MiB writes ...", file=sys.stderr, flush=True)
                    results["write_profile"] = profile_big_writes(env, counts, req)
                    del req  # 30 MiB of request the shell part's forks need not copy page tables of
                if do_shell:
                    print("7/12 shell_exec echo hi ...", file=sys.stderr, flush=True)
                    results["shell_echo"] = shell_echo(env, counts)
                    print("8/12 shell_exec 50 MB of output ...", file=sys.stderr, flush=True)
                    results["shell_big_output"] = shell_big_output(env, counts)
                    print("9/12 shell_exec 16 concurrent sleep 1 ...", file=sys.stderr, flush=True)
                    results["shell_concurrency"] = shell_concurrency(env, counts)
                    print("10/12 profile of echo hi ...", file=sys.stderr, flush=True)
                    results["shell_profile"] = profile_shell_echo(env, counts)
                    print("11/12 shell_exec sandbox overhead ...", file=sys.stderr, flush=True)
                    results["shell_sandbox"] = shell_sandbox(env, counts)
                    print("11/12 where the sandbox's time goes (in-process) ...", file=sys.stderr, flush=True)
                    results["shell_sandbox_parts"] = sandbox_parts(env, counts)
                if do_memory:
                    print("12/12 peak memory per server ...", file=sys.stderr, flush=True)
                    results["memory"] = memory_bounds(env, counts)
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
            "only": ns.only,
            "filesystem": filesystem,
            "git": git_state(),
            "elapsed_s": elapsed,
            "units": "seconds unless the key says bytes",
        },
        "results": results,
        "table_markdown": table,
        "notes": notes,
    }
    results_path.parent.mkdir(parents=True, exist_ok=True)
    results_path.write_text(json.dumps(report, indent=2) + "\n")

    print(table)
    print()
    for note in notes:
        print(f"- {note}")
    if results.get("write_profile"):
        print()
        print(profile_table(results["write_profile"]))
    if results.get("shell_profile"):
        print()
        print(shell_profile_table(results["shell_profile"]))
    print(
        f"\n({'quick' if ns.quick else 'full'} run, {elapsed:.0f} s; writes on {filesystem}; "
        f"JSON in {results_path.relative_to(REPO)})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
