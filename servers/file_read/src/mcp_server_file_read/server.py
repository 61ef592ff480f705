"""The file_read tool: one guarded, paged, streamed read of a text file inside the jail."""

from __future__ import annotations

import os
import posixpath
from typing import TYPE_CHECKING

import anyio.to_thread
from pydantic import Field

from mcp_server_guard import GuardError, ParamError, ResourceError, SecurityError, note, protection_for
from mcp_server_guard.files import Page, Sniffed, read_page, sniff
from mcp_server_guard.serving import ServerConfig, ToolInput, ToolOutput, Tools, ToolSpec

if TYPE_CHECKING:
    from mcp_server_guard.serving import GuardedServer

# Seed 004's contract, verbatim.
TOOL_NAME = "file_read"
TOOL_DESCRIPTION = "指定されたパスのファイルを読み込み、その内容を返します。"
ANNOTATIONS = {"readOnlyHint": True, "openWorldHint": False}
# Files up to this size are read on the event loop (a fraction of a millisecond); bigger ones on a thread.
_INLINE_READ_BYTES = 1 << 20
# Entries of a directory named in an IS_DIRECTORY refusal.
_LISTED_ENTRIES = 40


class FileReadInput(ToolInput):
    path: str = Field(
        description="読み込むファイルのパス。絶対パスまたは許可されたルートディレクトリからの相対パスを指定。"
    )
    offset: int = Field(
        default=1, ge=1, description="First line to return (1-based). Use the nextOffset of a truncated read."
    )
    limit: int | None = Field(
        default=None, ge=1, description="Most lines to return. Omit for as many as fit in the byte cap."
    )


class FileReadOutput(ToolOutput):
    content: str = Field(description="読み込んだファイルの内容。")
    path: str = Field(description="The file read, relative to the launch directory when inside it.")
    size: int = Field(description="Size of the whole file in bytes.")
    mimeType: str = Field(description="MIME type sniffed by libmagic.")
    encoding: str = Field(description="Encoding the content was decoded from (utf-8, utf-16-le, latin-1, ...).")
    bom: bool = Field(description="True when the file starts with a byte-order mark (not included in content).")
    replacedCharacters: bool = Field(description="True when undecodable bytes were replaced with U+FFFD.")
    totalLines: int = Field(description="Number of lines in the whole file.")
    startLine: int = Field(description="First line returned (1-based).")
    endLine: int = Field(description="Last line returned (startLine - 1 when none).")
    truncated: bool = Field(description="True when the byte cap cut the content short of the requested lines.")
    nextOffset: int | None = Field(
        default=None, description="Pass as offset to read on; absent when the file's end was reached."
    )
    sha256: str = Field(description="SHA-256 of the whole file (use as expectedSha256 when writing it back).")

    def to_text(self) -> str:
        if self.nextOffset is None:
            return self.content
        why = "byte cap reached" if self.truncated else "line limit reached"
        return (
            f"{self.content}\n[{why}: showed lines {self.startLine}-{self.endLine} of {self.totalLines}; "
            f"call file_read with offset={self.nextOffset} to continue]"
        )


def _read(config: ServerConfig, args: FileReadInput, fd: int, st: os.stat_result) -> tuple[Sniffed, Page]:
    """The file's head sniffed (a binary refused) and the page asked for."""
    policy = config.policy.file_read
    head = os.pread(fd, policy.sniff_bytes, 0)
    sniffed = sniff(head, complete=len(head) >= st.st_size)
    if not (sniffed.is_text or policy.mime_allowed(sniffed.mime)):
        # Defense in depth: binaries (ELF, images, archives) are not handed to the model as text.
        raise SecurityError(
            "BINARY_FILE",
            f"'{args.path}' is not text (detected {sniffed.mime}).",
            "Only text files can be read; inspect binaries with a dedicated tool (e.g. `file`, `xxd`).",
        )
    page = read_page(
        fd,
        encoding=sniffed.encoding,
        bom=sniffed.bom,
        offset=args.offset,
        limit=args.limit,
        max_bytes=policy.max_read_bytes,
        st=st,
    )
    return sniffed, page


def _directory_refusal(config: ServerConfig, given: str) -> ResourceError:
    """file_read may be the only tool a read-only session has: a directory's refusal shows what is in it."""
    try:
        names, total = config.jail.list_dir(given, _LISTED_ENTRIES)
    except GuardError:
        names, total = [], 0
    shown = ", ".join(names) + (f", … ({total} entries)" if total > len(names) else "")
    files = [n for n in names if not n.endswith("/")]
    first = next((n for n in files if n.lower().startswith("readme")), files[0] if files else None)
    return ResourceError(
        "IS_DIRECTORY",
        f"'{given}' is a directory. It holds: {shown or '(nothing)'}.",
        "Pass the path of a file inside it.",
        fix={"path": posixpath.join(given, first)} if first else None,
    )


def build_tools(config: ServerConfig) -> Tools:
    """The tool, without the MCP SDK (the start-up front may answer a first call with it)."""
    tools = Tools(config)
    jail = config.jail
    protection = protection_for(config.policy)

    def check_hidden(fd: int, given: str) -> None:
        # Credentials (~/.ssh, ~/.aws, ...) stay unread even inside an allowed directory (HOME allowed):
        # decided on the real path of the open file, so no symlink or .. spelling gets around it.
        real = os.readlink(f"/proc/self/fd/{fd}")
        entry = protection.hidden_rule(real, [root.path for root in jail.roots])
        if entry is not None:
            raise SecurityError(
                "PATH_HIDDEN",
                f"'{given}' is inside the hidden path '{entry}' (credentials are never read).",
                "Ask the user for the value you need; the hidden list is the policy's [paths].hidden.",
            )

    async def file_read(args: FileReadInput, _ctx: object) -> FileReadOutput:
        try:
            located, fd, st = jail.open_file(args.path)
        except ResourceError as exc:
            if exc.code == "IS_DIRECTORY":
                raise _directory_refusal(config, args.path) from None
            raise
        try:
            check_hidden(fd, args.path)
            if st.st_size <= _INLINE_READ_BYTES:
                sniffed, page = _read(config, args, fd, st)
            else:
                # A big file takes one pass of hashing and counting: never on the event loop, where it
                # would stall every other request of this connection.
                sniffed, page = await anyio.to_thread.run_sync(_read, config, args, fd, st)
        finally:
            os.close(fd)
        if args.offset > max(page.total_lines, 1):
            raise ParamError(
                "OFFSET_OUT_OF_RANGE",
                f"offset {args.offset} is past the end of '{args.path}' ({page.total_lines} lines).",
                f"Use an offset between 1 and {max(page.total_lines, 1)}.",
                fix={"offset": max(page.total_lines, 1)},
            )
        note(bytes=page.content_bytes)
        return FileReadOutput(
            content=page.content,
            path=jail.display(located),
            size=st.st_size,
            mimeType=sniffed.mime,
            encoding=sniffed.encoding,
            bom=sniffed.bom > 0,
            replacedCharacters=page.replaced,
            totalLines=page.total_lines,
            startLine=page.start_line,
            endLine=page.end_line,
            truncated=page.truncated,
            nextOffset=page.next_offset,
            sha256=page.sha256,
        )

    tools.add(
        ToolSpec(
            name=TOOL_NAME,
            description=TOOL_DESCRIPTION,
            annotations=ANNOTATIONS,
            input_model=FileReadInput,
            output_model=FileReadOutput,
            handler=file_read,
        )
    )
    return tools


def build_server(config: ServerConfig) -> GuardedServer:
    """The MCP server publishing the tool (loads the SDK)."""
    from mcp_server_guard.serving import GuardedServer  # noqa: PLC0415 - the SDK, only to publish

    return GuardedServer.serving(build_tools(config))
