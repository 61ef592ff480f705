"""Section 12: each server's peak RSS under its worst documented case, beside the same server idle."""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

from bench.client import RawClient, check_read, check_shell, check_write
from bench.core import BIG_OUT_BYTES, BIG_SIZE, ECHO_LINE, MEMTRACE_SERVER, Counts, Env, make_text, vm_hwm_bytes
from bench.report import Row, mib, verdict


def memtrace(env: Env, args: dict[str, Any]) -> list[dict[str, int]]:
    """tracemalloc's split of two 50 MB calls on a fresh server (bench/servers/memtrace_server.py): our side vs
    after it."""
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
                flood: dict[str, Any] = {"command": NUL_FLOOD.format(n=64 << 20)}
                if max_output is not None:
                    flood["maxOutputBytes"] = max_output
                sc = c.call_tool("shell_exec", flood, timeout=300).get("structuredContent") or {}
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
        # The documented bound: 4 bytes of reply per byte kept (JSON escapes, sent twice) and 8 KiB of envelope.
        bound = 4 * case["max_output_bytes"] + 8192 if "max_output_bytes" in case else None
        target = f"reply ≤ 4 × maxOutputBytes + 8 KiB ({bound:,} B)" if bound else "recorded"
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
