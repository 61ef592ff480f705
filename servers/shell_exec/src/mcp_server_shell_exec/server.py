"""The shell_exec tool: a command checked against the policy, approved by a human when it asks, run cleanly.

This module holds the contract (seed 004: the name, the description, the input model, the output's own field
descriptions) and the wiring; what a call does is ``mcp_server_guard.tools.shell_service.ShellService``. No MCP SDK
here: the start-up front may serve a first call with these tools before the SDK has loaded (issue 44).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from mcp_server_guard.changes import CopyArea
from mcp_server_guard.serving import ResourceSpec, ServerConfig, ToolInput, Tools, ToolSpec, command_target
from mcp_server_guard.shell import ApprovalForm
from mcp_server_guard.shell.sandbox import SandboxPlan
from mcp_server_guard.tools import OUTPUT_DESCRIPTION, OUTPUT_TEMPLATE, ShellResult, ShellService

if TYPE_CHECKING:
    from mcp_server_guard import Protection
    from mcp_server_guard.serving import GuardedServer

# Seed 004's contract, verbatim.
TOOL_NAME = "shell_exec"
TOOL_DESCRIPTION = "指定されたシェルコマンドを実行し、その標準出力と標準エラー出力を返します。"
ANNOTATIONS = {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True}


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


class ShellExecOutput(ShellResult):
    stdout: str = Field(description="コマンドの標準出力。")
    stderr: str = Field(description="コマンドの標準エラー出力。")
    exitCode: int = Field(description="コマンドの終了コード。")


def build_tools(
    config: ServerConfig,
    sandbox: SandboxPlan,
    approvals_file: Path | None = None,
    *,
    history_dir: Path | None = None,
    area: CopyArea | None = None,
    copies_here: bool = False,
    protection: Protection | None = None,
) -> Tools:
    """The tool and its output resource, without the MCP SDK."""
    tools = Tools(config)
    tools.one_loop = True  # the box and the jobs live on the server's event loop
    service = ShellService(config, sandbox, ShellExecOutput, approvals_file, history_dir=history_dir, area=area,
                           copies_here=copies_here, protection=protection)  # fmt: skip
    tools.kills += service.kills
    tools.cleanups += service.cleanups
    tools.timeout_for = service.timeout_for

    async def full_output(output_id: str, stream: str, offset: str | None = None, length: str | None = None) -> str:
        return service.read_output(output_id, stream, offset, length)

    tools.resources.append(
        ResourceSpec(OUTPUT_TEMPLATE, "shell_exec output", OUTPUT_DESCRIPTION, "text/plain", full_output)
    )
    tools.add(
        ToolSpec(
            name=TOOL_NAME,
            description=TOOL_DESCRIPTION,
            annotations=ANNOTATIONS,
            input_model=ShellExecInput,
            output_model=ShellExecOutput,
            handler=service.call,
            action="exec",
            target=command_target,
            paths={"cwd": "dir"},
            gate=service.gate,
            form=ApprovalForm,
            implied={"command": ("jobId", "listJobs", "applyChanges", "dropChanges")},  # calls that run no command
        )
    )
    return tools


def build_server(config: ServerConfig, sandbox: SandboxPlan) -> GuardedServer:
    """The MCP server publishing the tool (loads the SDK; in-process use: no approvals file, the default history,
    no copies)."""
    from mcp_server_guard.serving import GuardedServer  # noqa: PLC0415 - the SDK, only to publish

    return GuardedServer.serving(build_tools(config, sandbox))


__all__ = ["ShellExecInput", "ShellExecOutput", "build_server", "build_tools"]
