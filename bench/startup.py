"""What an agent CLI that spawns a server on demand waits for: spawn -> initialize -> tools/list -> first
tools/call result, for each server and, in the same run, for the bare SDK server (the floor).

    uv run python -m bench.startup [--spawns 20] [--new-projects]

Prints p50 and p95 in milliseconds; the targets: a first answer within 300 ms and a first result within 500 ms
(p95). ``--new-projects`` starts each spawn in a directory no server has started in before (an agent CLI opening
project after project); by default every spawn starts in the same one.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.client import find_server
from bench.core import median, p95

BARE = Path(__file__).with_name("servers") / "bare_server.py"
TARGET_MS = 500.0  # the first tool result (the agent CLI's budget)
ANSWER_MS = 300.0  # the first answer (initialize)


def _exchange(argv: Sequence[str], cwd: Path, tool: str, arguments: dict[str, Any]) -> tuple[float, float]:
    """(initialize result, first tools/call result), seconds after the spawn."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()

    def answer(rid: int) -> dict[str, Any]:
        assert proc.stdout is not None
        while True:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{argv[0]} closed stdout")
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == rid:
                return message

    try:
        info = {"name": "startup-bench", "version": "1"}
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info}
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        answer(1)
        initialized = time.perf_counter() - started
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        answer(2)
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
        result = answer(3)
        first = time.perf_counter() - started
        if "error" in result or result["result"].get("isError"):
            raise RuntimeError(f"{tool} failed: {result}")
        return initialized, first
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def measure(spawns: int, new_projects: bool = False) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="mcp-startup-") as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        (root / "hello.txt").write_text("hello\n", encoding="utf-8")
        audit = ["--audit-log", str(Path(tmp) / "audit.jsonl")]
        history = ["--history-dir", str(Path(tmp) / "history")]
        counter = iter(range(1_000_000))
        Make = Callable[[], tuple[list[str], str, dict[str, Any]]]
        kinds: dict[str, Make] = {
            "bare SDK server (floor)": lambda: ([sys.executable, str(BARE)], "echo", {"text": "hi"}),
            "file_read": lambda: ([find_server("mcp-server-file-read"), *audit], "file_read", {"path": "hello.txt"}),
            "file_write": lambda: (
                [find_server("mcp-server-file-write"), *audit, *history],
                "file_write",
                {"path": f"w{next(counter)}.txt", "content": "x"},
            ),
            "shell_exec": lambda: ([find_server("mcp-server-shell-exec"), *audit], "shell_exec", {"command": "true"}),
        }
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
        for i in range(spawns + 1):  # round 0 warms the page cache and is discarded
            for kind, make in kinds.items():
                argv, tool, arguments = make()
                where = root
                if new_projects:
                    where = Path(tmp) / f"project-{next(counter)}"
                    where.mkdir()
                    (where / "hello.txt").write_text("hello\n", encoding="utf-8")
                sample = _exchange(argv, where, tool, arguments)
                if i:
                    times[kind].append(sample)
    return {
        kind: {
            "init_p50_ms": median([s[0] for s in samples]) * 1000,
            "init_p95_ms": p95([s[0] for s in samples]) * 1000,
            "first_p50_ms": median([s[1] for s in samples]) * 1000,
            "first_p95_ms": p95([s[1] for s in samples]) * 1000,
        }
        for kind, samples in times.items()
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spawns", type=int, default=20)
    ap.add_argument("--new-projects", action="store_true", help="each spawn in a directory of its own")
    ns = ap.parse_args(argv)
    rows = measure(ns.spawns, ns.new_projects)
    where = "each in a new project" if ns.new_projects else "all in one project"
    print(f"spawn -> initialize -> tools/list -> first tools/call result, {ns.spawns} spawns each, {where}")
    print("| server | initialize p50 / p95 | first result p50 | first result p95 | targets p95 300 / 500 ms |")
    print("|---|---|---|---|---|")
    for kind, row in rows.items():
        met = [row["init_p95_ms"] <= ANSWER_MS, row["first_p95_ms"] <= TARGET_MS]
        verdict = "-" if kind.startswith("bare") else " / ".join("met" if m else "missed" for m in met)
        print(
            f"| {kind} | {row['init_p50_ms']:.0f} / {row['init_p95_ms']:.0f} ms | {row['first_p50_ms']:.0f} ms "
            f"| {row['first_p95_ms']:.0f} ms | {verdict} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
