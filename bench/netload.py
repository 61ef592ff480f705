"""Latency under network load (issue 28): ordinary `echo hi` calls, one after another, while many shell_exec calls
on the same connection download through the egress proxy; beside the same calls with no load, in the same run.

    uv run python -m bench.netload [--downloads 100] [--size 1048576] [--seconds 6] [--floor 30]

The origin is an HTTP server in a process of its own on 127.0.0.1 (as a remote server would be), serving ``--size``
bytes paced over ``--seconds`` (16 pieces; 0: as fast as it can), so that the downloads overlap. Each download is
`curl` in its own boxed call, through the call's proxy (the box sets ``http_proxy``); the policy allows the origin
by name (``MCP_GUARD_TEST_HOSTS`` resolves it to 127.0.0.1, as the tests do). The ``--downloads`` calls are
written at once; then `echo hi` calls go one after another until the last download is answered, each sorted by
what the origin said just before it was sent:

* *starting*: not every download has reached the origin yet (the box is still starting calls);
* *downloading*: every download has started, none has finished;
* *ending*: downloads are finishing (their calls end: results, copies, listeners).

Target (issue 28): an ordinary call's median stays at most 50 ms while the downloads run.

Beside each `echo hi`, to tell what the server does from what the machine's two cores allow:

* the same `echo hi` calls with no load, before and after (the floor);
* in turn with each `echo hi`: a bare SDK server's echo tool (another process with its own event loop: what CPU
  contention alone does to an MCP round trip) and `bash -c 'echo hi'` spawned by the bench (to starting a process);
  and the share of the machine's CPU time that was busy (/proc/stat);
* the server's own loop, probed from inside (bench/servers/lag_server.py): how late a 5 ms timer fires, the time
  the loop spends in callbacks and how much of it on a CPU, the loop thread's time waiting in the run queue for a
  CPU (schedstat), and the callbacks that held it longest.

Then a check of the worker threads (``--stdin-calls``): that many commands that never read their stdin (128 KiB
of it each: more than a pipe holds), and an `echo` whose line is long enough to be checked on a worker thread.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from bench.client import RawClient, RPCError, check_shell
from bench.core import BARE_SERVER, BASH, BENCH_DIR, ECHO_LINE, RESULTS, SHELL_MODULE, cpu_seconds, median, p95

LAG_SERVER = BENCH_DIR / "servers" / "lag_server.py"
TARGET_S = 0.050  # an ordinary call's median while the downloads run
PIECES = 16
HOST = "origin.test"
WINDOWS = ("starting", "downloading", "ending")
LONG_ECHO = "echo hi # " + "x" * 5000  # past the 4096 characters checked on the event loop


# -- the origin (a process of its own) ------------------------------------------------------------------


async def serve_origin(size: int, seconds: float) -> None:
    """Serve ``GET /blob`` (``size`` bytes in PIECES pieces over ``seconds``) and ``GET /stats`` (downloads
    running, started and done); print the port, run until stdin closes."""
    stats = {"active": 0, "started": 0, "done": 0}
    piece = b"x" * (size // PIECES)
    last = b"x" * (size - len(piece) * (PIECES - 1))

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        blob = False
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            if head.split(b" ", 2)[1].endswith(b"/stats"):
                body = json.dumps(stats).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
                )
            else:
                blob = True
                stats["active"] += 1
                stats["started"] += 1
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size)
                for i in range(PIECES):
                    if i and seconds:
                        await asyncio.sleep(seconds / PIECES)
                    writer.write(last if i == PIECES - 1 else piece)
                    await writer.drain()
                stats["done"] += 1
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            if blob:
                stats["active"] -= 1
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    server.close()


def origin_stats(port: int) -> dict[str, int]:
    """The origin's counters, asked directly (not through the proxy)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/stats")
        stats: dict[str, int] = json.loads(conn.getresponse().read())
        return stats
    finally:
        conn.close()


def processes_with(cmdline: str) -> list[int]:
    """The pids whose command line (NUL-separated, as /proc has it) starts with ``cmdline``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace").startswith(cmdline):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def machine_cpu() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs so far, from /proc/stat."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    total = sum(fields[:8])
    return total - fields[3] - fields[4], total  # idle and iowait are not busy


# -- the server's loop probe ------------------------------------------------------------------------------


class LoopProbe:
    """The server's event-loop probe (bench/servers/lag_server.py): SIGUSR1 writes what it saw since the last."""

    def __init__(self, pid: int, out: Path) -> None:
        self.pid, self.out, self.seq = pid, out, 0
        self.last: dict[str, Any] = {}

    def take(self) -> dict[str, Any]:
        """What the loop did since the previous take (the threads' times as differences)."""
        self.seq += 1
        os.kill(self.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 30
        while True:
            try:
                seen: dict[str, Any] = json.loads(self.out.read_text())
            except (OSError, ValueError):
                seen = {}
            if seen.get("seq") == self.seq:
                break
            if time.monotonic() > deadline:
                raise TimeoutError("the server's loop probe did not answer")
            time.sleep(0.002)
        then = self.last.get("loop_thread", [0.0, 0.0])
        ran, waited = (now - before for now, before in zip(seen["loop_thread"], then, strict=True))
        self.last = seen
        return {**seen, "ran_s": ran, "waited_s": waited}


@dataclass
class Loop:
    """What the server's loop did over some stretch of time (sums of the probe's reports)."""

    wall_s: float = 0.0
    busy_s: float = 0.0  # in callbacks
    busy_cpu_s: float = 0.0  # of it, on a CPU
    ran_s: float = 0.0  # the loop thread on a CPU
    waited_s: float = 0.0  # the loop thread runnable, waiting in the run queue for a CPU
    lags_s: list[float] = field(default_factory=list)
    slow: dict[str, list[float]] = field(default_factory=dict)  # label -> [count, total s, max s, s on a CPU]

    def add(self, seen: dict[str, Any]) -> None:
        self.wall_s += seen["wall_s"]
        self.busy_s += seen["busy_s"]
        self.busy_cpu_s += seen["busy_cpu_s"]
        self.ran_s += seen["ran_s"]
        self.waited_s += seen["waited_s"]
        self.lags_s += seen["lags_s"]
        for s in seen["slow"]:
            entry = self.slow.setdefault(s["label"], [0, 0.0, 0.0, 0.0])
            entry[0] += s["count"]
            entry[1] += s["total_s"]
            entry[2] = max(entry[2], s["max_s"])
            entry[3] += s["cpu_s"]

    def summary(self) -> dict[str, Any]:
        lags = self.lags_s or [0.0]
        slow = sorted(self.slow.items(), key=lambda kv: -kv[1][1])[:6]
        return {
            "wall_s": self.wall_s,
            "busy_s": self.busy_s,
            "busy_cpu_s": self.busy_cpu_s,
            "ran_s": self.ran_s,
            "waited_s": self.waited_s,
            "lag_median_s": median(lags),
            "lag_p95_s": p95(lags),
            "lag_max_s": max(lags),
            "slow": [{"label": k, "count": v[0], "total_s": v[1], "max_s": v[2], "cpu_s": v[3]} for k, v in slow],
        }


# -- the run ---------------------------------------------------------------------------------------------


@dataclass
class Sample:
    ours_s: float
    bare_s: float
    spawn_s: float
    cpu_busy: float  # share of the machine's CPU time busy during the three
    window: str = ""
    stats: dict[str, int] = field(default_factory=dict)  # the origin's, just before


@dataclass
class Window:
    samples: list[Sample] = field(default_factory=list)
    loop: Loop = field(default_factory=Loop)

    def summary(self) -> dict[str, Any]:
        def stats(xs: list[float]) -> dict[str, float]:
            return {"n": len(xs), "median_s": median(xs), "max_s": max(xs)} if xs else {"n": 0}

        s = self.samples
        return {
            "ours": stats([x.ours_s for x in s]),
            "bare": stats([x.bare_s for x in s]),
            "spawn": stats([x.spawn_s for x in s]),
            "cpu_busy": median([x.cpu_busy for x in s]) if s else 0.0,
            "loop": self.loop.summary(),
        }


class Bench:
    def __init__(self, tmp: Path, stderr: TextIO, size: int, seconds: float) -> None:
        self.root = tmp / "root"
        self.root.mkdir()
        self.origin = subprocess.Popen(
            [sys.executable, "-m", "bench.netload", "--origin", "--size", str(size), "--seconds", str(seconds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.origin.stdout is not None
        self.port = int(self.origin.stdout.readline())
        policy = tmp / "policy.toml"
        policy.write_text(f'[network]\nallow = ["{HOST}:{self.port}"]\n')
        env = os.environ | {"MCP_GUARD_TEST_HOSTS": f"{HOST}=127.0.0.1"}
        probe_out = tmp / "loop.json"
        argv = [sys.executable, str(LAG_SERVER), str(probe_out), SHELL_MODULE]
        argv += ["--audit-log", str(tmp / "audit.jsonl"), "--policy", str(policy), "--network", "policy"]
        self.ours = RawClient(argv, self.root, stderr, env=env)
        self.bare = RawClient([sys.executable, str(BARE_SERVER)], self.root, stderr)
        self.ours.initialize()
        self.bare.initialize()
        self.probe = LoopProbe(self.ours.pid, probe_out)
        self.label = check_shell(self.ours.call_tool("shell_exec", {"command": ECHO_LINE}), stdout="hi\n")["sandbox"]

    def close(self) -> None:
        self.ours.close()
        self.bare.close()
        assert self.origin.stdin is not None
        self.origin.stdin.close()
        self.origin.wait(30)

    def sample(self, line: str = ECHO_LINE) -> Sample:
        busy0, total0 = machine_cpu()
        t0 = time.perf_counter()
        check_shell(self.ours.call_tool("shell_exec", {"command": line}, timeout=120), stdout="hi\n")
        t1 = time.perf_counter()
        self.bare.call_tool("echo", {"text": "x"})
        t2 = time.perf_counter()
        subprocess.run([*BASH, ECHO_LINE], capture_output=True, check=True)
        t3 = time.perf_counter()
        busy1, total1 = machine_cpu()
        share = (busy1 - busy0) / (total1 - total0) if total1 > total0 else 0.0
        return Sample(t1 - t0, t2 - t1, t3 - t2, share)

    def idle(self, n: int) -> Window:
        """``n`` echo calls with no load: the floor."""
        for _ in range(5):
            self.sample()
        window = Window()
        self.probe.take()
        window.samples = [self.sample() for _ in range(n)]
        window.loop.add(self.probe.take())
        return window

    def send(self, command: str, k: int, **arguments: Any) -> list[int]:
        args = {"command": command, "timeoutSeconds": 120, **arguments}
        return [self.ours.send("tools/call", {"name": "shell_exec", "arguments": args}) for _ in range(k)]

    def answers(self, ids: list[int]) -> list[dict[str, Any]]:
        results = [self.ours.wait(rid, timeout=120) for rid in ids]
        for result in results:
            if result.get("isError"):
                raise RPCError(f"a load call failed: {result.get('content')}")
        return [r.get("structuredContent") or {} for r in results]

    def downloads(self, k: int, size: int, max_samples: int) -> dict[str, Any]:
        """``k`` downloads at once, and echo calls one after another until the last is answered."""
        curl = f"curl -sS --max-time 100 -o /dev/null -w '%{{size_download}}' http://{HOST}:{self.port}/blob"
        windows = {name: Window() for name in WINDOWS}
        self.probe.take()
        cpu0 = cpu_seconds(self.ours.pid)
        t0 = time.perf_counter()
        ids = self.send(curl, k)
        while (
            any(rid not in self.ours.arrived for rid in ids)
            and sum(len(w.samples) for w in windows.values()) < max_samples
        ):
            stats = origin_stats(self.port)
            name = "starting" if stats["started"] < k else "downloading" if not stats["done"] else "ending"
            sample = self.sample()
            sample.window, sample.stats = name, stats
            windows[name].samples.append(sample)
            windows[name].loop.add(self.probe.take())
        for result in self.answers(ids):
            if result.get("stdout") != str(size):
                raise RuntimeError(f"a download did not arrive whole: {result}")
        wall = max(self.ours.arrived[rid] for rid in ids) - t0
        return {
            "wall_s": wall,
            "server_cpu_s": cpu_seconds(self.ours.pid) - cpu0,
            "windows": {name: w.summary() for name, w in windows.items()},
            "samples": [asdict(s) for name in WINDOWS for s in windows[name].samples],
        }

    def unread_stdin(self, k: int, n: int) -> dict[str, Any]:
        """``k`` calls whose command never reads its stdin, and (once they all run, or no more of them has started
        for a second) ``n`` echo calls with a line long enough to be checked on a worker thread, one after another."""
        if not k:
            return {}
        token = f"8.{os.getpid()}{int(time.time() * 1000) % 100000}"  # this run's `sleep`, found in /proc
        t0 = time.perf_counter()
        ids = self.send(f"sleep {token}", k, stdin="x" * (128 << 10))
        deadline, running, grew = time.monotonic() + 10, 0, time.monotonic()
        while running < k and time.monotonic() < min(deadline, grew + 1.0):  # all run, or no more start for 1 s
            time.sleep(0.05)
            if (now := len(processes_with(f"sleep\0{token}"))) > running:
                running, grew = now, time.monotonic()
        started_s = time.perf_counter() - t0
        window = Window(samples=[self.sample(LONG_ECHO) for _ in range(n)])
        self.answers(ids)
        return {"k": k, "running": running, "started_s": started_s, **window.summary()}


def measure(ns: argparse.Namespace, stderr: TextIO) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mcp-netload-") as tmpdir:
        bench = Bench(Path(tmpdir), stderr, ns.size, ns.seconds)
        try:
            out: dict[str, Any] = {
                "sandbox": bench.label,
                **{k: getattr(ns, k) for k in ("downloads", "size", "seconds")},
            }
            out["floor"] = bench.idle(ns.floor).summary()
            out["load"] = bench.downloads(ns.downloads, ns.size, ns.max_samples)
            out["floor_after"] = bench.idle(ns.floor).summary()
            out["unread_stdin"] = bench.unread_stdin(ns.stdin_calls, 5)
        finally:
            bench.close()
    return out


def _cell(stats: dict[str, float]) -> str:
    if not stats.get("n"):
        return "—"
    return f"{stats['median_s'] * 1000:.1f} / {stats['max_s'] * 1000:.0f} ms (n={int(stats['n'])})"


def report(r: dict[str, Any]) -> list[str]:
    k = r["downloads"]
    load = r["load"]
    lines = [
        f"{k} × curl of {r['size'] >> 10} KiB through the proxy, paced over {r['seconds']} s by the origin; sandbox "
        f"{r['sandbox']}; all answered in {load['wall_s']:.2f} s (server CPU {load['server_cpu_s']:.2f} s)",
        "",
        "| `echo hi` | shell_exec median / max | bare SDK echo | bash spawn | machine CPU busy | loop: in callbacks "
        "(on CPU) / run-queue wait / timer lag p95 |",
        "|---|---|---|---|---|---|",
    ]
    rows = [("no load (floor)", r["floor"])]
    rows += [(f"while the calls are {name}", load["windows"][name]) for name in WINDOWS]
    rows += [("no load, after", r["floor_after"])]
    for name, w in rows:
        lp = w["loop"]
        wall = lp["wall_s"] or 1.0
        lines.append(
            f"| {name} | {_cell(w['ours'])} | {_cell(w['bare'])} | {_cell(w['spawn'])} | {w['cpu_busy']:.0%} | "
            f"{lp['busy_s'] / wall:.0%} ({lp['busy_cpu_s'] / wall:.0%}) / {lp['waited_s'] / wall:.0%} / "
            f"{lp['lag_p95_s'] * 1000:.1f} ms |"
        )
    running = load["windows"]["downloading"]["ours"]
    if running.get("n"):
        ok = running["median_s"] <= TARGET_S
        lines.append(f"\ntarget: median ≤ {TARGET_S * 1000:.0f} ms while the downloads run: {'✓' if ok else '✗'}")
    for name in WINDOWS:
        for slow in load["windows"][name]["loop"]["slow"][:4]:
            lines.append(
                f"- {name}, slow callback: {slow['label']}: {slow['count']} × (total {slow['total_s'] * 1000:.0f} ms, "
                f"{slow['cpu_s'] * 1000:.0f} ms of it on a CPU; max {slow['max_s'] * 1000:.1f} ms)"
            )
    if r["unread_stdin"]:
        u = r["unread_stdin"]
        lines.append(
            f"\n`echo` with a {len(LONG_ECHO)}-character line (checked on a worker thread) while {u['k']} commands "
            f"leave 128 KiB of stdin unread: {_cell(u['ours'])} ({u['running']} of them running after "
            f"{u['started_s']:.1f} s)"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--downloads", type=int, default=100)
    ap.add_argument("--size", type=int, default=1 << 20)
    ap.add_argument("--seconds", type=float, default=6.0, help="how long the origin takes to send one download")
    ap.add_argument("--floor", type=int, default=30, help="echo calls with no load, before and after")
    ap.add_argument("--max-samples", type=int, default=400)
    ap.add_argument("--stdin-calls", type=int, default=45, help="commands leaving their stdin unread (0: skip)")
    ap.add_argument("--origin", action="store_true", help=argparse.SUPPRESS)
    ns = ap.parse_args(argv)
    if ns.origin:
        asyncio.run(serve_origin(ns.size, ns.seconds))
        return 0
    r = measure(ns, sys.stderr)
    path = RESULTS.with_name("netload.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(r, indent=2) + "\n")
    print("\n".join(report(r)))
    print(f"\n(JSON in {path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
