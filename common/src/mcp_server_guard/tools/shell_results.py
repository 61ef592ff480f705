"""What a shell_exec call answers: the result model every call builds (a run, a background job's look, a job list,
held changes applied or dropped), its parts, and the text block a model reads.

The server declares its contract's output model on top of ``ShellResult`` (the seed's field descriptions); the
service (``tools.shell_service``) builds results of that type.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from mcp_server_guard import audit
from mcp_server_guard.asking import Session
from mcp_server_guard.changes.results import Settled
from mcp_server_guard.paths import printable, readable
from mcp_server_guard.serving.tools import ToolOutput
from mcp_server_guard.shell.egress import Denied
from mcp_server_guard.shell.output import Progress
from mcp_server_guard.shell.process import RunResult

READ_ONLY = (
    "the line ran read-only (by its spelling it only reads): a write it tried was refused and nothing changed; to "
    "let it write, run it so that it shows a write or another program, e.g. `env git status`"
)
SESSION_READ_ONLY = (
    "this session is read-only (the server runs with --mode read-only): a write the command tried failed and "
    "nothing in the project changed; scratch files may go to $TMPDIR (/tmp, this call's own: gone when it ends); to "
    "change the project, tell the user what you would change, or ask them to restart the server with --mode "
    "workspace-write"
)
# Where a write outside the project failed in the box (issue 45 item 4): where the model may write instead.
OUTSIDE_READ_ONLY = (
    "[a write failed with 'Read-only file system': in the box only the project is writable (HOME and the system are "
    "read-only). Write inside the project, or scratch files to $TMPDIR (this call's own); give settings per project "
    "or per command instead of `git config --global` or `npm config set` (`git config user.name ...` without "
    "--global writes the project's own .git/config; `git -c user.name=... commit`, GIT_AUTHOR_NAME=..., "
    "npm_config_<key>=...)]"
)
# git with no identity (none in HOME, which the box keeps read-only): how to give one.
NO_GIT_IDENTITY = (
    "[git has no identity here: give one for this project (`git config user.name 'Name'` and `git config "
    "user.email 'name@example.com'`, without --global: the project's own .git/config) or for one command (`git -c "
    "user.name=... -c user.email=... commit ...`)]"
)
# A write the kernel refused on a read-only file system, as programs say it: Python's and coreutils'
# "Read-only file system", node's and npm's "EROFS: read-only file system", on stderr — or on stdout by a program
# that failed (mypy's internal error; a `grep` that finds the words in a file and succeeds says nothing of a write).
_READ_ONLY_SAID = re.compile(r"read-only file system|\bEROFS\b", re.IGNORECASE)


def said_read_only(stderr: str, stdout: str, exit_code: int) -> bool:
    """Whether a run's output says a write failed on a read-only file system."""
    return bool(_READ_ONLY_SAID.search(stderr) or (exit_code != 0 and _READ_ONLY_SAID.search(stdout)))


def wrote_read_only(result: RunResult) -> bool:
    """:func:`said_read_only` of a run."""
    return said_read_only(result.stderr, result.stdout, result.exit_code)


DISK_LOW = "stopped: the disk holding its copy was nearly full; nothing it did was applied (a job: since its last look)"


class NetworkDenial(BaseModel):
    host: str = Field(description="The host the command tried to reach.")
    port: int = Field(description="The port.")
    rule: str = Field(
        description="What refused it: deny:<entry>, unnamed-host (no [network] rule names it), private-address."
    )
    reason: str = Field(description="Why, in words.")

    @classmethod
    def all_of(
        cls, refused: Sequence[Denied], result: RunResult | None = None, *, no_network: bool = False
    ) -> list[NetworkDenial]:
        """The proxy's refusals; and, where commands have no network at all (``no_network``: --network deny), one
        entry saying so when the command shows it tried (a resolver or connection failure in its output) or ran out
        of time waiting (a download that waits on a network that is not there)."""
        found = [cls(host=d.host, port=d.port, rule=d.rule, reason=d.reason) for d in refused]
        if no_network and result is not None:
            if _tried_the_network(result):
                found.append(cls(host="*", port=0, rule="network-deny", reason=NO_NETWORK))
            elif result.timed_out:
                found.append(cls(host="*", port=0, rule="network-deny", reason=f"If it was waiting on the network: "
                                 f"{NO_NETWORK[0].lower()}{NO_NETWORK[1:]}"))  # fmt: skip
        return found


NO_NETWORK = (
    "This server runs commands with no network at all (--network deny): nothing can be resolved or downloaded here, "
    "loopback aside. Use what is already in the project, or ask the user to run the download (or to restart the "
    "server with --network policy)."
)
# What programs print when the network is not there (resolvers, curl, git, pip, npm, Go, Node, Python).
_NETWORK_FAILURES = re.compile(
    rb"could not resolve|temporary failure in name resolution|name or service not known|getaddrinfo|enotfound|"
    rb"eai_again|network is unreachable|no address associated with hostname|failed to establish a new connection|"
    rb"nameresolutionerror|name resolution|unable to resolve host|could(?: not|n't) connect to server|dial tcp|"
    rb"couldn't resolve host|failed to connect to|socket\.gaierror|no route to host",
    re.IGNORECASE,
)


def _tried_the_network(result: RunResult) -> bool:
    """What the command's own errors say (stderr: what a program prints as its output is data, not its failure)."""
    return bool(_NETWORK_FAILURES.search(result.stderr.encode("utf-8", "replace")))


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


class ShellResult(ToolOutput):
    """Every shell_exec answer; the fields a call has nothing to say about keep their defaults."""

    stdout: str = Field(description="The command's standard output.")
    stderr: str = Field(description="The command's standard error.")
    exitCode: int = Field(description="The command's exit code.")
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
        description="A resource limit the command ran into: memory, fileSize, disk, cpu or processes (best effort).",
    )
    rule: str | None = Field(default=None, description="The policy rule that asked for approval, if any.")
    approval: str = Field(
        default="",
        description="How a command the policy asks about was approved: once, session-line (this exact line, "
        "for the session), session-prefix:<program subcommand>; empty when nothing was asked.",
    )
    networkDenied: list[NetworkDenial] = Field(
        default_factory=list,
        description="Connections the egress proxy refused during this command (--network policy); with --network "
        "deny, one entry (host '*') when the command tried the network and there is none. Empty when none.",
    )
    timeoutSeconds: float = Field(default=0.0, description="The timeout in force for this command, in seconds.")
    stoppedProcesses: int = Field(
        default=0,
        description="Processes the command left running when it exited (started in the background and not waited "
        "for): stopped then. What they wrote before counts; nothing after.",
    )
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

    def links(self) -> list[dict[str, Any]]:
        return _links(self)

    def to_text(self) -> str:
        # The text block is what a host prints: a command's escapes (colours, a cleared line, \r, a bidi override)
        # are shown, not obeyed; structuredContent keeps the output as it was.
        parts = [readable(self.stdout)]
        if self.stderr:
            parts.append(f"[stderr]\n{readable(self.stderr)}")
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
        elif self.limitHit == "disk":
            status += f" ({DISK_LOW})"
        elif self.signal:
            status += f" ({self.signal})"
        if self.truncated:
            status += f"; output truncated ({self.stdoutBytes} bytes stdout, {self.stderrBytes} bytes stderr)"
        if self.stoppedProcesses:
            status += (
                f"; {self.stoppedProcesses} process{'es' if self.stoppedProcesses > 1 else ''} it left running "
                "stopped with it (what they wrote until then counts: wait for them, or run it as a background job)"
            )
        parts.append(f"[{status}]")
        if said_read_only(self.stderr, self.stdout, self.exitCode) and not self.changes.reason:
            parts.append(OUTSIDE_READ_ONLY)
        if self.exitCode != 0 and "Please tell me who you are" in self.stderr:
            parts.append(NO_GIT_IDENTITY)
        for cut in self.omitted:
            if cut.resource:
                parts.append(f"[{cut.stream} bytes {cut.start}-{cut.end} left out; read them: {cut.resource}]")
        if self.approval:
            parts.append(f"[approved by the user: {self.approval}]")
        parts += _change_lines(self)
        for denial in self.networkDenied:
            if denial.rule == "network-deny":
                parts.append(f"[no network: {denial.reason}]")
            else:
                host, reason = printable(denial.host), printable(denial.reason)
                parts.append(f"[network refused: {host}:{denial.port} ({denial.rule}): {reason}]")
        rules = {d.rule for d in self.networkDenied} - {"network-deny"}
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


def _change_lines(out: ShellResult) -> list[str]:
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
    elif out.transaction in ("unchanged", "none") and changes.reason:
        lines.append(f"[{changes.reason}]")
    for path in changes.paths:
        if path.action in ("refused", "conflict"):
            lines.append(f"[{path.action}: {path.path}: {path.reason}]")
    return lines


def _links(out: ShellResult) -> list[dict[str, Any]]:
    return [
        {
            "type": "resource_link",
            "uri": cut.resource,
            "name": f"{cut.stream} of {out.jobId or 'the command'}",
            "description": f"The {cut.stream} this result left out (bytes {cut.start}-{cut.end}), in ranges: each "
            "answer's first line gives the URI of the next one.",
            "mimeType": "text/plain",
        }
        for cut in out.omitted
        if cut.resource
    ]


def running_display(session: Session) -> Progress | None:
    """Progress notifications while the command runs, for a client that asked (sent a progressToken)."""
    if not session.wants_progress:
        return None

    async def report(elapsed: float, output_bytes: int, last_line: str) -> None:
        line = printable(last_line.strip()[:200])  # a host shows it to the person: escapes shown, never obeyed
        shown = f"; last line: {line}" if line else ""
        await session.report_progress(elapsed, None, f"running {elapsed:.1f}s, {output_bytes} bytes of output{shown}")

    return report


def described(settled: Settled, audit_id: str) -> tuple[str, Changes, PendingChanges]:
    """A settled change set as the result tells it (and as the audit record notes it)."""
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
        undo=f"mcp-guard undo {audit_id}" if applied and settled.undoable else "",
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


def note_run(result: RunResult) -> None:
    """What a finished command did, for its audit record (a job's: on the look that sees it end)."""
    audit.note(bytes=result.stdout_bytes + result.stderr_bytes, exitCode=result.exit_code, timedOut=result.timed_out)
    if result.network_allowed:
        audit.note(network_allowed=list(result.network_allowed))
    if result.network_denied:
        audit.note(network_denied=[f"{d.host}:{d.port} ({d.rule})" for d in result.network_denied])


__all__ = [
    "DISK_LOW",
    "READ_ONLY",
    "SESSION_READ_ONLY",
    "ChangedPath",
    "Changes",
    "JobInfo",
    "NetworkDenial",
    "OmittedRange",
    "PendingChanges",
    "ShellResult",
    "described",
    "note_run",
    "running_display",
    "wrote_read_only",
]
