"""The background-job side of the shell_exec service (``tools.shell_service``): a command started as a job, and the
calls naming one (input to it, judged when the job runs its stdin as code; EOF; a stop; a look, and what a look
applies). ``ShellJobs`` is a base class of ``ShellService``, which builds the state these methods read (declared
here). Also what both share: the tool's name, a call's audit id, the result type and what became of a call's copy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio

from mcp_server_guard import audit
from mcp_server_guard.asking import Answer, Session
from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes import Settled, Transactions
from mcp_server_guard.changes.what import What
from mcp_server_guard.errors import ParamError, ResourceError, SecurityError
from mcp_server_guard.policy import ShellPolicy
from mcp_server_guard.shell.approval import require_approval
from mcp_server_guard.shell.execution import Prepared, ShellExec, limit_hit
from mcp_server_guard.shell.grants import CallHosts
from mcp_server_guard.shell.process import Control, RunResult
from mcp_server_guard.shell.sandbox.planning import NetworkMode, SandboxPlan
from mcp_server_guard.shell.spools import output_uri
from mcp_server_guard.shell.strings import Verdict as LineVerdict
from mcp_server_guard.tools.shell_questions import changes_asker
from mcp_server_guard.tools.shell_results import (
    DISK_LOW,
    SESSION_READ_ONLY,
    Changes,
    NetworkDenial,
    OmittedRange,
    PendingChanges,
    ShellResult,
    described,
    note_run,
    wrote_read_only,
)

if TYPE_CHECKING:
    from pathlib import Path

    from mcp_server_guard.shell.jobs import Job, JobTable
    from mcp_server_guard.tools.shell_service import ShellCall

TOOL_NAME = "shell_exec"

R = TypeVar("R", bound=ShellResult)

# What became of a call's copy: the transaction's name, what changed, what waits for the user.
Described = tuple[str, Changes, PendingChanges]


def call_audit_id() -> str:
    """This call's audit id (a fresh one in in-process use without the audit wrapper)."""
    record = audit.current()
    return record.audit_id if record is not None else new_audit_id()


class ShellJobs(Generic[R]):
    """The calls about background jobs, for ``ShellService`` (which sets these attributes)."""

    result: type[R]
    policy: ShellPolicy
    sandbox: SandboxPlan
    roots: list[str]
    shell: ShellExec
    transactions: Transactions | None
    kernel_read_only: bool
    _jobs: JobTable | None  # (made by ``jobs``, with the first call about a job)
    _jobs_dir: Path

    @property
    def jobs(self) -> JobTable:
        """This server's background jobs: the table, and the module, come with the first call about a job (a session
        that starts none never loads them: issue 44)."""
        if self._jobs is None:
            from mcp_server_guard.shell.jobs import JobTable  # noqa: PLC0415 - (see above)

            self._jobs = JobTable(self.policy, self._jobs_dir)
        return self._jobs

    def _close_jobs(self) -> None:
        """At the server's end: every job killed, its spool removed (nothing when no job was ever asked for)."""
        if self._jobs is not None:
            self._jobs.close()

    async def _start_job(
        self,
        args: ShellCall,
        prepared: Prepared,
        stdin_code: str,
        hosts: CallHosts | None,
        timeout: float,
        session: Session,
    ) -> Job:
        """Start the command as a background job, fed the call's stdin."""
        start_id = call_audit_id()
        ask_now, hold = changes_asker(session, self.policy.question_timeout_seconds)
        can_hold = ask_now is not None or hold  # a later call can ask the user about what the job did
        transactions = self.transactions

        async def run_job(control: Control) -> RunResult:
            result = await self.shell.execute(prepared, None, timeout, 1 << 16, None, hosts, control)
            if transactions is not None and result.copy:
                # The job ended: what it did (and no look applied yet) is settled now, recorded under the call
                # that started it; a question becomes changes held for a later call.
                async with control.copy.busy:
                    settled = await transactions.settle(
                        result.copy,
                        result.copy_final,
                        audit_id=start_id,
                        started_ns=result.started_ns,
                        roots=self.roots,
                        ask=None,
                        hold=can_hold,
                        shown=prepared.shown,
                        what=What(tool=TOOL_NAME, command=prepared.shown, cwd=prepared.cwd_display),
                        baseline=control.copy.baseline,
                        untouched=result.copy_untouched,
                        moved=result.copy_moved,
                    )
                    control.outcome = (settled, start_id)
            elif result.disk_low:  # its copy went (what its looks applied stays, under the job's id)
                control.outcome = (Settled("none", reason=DISK_LOW), start_id)
            return result

        job = self.jobs.start(prepared.shown, prepared.cwd_display, timeout, run_job, audit_id=start_id)
        from mcp_server_guard.shell.jobs import job_input  # noqa: PLC0415 - (loaded with the table: see jobs)

        if stdin_code:
            # Its later input is code: each write is judged (_job_input_verdict), after what this call fed it.
            job.reads = (args.command, list(args.args), dict(args.env or {}))
            job.input_carry, job.input_readable = await anyio.to_thread.run_sync(
                job_input, args.stdin or "", _shell(job)
            )
        audit.note(job=job.id, job_action="start")
        if args.stdin is not None:
            stdin = args.stdin.encode("utf-8", "surrogateescape")
            written = await job.control.write_stdin(stdin)
            if stdin_code:  # (what the job got, not what it was given: red team 118 F2)
                taken = stdin[:written].decode("utf-8", "surrogateescape")
                job.input_carry, job.input_readable = await anyio.to_thread.run_sync(job_input, taken, _shell(job))
            audit.note(stdin_bytes=written)
            if written < len(stdin):
                note = f"[mcp-guard] the job took {written} of {len(stdin)} bytes of stdin in 10 s\n"
                job.err.feed(note.encode())  # the start's result says so (its stderr)
        return job

    async def _job_call(self, args: ShellCall, job_id: str, limit: int, answer: Answer) -> R:
        """A call naming a job: stdin, EOF, a stop, or a look after waiting up to yieldAfterSeconds."""
        from mcp_server_guard.shell.jobs import job_input  # noqa: PLC0415 - (see jobs)

        job = self.jobs.get(job_id)
        look = f'{{"name": "shell_exec", "arguments": {{"command": "", "jobId": "{job.id}"}}}}'
        if args.stdin is not None:
            if not job.control.stdin_open:
                raise ParamError(
                    "STDIN_CLOSED",
                    f"Job {job.id} cannot take input: its standard input is closed (or it ended: {job.status}).",
                    f"Look at it instead: {look}",
                )
            verdict = self._job_input_verdict(job, args.stdin)
            if verdict is not None:
                audit.note(rule=verdict.rule, stdin_judged_as=verdict.stdin_code)
                if verdict.action == "ask":
                    require_approval(answer, verdict)
            data = args.stdin.encode("utf-8", "surrogateescape")
            written = await job.control.write_stdin(data)
            if verdict is not None:
                # The line the job holds unfinished is made of what it took, not of what it was given: a write it
                # took only part of (busy, not reading) leaves it mid-way through another line than the write's last
                # (red team 118 F2: the next write judged after a line the job never got, a denied line run).
                taken = data[:written].decode("utf-8", "surrogateescape")
                carried = job.input_carry + taken
                job.input_carry, job.input_readable = await anyio.to_thread.run_sync(job_input, carried, _shell(job))
            audit.note(stdin_bytes=written)
            if written < len(data):
                raise ResourceError(
                    "STDIN_BLOCKED",
                    f"Job {job.id} took {written} of {len(data)} bytes of input in 10 s: it is not reading its "
                    f"standard input ({job.status}).",
                    f"Look at its output first: {look}",
                )
        if args.closeStdin:
            job.control.close_stdin()
            audit.note(stdin_closed=True)
        if args.signal is not None:
            audit.note(stopped_with=args.signal)
            await self.jobs.stop(job, args.signal)
        else:
            await self.jobs.wait(job, args.yieldAfterSeconds or 0.0)
        return self._job_result(job, limit, job.timeout, await self._job_changes(job))

    def _job_input_verdict(self, job: Job, stdin: str) -> LineVerdict | None:
        """Threat: `bash` started as a job, then fed `rm -rf ~` by a later call: a job that runs its stdin as code
        has each write judged, with the incomplete line the last write left (a command split over two writes is
        judged whole). None: the job reads its stdin as data."""
        if job.reads is None:
            return None
        if not job.input_readable:
            raise SecurityError(
                "STDIN_UNREADABLE",
                f"Job {job.id}'s shell stands inside a quote or a construct that bash reads otherwise than the guard "
                "does: no later input to it can be judged, so none is sent.",
                "Close its standard input (closeStdin) or stop it, and start a new job; write whole commands.",
            )
        command, job_args, env = job.reads
        return self.shell.judge_job_input(command, job_args, env, job.input_carry + stdin)

    async def _job_changes(self, job: Job) -> Described:
        """A look at a job: while it runs, applies what needs no question (under the job's id); then, tells all."""
        copy = job.control.copy
        if self.transactions is None or not copy.name:
            ended_run = job.result  # a read-only session's job: its end says why a write failed, as a call's does
            said = self.kernel_read_only and ended_run is not None and wrote_read_only(ended_run)
            return "none", Changes(reason=SESSION_READ_ONLY if said else ""), PendingChanges()
        async with copy.busy:
            ended = job.control.outcome
            if ended is None and copy.discarded:  # (it stopped and its copy went; its end says why in a moment)
                return "none", Changes(reason="its copy is gone: nothing more it did is applied"), PendingChanges()
            if ended is None:
                look_id = job.audit_id or call_audit_id()
                settled = await self.transactions.apply_live(
                    copy.name,
                    copy.started_ns,
                    audit_id=look_id,
                    roots=self.roots,
                    baseline=copy.baseline,
                    what=What(tool=TOOL_NAME, command=job.shown, job=job.id, look=True),
                )
                return described(settled, look_id)
        settled, end_id = ended
        return described(settled, end_id)

    def _job_result(self, job: Job, limit: int, timeout: float, changed: Described) -> R:
        """A job's new output since the last look, its status, and (once it ended) how it ended."""
        look = job.look(limit)
        result = job.result
        if job.ended is not None and job.error is not None and result is None:
            audit.note(job=job.id, job_status="failed")
            raise job.error
        audit.note(job=job.id, job_status=job.status)
        if result is not None:
            note_run(result)
        return self.result(
            stdout=look.stdout,
            stderr=look.stderr,
            exitCode=result.exit_code if result is not None else -1,
            timedOut=result.timed_out if result is not None else False,
            truncated=look.truncated,
            stdoutBytes=job.out.total,
            stderrBytes=job.err.total,
            durationMs=round(job.runtime_ms(), 3),
            signal=result.signal if result is not None else None,
            stoppedProcesses=result.stopped if result is not None else 0,
            sandbox=self.sandbox.label,
            limitHit=limit_hit(result) if result is not None else None,
            timeoutSeconds=timeout,
            status=job.status,
            jobId=job.id,
            omitted=[
                OmittedRange(stream=name, start=a, end=b, resource=output_uri(job.id, name, a))
                for name, a, b in look.omitted
            ],
            networkDenied=NetworkDenial.all_of(
                result.network_denied if result is not None else (),
                result,
                no_network=self.sandbox.network is NetworkMode.DENY,
            ),
            transaction=changed[0],
            changes=changed[1],
            pendingChanges=changed[2],
        )

    def _wrong_job_arguments(self, given: Mapping[str, Any]) -> None:
        """signal, closeStdin without jobId: the call the model meant needs the job's id."""
        extra = [name for name, value in given.items() if value]
        if extra:
            running = self.jobs.running()
            example = running[0].id if running else "j1"
            raise ParamError(
                "INVALID_ARGUMENT",
                f"{' and '.join(extra)} {'acts' if len(extra) == 1 else 'act'} on a background job, and no jobId was "
                "given.",
                f'Call it like this: {{"name": "shell_exec", "arguments": {{"command": "", "jobId": "{example}", '
                f'"{extra[0]}": {json.dumps(given[extra[0]])}}}}}'
                + (f" (running jobs: {', '.join(j.id for j in running)})" if running else " (no job is running)"),
            )


def _shell(job: Job) -> str:
    """The program a job that runs its stdin as code was started as (its command line's first word)."""
    words = job.reads[0].split() if job.reads is not None else []
    return words[0] if words else "bash"
