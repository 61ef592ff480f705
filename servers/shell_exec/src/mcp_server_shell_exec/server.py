"""The shell_exec tool: a command checked against the policy, approved by a human when it asks, run cleanly."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from mcp_server_guard import audit
from mcp_server_guard.audit import default_state_path
from mcp_server_guard.policy import NetworkRules, Verdict
from mcp_server_guard.protected import protection_for
from mcp_server_guard.serving.server import (
    ClientRoots,
    GuardedServer,
    ServerConfig,
    ToolInput,
    ToolOutput,
    command_target,
    register_tool,
)
from mcp_server_guard.shell.approval import ApprovalForm, Checked, NoQuestion, consent, question
from mcp_server_guard.shell.egress import EgressProxy, resolver_from_env
from mcp_server_guard.shell.execution import ShellExec, limit_hit
from mcp_server_guard.shell.grants import CallHosts, HostAnswer, HostAsk, SessionApprovals
from mcp_server_guard.shell.process import REGISTRY, Progress
from mcp_server_guard.shell.sandbox.boxing import close_box
from mcp_server_guard.shell.sandbox.planning import NetworkMode, SandboxPlan, release

log = logging.getLogger("mcp_server_guard.shell_exec")

# Seed 004's contract, verbatim.
TOOL_NAME = "shell_exec"
TOOL_DESCRIPTION = "指定されたシェルコマンドを実行し、その標準出力と標準エラー出力を返します。"
ANNOTATIONS = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True)


class ShellExecInput(ToolInput):
    command: str = Field(description="実行するシェルコマンド。")
    args: list[str] = Field(
        default_factory=list,
        description="コマンドに渡す引数の配列。",
        json_schema_extra={"default": []},
    )
    cwd: str | None = Field(
        default=None,
        description="コマンドを実行する作業ディレクトリ。絶対パスまたは許可されたルートディレクトリからの相対パスを指定。"
        "省略された場合はCLIの起動ディレクトリ。",
    )
    stdin: str | None = Field(default=None, description="Text fed to the command's standard input (default: none).")
    env: dict[str, str] | None = Field(
        default=None,
        description="Extra environment variables. Names that make programs run other code (LD_*, BASH_ENV, "
        "PYTHON*, GIT_*, …) are refused.",
    )
    timeoutSeconds: float | None = Field(
        default=None, gt=0, description="Seconds before the command is killed (default 30; capped by the policy)."
    )
    maxOutputBytes: int | None = Field(
        default=None,
        ge=1024,
        description="Bytes kept of stdout and of stderr each, head and tail (default 1 MiB; capped by the policy).",
    )


class NetworkDenial(BaseModel):
    host: str = Field(description="The host the command tried to reach.")
    port: int = Field(description="The port.")
    rule: str = Field(
        description="What refused it: deny:<entry>, unnamed-host (no [network] rule names it), private-address."
    )
    reason: str = Field(description="Why, in words.")


class ShellExecOutput(ToolOutput):
    stdout: str = Field(description="コマンドの標準出力。")
    stderr: str = Field(description="コマンドの標準エラー出力。")
    exitCode: int = Field(description="コマンドの終了コード。")
    timedOut: bool = Field(description="True when the command was killed for running too long.")
    truncated: bool = Field(description="True when stdout or stderr was longer than maxOutputBytes (middle omitted).")
    stdoutBytes: int = Field(description="Total bytes the command wrote to stdout.")
    stderrBytes: int = Field(description="Total bytes the command wrote to stderr.")
    durationMs: float = Field(description="Wall time of the run in milliseconds.")
    signal: str | None = Field(
        default=None, description="Signal that ended the command (e.g. SIGKILL); absent when none."
    )
    sandbox: str = Field(
        description="What confined the process, e.g. 'bwrap+pidns+mountns+nocaps+seccomp+landlock-v7'; 'none' when "
        "only the policy and the jail did."
    )
    limitHit: str | None = Field(
        default=None,
        description="A resource limit the command ran into: memory, fileSize, cpu or processes (best effort).",
    )
    rule: str | None = Field(default=None, description="The policy rule that asked for approval, if any.")
    approval: str = Field(
        default="",
        description="How a command the policy asks about was approved: once, session-line (this exact line, "
        "for the session), session-prefix:<program subcommand>; empty when nothing was asked.",
    )
    networkDenied: list[NetworkDenial] = Field(
        default_factory=list,
        description="Connections the egress proxy refused during this command (--network policy); empty when none.",
    )
    timeoutSeconds: float = Field(default=0.0, description="The timeout in force for this command, in seconds.")

    def facts(self) -> dict[str, Any]:
        return {**super().facts(), "timeoutSeconds": self.timeoutSeconds}

    def to_text(self) -> str:
        parts = [self.stdout]
        if self.stderr:
            parts.append(f"[stderr]\n{self.stderr}")
        status = f"exit code {self.exitCode}"
        if self.timedOut:
            status += " (timed out)"
        elif self.signal:
            status += f" ({self.signal})"
        if self.truncated:
            status += f"; output truncated ({self.stdoutBytes} bytes stdout, {self.stderrBytes} bytes stderr)"
        parts.append(f"[{status}]")
        if self.approval:
            parts.append(f"[approved by the user: {self.approval}]")
        for denial in self.networkDenied:
            parts.append(f"[network refused: {denial.host}:{denial.port} ({denial.rule}): {denial.reason}]")
        rules = {d.rule for d in self.networkDenied}
        if "unnamed-host" in rules and any("run the same command again" in d.reason for d in self.networkDenied):
            parts.append("[run the same command again: the user will first be asked to allow the host]")
        elif rules - {"not-approved"}:
            parts.append(
                "[the host is not reachable from commands: a failed download is not a broken package; ask the user "
                "to add the host to [network].allow in the policy file]"
            )
        elif rules:
            parts.append("[the user refused the host: do not retry; ask the user how to proceed]")
        return "\n".join(p for p in parts if p)


def _log_decision(token: str | None, host: str, port: int, verdict: Verdict) -> None:
    log.info("egress %s %s:%s (%s) for call %s", verdict.action, host, port, verdict.rule, token)


class HostQuestion(BaseModel):
    network: HostAnswer = Field(
        description="command: let this run reach it; session: until the server stops; deny: refuse it."
    )


def host_asker(ctx: Context[Any, Any], shown: str) -> tuple[HostAsk | None, bool]:
    """How a running command's proxy asks about a host no rule names: now, through elicitation, when the
    connection can carry a request mid-call (2025 era); else (2026-07-28: questions only between rounds) before
    the next run of the same line — (None, True); or never, when the client cannot ask — (None, False)."""
    caps = ctx.client_capabilities
    if caps is None or caps.elicitation is None:
        return None, False
    if not ctx.session.can_send_request:
        return None, True

    async def ask(host: str, port: int, reason: str) -> HostAnswer | None:
        answer = await ctx.elicit(
            f"The command\n\n    {shown}\n\nwants to reach {host}:{port} ({reason}).\n\nLet it?", HostQuestion
        )
        return answer.data.network if isinstance(answer, AcceptedElicitation) else None

    return ask, False


def build_server(config: ServerConfig, sandbox: SandboxPlan, approvals_file: Path | None = None) -> GuardedServer:
    server = GuardedServer(config)
    allowed = [root.path for root in config.jail.roots]
    egress = None
    if sandbox.network is NetworkMode.POLICY:
        rules = NetworkRules.parse(config.policy.network.allow, config.policy.network.deny)
        egress = EgressProxy(rules, resolver=resolver_from_env(os.environ), on_decision=_log_decision)
    shell = ShellExec(
        config.jail,
        config.policy.shell_exec,
        sandbox,
        protection=protection_for(
            config.policy, audit_path=config.audit.path, others=[approvals_file] if approvals_file else []
        ),
        quarantine=default_state_path("quarantine", allowed),
        egress=egress,
        grants=SessionApprovals(approvals_file),
    )
    grants = shell.grants
    checked = Checked(shell, grants)
    # At exit, however it comes: no command outlives the server, then what confined them goes.
    server.cleanups += [REGISTRY.kill_all, lambda: close_box(sandbox), lambda: release(sandbox)]
    policy = config.policy.shell_exec

    def timeout_for(arguments: Mapping[str, Any]) -> float:
        asked = arguments.get("timeoutSeconds")
        wanted = asked if isinstance(asked, int | float) and asked > 0 else policy.default_timeout_seconds
        return float(min(wanted, policy.max_timeout_seconds))

    server.timeout_for = timeout_for

    async def gate(
        command: str,
        args: list[str],
        cwd: str | None,
        env: dict[str, str] | None,
        ctx: Context[Any, Any],
        client_roots: ClientRoots,
    ) -> Elicit[ApprovalForm] | NoQuestion:
        """Ask the human when the policy says ask; refusals surface here, before any question."""
        server.apply_roots(client_roots)
        return question(await checked.check(command, args, cwd, env), ctx, grants)

    def running_display(ctx: Context[Any, Any]) -> Progress | None:
        """Progress notifications while the command runs, for a client that asked (sent a progressToken)."""
        try:
            meta = ctx.request_context.meta
        except ValueError:
            return None
        if not meta or meta.get("progress_token", meta.get("progressToken")) is None:
            return None

        async def report(elapsed: float, output_bytes: int, last_line: str) -> None:
            line = last_line.strip()
            shown = f"; last line: {line[:200]}" if line else ""
            await ctx.report_progress(elapsed, None, f"running {elapsed:.1f}s, {output_bytes} bytes of output{shown}")

        return report

    async def shell_exec(
        args: ShellExecInput, ctx: Context[Any, Any], answer: ElicitationResult[ApprovalForm]
    ) -> ShellExecOutput:
        asked = await checked.reuse(args.command, args.args, args.cwd, args.env)
        prepared = asked.prepared
        verdict = prepared.verdict
        decided = consent(answer, asked, grants)
        if verdict.action != "ask":
            audit.note(approved_by=f"rule:{verdict.rule}" if verdict.rule else "policy", reason=verdict.reason)
        audit.note(rule=verdict.rule)
        timeout = timeout_for(args.model_dump())
        max_output = min(args.maxOutputBytes or policy.default_output_bytes, policy.max_output_bytes)
        stdin = args.stdin.encode("utf-8", "surrogateescape") if args.stdin is not None else None
        hosts = None
        if egress is not None:
            ask, ask_later = host_asker(ctx, prepared.shown)
            hosts = CallHosts(
                grants, shown=prepared.shown, cwd=prepared.cwd, approved=decided.hosts, ask=ask, ask_later=ask_later
            )
        result = await shell.execute(prepared, stdin, timeout, max_output, running_display(ctx), hosts)
        if hosts is not None and hosts.answers:
            audit.note(hosts_answered=hosts.answers)
        audit.note(
            bytes=result.stdout_bytes + result.stderr_bytes, exitCode=result.exit_code, timedOut=result.timed_out
        )
        if result.quarantined:
            audit.note(quarantined=list(result.quarantined))
        if result.network_allowed:
            audit.note(network_allowed=list(result.network_allowed))
        if result.network_denied:
            audit.note(network_denied=[f"{d.host}:{d.port} ({d.rule})" for d in result.network_denied])
        return ShellExecOutput(
            stdout=result.stdout,
            stderr=result.stderr,
            exitCode=result.exit_code,
            timedOut=result.timed_out,
            truncated=result.truncated,
            stdoutBytes=result.stdout_bytes,
            stderrBytes=result.stderr_bytes,
            durationMs=round(result.duration_ms, 3),
            signal=result.signal,
            sandbox=sandbox.label,
            limitHit=limit_hit(result),
            rule=verdict.rule if verdict.action == "ask" else None,
            approval=decided.approval,
            timeoutSeconds=timeout,
            networkDenied=[
                NetworkDenial(host=d.host, port=d.port, rule=d.rule, reason=d.reason) for d in result.network_denied
            ],
        )

    register_tool(
        server,
        name=TOOL_NAME,
        description=TOOL_DESCRIPTION,
        annotations=ANNOTATIONS,
        input_model=ShellExecInput,
        output_model=ShellExecOutput,
        handler=shell_exec,
        action="exec",
        target=command_target,
        paths={"cwd": "dir"},
        resolvers={"answer": Annotated[ElicitationResult[ApprovalForm], Resolve(gate)]},
    )
    return server


__all__ = ["ShellExecInput", "ShellExecOutput", "build_server"]
