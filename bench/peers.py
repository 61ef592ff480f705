"""Ours beside the reference filesystem server (FS, @modelcontextprotocol/server-filesystem), same run, same raw
JSON-RPC client: tools/list, a 4 KiB read, a 4 KiB overwrite, and a whole 10 MiB file (ours page by page, FS in
one call, as each would be used).

    uv run python -m bench.peers [--calls 300] [--rounds 5]

Installs FS with ``npm ci`` into bench/peers/ on first use. Calls alternate between the servers in blocks, so
a slow spell of the machine hits both. Prints medians in milliseconds.
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

from bench.client import RawClient, find_server
from bench.core import BIG_SIZE, SMALL_SIZE, make_text, median
from bench.writes import DirectWriter

PEERS = Path(__file__).with_name("peers")
FS_ENTRY = PEERS / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
BLOCK = 25  # calls per server before switching to the other


def fs_argv(root: Path) -> list[str]:
    if not FS_ENTRY.exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=PEERS, check=True)
    return ["node", str(FS_ENTRY), str(root)]


def interleaved(calls: dict[str, Callable[[], object]], n: int) -> dict[str, float]:
    """Median seconds of each callable over n calls, run in alternating blocks after one warm-up block."""
    times: dict[str, list[float]] = {k: [] for k in calls}
    for block in range(n // BLOCK + 1):
        for kind, fn in calls.items():
            for _ in range(BLOCK):
                t0 = time.perf_counter()
                fn()
                if block:
                    times[kind].append(time.perf_counter() - t0)
    return {k: median(v) for k, v in times.items()}


def read_all_pages(c: RawClient, name: str) -> int:
    """Read a whole file with file_read the way a model does: follow nextOffset. Returns the number of calls."""
    args: dict[str, Any] = {"path": name}
    calls = 0
    while True:
        calls += 1
        out = c.call_tool("file_read", args)["structuredContent"]
        if "nextOffset" not in out:
            return calls
        args = {"path": name, "offset": out["nextOffset"]}


def measure(n: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mcp-peers-") as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        small = make_text(SMALL_SIZE, seed=1)
        (root / "small.txt").write_bytes(small)
        (root / "big.txt").write_bytes(make_text(BIG_SIZE, seed=2))
        text = make_text(SMALL_SIZE, seed=3).decode()
        (root / "same.txt").write_text(text)
        (root / "fs-same.txt").write_text(text)
        ours_flags = ["--audit-log", str(Path(tmp) / "audit.jsonl")]
        with (
            open(Path(tmp) / "stderr", "w") as stderr,
            RawClient(fs_argv(root), root, stderr) as fs,
            RawClient([find_server("mcp-server-file-read"), *ours_flags], root, stderr) as reader,
            RawClient(
                [find_server("mcp-server-file-write"), *ours_flags, "--history-dir", str(Path(tmp) / "history")],
                root,
                stderr,
            ) as writer,
        ):
            for c in (fs, reader, writer):
                c.initialize()
            if reader.call_tool("file_read", {"path": "small.txt"})["structuredContent"]["content"] != small.decode():
                raise RuntimeError("file_read returned something else than the file")
            fs_small = {"path": str(root / "small.txt")}
            if small.decode() not in fs.call_tool("read_text_file", fs_small)["content"][0]["text"]:
                raise RuntimeError("FS read_text_file returned something else than the file")
            out: dict[str, Any] = {}
            out["tools_list"] = interleaved(
                {"ours": lambda: reader.request("tools/list", {}), "fs": lambda: fs.request("tools/list", {})}, n
            )
            out["read_4k"] = interleaved(
                {
                    "ours": lambda: reader.call_tool("file_read", {"path": "small.txt"}),
                    "fs": lambda: fs.call_tool("read_text_file", fs_small),
                },
                n,
            )
            same = {"path": "same.txt", "content": text, "overwrite": True}
            fs_same = {"path": str(root / "fs-same.txt"), "content": text}
            floor = DirectWriter(root, Path(tmp) / "floor-history")
            (root / "floor-same.txt").write_text(text)
            data = text.encode()
            try:
                out["write_4k"] = interleaved(
                    {
                        "ours": lambda: writer.call_tool("file_write", same),
                        "fs": lambda: fs.call_tool("write_file", fs_same),
                        # FS writes without fsync; ours is durable: the same steps in-process, no MCP, no guards.
                        "durable_floor": lambda: floor.replace_with_backup("floor-same.txt", data),
                    },
                    n,
                )
            finally:
                floor.close()
            big_ours: list[float] = []
            big_fs: list[float] = []
            pages = 0
            for r in range(rounds + 1):  # round 0 warms the page cache and is discarded
                t0 = time.perf_counter()
                pages = read_all_pages(reader, "big.txt")
                t1 = time.perf_counter()
                fs.call_tool("read_text_file", {"path": str(root / "big.txt")})
                t2 = time.perf_counter()
                if r:
                    big_ours.append(t1 - t0)
                    big_fs.append(t2 - t1)
            out["read_10m"] = {"ours": median(big_ours), "fs": median(big_fs), "ours_calls": pages}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=300, help="calls per small measurement and server")
    ap.add_argument("--rounds", type=int, default=5, help="whole 10 MiB reads per server")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    ns = ap.parse_args(argv)
    r = measure(ns.calls, ns.rounds)
    print(f"ours beside the reference filesystem server (FS), same run; medians of {ns.calls} calls")
    print("| measurement | ours | FS | ours / FS |")
    print("|---|---|---|---|")
    labels = {"tools_list": "tools/list", "read_4k": "read 4 KiB", "write_4k": "overwrite 4 KiB"}
    for key, label in labels.items():
        ours, fs = r[key]["ours"] * 1000, r[key]["fs"] * 1000
        print(f"| {label} | {ours:.2f} ms | {fs:.2f} ms | {ours / fs:.2f} |")
    floor = r["write_4k"]["durable_floor"] * 1000
    steps = "temp + fsync + rename + fsync dir + fsync'd backup"
    print(f"| floor: overwrite 4 KiB durably, in-process ({steps}) | {floor:.2f} ms | | |")
    big = r["read_10m"]
    print(
        f"| whole 10 MiB file (ours: {big['ours_calls']} pages; FS: 1 call) | {big['ours'] * 1000:.0f} ms "
        f"| {big['fs'] * 1000:.0f} ms | {big['ours'] / big['fs']:.2f} |"
    )
    if ns.json:
        print(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
