"""Sections 7-10: shell_exec's `echo hi`, 50 MB of output, 16 concurrent sleeps and a profile, beside floors."""

from __future__ import annotations

import gc
import importlib.metadata
import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from mcp.types import CallToolResult, TextContent

from bench.client import RawClient, RPCError, audit_durations, audit_series, check_shell
from bench.core import (
    BASH,
    BIG_OUT_BYTES,
    BIG_OUT_LINE,
    BIG_OUT_RSS_TARGET,
    BIG_OUT_TARGET_S,
    CONCURRENCY,
    CONCURRENT_TARGET_S,
    ECHO_LINE,
    ECHO_TARGET_S,
    PROFILER,
    SHELL_MODULE,
    SLEEP_LINE,
    Counts,
    Env,
    cpu_seconds,
    median,
    summary,
    time_loop,
    vm_hwm_bytes,
    vm_rss_bytes,
)
from bench.memory import memtrace
from bench.plans import inprocess_runs, release_plans, sandbox_plans
from bench.report import Row, delta, mib, ms, summarise_profile, verdict
from mcp_server_guard import load_policy
from mcp_server_guard.files import Jail
from mcp_server_guard.shell import PolicyEngine, ShellExec, build_env
from mcp_server_guard.shell.sandbox import confine
from mcp_server_shell_exec.server import ShellExecInput, ShellExecOutput


def tool_parts(env: Env, counts: Counts) -> dict[str, Any]:
    """The shell_exec tool's own steps around the process, in-process: ShellExec.prepare (cwd through the jail,
    build_env, parse + policy, redirect checks; run once per call, in the elicitation gate, and reused by the body),
    build_env alone (from the base environment computed once), confine() + close() of the default sandbox (private
    TMPDIR, Landlock ruleset) and the result (output model, text block, model_dump, CallToolResult)."""
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
            "confine_close": summary(time_loop(lambda: confine(plan, roots).close(), n, warm)),
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


SHELL_KEY_FUNCTIONS = {
    ("mcp/server/stdio.py", "stdin_reader"): "SDK stdio stdin_reader (readline + validate_json of each line)",
    ("mcp/server/stdio.py", "stdout_writer"): "SDK stdio stdout_writer (model_dump_json + write + flush)",
    ("mcp_server_guard/serving/server.py", "call_tool"): "GuardedServer.call_tool (the audit span; awaits not counted)",
    ("mcpserver/utilities/func_metadata.py", "validate_arguments"): "SDK tool-argument validation",
    ("mcp_server_guard/tools/shell_service.py", "gate"): "gate resolver (prepare: jail, env, parse + policy)",
    ("mcp_server_guard/shell/execution.py", "prepare"): "ShellExec.prepare (in the gate; the body reuses it)",
    ("mcp_server_guard/shell/strings/rules.py", "decide"): "PolicyEngine.decide (tree-sitter parse + rules)",
    ("mcp_server_guard/shell/strings/parsing.py", "parse"): "shellparse.parse (tree-sitter-bash)",
    ("mcp_server_guard/files/jail.py", "open_dir"): "Jail.open_dir (cwd)",
    ("mcp_server_guard/shell/environment.py", "build_env"): "build_env",
    ("mcp_server_guard/shell/execution.py", "execute"): "ShellExec.execute (confine + process.run + close)",
    ("mcp_server_guard/shell/sandbox/planning.py", "confine"): "sandbox.confine (TMPDIR, ruleset)",
    ("tempfile.py", "mkdtemp"): "tempfile.mkdtemp (the private TMPDIR)",
    ("mcp_server_guard/shell/sandbox/planning.py", "build_ruleset"): "sandbox.build_ruleset (Landlock)",
    ("mcp_server_guard/shell/sandbox/planning.py", "close"): "Confinement.close (ruleset fd, TMPDIR)",
    ("shutil.py", "rmtree"): "shutil.rmtree (the TMPDIR)",
    ("mcp_server_guard/shell/process.py", "run"): "process.run (its frames while running; awaits not counted)",
    ("mcp_server_guard/shell/process.py", "_spawn"): "process._spawn (start the spawning thread, await its result)",
    ("threading.py", "start"): "threading.Thread.start (the spawning thread, waits until it runs)",
    (
        "mcp_server_guard/shell/process.py",
        "start",
    ): "process._spawn.start (enter_thread + Popen + limit; spawning thread)",
    (
        "mcp_server_guard/shell/sandbox/planning.py",
        "enter_thread",
    ): "Confinement.enter_thread (netns, Landlock on the thread)",
    (
        "mcp_server_guard/shell/sandbox/planning.py",
        "_restrict_thread",
    ): "sandbox._restrict_thread (no_new_privs + restrict_self)",
    ("subprocess.py", "_execute_child"): "subprocess Popen._execute_child (vfork/exec, waits for exec)",
    ("~", "<built-in method _posixsubprocess.fork_exec>"): "_posixsubprocess.fork_exec",
    ("mcp_server_guard/shell/sandbox/planning.py", "limit"): "Confinement.limit (5 × prlimit on the child)",
    (
        "mcp_server_guard/shell/sandbox/lifetime.py",
        "reap_orphans",
    ): "sandbox.reap_orphans (the orphan sweep after each call)",
    ("mcp_server_guard/audit.py", "end"): "AuditLog.end (write the audit line)",
    ("mcp_server_guard/tools/shell_results.py", "to_text"): "ShellExecOutput.to_text",
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
