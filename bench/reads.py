"""Sections 1-3: cold start, 4 KiB and 10 MiB reads of file_read beside their floors."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from mcp import Client, StdioServerParameters

from bench.client import RawClient, audit_durations, check_read
from bench.core import BIG_SIZE, SMALL_SIZE, Counts, Env, direct_read, summary, time_loop, vm_hwm_bytes
from bench.report import Row, mib, ms, verdict


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
