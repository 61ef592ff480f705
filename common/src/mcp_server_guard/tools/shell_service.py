"""The operations behind the shell_exec tool, built by one constructor: a command checked, asked about, run (in the
box, on a copy the service then judges and applies), background jobs (``tools.shell_jobs``), kept outputs, held
change sets.

The server keeps its contract's models and the wiring; everything a call does is here. ``ShellService`` builds
results of the server's output type (a ``ShellResult``), reads the call's arguments through ``ShellCall`` (the
server's input model has these attributes), and gives the server what it must run at exit (``kills``,
``cleanups``, appended to the server's in order).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from mcp_server_guard import audit, paths
from mcp_server_guard.asking import Answer, Question, Session
from mcp_server_guard.audit import default_state_path
from mcp_server_guard.changes import Held, Settled, Transactions  # the package's public names
from mcp_server_guard.changes.area import CopyArea
from mcp_server_guard.changes.what import What
from mcp_server_guard.errors import ParamError
from mcp_server_guard.files.liveness import OwnedDir
from mcp_server_guard.files.trees import remove_dead, remove_tree
from mcp_server_guard.files.writing import open_writer
from mcp_server_guard.policy import HostVerdict, NetworkRules
from mcp_server_guard.protected import Protection, protection_for
from mcp_server_guard.serving.config import Mode, ServerConfig
from mcp_server_guard.shell.approval import (
    APPROVED_BY,
    Approval,
    ApprovalForm,
    Checked,
    NoQuestion,
    consent,
    question,
    stdin_shown,
)
from mcp_server_guard.shell.egress import EgressProxy, resolver_from_env
from mcp_server_guard.shell.execution import ShellExec, limit_hit, writable_engine, writable_policy
from mcp_server_guard.shell.grants import CallHosts, SessionApprovals
from mcp_server_guard.shell.process import REGISTRY, Control, RunResult
from mcp_server_guard.shell.sandbox.layers import close_box
from mcp_server_guard.shell.sandbox.lifetime import release
from mcp_server_guard.shell.sandbox.planning import NetworkMode, SandboxPlan
from mcp_server_guard.shell.spools import (
    MAX_RANGE_BYTES,
    OUTPUT_TEMPLATE,
    RANGE_BYTES,
    KeptOutputs,
    RangeError,
    Spool,
    output_uri,
    parse_range,
    read_output,
)
from mcp_server_guard.tools.shell_jobs import TOOL_NAME, Described, R, ShellJobs, call_audit_id
from mcp_server_guard.tools.shell_questions import ChangesApproval, changes_asker, host_asker
from mcp_server_guard.tools.shell_results import (
    READ_ONLY,
    SESSION_READ_ONLY,
    Changes,
    JobInfo,
    NetworkDenial,
    OmittedRange,
    PendingChanges,
    described,
    note_run,
    running_display,
    wrote_read_only,
)

log = logging.getLogger("mcp_server_guard.shell_exec")

# The resource template kept outputs are read through (ShellService.read_output answers it).
OUTPUT_DESCRIPTION = (
    "The full stdout or stderr of a shell_exec result that had to be cut, or of a background job, while it is kept, "
    f"read in ranges: each answer holds at most `length` bytes (default {RANGE_BYTES}, at most {MAX_RANGE_BYTES}) "
    "from `offset` (default 0). Its first line says which bytes it holds, of how many, and the URI of the next range "
    "(or that it is the end); the text follows from the second line on."
)


class ShellCall(Protocol):
    """The arguments of a shell_exec call, as the server's input model carries them."""

    @property
    def command(self) -> str: ...
    @property
    def args(self) -> Sequence[str]: ...
    @property
    def cwd(self) -> str | None: ...
    @property
    def stdin(self) -> str | None: ...
    @property
    def env(self) -> Mapping[str, str] | None: ...
    @property
    def timeoutSeconds(self) -> float | None: ...
    @property
    def maxOutputBytes(self) -> int | None: ...
    @property
    def yieldAfterSeconds(self) -> float | None: ...
    @property
    def jobId(self) -> str | None: ...
    @property
    def signal(self) -> str | None: ...
    @property
    def closeStdin(self) -> bool: ...
    @property
    def listJobs(self) -> bool: ...
    @property
    def applyChanges(self) -> str | None: ...
    @property
    def dropChanges(self) -> str | None: ...


def _log_decision(token: str | None, host: str, port: int, verdict: HostVerdict) -> None:
    log.info("egress %s %s:%s (%s) for call %s", verdict.action, host, port, verdict.rule, token)


class ShellService(ShellJobs[R]):
    """Everything shell_exec does, for one server: its policy, box, jobs, kept outputs and change sets."""

    def __init__(
        self,
        config: ServerConfig,
        sandbox: SandboxPlan,
        result: type[R],
        approvals_file: Path | None = None,
        *,
        history_dir: Path | None = None,
        area: CopyArea | None = None,
        copies_here: bool = False,
        protection: Protection | None = None,
    ) -> None:
        self.config = config
        self.sandbox = sandbox
        self.result = result
        self.policy = config.policy.shell_exec
        self.roots = [root.path for root in config.jail.roots]
        # What the server runs at exit, in order: the kills first, however the exit comes; then the cleanups.
        self.kills: list[Callable[[], None]] = []
        self.cleanups: list[Callable[[], None]] = []
        self.egress = None
        if sandbox.network is NetworkMode.POLICY:
            rules = NetworkRules.parse(config.policy.network.allow, config.policy.network.deny)
            self.egress = EgressProxy(rules, resolver=resolver_from_env(os.environ), on_decision=_log_decision)
        if protection is None:
            protection = protection_for(
                config.policy,
                audit_path=config.audit.path,
                history_dir=history_dir,
                others=[approvals_file] if approvals_file else [],
            )
        self.transactions: Transactions | None = None
        if sandbox.copies and area is not None and history_dir is not None:
            # The one writer's store, shared with file_write: every pre-image of what commands change is kept there.
            # (Its protection is the server's, made with the same files: issue 44, one made at start, not two.)
            writer = open_writer(config.jail, config.policy, config.audit.path, history_dir, protection=protection)
            self.cleanups.append(writer.close)
            self.transactions = Transactions(
                area, writer.history, protection, config.policy.effects, display=config.jail.display_path
            )
        # ``copies_here``: a workspace-write session of this server would work on copies (a read-only one has none)
        copies = copies_here or (area is not None and "bwrap" in sandbox.label)
        # --mode read-only: where the box keeps commands from writing (every root bound read-only), any line runs,
        # judged as in a workspace-write session. Not with Landlock alone: it leaves modes, owners, attributes and
        # times writable (red team 6 R2); nor with an explicit --policy readonly (R3): there the allow-list decides.
        self.kernel_read_only = not sandbox.jail_writable and sandbox.box is not None and config.implicit_readonly
        if self.kernel_read_only:
            self.policy = writable_policy(config.policy.source, config.policy.shell_exec)
        writing = (
            writable_engine(config.policy.source, config.policy.shell_exec, copies, self.roots)
            if config.mode is Mode.READ_ONLY and not self.kernel_read_only
            else None
        )
        self.shell = ShellExec(
            config.jail,
            self.policy,
            sandbox,
            protection=protection,
            transactions=self.transactions,
            egress=self.egress,
            grants=SessionApprovals(approvals_file),
            read_only=config.mode is Mode.READ_ONLY,
            writable_engine=writing,
            kernel_read_only=self.kernel_read_only,
        )
        self.grants = self.shell.grants
        self.checked = Checked(self.shell, self.grants)
        # At exit, however it comes: no command outlives the server, then what confined them goes.
        self.kills += [REGISTRY.kill_all, lambda: close_box(sandbox), lambda: release(sandbox)]
        if self.transactions is not None:
            self.cleanups.append(self.transactions.close)  # the copies queued for removal go before the area does
        if area is not None:
            self.cleanups.append(area.close)  # after the box: no call can be using a copy any more
        # Our spools lie in a directory of our own, locked for our life; what dead servers left goes now (a server
        # killed with SIGKILL cannot clean up; its lock tells it is gone, whatever its age or pid).
        spool_area = default_state_path("spool", self.roots)
        swept = remove_dead(spool_area, unlocked_legacy=True)
        if swept:
            log.info("removed the output spools of %d dead server(s) from %s", swept, spool_area)
        spool_owned = OwnedDir(spool_area)
        self._jobs, self._jobs_dir = None, spool_owned.path / "jobs"
        self.kept = KeptOutputs(self.policy, spool_owned.path / "outputs")
        self.cleanups += [self._close_jobs, self.kept.close, lambda: remove_tree(spool_owned.path), spool_owned.close]

    # -- what the server asks before the call runs ------------------------------------------------------------

    def timeout_for(self, arguments: Mapping[str, Any]) -> float:
        """The call's timeout: the policy's default and cap; for a background job, the job's (longer) ones."""
        named = arguments.get("jobId")
        if isinstance(named, str) and named and (known := self.jobs.find(named)) is not None:
            return known.timeout
        asked = arguments.get("timeoutSeconds")
        policy = self.policy
        job = isinstance(arguments.get("yieldAfterSeconds"), int | float) and not named
        default, cap = (
            (policy.job_timeout_seconds, policy.job_timeout_seconds)
            if job
            else (policy.default_timeout_seconds, policy.max_timeout_seconds)
        )
        wanted = asked if isinstance(asked, int | float) and asked > 0 else default
        return float(min(wanted, cap))

    async def gate(self, args: ShellCall, session: Session) -> Question | NoQuestion:
        """Ask the human when the policy says ask; refusals surface here, before any question. A call about
        jobs runs nothing: nothing to check or ask (a job's approval was taken when it started), except input to a
        job that runs its stdin as code, judged like a line. Applying held changes asks the human about exactly
        those changes."""
        can_ask = session.can_elicit
        if args.applyChanges:
            held = self._waiting(args.applyChanges)
            if not can_ask:
                return NoQuestion(why="unavailable")
            return Question(f"{held.question}\n\n(made by: {paths.printable_lines(held.shown)})", ChangesApproval)
        if args.jobId and args.stdin is not None and not (args.listJobs or args.dropChanges):
            job = self.jobs.get(args.jobId)
            verdict = self._job_input_verdict(job, args.stdin)
            if verdict is None or verdict.action != "ask":
                return NoQuestion(why="not-asked")
            if not can_ask:
                return NoQuestion(why="unavailable")
            return Question(
                f"shell_exec wants to write to job {job.id} ({job.shown}):\n\n"
                + stdin_shown(args.stdin, verdict.stdin_code)
                + f"rule: {verdict.rule}\nreason: {verdict.reason}\n\nSend it?",
                Approval,
            )
        if args.jobId or args.listJobs or args.dropChanges:
            return NoQuestion(why="not-asked")
        self._wrong_job_arguments({"signal": args.signal, "closeStdin": args.closeStdin})
        asked = await self.checked.check(
            args.command, args.args, args.cwd, args.env, args.stdin, args.yieldAfterSeconds is not None
        )
        return question(asked, session, self.grants)

    # -- the call ---------------------------------------------------------------------------------------------

    async def call(self, args: ShellCall, session: Session, answer: Answer) -> R:
        """One shell_exec call, whichever it is: held changes, the job list, a job, or a command to run."""
        max_output = min(args.maxOutputBytes or self.policy.default_output_bytes, self.policy.max_output_bytes)
        if args.applyChanges or args.dropChanges:
            return await self._held_call(args, answer)
        if args.listJobs:
            return self._list_result()
        if args.jobId:
            return await self._job_call(args, args.jobId, max_output, answer)
        self._wrong_job_arguments({"signal": args.signal, "closeStdin": args.closeStdin})
        asked = await self.checked.reuse(
            args.command, args.args, args.cwd, args.env, args.stdin, args.yieldAfterSeconds is not None
        )
        prepared = asked.prepared
        verdict = prepared.verdict
        decided = consent(answer, asked, self.grants)
        if verdict.action != "ask":
            audit.note(approved_by=f"rule:{verdict.rule}" if verdict.rule else "policy", reason=verdict.reason)
        audit.note(rule=verdict.rule)
        rule = verdict.rule if verdict.action == "ask" else None  # the rule that asked, shown in the result
        hosts = None
        if self.egress is not None:
            # A job outlives its call: nobody can be asked mid-run; its unnamed hosts are asked before the next run.
            ask, ask_later = host_asker(session, prepared.shown)
            if args.yieldAfterSeconds is not None:
                ask, ask_later = None, ask is not None or ask_later
            hosts = CallHosts(
                self.grants,
                shown=prepared.shown,
                cwd=prepared.cwd,
                approved=decided.hosts,
                ask=ask,
                ask_later=ask_later,
                question_timeout=self.policy.question_timeout_seconds,
            )
        timeout = self.timeout_for({"timeoutSeconds": args.timeoutSeconds, "yieldAfterSeconds": args.yieldAfterSeconds})
        if args.yieldAfterSeconds is not None:
            job = await self._start_job(args, prepared, verdict.stdin_code, hosts, timeout, session)
            await self.jobs.wait(job, args.yieldAfterSeconds)
            out = self._job_result(job, max_output, timeout, await self._job_changes(job))
            return out.model_copy(update={"rule": rule, "approval": decided.approval})
        stdin = args.stdin.encode("utf-8", "surrogateescape") if args.stdin is not None else None
        spools = self.kept.spools(lazy_after=max_output)
        control = Control(tee=lambda stream, chunk: spools["stdout" if stream == 1 else "stderr"].feed(chunk))
        try:
            result = await self.shell.execute(
                prepared, stdin, timeout, max_output, running_display(session), hosts, control if spools else None
            )
        except BaseException:
            for spool in spools.values():  # a failed or cancelled call keeps nothing on disk
                spool.close()
            raise
        if hosts is not None and hosts.answers:
            audit.note(hosts_answered=hosts.answers)
        note_run(result)
        omitted = self._keep_cut_output(spools, result, max_output)
        transaction, changes, pending = await self._settle(result, prepared.shown, prepared.cwd_display, session)
        return self.result(
            stdout=result.stdout,
            stderr=result.stderr,
            exitCode=result.exit_code,
            timedOut=result.timed_out,
            truncated=result.truncated,
            stdoutBytes=result.stdout_bytes,
            stderrBytes=result.stderr_bytes,
            durationMs=round(result.duration_ms, 3),
            signal=result.signal,
            stoppedProcesses=result.stopped,
            sandbox=self.sandbox.label,
            limitHit=limit_hit(result),
            timeoutSeconds=timeout,
            networkDenied=NetworkDenial.all_of(
                result.network_denied, result, no_network=self.sandbox.network is NetworkMode.DENY
            ),
            omitted=omitted,
            transaction=transaction,
            changes=changes,
            pendingChanges=pending,
            rule=rule,
            approval=decided.approval,
        )

    def read_output(self, output_id: str, stream: str, offset: str | None, length: str | None) -> str:
        """A range of a kept output or of a job's (resource reads). On the event loop, not in a worker thread: a
        job's spool is fed and closed there, never under a read."""
        # The SDK: a resource is only ever read through it (never before it has loaded).
        from mcp.server.mcpserver.exceptions import ResourceNotFoundError  # noqa: PLC0415
        from mcp.shared.exceptions import MCPError  # noqa: PLC0415
        from mcp.types import INVALID_PARAMS  # noqa: PLC0415

        spool = self.kept.spool(output_id, stream)
        growing = False
        if spool is None and stream in ("stdout", "stderr"):
            self.jobs.forget_finished()
            if (job := self.jobs.find(output_id)) is not None:
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

    # -- background jobs --------------------------------------------------------------------------------------

    def _list_result(self) -> R:
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
            for job in self.jobs.jobs()
        ]
        lines = [
            f"{j.jobId}\t{j.status}\t{j.runtimeSeconds:.1f}s\t{j.stdoutBytes + j.stderrBytes} bytes\t{j.command}"
            for j in listed
        ]
        audit.note(jobs=len(listed))
        return self._no_run("\n".join(lines) + "\n" if lines else "no background jobs\n", jobs=listed)

    # -- outputs and change sets ------------------------------------------------------------------------------

    def _no_run(self, stdout: str, **extra: Any) -> R:
        """The answer of a call that ran no command (a job list, a held change set applied or dropped)."""
        return self.result(
            stdout=stdout,
            stderr="",
            exitCode=0,
            timedOut=False,
            truncated=False,
            stdoutBytes=0,
            stderrBytes=0,
            durationMs=0.0,
            sandbox=self.sandbox.label,
            **extra,
        )

    def _keep_cut_output(self, spools: dict[str, Spool], result: RunResult, max_output: int) -> list[OmittedRange]:
        """A cut result's full output stays readable as a resource for a while; an uncut one's spool goes."""
        totals = {"stdout": result.stdout_bytes, "stderr": result.stderr_bytes}
        cut = {name: total for name, total in totals.items() if total > max_output}
        if not spools or not result.truncated or not cut:
            for spool in spools.values():
                spool.close()
            return []
        output_id = self.kept.keep(spools)
        head = max_output // 2
        return [
            OmittedRange(
                stream=name, start=head, end=total - (max_output - head), resource=output_uri(output_id, name, head)
            )
            for name, total in cut.items()
        ]

    async def _settle(self, result: RunResult, shown: str, cwd: str, session: Session) -> Described:
        """What becomes of the copy the command worked on: read, judged, applied (or held, or dropped)."""
        if self.transactions is not None and result.read_only:
            # It could write nothing; a write it tried anyway (a hook, a program that writes after all) failed.
            refused = wrote_read_only(result)
            return described(Settled("unchanged", reason=READ_ONLY if refused else ""), call_audit_id())
        if self.kernel_read_only and wrote_read_only(result):
            return "none", Changes(reason=SESSION_READ_ONLY), PendingChanges()
        if self.transactions is None or not result.copy:
            return "none", Changes(), PendingChanges()
        audit_id = call_audit_id()
        ask, hold = changes_asker(session, self.policy.question_timeout_seconds)
        settled = await self.transactions.settle(
            result.copy,
            result.copy_final,
            audit_id=audit_id,
            started_ns=result.started_ns,
            roots=self.roots,
            ask=ask,
            hold=hold,
            shown=shown,
            what=What(tool=TOOL_NAME, command=shown, cwd=cwd),
            untouched=result.copy_untouched,
            moved=result.copy_moved,
        )
        return described(settled, audit_id)

    def _waiting(self, held_id: str) -> Held:
        held = self.transactions.held(held_id) if self.transactions is not None else None
        if held is None:
            known = [h.id for h in self.transactions.all_held()] if self.transactions is not None else []
            raise ParamError(
                "CHANGES_NOT_FOUND",
                f"No changes are waiting under the id {held_id!r} (applied, dropped or expired).",
                f"Waiting now: {', '.join(known)}." if known else "Nothing is waiting; run the command again.",
            )
        return held

    async def _held_call(self, args: ShellCall, answer: Answer) -> R:
        """Apply (after the user's yes) or drop changes a command made that were held for the user."""
        held = self._waiting(args.applyChanges or args.dropChanges or "")
        transactions = self.transactions
        assert transactions is not None
        audit_id = call_audit_id()
        audit.note(changes_of=held.audit_id)
        if args.applyChanges:
            data = answer.data if answer.accepted else None
            if isinstance(data, ApprovalForm) and getattr(data, "apply", False) is True:
                audit.note(decision="ask-approved", approved_by=APPROVED_BY, reason=held.question)
                settled = await transactions.apply_held(
                    held.id, audit_id=audit_id, roots=self.roots, what=What(tool=TOOL_NAME, command=held.shown)
                )
            else:
                why = "unavailable" if isinstance(data, NoQuestion) else "declined"
                # Who decided: the person (declined), or nobody could be asked.
                audit.note(decision=f"ask-{why}", reason=held.question,
                           approved_by=APPROVED_BY if why == "declined" else "")  # fmt: skip
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
        transaction, changes, pending = described(settled, held.audit_id if held.baseline else audit_id)  # apply_held
        return self._no_run("", transaction=transaction, changes=changes, pendingChanges=pending)


__all__ = ["OUTPUT_DESCRIPTION", "OUTPUT_TEMPLATE", "ShellCall", "ShellService"]
