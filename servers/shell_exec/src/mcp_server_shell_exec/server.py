"""The shell_exec tool: a command checked against the policy, approved by a human when it asks, run cleanly."""

from __future__ import annotations

import contextvars
import os
import posixpath
import shlex
from dataclasses import dataclass
from typing import Annotated, Any

import anyio.to_thread
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from mcp_server_guard import audit
from mcp_server_guard.errors import ExecutionError, ParamError, ResourceError, SecurityError
from mcp_server_guard.jail import Jail
from mcp_server_guard.process import RunResult, base_env, build_env, run
from mcp_server_guard.sandbox import SandboxPlan, confine, release
from mcp_server_guard.shellparse import TooComplex
from mcp_server_guard.shellpolicy import PolicyEngine, ShellPolicy, Verdict
from mcp_server_guard.tooling import ClientRoots, GuardedServer, ServerConfig, ToolInput, ToolOutput, register_tool

# Seed 004's contract, verbatim.
TOOL_NAME = "shell_exec"
TOOL_DESCRIPTION = "指定されたシェルコマンドを実行し、その標準出力と標準エラー出力を返します。"
ANNOTATIONS = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True)
BASH = ("/bin/bash", "--noprofile", "--norc", "-c")
# Lines up to this size are checked on the event loop (well under a millisecond); longer ones on a thread.
_INLINE_PREPARE_CHARS = 4096
# Redirect targets that are not files in the jail, and are harmless.
_SAFE_DEVICES = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero")


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


class ShellExecOutput(ToolOutput):
    stdout: str = Field(description="コマンドの標準出力。")
    stderr: str = Field(description="コマンドの標準エラー出力。")
    exitCode: int = Field(description="コマンドの終了コード。")
    timedOut: bool = Field(description="True when the command was killed for running too long.")
    truncated: bool = Field(description="True when stdout or stderr was longer than maxOutputBytes (middle omitted).")
    stdoutBytes: int = Field(description="Total bytes the command wrote to stdout.")
    stderrBytes: int = Field(description="Total bytes the command wrote to stderr.")
    durationMs: float = Field(description="Wall time of the run in milliseconds.")
    signal: str | None = Field(description="Signal that ended the command (e.g. SIGKILL), or null.")
    sandbox: str = Field(
        description="What confined the process, e.g. 'landlock-v7+netns'; 'none' when only the policy and the jail did."
    )
    limitHit: str | None = Field(
        description="A resource limit the command ran into: memory, fileSize, cpu or processes (best effort)."
    )
    decision: str = Field(description="'allow', or 'approved' when a human approved an 'ask' rule.")
    rule: str | None = Field(description="The policy rule that asked for approval, if any.")

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
        return "\n".join(p for p in parts if p)


class Approval(BaseModel):
    approve: bool = Field(description="Run this command?")


class NoQuestion(BaseModel):
    """What the gate returns when it does not ask the human."""

    why: str  # "not-asked" or "unavailable"


@dataclass(frozen=True)
class Prepared:
    verdict: Verdict
    argv: tuple[str, ...]
    shown: str  # the command as the human sees it
    cwd: str  # real path of the working directory
    cwd_display: str
    env: dict[str, str]


# The gate and the body run in the same task within one request round: the body reuses what the gate
# prepared for the very same arguments instead of parsing and checking the line twice.
_PREPARED: contextvars.ContextVar[tuple[tuple[object, ...], Prepared] | None] = contextvars.ContextVar(
    "shell_exec_prepared", default=None
)


def _key(args: ShellExecInput) -> tuple[object, ...]:
    return (args.command, tuple(args.args), args.cwd, tuple(sorted((args.env or {}).items())))


class ShellExec:
    """Everything between the tool call and the process: policy, jail, environment, sandbox."""

    def __init__(self, jail: Jail, policy: ShellPolicy, sandbox: SandboxPlan) -> None:
        self.jail = jail
        self.policy = policy
        self.engine = PolicyEngine(policy)
        self.sandbox = sandbox
        self.base_env = base_env()

    async def execute(self, prepared: Prepared, stdin: bytes | None, timeout: float, max_output: int) -> RunResult:
        """Run a prepared command inside this run's confinement (private TMPDIR, ruleset, limits)."""
        confinement = confine(self.sandbox, [root.path for root in self.jail.roots])
        try:
            env = {**prepared.env, "TMPDIR": confinement.tmpdir}
            return await run(
                prepared.argv,
                cwd=prepared.cwd,
                env=env,
                stdin=stdin,
                timeout=timeout,
                max_output=max_output,
                confinement=confinement,
            )
        finally:
            confinement.close()

    def prepare(self, args: ShellExecInput) -> Prepared:
        if not args.command.strip():
            raise ParamError("INVALID_ARGUMENT", "The command is empty.", "Pass a command to run.")
        if "\x00" in args.command or any("\x00" in a for a in args.args):
            raise ParamError("INVALID_ARGUMENT", "The command contains a NUL byte.", "Remove the NUL byte.")
        located, fd = self.jail.open_dir(args.cwd or ".")
        try:
            cwd = self.jail.real_path_of(fd) or located.absolute
        finally:
            os.close(fd)
        env = build_env(args.env, self.base_env)
        try:
            verdict = self.engine.decide(args.command, args.args)
        except TooComplex as exc:
            # Defense in depth: a line built to be expensive to analyse must not stall every other call.
            raise ResourceError(
                "COMMAND_TOO_COMPLEX",
                f"The command is too large or too deeply nested to be checked: {exc}.",
                "Split it into smaller commands, or put a long script in a file and run that file.",
            ) from None
        if verdict.action == "deny":
            raise SecurityError(
                "COMMAND_DENIED",
                f"Refused by policy rule '{verdict.rule}': {verdict.reason} (in: {verdict.trigger})",
                "Do it another way that the rule allows; `mcp-guard check` shows how a line is judged.",
            )
        self._check_redirects(verdict, cwd, env.get("HOME", ""))
        if args.args:
            argv: tuple[str, ...] = (args.command, *args.args)
            shown = shlex.join(argv)
        else:
            argv = (*BASH, args.command)
            shown = args.command
        return Prepared(verdict, argv, shown, cwd, self.jail.display(located), env)

    async def prepare_off_loop(self, args: ShellExecInput) -> Prepared:
        """Prepare a large line on a worker thread (its analysis may take milliseconds); a small one here."""
        if len(args.command) + sum(len(a) for a in args.args) <= _INLINE_PREPARE_CHARS:
            return self.prepare(args)
        return await anyio.to_thread.run_sync(self.prepare, args)

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
            try:
                self.jail.locate(path)
            except SecurityError:
                # Advisory like every string check; the kernel sandbox is what really confines writes.
                raise SecurityError(
                    "REDIRECT_OUTSIDE_JAIL",
                    f"The redirection '{redirect.op} {redirect.target.raw}' writes outside the allowed directories.",
                    f"Write inside the allowed directories: {self.jail.describe_roots()}.",
                ) from None


def build_server(config: ServerConfig, sandbox: SandboxPlan) -> GuardedServer:
    server = GuardedServer(config)
    shell = ShellExec(config.jail, config.policy.shell_exec, sandbox)
    server.cleanups.append(lambda: release(sandbox))
    policy = config.policy.shell_exec

    async def gate(
        command: str,
        args: list[str],
        cwd: str | None,
        env: dict[str, str] | None,
        ctx: Context[Any, Any],
        client_roots: ClientRoots,
    ) -> Elicit[Approval] | NoQuestion:
        """Ask the human when the policy says ask; refusals surface here, before any question."""
        server.apply_roots(client_roots)
        request = ShellExecInput.model_construct(command=command, args=args, cwd=cwd, env=env)
        prepared = await shell.prepare_off_loop(request)
        _PREPARED.set((_key(request), prepared))
        verdict = prepared.verdict
        if verdict.action != "ask":
            return NoQuestion(why="not-asked")
        caps = ctx.client_capabilities
        if caps is None or caps.elicitation is None:
            return NoQuestion(why="unavailable")
        return Elicit(
            f"shell_exec wants to run:\n\n    {prepared.shown}\n\nin: {prepared.cwd_display}\n"
            f"rule: {verdict.rule}\nreason: {verdict.reason}\n\nRun it?",
            Approval,
        )

    async def shell_exec(
        args: ShellExecInput, _ctx: Context[Any, Any], answer: ElicitationResult[Approval]
    ) -> ShellExecOutput:
        # Authoritative: the body holds the decision; it reuses the gate's only for identical arguments in
        # this same round (same task, same jail), and decides afresh otherwise.
        cached = _PREPARED.get()
        prepared = cached[1] if cached is not None and cached[0] == _key(args) else await shell.prepare_off_loop(args)
        verdict = prepared.verdict
        decision = "allow"
        if verdict.action == "ask":
            _require_approval(answer, verdict)
            decision = "approved"
        audit.note(decision=decision, rule=verdict.rule)
        timeout = min(args.timeoutSeconds or policy.default_timeout_seconds, policy.max_timeout_seconds)
        max_output = min(args.maxOutputBytes or policy.default_output_bytes, policy.max_output_bytes)
        stdin = args.stdin.encode("utf-8", "surrogateescape") if args.stdin is not None else None
        try:
            result = await shell.execute(prepared, stdin, timeout, max_output)
        except FileNotFoundError:
            raise ExecutionError(
                "COMMAND_NOT_FOUND",
                f"'{args.command}' was not found.",
                "Check the program name, or pass a shell command line with args: [] to use the shell.",
            ) from None
        except PermissionError:
            raise ExecutionError(
                "EXECUTION_FAILED", f"'{args.command}' could not be executed (permission denied).", "Check the file."
            ) from None
        except OSError as exc:
            raise ExecutionError(
                "EXECUTION_FAILED", f"'{args.command}' could not be started: {exc.strerror}.", "Check the command."
            ) from None
        audit.note(
            bytes=result.stdout_bytes + result.stderr_bytes, exitCode=result.exit_code, timedOut=result.timed_out
        )
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
            decision=decision,
            rule=verdict.rule if verdict.action == "ask" else None,
        )

    register_tool(
        server,
        name=TOOL_NAME,
        description=TOOL_DESCRIPTION,
        annotations=ANNOTATIONS,
        input_model=ShellExecInput,
        output_model=ShellExecOutput,
        handler=shell_exec,
        resolvers={"answer": Annotated[ElicitationResult[Approval], Resolve(gate)]},
    )
    return server


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


def _require_approval(answer: ElicitationResult[Approval], verdict: Verdict) -> None:
    """Only an explicit human yes runs an 'ask' command."""
    if isinstance(answer, AcceptedElicitation):
        data = answer.data
        if isinstance(data, Approval) and data.approve:
            return
        if isinstance(data, NoQuestion) and data.why == "unavailable":
            raise SecurityError(
                "ASK_UNAVAILABLE",
                f"Rule '{verdict.rule}' needs a human's approval, and this client cannot ask (no elicitation).",
                f"Run it yourself, use a client with elicitation, or change rule '{verdict.rule}' to allow in a "
                "policy file passed with --policy.",
            )
    audit.note(decision="declined", rule=verdict.rule)
    raise SecurityError(
        "ASK_DECLINED",
        f"The user did not approve this command (rule '{verdict.rule}': {verdict.reason}).",
        "Do not retry it; ask the user how they want to proceed.",
    )


__all__ = ["ShellExec", "ShellExecInput", "ShellExecOutput", "build_server"]
