"""The shell_exec tool: a command checked against the policy, approved by a human when it asks, run cleanly."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, ResourceLink, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from mcp_server_guard import audit
from mcp_server_guard.audit import default_state_path, new_audit_id
from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.changes.area import CopyArea
from mcp_server_guard.changes.transactions import Ask, Held, Settled, Transactions
from mcp_server_guard.errors import ParamError, ResourceError
from mcp_server_guard.files.history import remove_dead, remove_tree
from mcp_server_guard.files.liveness import OwnedDir
from mcp_server_guard.files.writing import open_writer
from mcp_server_guard.policy import HostVerdict, NetworkRules
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
from mcp_server_guard.shell.approval import (
    APPROVED_BY,
    Approval,
    ApprovalForm,
    Checked,
    NoQuestion,
    consent,
    question,
    require_approval,
    stdin_shown,
)
from mcp_server_guard.shell.egress import Denied, EgressProxy, resolver_from_env
from mcp_server_guard.shell.execution import ShellExec, limit_hit
from mcp_server_guard.shell.grants import CallHosts, HostAnswer, HostAsk, SessionApprovals
from mcp_server_guard.shell.jobs import (
    MAX_RANGE_BYTES,
    OUTPUT_TEMPLATE,
    RANGE_BYTES,
    Job,
    JobTable,
    KeptOutputs,
    RangeError,
    Spool,
    output_uri,
    parse_range,
    read_output,
)
from mcp_server_guard.shell.process import REGISTRY, Control, Progress, RunResult
from mcp_server_guard.shell.rules import Verdict as LineVerdict
from mcp_server_guard.shell.sandbox.layers import close_box
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
    yieldAfterSeconds: float | None = Field(
        default=None,
        ge=0,
        description="Return after at most this many seconds; a command still running then goes on as a background "
        "job (status 'running', a jobId). For dev servers, watchers, long builds. With jobId: wait up to this long "
        "for the job (default 0).",
    )
    jobId: str | None = Field(
        default=None,
        description="A background job (from a 'running' result): returns its new output since the last look and "
        "its status, without running anything; combine with stdin, closeStdin or signal. command may be ''.",
    )
    signal: Literal["TERM", "INT", "KILL"] | None = Field(
        default=None,
        description="With jobId: stop the job (its whole process group): TERM or INT, then KILL after 5 s; or KILL.",
    )
    closeStdin: bool = Field(default=False, description="With jobId: close the job's standard input (EOF).")
    listJobs: bool = Field(
        default=False, description="true: list this server's background jobs instead of running command ('')."
    )
    applyChanges: str | None = Field(
        default=None,
        description="The id of changes a command made that are waiting for the user's yes (pendingChanges.id): "
        "the user is asked, and they are applied to the files. command may be ''.",
    )
    dropChanges: str | None = Field(
        default=None, description="The id of waiting changes (pendingChanges.id) to throw away. command may be ''."
    )


class NetworkDenial(BaseModel):
    host: str = Field(description="The host the command tried to reach.")
    port: int = Field(description="The port.")
    rule: str = Field(
        description="What refused it: deny:<entry>, unnamed-host (no [network] rule names it), private-address."
    )
    reason: str = Field(description="Why, in words.")

    @classmethod
    def all_of(cls, refused: Sequence[Denied]) -> list[NetworkDenial]:
        return [cls(host=d.host, port=d.port, rule=d.rule, reason=d.reason) for d in refused]


class JobInfo(BaseModel):
    jobId: str = Field(description="The job's id.")
    command: str = Field(description="The command it runs.")
    status: str = Field(description="running, exited, stopped, timed-out or failed (could not start).")
    runtimeSeconds: float = Field(description="Seconds since it started (until it ended).")
    stdoutBytes: int = Field(description="Bytes it wrote to stdout so far.")
    stderrBytes: int = Field(description="Bytes it wrote to stderr so far.")
    exitCode: int = Field(description="Its exit code; -1 while it runs.")


class OmittedRange(BaseModel):
    stream: str = Field(description="stdout or stderr.")
    start: int = Field(description="First byte left out of this result.")
    end: int = Field(description="Byte after the last one left out.")
    resource: str = Field(
        description="URI that reads the output from `start` on (resources/read), while it is kept; '' when none. "
        "Each answer holds a range of it (1 MiB); its first line gives the URI of the next one."
    )


class ChangedPath(BaseModel):
    path: str = Field(description="A path the command changed (relative to the launch directory when inside it).")
    action: str = Field(description="create, modify, delete or meta (mode or times); refused; conflict.")
    reason: str = Field(default="", description="Why it was refused, or what happened in a conflict.")


class Changes(BaseModel):
    summary: str = Field(default="", description="What the command changed, in one line.")
    created: int = Field(default=0, description="Files created.")
    modified: int = Field(default=0, description="Files modified.")
    deleted: int = Field(default=0, description="Files deleted.")
    metaChanged: int = Field(default=0, description="Files whose mode or times only changed.")
    bytes: int = Field(default=0, description="Bytes of the files created or modified.")
    conflicts: int = Field(default=0, description="Changes kept aside: the file changed meanwhile.")
    refused: int = Field(default=0, description="Changes never applied (protected paths).")
    paths: list[ChangedPath] = Field(default_factory=list, description="The first paths, with what happened.")
    undo: str = Field(default="", description="How the user puts this call's changes back (once applied).")
    reason: str = Field(default="", description="Why nothing was applied (declined, failed).")


class PendingChanges(BaseModel):
    id: str = Field(default="", description="Id of changes waiting for the user's yes ('' when none).")
    summary: str = Field(default="", description="What they would do.")
    question: str = Field(default="", description="What the user will be asked.")


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
    status: str = Field(
        default="exited",
        description="exited; or, for background jobs, running, stopped or timed-out (exitCode is -1 while running).",
    )
    jobId: str = Field(default="", description="The background job this result is about ('' when none).")
    jobs: list[JobInfo] = Field(default_factory=list, description="With listJobs: this server's background jobs.")
    omitted: list[OmittedRange] = Field(
        default_factory=list,
        description="Byte ranges left out of stdout/stderr here (head and tail shown), with where the full output "
        "can be read while it is kept.",
    )
    transaction: str = Field(
        default="none",
        description="What became of the command's changes to the files (it works on a copy): applied, unchanged, "
        "held (waiting for the user: pendingChanges), declined (nothing applied), failed; none: no copy, the "
        "command wrote the files directly.",
    )
    changes: Changes = Field(default_factory=Changes, description="What the command changed in the files.")
    pendingChanges: PendingChanges = Field(
        default_factory=PendingChanges,
        description="Changes waiting for the user's yes: apply them with applyChanges (the user is asked).",
    )

    def facts(self) -> dict[str, Any]:
        return {**super().facts(), "timeoutSeconds": self.timeoutSeconds}

    def links(self) -> list[ResourceLink]:
        return _links(self)

    def to_text(self) -> str:
        parts = [self.stdout]
        if self.stderr:
            parts.append(f"[stderr]\n{self.stderr}")
        if self.status == "running":
            parts.append(
                f"[still running as background job {self.jobId} ({self.durationMs / 1000:.1f} s; "
                f"{self.stdoutBytes} bytes stdout, {self.stderrBytes} bytes stderr so far). New output: "
                f'{{"command": "", "jobId": "{self.jobId}", "yieldAfterSeconds": 5}}; stop it: '
                f'{{"command": "", "jobId": "{self.jobId}", "signal": "TERM"}}]'
            )
            parts += _change_lines(self)
            return "\n".join(p for p in parts if p)
        status = f"exit code {self.exitCode}"
        if self.jobId:
            status = f"job {self.jobId} {self.status}, " + status
        if self.timedOut:
            status += " (timed out)"
        elif self.signal:
            status += f" ({self.signal})"
        if self.truncated:
            status += f"; output truncated ({self.stdoutBytes} bytes stdout, {self.stderrBytes} bytes stderr)"
        parts.append(f"[{status}]")
        for cut in self.omitted:
            if cut.resource:
                parts.append(f"[{cut.stream} bytes {cut.start}-{cut.end} left out; read them: {cut.resource}]")
        if self.approval:
            parts.append(f"[approved by the user: {self.approval}]")
        parts += _change_lines(self)
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


def _change_lines(out: ShellExecOutput) -> list[str]:
    """What the command did to the files, for the text block: one line, and what needs the model's attention."""
    changes, pending = out.changes, out.pendingChanges
    lines: list[str] = []
    if out.transaction == "applied" and changes.undo:
        lines.append(f"[changes applied: {changes.summary}; undo: {changes.undo}]")
    elif out.transaction == "held":
        lines.append(
            f"[changes NOT applied yet: the command would {changes.summary}. They wait for the user's yes: "
            f'{{"command": "", "applyChanges": "{pending.id}"}} (or dropChanges)]'
        )
    elif out.transaction == "declined":
        lines.append(f"[changes NOT applied: the command would {changes.summary}; {changes.reason}]")
    elif out.transaction == "failed":
        lines.append(f"[changes NOT applied: {changes.reason}]")
    elif out.transaction == "waiting":
        lines.append(f"[changes waiting: the job would {changes.summary}; {changes.reason}]")
    for path in changes.paths:
        if path.action in ("refused", "conflict"):
            lines.append(f"[{path.action}: {path.path}: {path.reason}]")
    return lines


def _links(out: ShellExecOutput) -> list[ResourceLink]:
    return [
        ResourceLink(
            uri=cut.resource,
            name=f"{cut.stream} of {out.jobId or 'the command'}",
            description=f"The {cut.stream} this result left out (bytes {cut.start}-{cut.end}), in ranges: each "
            "answer's first line gives the URI of the next one.",
            mime_type="text/plain",
        )
        for cut in out.omitted
        if cut.resource
    ]


def _log_decision(token: str | None, host: str, port: int, verdict: HostVerdict) -> None:
    log.info("egress %s %s:%s (%s) for call %s", verdict.action, host, port, verdict.rule, token)


# How long a question about a change set waits for an answer before nothing is applied.
class ChangesApproval(ApprovalForm):
    apply: bool = Field(description="Apply these changes to your files?")


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


def build_server(
    config: ServerConfig,
    sandbox: SandboxPlan,
    approvals_file: Path | None = None,
    *,
    history_dir: Path | None = None,
    area: CopyArea | None = None,
) -> GuardedServer:
    server = GuardedServer(config)
    allowed = [root.path for root in config.jail.roots]
    egress = None
    if sandbox.network is NetworkMode.POLICY:
        rules = NetworkRules.parse(config.policy.network.allow, config.policy.network.deny)
        egress = EgressProxy(rules, resolver=resolver_from_env(os.environ), on_decision=_log_decision)
    protection = protection_for(
        config.policy,
        audit_path=config.audit.path,
        history_dir=history_dir,
        others=[approvals_file] if approvals_file else [],
    )
    transactions = None
    if sandbox.copies and area is not None and history_dir is not None:
        # The one writer's store, shared with file_write: every pre-image of what commands change is kept there.
        writer = open_writer(config.jail, config.policy, config.audit.path, history_dir)
        server.cleanups.append(writer.close)
        transactions = Transactions(
            area,
            Applier(writer.history),
            protection,
            config.policy.effects,
            display=config.jail.display_path,
        )
    shell = ShellExec(
        config.jail,
        config.policy.shell_exec,
        sandbox,
        protection=protection,
        transactions=transactions,
        egress=egress,
        grants=SessionApprovals(approvals_file),
    )
    grants = shell.grants
    checked = Checked(shell, grants)
    # At exit, however it comes: no command outlives the server, then what confined them goes.
    server.kills += [REGISTRY.kill_all, lambda: close_box(sandbox), lambda: release(sandbox)]
    if transactions is not None:
        server.cleanups.append(transactions.close)  # the copies queued for removal go before the area does
    if area is not None:
        server.cleanups.append(area.close)  # after the box: no call can be using a copy any more
    policy = config.policy.shell_exec

    # Our spools lie in a directory of our own, locked for our life; what dead servers left goes now (a server
    # killed with SIGKILL cannot clean up; its lock tells it is gone, whatever its age or pid).
    spool_area = default_state_path("spool", allowed)
    swept = remove_dead(spool_area, unlocked_legacy=True)
    if swept:
        log.info("removed the output spools of %d dead server(s) from %s", swept, spool_area)
    spool_owned = OwnedDir(spool_area)
    jobs = JobTable(policy, spool_owned.path / "jobs")
    kept = KeptOutputs(policy, spool_owned.path / "outputs")
    server.cleanups += [jobs.close, kept.close, lambda: remove_tree(spool_owned.path), spool_owned.close]

    def timeout_for(arguments: Mapping[str, Any]) -> float:
        """The call's timeout: the policy's default and cap; for a background job, the job's (longer) ones."""
        named = arguments.get("jobId")
        if isinstance(named, str) and named and (known := jobs.find(named)) is not None:
            return known.timeout
        asked = arguments.get("timeoutSeconds")
        job = isinstance(arguments.get("yieldAfterSeconds"), int | float) and not named
        default, cap = (
            (policy.job_timeout_seconds, policy.job_timeout_seconds)
            if job
            else (policy.default_timeout_seconds, policy.max_timeout_seconds)
        )
        wanted = asked if isinstance(asked, int | float) and asked > 0 else default
        return float(min(wanted, cap))

    @server.resource(
        OUTPUT_TEMPLATE,
        name="shell_exec output",
        description="The full stdout or stderr of a shell_exec result that had to be cut, or of a background job, "
        f"while it is kept, read in ranges: each answer holds at most `length` bytes (default {RANGE_BYTES}, at "
        f"most {MAX_RANGE_BYTES}) from `offset` (default 0). Its first line says which bytes it holds, of how many, "
        "and the URI of the next range (or that it is the end); the text follows from the second line on.",
        mime_type="text/plain",
    )
    async def full_output(output_id: str, stream: str, offset: str | None = None, length: str | None = None) -> str:
        # On the event loop, not in a worker thread: a job's spool is fed and closed there, never under a read.
        spool = kept.spool(output_id, stream)
        growing = False
        if spool is None and stream in ("stdout", "stderr"):
            jobs.forget_finished()
            if (job := jobs.find(output_id)) is not None:
                spool, growing = (job.out if stream == "stdout" else job.err), job.ended is None
        if spool is None:
            raise ResourceNotFoundError(f"{output_id}/{stream} is not kept (any more)")
        try:
            start, size = parse_range(offset, length)
            return read_output(output_id, stream, spool, start, size, growing=growing)
        except RangeError as exc:
            # A client's mistake in the URI, answered as such (not as the server's internal error).
            first = output_uri(output_id, stream)
            raise MCPError(
                INVALID_PARAMS,
                f"{exc}. A range is {first}?offset=<first byte>&length=<bytes, 1 to {MAX_RANGE_BYTES}>; "
                f"the first one: {first}",
                {"output": f"{output_id}/{stream}", "offset": offset, "length": length},
            ) from exc

    server.timeout_for = timeout_for

    async def gate(
        command: str,
        args: list[str],
        cwd: str | None,
        env: dict[str, str] | None,
        stdin: str | None,
        yieldAfterSeconds: float | None,
        jobId: str | None,
        listJobs: bool,
        signal: str | None,
        closeStdin: bool,
        applyChanges: str | None,
        dropChanges: str | None,
        ctx: Context[Any, Any],
        client_roots: ClientRoots,
    ) -> Elicit[ApprovalForm] | NoQuestion:
        """Ask the human when the policy says ask; refusals surface here, before any question. A call about
        jobs runs nothing: nothing to check or ask (a job's approval was taken when it started), except input to a
        job that runs its stdin as code, judged like a line. Applying held changes asks the human about exactly
        those changes."""
        server.apply_roots(client_roots)
        if applyChanges:
            held = waiting(applyChanges)
            caps = ctx.client_capabilities
            if caps is None or caps.elicitation is None:
                return NoQuestion(why="unavailable")
            return Elicit(f"{held.question}\n\n(made by: {held.shown})", ChangesApproval)
        if jobId and stdin is not None and not (listJobs or dropChanges):
            job = jobs.get(jobId)
            verdict = job_input_verdict(job, stdin)
            if verdict is None or verdict.action != "ask":
                return NoQuestion(why="not-asked")
            caps = ctx.client_capabilities
            if caps is None or caps.elicitation is None:
                return NoQuestion(why="unavailable")
            return Elicit(
                f"shell_exec wants to write to job {job.id} ({job.shown}):\n\n"
                + stdin_shown(stdin, verdict.stdin_code)
                + f"rule: {verdict.rule}\nreason: {verdict.reason}\n\nSend it?",
                Approval,
            )
        if jobId or listJobs or dropChanges:
            return NoQuestion(why="not-asked")
        wrong_job_arguments({"signal": signal, "closeStdin": closeStdin})
        return question(await checked.check(command, args, cwd, env, stdin, yieldAfterSeconds is not None), ctx, grants)

    def job_input_verdict(job: Job, stdin: str) -> LineVerdict | None:
        """Threat: `bash` started as a job, then fed `rm -rf ~` by a later call: a job that runs its stdin as code
        has each write judged, with the incomplete line the last write left (a command split over two writes is
        judged whole). None: the job reads its stdin as data."""
        if job.reads is None:
            return None
        command, job_args, env = job.reads
        return shell.judge_job_input(command, job_args, env, job.input_carry + stdin)

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

    async def job_changes(job: Job) -> tuple[str, Changes, PendingChanges]:
        """What a look at a job does with its changes: while it runs, applies those that need no question (copied:
        it keeps its copy) under this look's audit id; once it ended, tells what became of them all."""
        copy = job.control.copy
        if transactions is None or not copy.name:
            return "none", Changes(), PendingChanges()
        async with copy.busy:
            ended = job.control.outcome
            if ended is None:
                record = audit.current()
                look_id = record.audit_id if record is not None else new_audit_id()
                settled = await transactions.apply_live(
                    copy.name,
                    copy.started_ns,
                    audit_id=look_id,
                    roots=[root.path for root in config.jail.roots],
                    baseline=copy.baseline,
                    what={"tool": TOOL_NAME, "command": job.shown, "job": job.id, "look": True},
                )
                return described(settled, look_id)
        settled, end_id = ended
        return described(settled, end_id)

    def job_result(
        job: Job, limit: int, timeout: float, changed: tuple[str, Changes, PendingChanges]
    ) -> ShellExecOutput:
        """A job's new output since the last look, its status, and (once it ended) how it ended."""
        look = job.look(limit)
        result = job.result
        if job.ended is not None and job.error is not None and result is None:
            audit.note(job=job.id, job_status="failed")
            raise job.error
        audit.note(job=job.id, job_status=job.status)
        denied = result.network_denied if result is not None else ()
        if result is not None:
            note_run(result)
        return ShellExecOutput(
            stdout=look.stdout,
            stderr=look.stderr,
            exitCode=result.exit_code if result is not None else -1,
            timedOut=result.timed_out if result is not None else False,
            truncated=look.truncated,
            stdoutBytes=job.out.total,
            stderrBytes=job.err.total,
            durationMs=round(job.runtime_ms(), 3),
            signal=result.signal if result is not None else None,
            sandbox=sandbox.label,
            limitHit=limit_hit(result) if result is not None else None,
            timeoutSeconds=timeout,
            status=job.status,
            jobId=job.id,
            omitted=[
                OmittedRange(stream=name, start=a, end=b, resource=output_uri(job.id, name, a))
                for name, a, b in look.omitted
            ],
            networkDenied=NetworkDenial.all_of(denied),
            transaction=changed[0],
            changes=changed[1],
            pendingChanges=changed[2],
        )

    def no_run_output(stdout: str, **extra: Any) -> ShellExecOutput:
        """The answer of a call that ran no command (a job list, a held change set applied or dropped)."""
        return ShellExecOutput(
            stdout=stdout,
            stderr="",
            exitCode=0,
            timedOut=False,
            truncated=False,
            stdoutBytes=0,
            stderrBytes=0,
            durationMs=0.0,
            sandbox=sandbox.label,
            **extra,
        )

    def list_result() -> ShellExecOutput:
        listed = [
            JobInfo(
                jobId=job.id,
                command=job.shown,
                status=job.status,
                runtimeSeconds=round(job.runtime_ms() / 1000, 1),
                stdoutBytes=job.out.total,
                stderrBytes=job.err.total,
                exitCode=job.result.exit_code if job.result is not None else -1,
            )
            for job in jobs.jobs()
        ]
        lines = [
            f"{j.jobId}\t{j.status}\t{j.runtimeSeconds:.1f}s\t{j.stdoutBytes + j.stderrBytes} bytes\t{j.command}"
            for j in listed
        ]
        audit.note(jobs=len(listed))
        return no_run_output("\n".join(lines) + "\n" if lines else "no background jobs\n", jobs=listed)

    async def job_call(args: ShellExecInput, limit: int, answer: ElicitationResult[ApprovalForm]) -> ShellExecOutput:
        """A call naming a job: stdin, EOF, a stop, or a look after waiting up to yieldAfterSeconds."""
        assert args.jobId is not None
        job = jobs.get(args.jobId)
        if args.stdin is not None:
            if not job.control.stdin_open:
                raise ParamError(
                    "STDIN_CLOSED",
                    f"Job {job.id} cannot take input: its standard input is closed (or it ended: {job.status}).",
                    "Look at it instead: "
                    f'{{"name": "shell_exec", "arguments": {{"command": "", "jobId": "{job.id}"}}}}',
                )
            verdict = job_input_verdict(job, args.stdin)
            if verdict is not None:
                audit.note(rule=verdict.rule, stdin_judged_as=verdict.stdin_code)
                if verdict.action == "ask":
                    require_approval(answer, verdict)
                job.input_carry = (job.input_carry + args.stdin).rpartition("\n")[2]
            data = args.stdin.encode("utf-8", "surrogateescape")
            written = await job.control.write_stdin(data)
            audit.note(stdin_bytes=written)
            if written < len(data):
                raise ResourceError(
                    "STDIN_BLOCKED",
                    f"Job {job.id} took {written} of {len(data)} bytes of input in 10 s: it is not reading its "
                    f"standard input ({job.status}).",
                    "Look at its output first: "
                    f'{{"name": "shell_exec", "arguments": {{"command": "", "jobId": "{job.id}"}}}}',
                )
        if args.closeStdin:
            job.control.close_stdin()
            audit.note(stdin_closed=True)
        if args.signal is not None:
            audit.note(stopped_with=args.signal)
            await jobs.stop(job, args.signal)
        else:
            await jobs.wait(job, args.yieldAfterSeconds or 0.0)
        changed = await job_changes(job)
        return job_result(job, limit, job.timeout, changed)

    def wrong_job_arguments(given: Mapping[str, Any]) -> None:
        """signal, closeStdin without jobId: the call the model meant needs the job's id."""
        extra = [name for name, value in given.items() if value]
        if extra:
            running = jobs.running()
            example = running[0].id if running else "j1"
            raise ParamError(
                "INVALID_ARGUMENT",
                f"{' and '.join(extra)} {'acts' if len(extra) == 1 else 'act'} on a background job, and no jobId was "
                "given.",
                f'Call it like this: {{"name": "shell_exec", "arguments": {{"command": "", "jobId": "{example}", '
                f'"{extra[0]}": {json.dumps(given[extra[0]])}}}}}'
                + (f" (running jobs: {', '.join(j.id for j in running)})" if running else " (no job is running)"),
            )

    async def shell_exec(
        args: ShellExecInput, ctx: Context[Any, Any], answer: ElicitationResult[ApprovalForm]
    ) -> ShellExecOutput:
        max_output = min(args.maxOutputBytes or policy.default_output_bytes, policy.max_output_bytes)
        if args.applyChanges or args.dropChanges:
            return await held_call(args, answer)
        if args.listJobs:
            return list_result()
        if args.jobId:
            return await job_call(args, max_output, answer)
        wrong_job_arguments({"signal": args.signal, "closeStdin": args.closeStdin})
        asked = await checked.reuse(
            args.command, args.args, args.cwd, args.env, args.stdin, args.yieldAfterSeconds is not None
        )
        prepared = asked.prepared
        verdict = prepared.verdict
        decided = consent(answer, asked, grants)
        if verdict.action != "ask":
            audit.note(approved_by=f"rule:{verdict.rule}" if verdict.rule else "policy", reason=verdict.reason)
        audit.note(rule=verdict.rule)
        timeout = timeout_for(args.model_dump())
        stdin = args.stdin.encode("utf-8", "surrogateescape") if args.stdin is not None else None
        background = args.yieldAfterSeconds is not None
        hosts = None
        if egress is not None:
            # A job outlives its call: nobody can be asked mid-run; its unnamed hosts are asked about before the
            # next run of the same line.
            ask, ask_later = host_asker(ctx, prepared.shown)
            if background:
                ask, ask_later = None, ask is not None or ask_later
            hosts = CallHosts(
                grants,
                shown=prepared.shown,
                cwd=prepared.cwd,
                approved=decided.hosts,
                ask=ask,
                ask_later=ask_later,
                question_timeout=policy.question_timeout_seconds,
            )
        if background:
            assert args.yieldAfterSeconds is not None
            record = audit.current()
            start_id = record.audit_id if record is not None else new_audit_id()
            ask_now, hold = changes_asker(ctx)
            can_hold = ask_now is not None or hold  # a later call can ask the user about what the job did

            async def run_job(control: Control) -> RunResult:
                result = await shell.execute(prepared, None, timeout, 1 << 16, None, hosts, control)
                if transactions is not None and result.copy:
                    # The job ended: what it did (and no look applied yet) is settled now, recorded under the call
                    # that started it; a question becomes changes held for a later call.
                    async with control.copy.busy:
                        settled = await transactions.settle(
                            result.copy,
                            result.copy_final,
                            audit_id=start_id,
                            started_ns=result.started_ns,
                            roots=[root.path for root in config.jail.roots],
                            ask=None,
                            hold=can_hold,
                            shown=prepared.shown,
                            what={"tool": TOOL_NAME, "command": prepared.shown, "cwd": prepared.cwd_display},
                            baseline=control.copy.baseline,
                        )
                        control.outcome = (settled, start_id)
                return result

            job = jobs.start(prepared.shown, prepared.cwd_display, timeout, run_job)
            if verdict.stdin_code:
                # Its later input is code: each write is judged (job_input_verdict), after what this call fed it.
                job.reads = (args.command, list(args.args), dict(args.env or {}))
                job.input_carry = (args.stdin or "").rpartition("\n")[2]
            audit.note(job=job.id, job_action="start")
            if stdin is not None:
                written = await job.control.write_stdin(stdin)
                audit.note(stdin_bytes=written)
                if written < len(stdin):
                    note = f"[mcp-guard] the job took {written} of {len(stdin)} bytes of stdin in 10 s\n"
                    job.err.feed(note.encode())  # the start's result says so (its stderr)
            await jobs.wait(job, args.yieldAfterSeconds)
            out = job_result(job, max_output, timeout, await job_changes(job))
            return out.model_copy(update={"rule": verdict.rule if verdict.action == "ask" else None,
                                          "approval": decided.approval})  # fmt: skip
        spools = kept.spools(lazy_after=max_output)
        control = Control(tee=lambda stream, chunk: spools["stdout" if stream == 1 else "stderr"].feed(chunk))
        try:
            result = await shell.execute(
                prepared, stdin, timeout, max_output, running_display(ctx), hosts, control if spools else None
            )
        except BaseException:
            for spool in spools.values():  # a failed or cancelled call keeps nothing on disk
                spool.close()
            raise
        if hosts is not None and hosts.answers:
            audit.note(hosts_answered=hosts.answers)
        note_run(result)
        omitted = keep_cut_output(spools, result, max_output)
        transaction, changes, pending = await settle(result, prepared.shown, prepared.cwd_display, ctx)
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
            networkDenied=NetworkDenial.all_of(result.network_denied),
            omitted=omitted,
            transaction=transaction,
            changes=changes,
            pendingChanges=pending,
        )

    def changes_asker(ctx: Context[Any, Any]) -> tuple[Ask | None, bool]:
        """How to get the person's yes for a change set: now (a 2025-era client, through elicitation); later, by
        holding it (2026-07-28: questions only between rounds); or not at all (a client without elicitation)."""
        caps = ctx.client_capabilities
        if caps is None or caps.elicitation is None:
            return None, False
        if not ctx.session.can_send_request:
            return None, True

        async def ask(question: str) -> bool | None:
            with anyio.move_on_after(policy.question_timeout_seconds):
                try:
                    reply = await ctx.elicit(question, ChangesApproval)
                except (ValidationError, ValueError):
                    log.warning("the client answered the question about a command's changes with another form")
                    return None  # the client's answer did not fit the question: nothing is applied
                if isinstance(reply, AcceptedElicitation):
                    return getattr(reply.data, "apply", False) is True
                return False
            return None  # nobody answered

        return ask, False

    async def settle(
        result: RunResult, shown: str, cwd: str, ctx: Context[Any, Any]
    ) -> tuple[str, Changes, PendingChanges]:
        """What becomes of the copy the command worked on: read, judged, applied (or held, or dropped)."""
        if transactions is None or not result.copy:
            return "none", Changes(), PendingChanges()
        record = audit.current()
        audit_id = record.audit_id if record is not None else new_audit_id()
        ask, hold = changes_asker(ctx)
        settled = await transactions.settle(
            result.copy,
            result.copy_final,
            audit_id=audit_id,
            started_ns=result.started_ns,
            roots=[root.path for root in config.jail.roots],
            ask=ask,
            hold=hold,
            shown=shown,
            what={"tool": TOOL_NAME, "command": shown, "cwd": cwd},
        )
        return described(settled, audit_id)

    def described(settled: Settled, audit_id: str) -> tuple[str, Changes, PendingChanges]:
        counts = settled.counts
        paths = [ChangedPath(path=p, action=a) for p, a in settled.paths]
        paths += [ChangedPath(path=p, action="refused", reason=why) for p, why in settled.refused]
        paths += [ChangedPath(path=c.path, action="conflict", reason=c.what) for c in settled.conflicts]
        applied = settled.transaction == "applied"
        changes = Changes(
            summary=settled.summary,
            created=counts.created,
            modified=counts.modified,
            deleted=counts.deleted,
            metaChanged=counts.meta,
            bytes=counts.bytes,
            conflicts=len(settled.conflicts),
            refused=len(settled.refused),
            paths=paths,
            undo=f"mcp-guard undo {audit_id}" if applied and counts.total else "",
            reason=settled.reason,
        )
        pending = PendingChanges()
        if settled.held:
            pending = PendingChanges(id=settled.held, summary=settled.summary, question=settled.asked)
        if settled.transaction != "none":
            audit.note(transaction=settled.transaction, changes=settled.summary)
            if settled.refused:
                audit.note(refused=[f"{p}: {why}" for p, why in settled.refused])
            if settled.conflicts:
                audit.note(conflicts=[f"{c.path}: {c.what}" for c in settled.conflicts])
            if settled.asked:
                audit.note(changes_asked=settled.asked)
        return settled.transaction, changes, pending

    def waiting(held_id: str) -> Held:
        held = transactions.held(held_id) if transactions is not None else None
        if held is None:
            known = [h.id for h in transactions.all_held()] if transactions is not None else []
            raise ParamError(
                "CHANGES_NOT_FOUND",
                f"No changes are waiting under the id {held_id!r} (applied, dropped or expired).",
                f"Waiting now: {', '.join(known)}." if known else "Nothing is waiting; run the command again.",
            )
        return held

    async def held_call(args: ShellExecInput, answer: ElicitationResult[ApprovalForm]) -> ShellExecOutput:
        """Apply (after the user's yes) or drop changes a command made that were held for the user."""
        wanted = args.applyChanges or args.dropChanges or ""
        held = waiting(wanted)
        assert transactions is not None
        record = audit.current()
        audit_id = record.audit_id if record is not None else new_audit_id()
        audit.note(changes_of=held.audit_id)
        if args.applyChanges:
            data = answer.data if isinstance(answer, AcceptedElicitation) else None
            if isinstance(data, ApprovalForm) and getattr(data, "apply", False) is True:
                audit.note(decision="ask-approved", approved_by=APPROVED_BY, reason=held.question)
                settled = await transactions.apply_held(
                    held.id,
                    audit_id=audit_id,
                    roots=[root.path for root in config.jail.roots],
                    what={"tool": TOOL_NAME, "command": held.shown},
                )
            else:
                why = "unavailable" if isinstance(data, NoQuestion) else "declined"
                audit.note(decision=f"ask-{why}", reason=held.question)
                await transactions.drop_held(held.id)
                settled = Settled(
                    "declined",
                    held.summary,
                    reason="this client cannot ask the user"
                    if why == "unavailable"
                    else "the user declined these changes; they were dropped",
                )
        else:
            await transactions.drop_held(held.id)
            settled = Settled("declined", held.summary, reason="dropped, as asked")
        transaction, changes, pending = described(settled, audit_id)
        return no_run_output("", transaction=transaction, changes=changes, pendingChanges=pending)

    def note_run(result: RunResult) -> None:
        """What a finished command did, for its audit record (a job's: on the look that sees it end)."""
        audit.note(
            bytes=result.stdout_bytes + result.stderr_bytes, exitCode=result.exit_code, timedOut=result.timed_out
        )
        if result.network_allowed:
            audit.note(network_allowed=list(result.network_allowed))
        if result.network_denied:
            audit.note(network_denied=[f"{d.host}:{d.port} ({d.rule})" for d in result.network_denied])

    def keep_cut_output(spools: dict[str, Spool], result: RunResult, max_output: int) -> list[OmittedRange]:
        """A cut result's full output stays readable as a resource for a while; an uncut one's spool goes."""
        totals = {"stdout": result.stdout_bytes, "stderr": result.stderr_bytes}
        cut = {name: total for name, total in totals.items() if total > max_output}
        if not spools or not result.truncated or not cut:
            for spool in spools.values():
                spool.close()
            return []
        output_id = kept.keep(spools)
        head = max_output // 2
        return [
            OmittedRange(
                stream=name, start=head, end=total - (max_output - head), resource=output_uri(output_id, name, head)
            )
            for name, total in cut.items()
        ]

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
        implied={"command": ("jobId", "listJobs", "applyChanges", "dropChanges")},  # calls that run no command
        resolvers={"answer": Annotated[ElicitationResult[ApprovalForm], Resolve(gate)]},
    )
    return server


__all__ = ["ShellExecInput", "ShellExecOutput", "build_server"]
