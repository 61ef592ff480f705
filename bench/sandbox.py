"""Section 11: the box's cost on `echo hi` beside the same server unconfined, and why the box is built once."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.client import RawClient, audit_series, check_shell
from bench.core import (
    BASH,
    ECHO_LINE,
    SANDBOX_IDLE_S,
    SANDBOX_TARGET_S,
    SANDBOX_VARIANTS,
    Counts,
    Env,
    p99,
    pids_cgroup,
    summary,
    vm_rss_bytes,
)
from bench.plans import SANDBOX_TITLES, release_plans, sandbox_plans
from bench.report import Row, delta, ms, verdict
from mcp_server_guard.shell.sandbox import close_box, open_box


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
            f"rlimits before exec, in a forked child); {parts(off, base)}; sandbox `{sx['labels']['off']}` ✓",
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
    bp = sx.get("box_parts")
    if not bp:
        return
    bash, per_call, start = bp["subprocess_bash"], bp["per_call_bwrap"], bp["box_start"]
    rows.append(
        (
            f"11 what-if: one bubblewrap per command (`bwrap` with the box's outer namespaces and mounts, then bash "
            f"`echo hi`), subprocess.run, median of {per_call['n']}",
            ms(per_call["median_s"]),
            f"bash alone {ms(bash['median_s'])}: **{delta(per_call['median_s'] - bash['median_s'])}** per call, before "
            "any per-call PID/mount namespace, Landlock, seccomp or capability drop",
            "info",
            "",
        )
    )
    rows.append(
        (
            f"11 the box's start, once per server (open_box: bubblewrap, the supervisor, its first ready init; "
            f"median of {start['n']})",
            ms(start["median_s"]),
            "paid at start-up, not per call: the server keeps one box and hands each call to an init forked ahead",
            "info",
            "",
        )
    )
    notes.append(
        "Section 11: the box is prepared once per server and reused (a per-call bubblewrap is the what-if row); "
        "each call is handed straight to a pre-forked init that already built the shared mount view, the Landlock "
        "ruleset and half of the seccomp filter (docs/shell_exec.md, 'How a call starts')."
    )


def per_call_bwrap_argv(bwrap: str, root: Path, argv: Sequence[str]) -> list[str]:
    """One bubblewrap per command with the box's outer layers: new user, PID, IPC, UTS, cgroup namespaces, the
    root file system read-only, a fresh /dev and /proc, a private /tmp, the jail root writable, no capabilities."""
    return [
        bwrap, "--new-session", "--die-with-parent", "--unshare-all", "--share-net", "--cap-drop", "ALL",
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
        "--bind", str(root), str(root), "--chdir", str(root), "--", *argv,
    ]  # fmt: skip


def box_parts(env: Env, counts: Counts) -> dict[str, Any]:
    """Why one box per server: a per-call bubblewrap beside bash alone (interleaved), and the box's one-off start
    (open_box to ready, as the server's start-up does it; the plan is released after each)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return {}
    n, warm = counts.sandbox_parts_calls, counts.shell_warmup // 4
    plain, boxed = [*BASH, ECHO_LINE], per_call_bwrap_argv(bwrap, env.shell_root, [*BASH, ECHO_LINE])
    times: dict[str, list[float]] = {"subprocess_bash": [], "per_call_bwrap": []}
    for i in range(warm + n):
        if i == warm:
            gc.collect()
        for name, argv in (("subprocess_bash", plain), ("per_call_bwrap", boxed)):
            t0 = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, check=False)
            if done.stdout != b"hi\n":
                raise RuntimeError(f"{name}: {done}")
            if i >= warm:
                times[name].append(time.perf_counter() - t0)
    out: dict[str, Any] = {name: summary(ts) for name, ts in times.items()}
    starts = []
    for _ in range(max(3, n // 50)):
        plans = sandbox_plans("auto")
        unboxed = plans["auto"]
        started = unboxed
        try:
            t0 = time.perf_counter()
            started, _ = open_box(unboxed, [str(env.shell_root)])
            starts.append(time.perf_counter() - t0)
        finally:
            close_box(started)
            release_plans(plans)
    out["box_start"] = summary(starts)
    return out


def measure(env: Env, counts: Counts) -> dict[str, Any]:
    """Section 11: the MCP round trips of the five servers, then the in-process what-ifs."""
    out = shell_sandbox(env, counts)
    out["box_parts"] = box_parts(env, counts)
    return out
