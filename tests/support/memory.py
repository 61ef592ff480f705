"""The fast tier: a server built in this process and driven by the SDK's in-memory client.

For the logic of a tool (schemas, refusals, decisions). What a user sees through the real console script
over stdio (start-up, flags, signals, the transport) stays tested with the real processes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client

from mcp_server_file_read import server as file_read
from mcp_server_file_write import server as file_write
from mcp_server_guard.files.jail import SymlinkMode
from mcp_server_guard.serving.config import Mode, ServerConfig
from mcp_server_guard.serving.launch import build_config
from mcp_server_guard.serving.server import GuardedServer
from mcp_server_guard.serving.tools import Tools
from mcp_server_guard.shell.execution import limits_of
from mcp_server_guard.shell.process import REGISTRY
from mcp_server_guard.shell.sandbox.planning import NetworkMode, ReadScope, SandboxMode, plan
from mcp_server_shell_exec import server as shell_exec

_DISTRIBUTIONS = {"file_read": "mcp-server-file-read", "file_write": "mcp-server-file-write"}


def _config(
    name: str, launch_dir: Path, allow: tuple[Path, ...], policy: Path | None, audit: Path | None, mode: Mode
) -> ServerConfig:
    return build_config(
        prog=name,
        name=name,
        distribution=_DISTRIBUTIONS.get(name, "mcp-server-shell-exec"),
        allow_path=list(allow),
        symlinks=SymlinkMode.FOLLOW,
        launch_dir=launch_dir,
        mode=mode,
        policy=policy,
        audit_log=audit or launch_dir.parent / "audit.jsonl",
        log_level="WARNING",
    )


def build(
    name: str,
    launch_dir: Path,
    *,
    allow: tuple[Path, ...] = (),
    policy: Path | None = None,
    audit: Path | None = None,
    sandbox: SandboxMode = SandboxMode.OFF,
    history: Path | None = None,
) -> GuardedServer:
    """The server ``name`` (file_read, file_write, shell_exec) as its console script builds it, in-process.

    The shell server runs commands unconfined by default here (``--sandbox off``): in one test process the
    sandbox's per-process parts (subreaper, pids cgroup) would outlive the test. ``history``: file_write's
    history directory (``--history-dir``; default: ``history`` beside the launch directory).
    """
    config = _config(name, launch_dir, allow, policy, audit, Mode.WORKSPACE_WRITE)
    if name == "file_write":
        return file_write.build_server(config, history or launch_dir.parent / "history")
    if name == "shell_exec":
        limits = limits_of(config.policy.shell_exec)
        return shell_exec.build_server(config, plan(sandbox, ReadScope.ALL, NetworkMode.ALLOW, limits))
    return file_read.build_server(config)


def file_tools(
    name: str, launch_dir: Path, *, allow: tuple[Path, ...] = (), mode: Mode = Mode.WORKSPACE_WRITE
) -> Tools:
    """file_read's or file_write's tools as built before the SDK loads (``build_tools``), in-process."""
    config = _config(name, launch_dir, allow, None, None, mode)
    if name == "file_write":
        return file_write.build_tools(config, launch_dir.parent / "history")
    return file_read.build_tools(config)


@asynccontextmanager
async def in_memory(name: str, launch_dir: Path, *, mode: str = "legacy", **kw: Any) -> AsyncIterator[Client]:
    """A connected in-memory client of server ``name``; the server's clean-ups run when it closes."""
    client_kw = {k: kw.pop(k) for k in list(kw) if k.endswith("_callback")}
    server = build(name, launch_dir, **kw)
    try:
        async with Client(server, mode=mode, **client_kw) as client:
            yield client
    finally:
        # Not REGISTRY.kill_all: it closes the one process registry of this (test) process for good.
        for cleanup in [*server.kills, *server.cleanups]:
            if cleanup != REGISTRY.kill_all:
                cleanup()
        server.jail.close()
        server.audit.close()
