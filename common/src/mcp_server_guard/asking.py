"""What a call may ask of its session — a question to the person, progress while it runs — without the MCP SDK.

A tool's gate (``ToolSpec.gate``) returns a ``Question`` (the person is asked before the call runs) or any other
value (nothing is asked); the handler gets the outcome as an ``Answer``. During the call the tool asks and reports
through a ``Session``. Two sessions implement it: the SDK's (``serving.server``, once the SDK has loaded) and the
start-up front's (``serving.front``, a first call served before the SDK has loaded: issue 44) — the same tool code
either way, so a call does not behave differently for being the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from mcp_server_guard.errors import SecurityError

ACCEPT, DECLINE, CANCEL = "accept", "decline", "cancel"


@dataclass(frozen=True)
class Question:
    """A question for the person, asked through elicitation before the call runs: the text and the form."""

    message: str
    form: type[BaseModel]


@dataclass(frozen=True)
class Answer:
    """What came back: ``accept`` with the form's data (or the gate's own value, when it asked nothing),
    ``decline`` or ``cancel``."""

    action: str
    data: Any = None

    @property
    def accepted(self) -> bool:
        return self.action == ACCEPT


class Session(Protocol):
    """What a running call may ask of its client."""

    @property
    def can_elicit(self) -> bool:
        """The client declared elicitation (a person can be asked)."""
        ...

    @property
    def can_send_request(self) -> bool:
        """A question may be sent while the call runs (2025-era connections; 2026-07-28 asks between rounds)."""
        ...

    @property
    def wants_progress(self) -> bool:
        """The call carries a progress token (the client shows progress)."""
        ...

    async def elicit(self, message: str, form: type[BaseModel]) -> Answer:
        """Ask the person; raises ValueError when the client accepted with no content or content the form refuses."""
        ...

    async def report_progress(self, progress: float, total: float | None, message: str | None) -> None: ...


class NoSession:
    """The session of a call made in-process (tests, the demo): nobody can be asked, nothing is shown."""

    can_elicit = False
    can_send_request = False
    wants_progress = False

    async def elicit(self, message: str, form: type[BaseModel]) -> Answer:
        raise ValueError("no client to ask")

    async def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        return None


def answer_of(action: str, content: Any, form: type[BaseModel]) -> Answer:
    """A client's answer to a form question: accepted content must fill the form (ValueError otherwise)."""
    if action == ACCEPT:
        if content is None:
            raise ValueError("Received an accepted elicitation with no content")
        try:
            return Answer(ACCEPT, form.model_validate(content))
        except ValidationError as exc:
            raise ValueError("Received an accepted elicitation whose content does not fit the form") from exc
    return Answer(DECLINE if action == DECLINE else CANCEL)


class _FormSchema(GenerateJsonSchema):
    """A form's JSON schema as elicitation takes it: flat primitives, an optional field is one left out of
    ``required`` (no null type, no ``default: null``)."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        rendered = super().default_schema(schema)
        if rendered.get("default") is None:
            rendered.pop("default", None)
        return rendered


def form_schema(form: type[BaseModel]) -> dict[str, Any]:
    """The ``requestedSchema`` of a form question (the SDK's own rendering: pinned by a test)."""
    return form.model_json_schema(schema_generator=_FormSchema)


def approval_timeout(limit: float) -> SecurityError:
    """Nobody answered the question asked before a call within ``limit`` seconds (the call did not run)."""
    return SecurityError(
        "APPROVAL_TIMEOUT",
        f"Nobody answered the approval question within {limit:g} s; nothing was run.",
        "Ask the user whether they saw the question; call again when they are there to answer it.",
    )


def answer_invalid() -> SecurityError:
    """The client answered a question with content that does not fit its form: the client's fault, not the
    model's (blaming the arguments makes a model retry in a loop)."""
    return SecurityError(
        "APPROVAL_ANSWER_INVALID",
        "The MCP client answered the approval form with content that does not match the form; nothing was run.",
        "This is a fault of the client application, not of the call: do not retry it with other arguments. "
        "Tell the user their client's approval dialog did not work (they can approve such commands in a "
        "policy file instead).",
    )


__all__ = [
    "ACCEPT",
    "CANCEL",
    "DECLINE",
    "Answer",
    "NoSession",
    "Question",
    "Session",
    "answer_invalid",
    "answer_of",
    "approval_timeout",
    "form_schema",
]
