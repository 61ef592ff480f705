"""Background jobs of shell_exec, and the full output of results that had to be cut.

A job is a command started by a call with ``yieldAfterSeconds`` that was still running when the call
returned. It runs exactly as any command does (same box, same checks, same approvals, taken at start), keeps
its stdin open, and its output goes to a spool; later calls naming its ``jobId`` read what came since their
last look, write to its stdin, or stop it (TERM, then KILL, to its whole process group or PID namespace).

Its output goes to the spools of ``shell.spools`` (which also keep the full output of a result that had to be cut,
and read either in ranges as an MCP resource).

Bounded: ``max_jobs`` running at once; finished jobs are forgotten ``job_forget_seconds`` after they end (and
the oldest first when more than ``max_jobs`` finished ones wait); every job ends with the server, however it
ends (the box dies with it; without the box the process registry kills them).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import posixpath
import re
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from mcp_server_guard.errors import ExecutionError, GuardError, ParamError, ResourceError
from mcp_server_guard.paths import system_program
from mcp_server_guard.patterns import deferred
from mcp_server_guard.policy import ShellPolicy
from mcp_server_guard.shell.process import Control, RunResult
from mcp_server_guard.shell.spools import Spool

__all__ = [
    "Job",
    "JobTable",
    "Look",
]

log = logging.getLogger("mcp_server_guard.jobs")

LINE_SCAN = 64 << 10  # a running job's look ends at the last newline within this many bytes of its end
STOP_GRACE_S = 5.0
SIGNALS = {"TERM": signal.SIGTERM, "INT": signal.SIGINT, "KILL": signal.SIGKILL}


@dataclass
class Look:
    """New output of a job since the last look, bounded like any result."""

    stdout: str
    stderr: str
    truncated: bool
    omitted: list[tuple[str, int, int]]  # (stream, from byte, to byte) left out of this look


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def window(spool: Spool, start: int, end: int, limit: int) -> tuple[str, tuple[int, int] | None]:
    """[start, end) of ``spool`` as text within ``limit`` bytes: all of it, or its head and tail and the range
    left out (what the spool did not keep counts as left out too)."""
    if end - start <= limit:
        first, missing, last = spool.parts(start, end)
        if not missing:
            return _text(first + last), None
        gap = (start + len(first), end - len(last))
        return _text(first) + f"\n[… {missing} bytes not kept …]\n" + _text(last), gap
    half = limit // 2
    h1, hole, h2 = spool.parts(start, start + half)
    head = h1 if hole else h1 + h2
    t1, hole, t2 = spool.parts(end - (limit - half), end)
    tail = t2 if hole else t1 + t2
    gap = (start + len(head), end - len(tail))
    return _text(head) + f"\n[… {gap[1] - gap[0]} bytes omitted …]\n" + _text(tail), gap


def unfinished_line(text: str) -> str:
    """What of ``text`` (a job's input so far) the next write to it can still continue (:func:`job_input`)."""
    return job_input(text)[0]


def job_input(text: str, shell: str = "bash") -> tuple[str, bool]:
    """What of ``text`` (a job's input so far) the next write to it can still continue (``_scanned``), and whether
    a later write can be judged at all (False: all of ``text`` is carried, and no later write is sent). Not where
    ``bash -n`` (it parses, runs nothing) finds the part taken as complete inside a quote at its end, or in error (red
    team 126 F1: a quote opened where the scanner, and the judge's parser with it, see a comment — ``(( 1 #' ))``,
    ``a=(x)#'``: the next write, judged as they read it, one quoted word, run by bash as a command); nor once the
    input changes how the shell parses what follows (``shopt``, ``set -H``/``-o history``/``posix``, ``alias``,
    ``eval``, ``enable``: red team 127 F1 — extglob, aliases, history expansion), which no fresh parser knows; nor
    ``$'…'`` given to a shell that is not bash (``shell``: dash reads two plain quotes there)."""
    carry = _scanned(text)
    done = text[: len(text) - len(carry)]
    if _RESHAPES.search(text) or ("$'" in text and posixpath.basename(shell) not in _BASH_LIKE):
        return text, False
    parsed = _parsed(done) if done else "whole"
    if parsed == "open":  # (a compound command split over writes, ``if …; then``: judged whole with the next)
        return text, True
    return (carry, True) if parsed == "whole" else (text, False)


_BASH_LIKE = frozenset({"bash", "zsh", "ksh", "ksh93", "mksh"})  # (the shells that read ``$'…'`` as bash does)
# A command that changes how the shell reads later input (options, aliases, history expansion, eval'd text).
_RESHAPES = deferred(
    r"(?:^|[\s;&|(`])(?:shopt|alias|eval|enable|histchars=|BASHOPTS="
    r"|set\s+(?:[-+][a-zA-Z]*H|[-+]o\s*(?:history|histexpand|posix)\b))"
)


def _parsed(code: str) -> str:
    """How bash, parsing ``code`` (nothing run, no start-up file read), finds it: "whole"; "open" at its end inside a
    compound command; "misread" — inside a quote or a substitution the scanner saw closed, or in error (a job's bash
    stops there anyway) — also where it cannot tell (no bash, past its bound)."""
    bash = system_program("bash")
    if bash is None:
        return "misread"
    try:
        done = subprocess.run([bash, "--norc", "--noprofile", "-n"], input=code.encode("utf-8", "surrogateescape"),
                              capture_output=True, timeout=_PARSE_S, env={}, cwd="/", check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "misread"
    if done.returncode == 0:
        return "whole"
    return "open" if done.stderr.rstrip().endswith(b"syntax error: unexpected end of file") else "misread"


_PARSE_S = 5.0  # seconds bash may take to parse a job's input at most


def _scanned(text: str) -> str:
    """What of ``text`` (a job's input so far) the next write to it can still continue: everything after the last
    line start at which the shell stands outside any quote, command substitution, here-document and continued line.
    Threats: `shut\\` + newline, then `down -h now` in the next write (a line ending in a backslash goes on); a write
    that opens a quote, ``echo "x`` + newline, then `"; shutdown -h now; #"` — judged alone, one quoted word; read
    after the open quote, a command (red team 120 F4); a here-document's body is no code, its quotes none (``it's``
    in it: red team 122 F2); a ``#`` after an escaped blank starts no comment, a quote inside ``"$(…)"`` is one
    (red team 124 F2). Judged again with the next write."""
    neutral = 0  # the last line start outside every quote and here-document
    nest: list[str] = []  # the quotes and substitutions the text stands in: "'", '"', "$'", "`", "$("
    pending: list[tuple[str, bool]] = []  # here-documents the line opened: (delimiter, tabs stripped)
    word_start = True  # (a ``#`` starts a comment only at a word's start, outside any quote)
    at, end = 0, len(text)
    while at < end:
        char, top = text[at], nest[-1] if nest else ""
        if top == "'":
            if char == "'":
                nest.pop()
        elif char == "\\" and top != "'":
            at, word_start = at + 2, False  # (an escaped character; before a newline: the line goes on)
            continue
        elif top in ("$'", "`"):
            if char == top[-1]:
                nest.pop()
        elif char == "$" and text[at + 1 : at + 2] in ("(", "'") and top in ("", "$(", '"'):
            if text[at + 1] == "(" or top != '"':
                nest.append("$" + text[at + 1])
            at += 2
            continue
        elif top == '"':
            if char == '"':
                nest.pop()
            elif char == "`":
                nest.append("`")
        elif char in ("'", '"', "`"):
            nest.append(char)
        elif char == ")" and top == "$(":
            nest.pop()
        elif char == "<" and text.startswith("<<<", at):
            at, word_start = at + 3, True  # (a here-string: a word, no body)
            continue
        elif char == "<" and text.startswith("<<", at):
            at, word_start = _here_document(text, at + 2, pending), False
            continue
        elif char == "#" and word_start:
            newline = text.find("\n", at)
            at = end if newline < 0 else newline
            continue
        elif char == "\n" and not nest:
            at = _bodies(text, at + 1, pending)
            if at < 0:
                return text[neutral:]  # (a body still open: the next write goes on in it)
            neutral, word_start = at, True
            continue
        word_start = not nest and char in " \t\n;&|()"
        at += 1
    return text[neutral:]


def _here_document(text: str, at: int, pending: list[tuple[str, bool]]) -> int:
    """After ``<<`` at ``at``: note the here-document's delimiter (``-`` strips tabs; quotes and backslashes taken
    off the word, as bash does) and return where the line goes on."""
    strip = text.startswith("-", at)
    at += 1 if strip else 0
    while at < len(text) and text[at] in " \t":
        at += 1
    word = re.match(r"(?:'[^'\n]*'|\"[^\"\n]*\"|\\.|[^\s;&|<>()])+", text[at:])
    if word is None:
        return at
    pending.append((re.sub(r"['\"\\]", "", word.group(0)), strip))
    return at + word.end()


def _bodies(text: str, at: int, pending: list[tuple[str, bool]]) -> int:
    """From the line start ``at``, past the bodies of the here-documents ``pending`` (emptied): where the next line
    of code starts, or -1 where a body is still open at the text's end."""
    while pending:
        delimiter, strip = pending.pop(0)
        while True:
            newline = text.find("\n", at)
            line = text[at:] if newline < 0 else text[at:newline]
            if (line.lstrip("\t") if strip else line) == delimiter and newline >= 0:
                at = newline + 1
                break
            if newline < 0:
                return -1
            at = newline + 1
    return at


@dataclass
class Job:
    id: str
    shown: str
    cwd: str
    out: Spool
    err: Spool
    control: Control
    started_wall: float = field(default_factory=time.time)
    started: float = field(default_factory=time.monotonic)
    task: asyncio.Task[None] | None = None
    result: RunResult | None = None
    error: GuardError | None = None
    ended: float | None = None
    stopped_by: str | None = None  # the signal a call stopped it with
    timeout: float = 0.0  # its timeoutSeconds
    seen: list[int] = field(default_factory=lambda: [0, 0])
    done: asyncio.Event = field(default_factory=asyncio.Event)
    # A job that runs its stdin as code (a shell, an interpreter): the line it runs (command, args, env), against
    # which each write is judged, and the incomplete last line its input left so far.
    reads: tuple[str, list[str], dict[str, str]] | None = None
    input_carry: str = ""
    input_readable: bool = True  # (False: its shell stands where the judge cannot follow it, ``job_input``)
    # The call that started it: every look's changes and its end's are recorded under this one audit id (one
    # record, one undo for the whole job), whichever later call made the look.
    audit_id: str = ""

    def feed(self, stream: int, chunk: bytes) -> None:
        (self.out if stream == 1 else self.err).feed(chunk)

    @property
    def status(self) -> str:
        if self.ended is None:
            return "running"
        if self.error is not None:
            return "failed"
        if self.stopped_by is not None:
            return "stopped"
        if self.result is not None and self.result.timed_out:
            return "timed-out"
        return "exited"

    def runtime_ms(self) -> float:
        return ((self.ended or time.monotonic()) - self.started) * 1000

    def look(self, limit: int) -> Look:
        """What came since the last look (then marked seen). While the job runs, a look ends at the last whole
        line when there is one, so a line is never split between two looks."""
        texts: list[str] = []
        omitted: list[tuple[str, int, int]] = []
        for i, (name, spool) in enumerate((("stdout", self.out), ("stderr", self.err))):
            start, end = self.seen[i], spool.total
            if self.ended is None and end > start:
                first, hole, last = spool.parts(max(start, end - LINE_SCAN), end)
                data = first + last
                cut = data.rfind(b"\n")
                if cut >= 0 and not hole:
                    end = end - len(data) + cut + 1
            text, gap = window(spool, start, end, limit)
            if gap is not None:
                omitted.append((name, *gap))
            texts.append(text)
            self.seen[i] = end
        return Look(texts[0], texts[1], bool(omitted), omitted)


class JobTable:
    """This server's jobs."""

    def __init__(self, policy: ShellPolicy, spool_dir: Path) -> None:
        self.policy = policy
        self.spool_dir = spool_dir
        self._jobs: dict[str, Job] = {}
        self._next = 1

    def running(self) -> list[Job]:
        return [job for job in self._jobs.values() if job.ended is None]

    def jobs(self) -> list[Job]:
        self.forget_finished()
        return list(self._jobs.values())

    def get(self, job_id: str) -> Job:
        self.forget_finished()
        job = self._jobs.get(job_id.strip()) or self._jobs.get(f"j{job_id.strip()}")  # "1" for "j1": as meant
        if job is None:
            known = ", ".join(f"{j.id} ({j.status}: {j.shown[:40]})" for j in self._jobs.values()) or "none"
            running = self.running()
            example = running[-1].id if running else next(reversed(self._jobs), "j1")
            raise ParamError(
                "JOB_NOT_FOUND",
                f"There is no job '{job_id}' (finished jobs are forgotten after {self.policy.job_forget_seconds:g} s). "
                f"Jobs now: {known}.",
                f'Call it like this: {{"name": "shell_exec", "arguments": {{"command": "", "jobId": "{example}"}}}}, '
                'or list the jobs: {"name": "shell_exec", "arguments": {"command": "", "listJobs": true}}',
            )
        return job

    def find(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id.strip())

    def start(
        self,
        shown: str,
        cwd: str,
        timeout: float,
        run: Callable[[Control], Awaitable[RunResult]],
        *,
        audit_id: str = "",
    ) -> Job:
        """Start ``run`` as a job (raises JOB_LIMIT when ``max_jobs`` run already); ``audit_id``: the call starting it
        (its changes are recorded under it)."""
        self.forget_finished()
        running = self.running()
        if len(running) >= self.policy.max_jobs:
            listed = ", ".join(f"{j.id} ({j.shown[:40]})" for j in running) or "none allowed by the policy"
            raise ResourceError(
                "JOB_LIMIT",
                f"{len(running)} background jobs are running, the most this server allows "
                f"(max_jobs = {self.policy.max_jobs}): {listed}.",
                f'Stop one first: {{"name": "shell_exec", "arguments": {{"command": "", "jobId": '
                f'"{running[0].id if running else "j1"}", "signal": "TERM"}}}}, or run the command without '
                "yieldAfterSeconds.",
            )
        job_id = f"j{self._next}"
        self._next += 1
        where = self.spool_dir
        cap = self.policy.kept_output_bytes
        tag = secrets.token_hex(4)
        job = Job(
            job_id,
            shown,
            cwd,
            Spool(where / f"{job_id}-{tag}.out", cap),
            Spool(where / f"{job_id}-{tag}.err", cap),
            Control(keep_stdin=True, looks=True),
        )
        job.control.tee = job.feed
        job.timeout, job.audit_id = timeout, audit_id
        self._jobs[job_id] = job
        job.task = asyncio.create_task(self._run(job, run(job.control)))
        return job

    async def _run(self, job: Job, running: Awaitable[RunResult]) -> None:
        try:
            job.result = await running
        except GuardError as exc:
            job.error = exc
        except Exception:
            log.exception("job %s failed", job.id)
            job.error = ExecutionError("EXECUTION_FAILED", "The job could not run.", "Try again.")
        finally:
            job.ended = time.monotonic()
            job.control.settled.set()
            job.done.set()

    async def wait(self, job: Job, seconds: float) -> None:
        """Until the job ends or ``seconds`` pass."""
        if seconds > 0 and job.ended is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(job.done.wait(), seconds)

    async def stop(self, job: Job, name: str) -> None:
        """Send ``name`` (TERM, INT or KILL) to the job's whole group; KILL after STOP_GRACE_S if it is still
        running (a job that ignores TERM still ends)."""
        if job.ended is not None:
            return
        job.stopped_by = name
        job.control.signal(SIGNALS[name])
        await self.wait(job, STOP_GRACE_S)
        if job.ended is None:
            job.control.signal(signal.SIGKILL)
            await self.wait(job, STOP_GRACE_S)

    def forget_finished(self) -> None:
        """Forget jobs that ended more than job_forget_seconds ago (and the oldest finished beyond max_jobs)."""
        now = time.monotonic()
        finished = [j for j in self._jobs.values() if j.ended is not None]
        for i, job in enumerate(finished):
            assert job.ended is not None
            if now - job.ended >= self.policy.job_forget_seconds or len(finished) - i > max(self.policy.max_jobs, 1):
                self._forget(job)

    def _forget(self, job: Job) -> None:
        self._jobs.pop(job.id, None)
        job.out.close()
        job.err.close()

    def close(self) -> None:
        """The server ends: every job is killed (the box or the process registry makes sure of it as well), its
        spool removed."""
        for job in self.running():
            job.control.signal(signal.SIGKILL)
        for job in list(self._jobs.values()):
            self._forget(job)
        shutil.rmtree(self.spool_dir, ignore_errors=True)
