"""The file_write tool: an atomic, race-free write inside the jail that keeps the previous content."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio.to_thread
from pydantic import Field

from mcp_server_guard import ParamError, SecurityError, note, printable, recorded_digest
from mcp_server_guard.files import open_writer
from mcp_server_guard.serving import Mode, ServerConfig, ToolInput, ToolOutput, Tools, ToolSpec

if TYPE_CHECKING:
    from mcp_server_guard.serving import GuardedServer

# Seed 004's contract, verbatim.
TOOL_NAME = "file_write"
TOOL_DESCRIPTION = "指定されたパスにファイルを作成または上書きし、内容を書き込みます。"
ANNOTATIONS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}


class FileWriteInput(ToolInput):
    path: str = Field(
        description="書き込むファイルのパス。絶対パスまたは許可されたルートディレクトリからの相対パスを指定。"
    )
    content: str = Field(description="ファイルに書き込む内容。")
    overwrite: bool = Field(
        default=False,
        description="既存のファイルを上書きするかどうか。falseの場合、ファイルが存在するとエラーを返す。",
    )
    expectedSha256: str | None = Field(
        default=None,
        pattern=r"^[0-9a-fA-F]{64}$",
        description="Write only if the file's current SHA-256 is exactly this (from file_read); "
        "otherwise fail with CONFLICT. Prevents lost updates between agents.",
    )
    createDirs: bool = Field(
        default=False, description="Create missing parent directories (inside the allowed directories only)."
    )


class FileWriteOutput(ToolOutput):
    success: bool = Field(description="書き込みが成功したかどうか。")
    path: str = Field(description="The file written, relative to the launch directory when inside it.")
    bytesWritten: int = Field(description="Bytes written (UTF-8); 0 when the file held these bytes already.")
    sha256: str = Field(description="SHA-256 of the new content.")
    created: bool = Field(description="True when the file did not exist before.")
    backup: str = Field(
        default="",
        description="History id of the previous content when a file was replaced "
        "(restore with `mcp-guard history restore ID`); empty for a new file, or one that held these bytes already.",
    )

    def to_text(self) -> str:
        if not self.created and not self.backup:
            return (
                f"{self.path}: unchanged (it held these bytes already: nothing written, no history entry), "
                f"sha256 {self.sha256}"
            )
        what = "created" if self.created else f"replaced (previous content saved as {self.backup})"
        return f"{self.path}: {what}, {self.bytesWritten} bytes, sha256 {self.sha256}"


def _has_copy(root: str, path: str) -> bool:
    """Whether git has a copy of the file as it is (imported at the first overwrite: not on the start-up path)."""
    from mcp_server_guard.changes import has_copy  # noqa: PLC0415

    return has_copy(root, path)


def build_tools(config: ServerConfig, history_dir: Path) -> Tools:
    """The tool, without the MCP SDK (the start-up front may answer a first call with it)."""
    tools = Tools(config)
    jail = config.jail
    writer = open_writer(config.jail, config.policy, config.audit.path, history_dir)
    writer.backed = _has_copy  # an overwrite of work git has no copy of: its one copy stays in the history
    tools.cleanups.append(writer.close)

    async def file_write(args: FileWriteInput, _ctx: object) -> FileWriteOutput:
        if config.mode is Mode.READ_ONLY:
            # The session was opened read-only: no write of any kind, whatever the path or the policy says.
            raise SecurityError(
                "READ_ONLY_MODE",
                "This session is read-only (the server runs with --mode read-only): file_write writes nothing.",
                "Tell the user what you would write, or ask them to restart the server with --mode workspace-write.",
            )
        meant = jail.suggest(args.path, "new") if "\\" in args.path else None
        if meant is not None:
            # A Windows-style path would create one file with backslashes in its name, not the file that was meant.
            raise ParamError(
                "INVALID_PATH",
                f"'{args.path}' uses Windows separators (\\); paths here use /.",
                f"Write to '{meant}' instead.",
                fix={"path": meant},
            )
        try:
            data = args.content.encode("utf-8")
        except UnicodeEncodeError:
            raise ParamError(
                "INVALID_CONTENT",
                "The content contains unpaired surrogate characters and cannot be written as UTF-8.",
                "Send valid Unicode text.",
            ) from None
        # The audit hashed the content for its record of intent: the same bytes, not hashed twice.
        known = recorded_digest("content")
        digest = known[0] if known is not None and known[1] == len(data) else None
        # fsync and flock block: keep them off the event loop so other requests keep flowing.
        outcome = await anyio.to_thread.run_sync(
            lambda: writer.write(
                args.path,
                data,
                overwrite=args.overwrite,
                expected_sha256=args.expectedSha256,
                create_dirs=args.createDirs,
                sha256=digest,
            )
        )
        note(bytes=outcome.bytes_written, backup=outcome.backup)
        return FileWriteOutput(
            success=True,
            path=printable(outcome.path),  # a name as a person reads it: escapes shown, never obeyed
            bytesWritten=outcome.bytes_written,
            sha256=outcome.sha256,
            created=outcome.created,
            backup=outcome.backup or "",
        )

    tools.add(
        ToolSpec(
            name=TOOL_NAME,
            description=TOOL_DESCRIPTION,
            annotations=ANNOTATIONS,
            input_model=FileWriteInput,
            output_model=FileWriteOutput,
            handler=file_write,
            action="write",
            paths={"path": "new"},
        )
    )
    return tools


def build_server(config: ServerConfig, history_dir: Path) -> GuardedServer:
    """The MCP server publishing the tool (loads the SDK)."""
    from mcp_server_guard.serving import GuardedServer  # noqa: PLC0415 - the SDK, only to publish

    return GuardedServer.serving(build_tools(config, history_dir))
