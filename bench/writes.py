"""Sections 4-6: file_write's 4 KiB and 10 MiB writes beside in-process atomic writes, the request ladder, a profile."""

from __future__ import annotations

import gc
import hashlib
import importlib.metadata
import importlib.util
import itertools
import json
import os
import secrets
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types

from bench.client import RawClient, audit_durations, audit_series, check_write
from bench.core import (
    PROFILER,
    RAW_SERVER,
    SMALL_SIZE,
    TRANSPORT_SERVER,
    WRITE_MODULE,
    WRITE_TARGET_S,
    Counts,
    Env,
    cpu_seconds,
    make_text,
    median,
    summary,
    time_loop,
    trend,
    vm_hwm_bytes,
)
from bench.report import Row, delta, mib, ms, summarise_profile, verdict


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


KEY_FUNCTIONS = {  # (file suffix, function name) -> label
    ("mcp/server/stdio.py", "stdin_reader"): "SDK stdio stdin_reader (validate_json of each line)",
    (
        "mcp_server_guard/serving/server.py",
        "call_tool",
    ): "GuardedServer.call_tool (audit span: argument validation + tool)",
    ("mcpserver/utilities/func_metadata.py", "validate_arguments"): "SDK tool-argument validation",
    ("mcp_server_guard/files/writing.py", "write"): "Writer.write (guards, temp + fsync, link, dir fsync)",
    ("mcp_server_guard/files/writing.py", "_temp"): "Writer._temp (temp file write + fsync)",
    (
        "mcp_server_guard/files/write_checks.py",
        "check_executable_content",
    ): "check_executable_content (libmagic on the head)",
    ("mcp_server_guard/audit.py", "to_json"): "AuditRecord.to_json (hashes the content)",
}


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
