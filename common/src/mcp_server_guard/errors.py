"""One exception tree for every refusal a guarded server can make.

    GuardError                           code, category, message, suggestion
    ├── ParamError        PARAM          the caller's arguments are malformed
    ├── SecurityError     SECURITY       the request would leave the box
    ├── ResourceError     RESOURCE       the target is missing, too big, of the wrong kind
    ├── ExecutionError    EXECUTION      running something failed (shell_exec)
    └── HostError         SYSTEM         the host failed us (I/O, permissions, internal)

Each refusal becomes an ``isError`` tool result whose text block and ``_meta["mcp-guard/error"]``
both carry ``code``, ``category``, ``message`` and ``suggestion`` (see :func:`GuardError.to_result`), plus the
call's contract facts (``auditId``, ``policyDecision``, ``mode``) and, when the refusal knows the call that
would work, ``example``: ``{"name": tool, "arguments": {...}}`` built from the caller's own arguments.
The payload is not put in ``structuredContent``: clients such as the TypeScript SDK validate that
against the tool's ``outputSchema`` even on errors, and a refusal is not a tool output.
Messages name only what the caller sent; they never reveal resolved host paths outside the jail.

No MCP SDK here: the ``mcp-guard`` CLI (history, undo, audit, check) uses this tree and starts without importing
the SDK. Raised in a tool, a GuardError reaches the server as the cause of the SDK's wrapper, and
``GuardedServer.call_tool`` answers with it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from mcp_server_guard.paths import printable

if TYPE_CHECKING:
    from mcp.types import CallToolResult

ERROR_META_KEY = "mcp-guard/error"


class Category(enum.StrEnum):
    PARAM = "PARAM"
    SECURITY = "SECURITY"
    RESOURCE = "RESOURCE"
    EXECUTION = "EXECUTION"
    SYSTEM = "SYSTEM"


class ErrorPayload(BaseModel):
    """The structured form of a refusal, as the client receives it."""

    model_config = ConfigDict(defer_build=True)  # (built with the first refusal: issue 44)

    code: str = Field(description="Stable SCREAMING_SNAKE error code.")
    category: Category = Field(description="Error family: PARAM, SECURITY, RESOURCE, EXECUTION or SYSTEM.")
    message: str = Field(description="What went wrong.")
    suggestion: str = Field(description="What to do instead.")
    example: dict[str, Any] | None = Field(default=None, description="A corrected call: name and arguments.")


class GuardError(Exception):
    """Base of every refusal. Subclasses fix the category; instances carry the code."""

    category: ClassVar[Category] = Category.SYSTEM

    def __init__(
        self,
        code: str,
        message: str,
        suggestion: str,
        *,
        example: dict[str, Any] | None = None,
        fix: Mapping[str, Any] | None = None,
    ) -> None:
        # Threat: a path or argument of the caller's (an ANSI escape, a carriage return, a bidi override, a newline
        # and a forged "Suggestion:" line after it: red team 139 F1) that repaints, reorders or adds to what a
        # person reads in the error: shown as its escape. A message and a suggestion are one line each.
        message, suggestion = printable(message), printable(suggestion)
        super().__init__(message)
        self.code = code
        self.message = message
        self.suggestion = suggestion
        self.example = example
        # Argument changes that would make the call work ({"path": "src/a.py"}; None removes a key): the server
        # turns them into ``example`` with the rest of the caller's arguments.
        self.fix = dict(fix) if fix is not None else None

    @property
    def payload(self) -> ErrorPayload:
        return ErrorPayload(
            code=self.code,
            category=self.category,
            message=self.message,
            suggestion=self.suggestion,
            example=self.example,
        )

    def result(self, facts: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The isError result as the wire carries it; ``facts`` (auditId, policyDecision, mode) join the payload
        and the last line."""
        payload = self.payload
        text = f"{payload.code} ({payload.category.value}): {payload.message}\nSuggestion: {payload.suggestion}"
        data = payload.model_dump(mode="json", exclude_none=True)
        if facts:
            data.update(facts)
            text += "\n" + facts_line(facts)
        return {"_meta": {ERROR_META_KEY: data}, "content": [{"type": "text", "text": text}], "isError": True}

    def to_result(self, facts: Mapping[str, Any] | None = None) -> CallToolResult:
        """``result`` as the SDK's model."""
        from mcp.types import CallToolResult  # noqa: PLC0415 - only a server answers, with the SDK loaded

        return CallToolResult.model_validate(self.result(facts))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


def facts_line(facts: Mapping[str, Any]) -> str:
    """The last line of every result's text: ``[auditId=… policyDecision=… mode=…]`` (what an agent CLI shows)."""
    return "[" + " ".join(f"{k}={v}" for k, v in facts.items() if v is not None) + "]"


class ParamError(GuardError):
    category = Category.PARAM


class SecurityError(GuardError):
    category = Category.SECURITY


def protection_unavailable(path: str, why: str) -> SecurityError:
    """A protected path that cannot be guarded (a link, an unreadable .git file): nothing runs."""
    return SecurityError(
        "PROTECTION_UNAVAILABLE",
        f"The protected path '{path}' cannot be guarded: {why}; nothing was run.",
        "Ask the user to fix that path by hand (replace the symlink by the file, or repair the .git file), "
        "or to allow a directory that does not contain it.",
    )


class ResourceError(GuardError):
    category = Category.RESOURCE


class ExecutionError(GuardError):
    category = Category.EXECUTION


class HostError(GuardError):
    category = Category.SYSTEM


# Every code a server can emit, with its category; the README's table is checked against this.
ERROR_CODES: dict[str, Category] = {
    "INVALID_ARGUMENT": Category.PARAM,
    "INVALID_PATH": Category.PARAM,
    "INVALID_CONTENT": Category.PARAM,
    "UNKNOWN_TOOL": Category.PARAM,
    "PATH_OUTSIDE_JAIL": Category.SECURITY,
    "SYMLINK_ESCAPE": Category.SECURITY,
    "SYMLINK_REJECTED": Category.SECURITY,
    "NO_ALLOWED_ROOTS": Category.SECURITY,
    "NOT_REGULAR_FILE": Category.SECURITY,
    "BINARY_FILE": Category.SECURITY,
    "SYMLINK_TARGET": Category.SECURITY,
    "PROTECTED_PATH": Category.SECURITY,
    "PROTECTED_CONTENT": Category.SECURITY,
    "PROTECTION_UNAVAILABLE": Category.SECURITY,
    "PATH_HIDDEN": Category.SECURITY,
    "EXECUTABLE_EXTENSION": Category.SECURITY,
    "EXECUTABLE_CONTENT": Category.SECURITY,
    "EXECUTABLE_TARGET": Category.SECURITY,
    "COMMAND_DENIED": Category.SECURITY,
    "ASK_DECLINED": Category.SECURITY,
    "ASK_UNAVAILABLE": Category.SECURITY,
    "APPROVAL_ANSWER_INVALID": Category.SECURITY,
    "APPROVAL_TIMEOUT": Category.SECURITY,
    "READ_ONLY_MODE": Category.SECURITY,
    "ENV_REFUSED": Category.SECURITY,
    "REDIRECT_OUTSIDE_JAIL": Category.SECURITY,
    "OFFSET_OUT_OF_RANGE": Category.PARAM,
    "NOT_FOUND": Category.RESOURCE,
    "IS_DIRECTORY": Category.RESOURCE,
    "NOT_A_DIRECTORY": Category.RESOURCE,
    "FILE_EXISTS": Category.RESOURCE,
    "CONFLICT": Category.RESOURCE,
    "FILE_BUSY": Category.RESOURCE,
    "CONTENT_TOO_LARGE": Category.RESOURCE,
    "COMMAND_TOO_COMPLEX": Category.RESOURCE,
    "JOB_LIMIT": Category.RESOURCE,
    "JOB_NOT_FOUND": Category.PARAM,
    "STDIN_BLOCKED": Category.RESOURCE,
    "STDIN_CLOSED": Category.PARAM,
    "STDIN_UNREADABLE": Category.SECURITY,
    "HISTORY_NOT_FOUND": Category.RESOURCE,  # mcp-guard history / undo (HistoryError)
    "HISTORY_BROKEN": Category.RESOURCE,
    "DISK_FULL": Category.RESOURCE,
    "HISTORY_FULL": Category.RESOURCE,
    "CHANGES_NOT_FOUND": Category.PARAM,
    "UNDO_CONFLICT": Category.RESOURCE,
    "UNDO_ASKS": Category.SECURITY,  # mcp-guard undo: what it puts back would be asked about now (--yes)
    "UNDO_REFUSED": Category.SECURITY,  # mcp-guard undo: what it puts back is what no tool may write there now
    "COMMAND_NOT_FOUND": Category.EXECUTION,
    "EXECUTION_FAILED": Category.EXECUTION,
    "PERMISSION_DENIED": Category.SYSTEM,
    "IO_ERROR": Category.SYSTEM,
    "HISTORY_UNAVAILABLE": Category.SYSTEM,
    "AUDIT_UNAVAILABLE": Category.SYSTEM,
    "INTERNAL_ERROR": Category.SYSTEM,
}
