"""Command line of mcp-server-shell-exec: the shared guard flags plus the sandbox's, then serve."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from mcp_server_guard.paths import within
from mcp_server_guard.serving.launch import server_cli, usage_error
from mcp_server_guard.serving.server import GuardedServer, Mode, ServerConfig
from mcp_server_guard.shell.sandbox.planning import NetworkMode, ReadScope, SandboxMode, SandboxUnavailable, plan

PROG = "mcp-server-shell-exec"

SandboxOpt = Annotated[
    SandboxMode | None,
    typer.Option(
        "--sandbox",
        help="auto: confine commands with Landlock where the kernel can (and say so where not); "
        "required: refuse to start without it; off: policy and jail only. [default: auto; off with --mode "
        "full-access]",
        show_default=False,
    ),
]
SandboxReadOpt = Annotated[
    ReadScope,
    typer.Option(
        "--sandbox-read", help="all: commands may read the whole system; jail: only the jail and /usr, /etc …"
    ),
]
NetworkOpt = Annotated[
    NetworkMode | None,
    typer.Option(
        "--network",
        help="policy: only through the server's egress proxy, to the hosts the policy's [network] section allows "
        "(others are asked about); deny: no network at all, loopback included; allow: as the server does. "
        "[default: policy; deny where the box (bubblewrap) is missing; allow with --sandbox off]",
        show_default=False,
    ),
]
ApprovalsOpt = Annotated[
    Path | None,
    typer.Option(
        "--approvals-file",
        help="Keep the approvals given 'for this session' (command lines, prefixes, hosts) in this file, to be "
        "read back at the next start. Must be outside the allowed directories. [default: memory only]",
        show_default=False,
    ),
]


@server_cli(prog=PROG, name="shell_exec")
def main(
    config: ServerConfig,
    sandbox: SandboxOpt = None,
    sandbox_read: SandboxReadOpt = ReadScope.ALL,
    network: NetworkOpt = None,
    approvals_file: ApprovalsOpt = None,
) -> GuardedServer:
    """Serve the shell_exec tool over stdio: commands are checked against the policy and run confined."""
    # Lazy for start-up time: --help and --version need neither the tool nor the MCP SDK.
    from mcp_server_guard.shell.execution import limits_of  # noqa: PLC0415
    from mcp_server_guard.shell.sandbox.boxing import open_box  # noqa: PLC0415
    from mcp_server_shell_exec.server import build_server  # noqa: PLC0415

    full_access = config.mode is Mode.FULL_ACCESS
    if full_access and sandbox not in (None, SandboxMode.OFF):
        usage_error(PROG, f"--sandbox {sandbox.value} contradicts --mode full-access (which runs commands unboxed)")
    chosen = sandbox or (SandboxMode.OFF if full_access else SandboxMode.AUTO)
    approvals = _approvals_path(approvals_file, config) if approvals_file is not None else None
    try:
        decided = plan(
            chosen,
            sandbox_read,
            network or (NetworkMode.ALLOW if chosen is SandboxMode.OFF else NetworkMode.POLICY),
            limits_of(config.policy.shell_exec),
            jail_writable=config.mode is not Mode.READ_ONLY,
        )
        decided.network_chosen = network is not None
        # Here, on the thread that runs the event loop: bubblewrap's parent-death signal follows that thread.
        open_box(decided, [root.path for root in config.jail.allowed])
    except SandboxUnavailable as exc:
        usage_error(PROG, str(exc))
    for note in decided.notes:
        typer.echo(f"{PROG}: {note}", err=True)
    return build_server(config, decided, approvals)


def _approvals_path(path: Path, config: ServerConfig) -> Path:
    """Threat: a command (or file_write) rewriting the approvals to grant itself anything at the next start:
    the file must lie outside every allowed directory (and the box keeps it read-only besides)."""
    from mcp_server_guard.shell.grants import SessionApprovals  # noqa: PLC0415

    real = Path(os.path.realpath(path.expanduser()))
    for root in config.jail.allowed:
        if within(str(real), root.path):
            usage_error(PROG, f"--approvals-file {path} is inside the allowed directory {root.path}; put it outside")
    if not real.parent.is_dir():
        usage_error(PROG, f"--approvals-file {path}: the directory {real.parent} does not exist")
    try:
        SessionApprovals(real)
    except ValueError as exc:
        usage_error(PROG, f"--approvals-file: {exc}")
    return real
