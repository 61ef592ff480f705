"""From a checked command line to its finished process: policy verdict, jail, environment, confinement, run."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import posixpath
import secrets
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial

import anyio
import anyio.to_thread

from mcp_server_guard.changes.linked_dirs import LinkedDirs
from mcp_server_guard.changes.nofollow import now_ns
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.errors import ExecutionError, ParamError, ResourceError, SecurityError
from mcp_server_guard.files.jail import Jail
from mcp_server_guard.policy import HostVerdict, ShellPolicy, default_policy_path, load_policy
from mcp_server_guard.protected import Protection, Survey, own_areas
from mcp_server_guard.shell.egress import Denied, EgressProxy
from mcp_server_guard.shell.environment import base_env, boxed_env, build_env
from mcp_server_guard.shell.grants import CallHosts, SessionApprovals, session_prefix
from mcp_server_guard.shell.in_box import DiskWatch, run_boxed
from mcp_server_guard.shell.output import Progress
from mcp_server_guard.shell.process import Control, Copy, RunResult, run
from mcp_server_guard.shell.sandbox.box import Box
from mcp_server_guard.shell.sandbox.layers import call_options, outside_sockets
from mcp_server_guard.shell.sandbox.planning import SandboxPlan, confine, limits_of
from mcp_server_guard.shell.sandbox.sockets import TooManySockets
from mcp_server_guard.shell.strings import PolicyEngine, TooComplex, Verdict

__all__ = ["BASH", "Prepared", "ShellExec", "limit_hit", "limits_of"]

BASH = ("/bin/bash", "--noprofile", "--norc", "-c")
# Lines up to this size are checked on the event loop (well under a millisecond); longer ones on a thread.
_INLINE_PREPARE_CHARS = 4096
# Redirect targets that are not files in the jail, and are harmless.
_SAFE_DEVICES = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero")


@dataclass(frozen=True)
class Prepared:
    """A command that passed the checks, ready to run (or to be shown to a human first)."""

    verdict: Verdict
    argv: tuple[str, ...]
    shown: str  # the command as the human sees it
    cwd: str  # real path of the working directory
    cwd_display: str
    env: dict[str, str]
    stdin: str | None = None  # the call's stdin text, judged with the line where a program runs it as code

    @property
    def key(self) -> str:
        """What a `line` grant names: the line, and the stdin it was shown with (a grant covers exactly that).

        Threat: a yes for `bash` fed `ls` reused for `bash` fed `rm -rf ~`."""
        if self.stdin is None:
            return self.shown
        digest = hashlib.sha256(self.stdin.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        return f"{self.shown} <<< (stdin sha256:{digest})"


# What the kernel's execve takes: one argument or environment string of at most MAX_ARG_STRLEN bytes (with its NUL),
# and all of them together at most ARG_MAX.
MAX_ARG_STRLEN = 32 * 4096
ARG_MAX = os.sysconf("SC_ARG_MAX") if hasattr(os, "sysconf") else 2 << 20


def _check_length(command: str, args: Sequence[str], env: Mapping[str, str] | None) -> None:
    """Threat: a call whose argv cannot be exec'd anyway (E2BIG), megabytes long: it only costs the parser and the
    box's request channel (a request over its frame limit once ended the box for every later call). Refused here,
    with what to do instead."""
    strings = [command, *args, *(f"{name}={value}" for name, value in (env or {}).items())]
    sizes = [len(text.encode("utf-8", "surrogateescape")) + 1 for text in strings]
    if max(sizes) <= MAX_ARG_STRLEN and sum(sizes) <= ARG_MAX:
        return
    what = (
        f"one argument is {max(sizes)} bytes (the kernel takes at most {MAX_ARG_STRLEN})"
        if max(sizes) > MAX_ARG_STRLEN
        else f"the arguments and environment are {sum(sizes)} bytes (the kernel takes at most {ARG_MAX})"
    )
    raise ResourceError(
        "COMMAND_TOO_COMPLEX",
        f"The command line is too long to run: {what}.",
        "Put long input in a file (file_write) and name the file in the command, or pass it as stdin.",
    )


def writable_policy(sources: Sequence[str], policy: ShellPolicy) -> ShellPolicy:
    """The policy of a workspace-write session of a read-only server: the packaged read-only list (what ``--mode
    read-only`` adds; ``sources``: the policy's files) left out."""
    packaged = os.path.realpath(default_policy_path().parent / "readonly.toml")
    readonly = any(os.path.realpath(source) == packaged for source in sources)
    return load_policy(None).shell_exec if readonly else policy


def writable_engine(sources: Sequence[str], policy: ShellPolicy, copies: bool, roots: Sequence[str]) -> PolicyEngine:
    """The judgement a workspace-write session of a read-only server would make (``writable_policy``), commands on a
    copy where that server would make one (``copies``: a box, and transactions on)."""
    env = base_env()
    return PolicyEngine(writable_policy(sources, policy), base_path=env["PATH"], effects=copies, roots=list(roots),
                        home=env.get("HOME", ""))  # fmt: skip


def _about(verdict: Verdict, command: str) -> str:
    """What a refusal names as the part of the line it is about: the words that matched, or, where the reason says
    those already (a finding about the line as a whole), the line itself. Each reason is said once."""
    trigger = verdict.trigger or ""
    if trigger and trigger not in verdict.reason:
        return trigger
    return command if len(command) <= 200 else command[:199] + "…"


def _lowered(reason: str) -> str:
    reason = reason.rstrip(".")
    return reason[:1].lower() + reason[1:] if reason[1:2].islower() or reason[1:2] == " " else reason


class ShellExec:
    """Everything between the tool call and the process: policy, jail, environment, sandbox."""

    def __init__(
        self,
        jail: Jail,
        policy: ShellPolicy,
        sandbox: SandboxPlan,
        protection: Protection | None = None,
        transactions: Transactions | None = None,
        egress: EgressProxy | None = None,
        grants: SessionApprovals | None = None,
        *,
        read_only: bool = False,
        writable_engine: PolicyEngine | None = None,
        kernel_read_only: bool = False,
    ) -> None:
        self.read_only = read_only  # --mode read-only: a refusal the mode makes says so
        # --mode read-only where the box keeps every command from writing the roots (its read-only view): the line is
        # judged as in a workspace-write session (its deny rules, the network policy), not against the read-only
        # allow-list; a rule that only guards the project's files gives way to the kernel.
        self.kernel_read_only = kernel_read_only
        # The judgement of a workspace-write session of this server: tells a refusal the mode makes from one the
        # line earns anyway.
        self.writable_engine = writable_engine
        self.grants = grants if grants is not None else SessionApprovals()  # what the human allowed this session
        self._calls: dict[str, CallHosts] = {}  # egress token -> the hosts of that running call
        self.protection = protection  # in the box: protected paths read-only, hidden ones masked
        self.egress = egress  # --network policy: the proxy in front of each call's empty network namespace
        if egress is not None:
            egress.asker = self._ask_host
        self.transactions = transactions  # commands work on copies: their changes are settled afterwards
        self.linked = LinkedDirs()  # where a call's init watches for names of linked files removed and made again
        self.jail = jail
        self.policy = policy
        self.sandbox = sandbox
        self.base_env = base_env()
        # A rule that only guards the project's files gives way to the judgement of the command's effects.
        self.engine = PolicyEngine(
            policy,
            base_path=self.base_env["PATH"],
            effects=transactions is not None or kernel_read_only,
            roots=[root.path for root in jail.roots],
            home=self.base_env.get("HOME", ""),
        )

    def prepare(
        self,
        command: str,
        args: Sequence[str] = (),
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
        job: bool = False,
    ) -> Prepared:
        """Check a call: the line against the policy (with the stdin it is fed, and ``job`` when it runs as a
        background job whose stdin later calls write), the working directory and redirections against the jail,
        the environment against the refused names. Raises the refusal as a GuardError."""
        if not command.strip():
            raise ParamError("INVALID_ARGUMENT", "The command is empty.", "Pass a command to run.")
        if "\x00" in command or any("\x00" in a for a in args):
            raise ParamError("INVALID_ARGUMENT", "The command contains a NUL byte.", "Remove the NUL byte.")
        _check_length(command, args, env)
        located, fd = self.jail.open_dir(cwd or ".")
        try:
            real_cwd = self.jail.real_path_of(fd) or located.absolute
        finally:
            os.close(fd)
        run_env = build_env(env, self.base_env)
        try:
            verdict = self._decide(command, args, env, stdin, job=job)
        except SecurityError as exc:
            if exc.code == "READ_ONLY_MODE" and self.writable_engine is not None:
                # A redirect outside the jail is refused in every mode: that refusal, not the mode's, is the reason.
                writable = self.writable_engine.decide(command, list(args), env, stdin, job=job)
                self._check_redirects(writable, real_cwd, run_env.get("HOME", ""))
            raise
        self._check_redirects(verdict, real_cwd, run_env.get("HOME", ""))
        if args:
            argv: tuple[str, ...] = (command, *args)
            shown = shlex.join(argv)
        else:
            argv = (*BASH, command)
            shown = command
        return Prepared(verdict, argv, shown, real_cwd, self.jail.display(located), run_env, stdin)

    def judge_job_input(self, command: str, args: Sequence[str], env: Mapping[str, str] | None, text: str) -> Verdict:
        """A job that runs its stdin as code (``Verdict.stdin_code``): the verdict on everything written to it so
        far, ``text`` (a command split over two writes is judged whole). Raises a deny as a GuardError."""
        return self._decide(command, args, env, text, job=True, input_only=True)

    def _decide(
        self,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str] | None,
        stdin: str | None,
        *,
        job: bool,
        input_only: bool = False,
    ) -> Verdict:
        """The policy's verdict on a line (``input_only``: on what a job's stdin was just sent); too complex to
        analyse or denied, the refusal as a GuardError."""
        try:
            verdict = self.engine.decide(command, list(args), env, stdin, job=job)
        except TooComplex as exc:
            # Defense in depth: a line built to be expensive to analyse must not stall every other call.
            if input_only:
                raise ResourceError(
                    "COMMAND_TOO_COMPLEX", f"The job's input is too large or too deeply nested to be checked: {exc}.",
                    "Send a shorter script, or put it in a file and run that file.",
                ) from None  # fmt: skip
            raise ResourceError(
                "COMMAND_TOO_COMPLEX",
                f"The command is too large or too deeply nested to be checked: {exc}.",
                "Split it into smaller commands, or put a long script in a file and run that file.",
            ) from None
        if verdict.action == "deny" and self.read_only and self._writable_would_run(command, args, env, stdin, job):
            # The refusal comes from the session's mode, not from the line (the same line runs in workspace-write
            # here): say so, or a model retries other spellings; a line refused either way says its rule.
            raise SecurityError(
                "READ_ONLY_MODE",
                f"This session is read-only (the server runs with --mode read-only): commands only look at files "
                f"here, and {_lowered(verdict.reason)} (in: {_about(verdict, command)})",
                "Read, list or search instead; tell the user what you would change, or ask them to restart the "
                "server with --mode workspace-write.",
            )
        if verdict.action == "deny":
            where = "in the job's input" if input_only else "in"
            raise SecurityError(
                "COMMAND_DENIED",
                f"Refused by policy rule '{verdict.rule}': {verdict.reason} ({where}: {_about(verdict, command)})",
                "Nothing was written to the job. Do it another way that the rule allows."
                if input_only
                else self._denied_suggestion(verdict),
            )
        return verdict

    def _writable_would_run(
        self, command: str, args: Sequence[str], env: Mapping[str, str] | None, stdin: str | None, job: bool
    ) -> bool:
        """Whether the line would not be refused in a workspace-write session of this server (its policy without
        the read-only list, commands on a copy where the box allows)."""
        if self.writable_engine is None:
            return False
        try:
            return self.writable_engine.decide(command, list(args), env, stdin, job=job).action != "deny"
        except TooComplex:
            return False

    def _undoable(self, verdict: Verdict) -> bool:
        rule = next((r for r in self.engine.policy.rules if r.id == verdict.rule), None)
        return rule is not None and rule.undoable

    def _denied_suggestion(self, verdict: Verdict) -> str:
        """What to do instead. A rule that guards only the project's files (``undoable``) is judged by its
        effects where commands work on a copy; here they do not, so the suggestion says what the line would
        have done, with nothing kept to undo it."""
        if self._undoable(verdict) and not self.engine.effects:
            return (
                f"`{verdict.trigger}` would remove or replace what it names at once, with nothing kept to undo it: "
                "commands write the files directly here (no copy: --transactions off, or no box). Name the exact "
                "files instead, or ask the user to run it; where commands work on a copy, such a line is judged by "
                "what it changes."
            )
        return "Do it another way that the rule allows; `mcp-guard check` shows how a line is judged."

    def session_prefix(self, command: str, args: Sequence[str], env: Mapping[str, str] | None) -> str | None:
        """The ``program subcommand`` a session approval of this line may name (None: only the exact line)."""
        return session_prefix(self.engine, command, args, dict(env) if env else None)

    async def _ask_host(self, token: str | None, host: str, port: int, verdict: HostVerdict) -> HostVerdict:
        """The proxy's question about a host no rule names: the running call it belongs to decides (asking its
        human, or remembering to ask before the next run); a connection no running call owns gets only the
        session's grants."""
        call = self._calls.get(token) if token is not None else None
        if call is not None:
            return await call.decide(host, port, verdict)
        granted = self.grants.for_host(host, port)
        if granted is not None:
            return HostVerdict(
                "allow", "approved-session", f"{host}:{port} approved by the user for this session",
                granted.shown_addresses,
            )  # fmt: skip
        return HostVerdict("deny", "unnamed-host", verdict.reason)

    async def prepare_off_loop(
        self,
        command: str,
        args: Sequence[str] = (),
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
        job: bool = False,
    ) -> Prepared:
        """Prepare a large line on a worker thread (its analysis may take milliseconds); a small one here."""
        if len(command) + sum(len(a) for a in args) + len(stdin or "") <= _INLINE_PREPARE_CHARS:
            return self.prepare(command, args, cwd, env, stdin, job)
        return await anyio.to_thread.run_sync(self.prepare, command, args, cwd, env, stdin, job)

    async def _disk_watch(self, reading: bool) -> DiskWatch | None:
        """On a copy: the watch of its disk, measured before the command starts (``in_box.DiskWatch``)."""
        floor = self.sandbox.limits.disk_floor_bytes
        if reading or not floor or not self.sandbox.copies or not self.sandbox.jail_writable:
            return None
        disk = DiskWatch([area for _root, area in self.sandbox.copies], floor)
        await disk.look(disk.measure)
        return disk

    def _open_egress(self, hosts: CallHosts | None) -> str | None:
        """--network policy: the call's token, which names it to the proxy; its init hands over the listener of the
        call's own network namespace (``network``), which is how the proxy really knows it."""
        if self.egress is None:
            return None
        token = secrets.token_hex(12)
        self.egress.open_call(token)
        if hosts is not None:
            self._calls[token] = hosts
        return token

    async def execute(
        self,
        prepared: Prepared,
        stdin: bytes | None,
        timeout: float,
        max_output: int,
        progress: Progress | None = None,
        hosts: CallHosts | None = None,
        control: Control | None = None,
    ) -> RunResult:
        """Run a prepared command inside this run's confinement (private TMPDIR, ruleset, limits); a program that
        cannot be started is an ExecutionError."""
        roots = [root.path for root in self.jail.roots]
        program = prepared.shown if prepared.argv[: len(BASH)] == BASH else prepared.argv[0]
        box = self.sandbox.box
        confinement = confine(self.sandbox, roots) if box is None else None
        try:
            if box is not None:
                return await self._execute_boxed(
                    box, prepared, roots, stdin, timeout, max_output, progress, hosts, control
                )
            assert confinement is not None
            return await run(
                prepared.argv,
                cwd=prepared.cwd,
                env={**prepared.env, "TMPDIR": confinement.tmpdir},
                stdin=stdin,
                timeout=timeout,
                max_output=max_output,
                confinement=confinement,
                progress=progress,
                control=control,
            )
        except FileNotFoundError:
            raise ExecutionError(
                "COMMAND_NOT_FOUND",
                f"'{program}' was not found.",
                "Check the program name, or pass a shell command line with args: [] to use the shell.",
            ) from None
        except PermissionError:
            raise ExecutionError(
                "EXECUTION_FAILED", f"'{program}' could not be executed (permission denied).", "Check the file."
            ) from None
        except OSError as exc:
            raise ExecutionError(
                "EXECUTION_FAILED", f"'{program}' could not be started: {exc.strerror}.", "Check the command."
            ) from None
        finally:
            if confinement is not None:
                confinement.close()

    async def _execute_boxed(
        self,
        box: Box,
        prepared: Prepared,
        roots: list[str],
        stdin: bytes | None,
        timeout: float,
        max_output: int,
        progress: Progress | None,
        hosts: CallHosts | None,
        control: Control | None,
    ) -> RunResult:
        """``execute`` in the box: the call's survey of protected paths, its egress token, a read-only view or a
        copy, the run, then what the proxy decided; a copy that applies nothing goes."""
        survey = Survey(roots=tuple(roots))
        if self.protection is not None:
            if self.sandbox.copies:
                # The command works on a copy (its changes are judged afterwards): only the hidden paths
                # need hiding now, and every root's own area (other servers' copies live there too).
                survey.masked = self.protection.hidden_paths(roots) + own_areas(roots)
            else:
                # Writing the real tree directly (no copy here): protected paths read-only, as far as
                # they can be found. Raises PROTECTION_UNAVAILABLE (nothing runs) when the layout
                # cannot be guarded.
                survey = await anyio.to_thread.run_sync(self.protection.survey, roots)
        copy = control.copy if control is not None else Copy()
        token, egress = self._open_egress(hosts), self.egress
        denied: list[Denied] = []
        allowed: list[str] = []
        # A line that only reads runs on a read-only view of the roots: no copy to make, read and remove.
        reading = await self._reading(prepared)
        disk = await self._disk_watch(reading)
        linked = await self.linked.dirs(roots) if self.sandbox.copies and not reading else []
        started_ns = copy.started_ns = now_ns()
        kept = False
        try:
            result = await run_boxed(
                box,
                prepared.argv,
                cwd=prepared.cwd,
                env=boxed_env(prepared.env, scratch_caches=reading or self.kernel_read_only),
                stdin=stdin,
                timeout=timeout,
                max_output=max_output,
                options=call_options(
                    self.sandbox,
                    roots,
                    survey.read_only,
                    survey.masked,
                    overlays=self.sandbox.copies,
                    sockets=await self._outside_sockets(roots),
                    proxy=token or "",
                    reading=reading,
                    room=disk.room if disk is not None else 0,
                ),
                progress=progress,
                pause=hosts.pause if hosts is not None else None,
                control=control,
                copy=copy,
                network=partial(egress.listen_on, owner=token) if egress is not None else None,
                disk=disk,
                linked=linked,
            )
            kept = not result.disk_low  # stopped for the disk: nothing it did is applied (its copy goes)
        finally:
            if self.sandbox.copies and not reading:
                self.linked.refresh(roots)  # for the next call: what this one (or anyone) linked since
            if token is not None and self.egress is not None:
                denied, allowed = self.egress.take_decisions(token)
                self._calls.pop(token, None)
            if hosts is not None:
                with anyio.CancelScope(shield=True):
                    await hosts.close()
            if copy.name and not kept and not copy.untouched and self.transactions is not None:
                # A call that failed, was cancelled or stopped for the disk applies nothing: its copy goes
                # (unless its init took it back, untouched: it may already be another call's).
                # A job's look never reads it while it goes, nor after: one under load took the files a removal
                # had taken from the copy already for the job's deletions, and applied them.
                with anyio.CancelScope(shield=True):
                    async with copy.busy:
                        copy.discarded = True
                        await anyio.to_thread.run_sync(self.transactions.discard, copy.name)
        if reading or kept:
            result = dataclasses.replace(result, read_only=True) if reading else result.on(copy, started_ns)
        if token is not None:
            result = dataclasses.replace(
                result,
                network_denied=tuple(denied),
                network_allowed=tuple(allowed),
            )
        return result

    async def _reading(self, prepared: Prepared) -> bool:
        """Whether a line runs on a read-only view of the roots (it only reads: no copy to make, read and remove);
        for one on a copy, the project's own overlay attributes are shown as they are (``changes.escapes``)."""
        reading = prepared.verdict.reads_only and bool(self.sandbox.copies)
        if not reading and self.transactions is not None:
            await anyio.to_thread.run_sync(self.transactions.escapes.refresh)
        return reading

    async def _outside_sockets(self, roots: Sequence[str]) -> list[str]:
        """The UNIX sockets outside the call's reach (the kernel's table, read every few seconds at most)."""
        try:
            if self.sandbox.sockets.fresh():
                return outside_sockets(self.sandbox, roots)
            return await anyio.to_thread.run_sync(outside_sockets, self.sandbox, roots)
        except TooManySockets as exc:
            raise ExecutionError(
                "EXECUTION_FAILED",
                f"The command was not run: {exc}, too many to hide from it.",
                "Close the UNIX sockets you do not need (or run fewer servers that bind them), then try again.",
            ) from None

    def _check_redirects(self, verdict: Verdict, cwd: str, home: str) -> None:
        for redirect in verdict.redirects:
            target = redirect.target.static
            if not redirect.writes or target is None:
                continue  # dynamic targets are findings the policy already decided on
            if target == "~" or target.startswith("~/"):
                target = home + target[1:]
            path = posixpath.normpath(posixpath.join(cwd, target))
            if path in _SAFE_DEVICES or path.startswith("/dev/fd/"):
                continue
            if self.sandbox.box is not None and _scratch(target, path):
                continue
            try:
                self.jail.locate(path)
            except SecurityError:
                # Advisory like every string check; the kernel sandbox is what really confines writes.
                raise SecurityError(
                    "REDIRECT_OUTSIDE_JAIL",
                    f"The redirection '{redirect.op} {redirect.target.raw}' writes outside the allowed directories.",
                    f"Write inside the allowed directories: {self.jail.describe_roots()}.",
                ) from None


def _scratch(target: str, path: str) -> bool:
    """Whether a redirect in the box writes the call's own /tmp or /dev/shm (empty, gone with the call): the line
    names them, and not a directory of the machine's there (``/tmp/build/x``, where /tmp/build is a directory the
    writer may have meant, is refused like any outside the roots; so is ``../outside/x`` from a project under /tmp)."""
    scratch = ("/tmp/", "/dev/shm/")  # noqa: S108 - the box's own
    parent = posixpath.dirname(path)
    return (
        target.startswith(scratch)
        and (path + "/").startswith(scratch)
        and (parent + "/" in scratch or not os.path.lexists(parent))
    )


_LIMIT_SIGNALS = {"SIGXFSZ": "fileSize", "SIGXCPU": "cpu"}
_LIMIT_EXIT_CODES = {128 + 25: "fileSize", 128 + 24: "cpu"}  # a shell reporting its child's SIGXFSZ/SIGXCPU
# What bash prints for a child killed by a limit's signal, whatever the line's final exit code.
_LIMIT_SHELL_MESSAGES = (("fileSize", "File size limit exceeded"), ("cpu", "CPU time limit exceeded"))
_LIMIT_MESSAGES = (
    ("processes", ("fork: Resource temporarily unavailable", "BlockingIOError: [Errno 11]", "Cannot fork")),
    ("memory", ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory", "Out of memory")),
    ("fileSize", ("File too large",)),
)


def limit_hit(result: RunResult) -> str | None:
    """Which resource limit a run ran into, when its signal, exit code or error output tells (best effort)."""
    if result.disk_low:
        return "disk"
    if result.signal in _LIMIT_SIGNALS:
        return _LIMIT_SIGNALS[result.signal]
    if result.exit_code in _LIMIT_EXIT_CODES:
        return _LIMIT_EXIT_CODES[result.exit_code]
    for limit, message in _LIMIT_SHELL_MESSAGES:
        if message in result.stderr:
            return limit
    if result.exit_code == 0:
        return None
    for limit, needles in _LIMIT_MESSAGES:
        if any(n in result.stderr for n in needles):
            return limit
    return None
