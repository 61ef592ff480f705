"""The benchmark: spawns the real console scripts, drives them with a raw JSON-lines client and measures each
part beside its floor in the same run (docs/benchmarks.md has the figures).

    uv run python -m bench [--quick] [--only read|write|shell|memory]

Also: ``python -m bench.startup`` (spawn to first result) and ``python -m bench.peers`` (ours beside the
reference filesystem server).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.client import find_server
from bench.core import (
    BIG_POLICY,
    BIG_SIZE,
    FULL,
    PROTOCOL,
    QUICK,
    REPO,
    RESULTS,
    SMALL_SIZE,
    WRITE_POLICY,
    Env,
    direct_read,
    make_text,
)
from bench.memory import memory_bounds, memory_rows
from bench.plans import expected_sandbox_labels
from bench.reads import big_reads, cold_start, read_rows, small_reads
from bench.report import Row, fs_type, git_state, profile_table, shell_profile_table
from bench.sandbox import measure, sandbox_rows
from bench.shell import profile_shell_echo, shell_big_output, shell_concurrency, shell_echo, shell_rows
from bench.writes import BigRequest, big_writes, profile_big_writes, small_writes, write_rows


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
                    results["shell_sandbox"] = measure(env, counts)
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
