"""What the shell sections share about the sandbox: the variants' enums and expected labels, in-process plans,
and the server's own process runner called in-process."""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from mcp_server_guard import load_policy
from mcp_server_guard.shell import build_env, run
from mcp_server_guard.shell.sandbox import (
    Limits,
    NetworkMode,
    ReadScope,
    SandboxMode,
    SandboxPlan,
    plan,
    release,
    release_all,
)

Modes = tuple[SandboxMode, ReadScope, NetworkMode]

SANDBOX_TITLES = {
    "unconfined": "unconfined (no TMPDIR, ruleset or rlimits; vfork: bench/servers/unconfined_server.py)",
    "off": "`--sandbox off`",
    "auto": "default `--sandbox auto`",
    "deny": "`--sandbox auto --network deny`",
    "jail": "`--sandbox-read jail`",
}


def use_pidfd_child_watcher() -> None:
    """What the servers do at start-up on 3.11 (mcp_server_guard.serving.launch): wait for children on a pidfd,
    not a thread, so the in-process floors below spawn exactly as the server does."""
    if sys.version_info < (3, 12) and hasattr(os, "pidfd_open"):
        asyncio.set_child_watcher(asyncio.PidfdChildWatcher())  # type: ignore[attr-defined,unused-ignore]


def sandbox_modes() -> dict[str, Modes]:
    """(--sandbox, --sandbox-read, --network) of each server of SANDBOX_VARIANTS, as the sandbox package's enums
    (the network of the plan; the default, policy, shows in the label as the box's, see expected_sandbox_labels)."""
    return {
        "off": (SandboxMode.OFF, ReadScope.ALL, NetworkMode.ALLOW),
        "auto": (SandboxMode.AUTO, ReadScope.ALL, NetworkMode.ALLOW),
        "deny": (SandboxMode.AUTO, ReadScope.ALL, NetworkMode.DENY),
        "jail": (SandboxMode.AUTO, ReadScope.JAIL, NetworkMode.ALLOW),
    }


def expected_sandbox_labels() -> dict[str, str]:
    """The `sandbox` label each server of SANDBOX_VARIANTS must report on this kernel: the plan the server's start-up
    makes (Landlock at the kernel's ABI unless off, a network namespace with --network deny where one can be made),
    behind the box's layers when bubblewrap is there."""
    plans = sandbox_plans(*sandbox_modes())
    try:
        boxed = "bwrap+pidns+mountns+nocaps+seccomp+" if shutil.which("bwrap") else ""
        # The default network (policy) puts the box's own namespace and the egress proxy behind the rest.
        proxied = {name for name in ("auto", "jail") if boxed}
        return {"unconfined": "none"} | {
            name: ("" if p.mode is SandboxMode.OFF else boxed)
            + p.label
            + ("+netns+egress-proxy" if name in proxied else "")
            for name, p in plans.items()
        }
    finally:
        release_plans(plans)


def inprocess_runs(argv: Sequence[str], cwd: Path, n: int, warmup: int, max_output: int = 1 << 20) -> list[float]:
    """The server's own process runner (mcp_server_guard.shell.run: own session, pipes read into head+tail
    buffers, anyio on asyncio) called in-process in a loop: shell_exec's spawn without MCP, parsing or policy."""
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


def sandbox_plans(*names: str) -> dict[str, SandboxPlan]:
    """In-process SandboxPlans as the server's start-up makes them (sandbox.plan), with the default policy's limits,
    for the SANDBOX_VARIANTS ``names``. Like the server, the bench process then is a child subreaper and, as root
    with a plan other than off, sits in its own pids cgroup (mcp-guard-<pid>, its children born there): call
    release_plans() when done, which moves it back out and removes the cgroup."""
    pol = load_policy().shell_exec
    limits = Limits(
        memory_bytes=pol.max_memory_bytes,
        file_size_bytes=pol.max_file_size_bytes,
        cpu_seconds=pol.max_cpu_seconds,
        processes=pol.max_processes,
    )
    modes = sandbox_modes()
    return {name: plan(*modes[name], limits) for name in names}


def release_plans(plans: dict[str, SandboxPlan]) -> None:
    """Undo sandbox_plans: leave the pids cgroup (the plans share one) and remove it, as the server does at exit."""
    released: set[Path] = set()
    for p in plans.values():
        if p.pids_cgroup is not None and p.pids_cgroup not in released:
            release(p)
            released.add(p.pids_cgroup)
    release_all()


def children() -> list[int]:
    """The bench process's live children, per /proc/self/task/*/children."""
    pids: list[int] = []
    for tid in os.listdir("/proc/self/task"):
        try:
            pids += [int(p) for p in Path(f"/proc/self/task/{tid}/children").read_text().split()]
        except OSError:
            continue
    return pids


def no_other_children() -> None:
    """process.run ends with the subreaper's orphan sweep, which kills every child of the calling process outside
    the running call's group: the in-process runs must have no other child (a server) alive."""
    if children():
        raise RuntimeError(f"in-process process.run would kill the bench's other children {children()}")
