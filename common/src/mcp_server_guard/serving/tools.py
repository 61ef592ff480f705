"""A server's tools without the MCP SDK: what each publishes and checks, and one call from arguments to result.

``Tools`` holds a server's tools (``ToolSpec``: the two models, the handler, what the audit says) and what every
call shares: the audit record, the lenient arguments (``serving.calls``), the refusal with the call that would
work, the contract facts. ``GuardedServer`` publishes them through the SDK; before the SDK has loaded, the start-up
front answers a first call with ``early_call``, the same steps with the input model's own validation — so that
the first result does not wait for the SDK's protocol models (issue 44). Pydantic, no MCP SDK.
"""

from __future__ import annotations

import functools
import json
import logging
import shlex
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp_server_guard import audit
from mcp_server_guard.asking import ACCEPT, Answer, Question, Session, answer_invalid, approval_timeout
from mcp_server_guard.audit import AuditRecord
from mcp_server_guard.errors import Category, GuardError, HostError, ParamError, facts_line
from mcp_server_guard.paths import readable, where_line
from mcp_server_guard.serving.calls import example_call, flat_schema, normalize_arguments
from mcp_server_guard.serving.config import Mode, ServerConfig

log = logging.getLogger("mcp_server_guard")
# The agent CLI's contract: on every result, after the tool's own fields.
CONTRACT_FIELDS = ("auditId", "policyDecision", "mode", "timeoutSeconds")
# What the SDK's server answers to every initialize of ours, whatever the client declares (pinned against the SDK
# by tests/serving/test_computed_handshake.py): the handshake revisions it takes as the client says them.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
CAPABILITIES: Mapping[str, Mapping[str, bool]] = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}
# The client capabilities an initialize is answered here with, as the everyday clients declare them, by the
# revision that defines each (anything else — another member, type or revision — is the SDK's to validate: it may
# refuse what the front would have taken). clientInfo: name, version (and title), non-empty strings.
_CLIENT_CAPABILITIES: Mapping[str, tuple[tuple[str, Mapping[str, Any]], ...]] = {
    "roots": (("2024-11-05", {}), ("2024-11-05", {"listChanged": True}), ("2024-11-05", {"listChanged": False})),
    "sampling": (("2024-11-05", {}),),
    "experimental": (("2024-11-05", {}),),
    # 2025-11-25 gave elicitation its modes: the SDK's own client declares both ({"form": {}, "url": {}}).
    "elicitation": (
        ("2025-06-18", {}),
        ("2025-11-25", {"form": {}}),
        ("2025-11-25", {"url": {}}),
        ("2025-11-25", {"form": {}, "url": {}}),
    ),
}
# Refusals about a path that missed: worth looking for the path the caller meant.
_PATH_CODES = frozenset({"NOT_FOUND", "PATH_OUTSIDE_JAIL", "NOT_A_DIRECTORY", "INVALID_PATH", "IS_DIRECTORY"})


class ToolInput(BaseModel):
    """Base of tool input models (camelCase field names are the wire names)."""

    model_config = ConfigDict(populate_by_name=True)


class ToolOutput(BaseModel):
    """Base of tool output models; ``to_text`` is the text block old clients read (the facts line follows it)."""

    # Built with the first result, not at import (issue 44): the bases (this, ``ShellResult``) are never validated
    # themselves, and a server's own output model is first needed by its first result (``tools/list``'s schema
    # comes from the start-up record, or ``ToolShape`` makes it when first shown).
    model_config = ConfigDict(defer_build=True)

    auditId: str = Field(
        default="", description="Id of this call's audit record (`mcp-guard audit` shows it as id=...)."
    )
    policyDecision: str = Field(
        default="allow",
        description="Who decided, and what: allow (the policy); ask-approved or ask-declined (a person said yes "
        "or no, to the command or to its changes); approved-session (the person's grant earlier this session); "
        "ask-unavailable (a person had to be asked and could not be); deny (a guard or rule refused); error (a "
        "failure that is no policy decision).",
    )
    mode: str = Field(
        default="", description="The server's permission mode: read-only, workspace-write or full-access."
    )
    timeoutSeconds: float = Field(
        default=0.0,
        description="The timeout in force for this call, in seconds; 0 when the tool has none (file_read, file_write).",
    )

    def to_text(self) -> str:
        return self.model_dump_json(by_alias=True)

    def structured(self) -> dict[str, Any]:
        """The structured result: the tool's own fields, then the contract's; absent, not null, for a field with
        nothing to say (the published schema has one type per field)."""
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        return {k: v for k, v in data.items() if k not in CONTRACT_FIELDS} | {
            k: data[k] for k in CONTRACT_FIELDS if k in data
        }

    def text(self) -> str:
        """The text block: ``to_text``, then the facts line."""
        return f"{self.to_text()}\n{facts_line(self.facts())}"

    def links(self) -> list[dict[str, Any]]:
        """Resource links to put after the text block (e.g. the full output of a cut result), as the wire has them."""
        return []

    def facts(self) -> dict[str, Any]:
        """What the text block's last line shows."""
        return {name: getattr(self, name) for name in CONTRACT_FIELDS}


@dataclass(frozen=True)
class ToolShape:
    """What the server publishes and checks for one tool. The output schema is made when first asked for: only
    ``tools/list`` shows it, and a start whose ``tools/list`` is answered from the start-up record never needs it
    before its first result (issue 44: some 5 ms of shell_exec's start); a model without a flat form is refused
    by the tests of every server's tools (``tests/serving/test_tool_schemas_are_flat.py``)."""

    input_schema: dict[str, Any]
    output_model: type[BaseModel]
    action: str  # read, write, exec (the audit record's action)
    target: Callable[[Mapping[str, Any]], str | None]  # the audit record's target, from the arguments
    paths: Mapping[str, str]  # path arguments and what they name ("file", "dir", "new"), for suggestions
    implied: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # see calls.normalize_arguments

    @functools.cached_property
    def output_schema(self) -> dict[str, Any]:
        return flat_schema(
            self.output_model.model_json_schema(by_alias=True, mode="serialization"), output=True, last=CONTRACT_FIELDS
        )


def path_target(arguments: Mapping[str, Any]) -> str | None:
    path = arguments.get("path")
    return path if isinstance(path, str) else None


def command_target(arguments: Mapping[str, Any]) -> str | None:
    if arguments.get("listJobs") is True:
        return "jobs: list"
    for key, verb in (("applyChanges", "apply"), ("dropChanges", "drop")):
        held = arguments.get(key)
        if isinstance(held, str) and held:
            return f"changes {held}: {verb}"
    job = arguments.get("jobId")
    if isinstance(job, str) and job:
        signal = arguments.get("signal")
        return f"job {job}: " + (f"stop ({signal})" if isinstance(signal, str) and signal else "look")
    command = arguments.get("command")
    if not isinstance(command, str):
        return None
    args = arguments.get("args")
    return f"{command} {shlex.join(map(str, args))}" if isinstance(args, list) and args else command


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its contract (name, description, annotations as the wire spells them), its models, and
    ``handler(args, session)`` — or, for a tool with a ``gate``, ``handler(args, session, answer)``: the gate runs
    first with the arguments and the session and returns a ``Question`` for the person (asked before the call runs;
    the answer is an ``Answer``) or any other value (nothing asked: ``Answer("accept", value)``). The session
    (``asking``) is the SDK's or, for a call served before the SDK has loaded, the front's."""

    name: str
    description: str
    annotations: Mapping[str, bool]  # e.g. {"readOnlyHint": True}
    input_model: type[ToolInput]
    output_model: type[ToolOutput]
    handler: Callable[..., Awaitable[ToolOutput]]
    action: str = "read"
    target: Callable[[Mapping[str, Any]], str | None] = path_target
    paths: Mapping[str, str] = field(default_factory=lambda: {"path": "file"})
    title: str | None = None
    gate: Callable[[Any, Session], Awaitable[Any]] | None = None
    form: type[BaseModel] = BaseModel  # the base of every form the gate asks with
    implied: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # see calls.normalize_arguments

    def shape(self) -> ToolShape:
        # Flat or nothing: an input model whose schema has no flat form fails here, at start-up, not in a small model
        # (an output model's, when tools/list first shows it: ``ToolShape.output_schema``, and in every server's tests).
        return ToolShape(
            input_schema=flat_schema(self.input_model.model_json_schema(by_alias=True)),
            output_model=self.output_model,
            action=self.action,
            target=self.target,
            paths=dict(self.paths),
            implied=dict(self.implied),
        )


@dataclass(frozen=True)
class ResourceSpec:
    """A resource template a server publishes (read through the SDK only): ``read(**template_params) -> str``."""

    template: str
    name: str
    description: str
    mime_type: str
    read: Callable[..., Awaitable[str]]


def mode_instructions(config: ServerConfig) -> str:
    """What every server tells the model at initialize: its mode and directories (``GuardedServer`` says this)."""
    roots = ", ".join(root.path for root in config.jail.allowed)
    # What the model is told must be true: in full-access commands run without the box, so a command can
    # reach outside the directories (the file tools still cannot).
    outside = (
        "the file tools cannot reach outside them; commands run unconfined (full-access): they can read and "
        "write anywhere the user can)."
        if config.mode is Mode.FULL_ACCESS
        else "nothing outside them can be read, written or run on)."
    )
    return f"Permission mode: {config.mode.value}. {where_line(roots, config.jail.launch_dir)} {outside}"


def server_description(config: ServerConfig) -> str:
    """The server's description in ``serverInfo``."""
    return f"mcp-guard {config.name} ({config.mode.value})"


def client_name(info: Mapping[str, Any] | None) -> str | None:
    """The audit record's actor: the client's name and version from initialize's ``clientInfo``."""
    if not isinstance(info, Mapping) or not isinstance(info.get("name"), str):
        return None
    version = info.get("version")
    return f"{info['name']}/{version}" if isinstance(version, str) and version else str(info["name"])


def validation_refusal(exc: ValidationError, tool: str) -> ParamError:
    """Arguments that fail the input model: the first problem, named by its argument."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "arguments"
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    return ParamError(
        "INVALID_ARGUMENT",
        f"Invalid argument '{where}': {first['msg']}{more}.",
        f"Call {tool} with arguments that match its input schema.",
    )


class Tools:
    """A server's tools and what every call of them shares, without the MCP SDK."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.name = config.name
        self.jail, self.policy, self.audit = config.jail, config.policy, config.audit
        self.specs: dict[str, ToolSpec] = {}
        self.shapes: dict[str, ToolShape] = {}
        # shell_exec: the timeout in force for a call's arguments, shown on every result (refusals too).
        self.timeout_for: Callable[[Mapping[str, Any]], float] | None = None
        self.resources: list[ResourceSpec] = []
        self.cleanups: list[Callable[[], None]] = []  # run when the server stops
        # Run first, and the only ones a forced exit runs (serving.deadline): they end what runs (commands, the
        # box) and never remove data — a copy an apply is still reading stays for the next start to finish.
        self.kills: list[Callable[[], None]] = []
        # Its calls hold state on the event loop (shell_exec: the box, background jobs): every call runs on the one
        # loop the server serves from, those the start-up front takes before the SDK has loaded too.
        self.one_loop = False

    def add(self, spec: ToolSpec) -> None:
        self.specs[spec.name] = spec
        self.shapes[spec.name] = spec.shape()

    def initialize_result(self, params: Mapping[str, Any]) -> dict[str, Any] | None:
        """The SDK's answer to ``initialize`` with these params, computed (the first start in a new project has no
        record of it: issue 44); None for params the SDK must judge itself (an era or a member it may refuse)."""
        version, capabilities = params.get("protocolVersion"), params.get("capabilities")
        info = params.get("clientInfo")
        if not set(params) <= {"protocolVersion", "capabilities", "clientInfo"} or version not in HANDSHAKE_VERSIONS:
            return None
        if not isinstance(capabilities, dict) or not all(
            any(
                value == taken and HANDSHAKE_VERSIONS.index(version) >= HANDSHAKE_VERSIONS.index(since)
                for since, taken in _CLIENT_CAPABILITIES.get(key, ())
            )
            and not any(isinstance(v, int | float) and not isinstance(v, bool) for v in value.values())
            for key, value in capabilities.items()
        ):
            return None
        if not isinstance(info, dict) or not {"name", "version"} <= set(info) <= {"name", "version", "title"}:
            return None
        if not all(isinstance(value, str) and value for value in info.values()):
            return None
        return {
            "protocolVersion": version,
            "capabilities": {key: dict(value) for key, value in CAPABILITIES.items()},
            "serverInfo": {
                "name": self.name,
                "version": self.config.version,
                "description": server_description(self.config),
            },
            "instructions": mode_instructions(self.config),
        }

    def tools_list_result(self) -> dict[str, Any]:
        """The SDK's answer to ``tools/list`` (no cursor), computed: every tool, as ``GuardedServer.list_tools``."""
        listed: list[dict[str, Any]] = []
        for spec in self.specs.values():
            shape = self.shapes[spec.name]
            tool: dict[str, Any] = {"name": spec.name, "description": spec.description}
            if spec.title is not None:
                tool["title"] = spec.title
            tool |= {"inputSchema": shape.input_schema, "outputSchema": shape.output_schema}
            tool["annotations"] = dict(spec.annotations)
            listed.append(tool)
        return {"tools": listed}

    def record(self, name: str, arguments: Mapping[str, Any], actor: str | None) -> AuditRecord:
        """The audit record of a call, before it runs."""
        record = AuditRecord(server=self.name, tool=name, arguments=dict(arguments))
        record.actor, record.mode = actor, self.config.mode.value
        record.launch_dir, record.roots = self.jail.launch_dir, [root.path for root in self.jail.roots]
        shape = self.shapes.get(name)
        if shape is not None:
            record.action, record.target = shape.action, shape.target(arguments)
        return record

    def normalized(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        shape = self.shapes.get(name)
        return normalize_arguments(name, shape.input_schema, arguments, shape.implied) if shape else arguments

    def refusal(
        self, error: GuardError, name: str, arguments: Mapping[str, Any], record: AuditRecord
    ) -> dict[str, Any]:
        """A refused call as the wire's result: the call that would work where it can be found, the record's
        decision and code, the contract facts."""
        shape = self.shapes.get(name)
        if error.fix is None and shape is not None and error.code in _PATH_CODES:
            try:
                error.fix = self._path_fix(shape, arguments, error)
            except (GuardError, OSError):  # the tree changed while we looked: no suggestion, same refusal
                error.fix = None
        if error.fix is not None and error.example is None:
            fixed = {k: v for k, v in {**arguments, **error.fix}.items() if v is not None}
            error.example = example_call(name, fixed)
            # (escaped as the constructor escaped the rest: a real name may hold a bidi override, red team 78 F1;
            # printable's \\uXXXX is JSON's own escape, so the call shown still works as written)
            error.suggestion += f" Call it like this: {readable(json.dumps(error.example, ensure_ascii=False))}"
        record.decision = decision_of(error.category.value, record.decision)
        record.code, record.reason = error.code, record.reason or error.message
        return error.result(self.facts(record, arguments))

    def _path_fix(self, shape: ToolShape, arguments: Mapping[str, Any], error: GuardError) -> dict[str, Any] | None:
        """The path the caller most likely meant, when the refusal is about a path argument that missed."""
        for key, want in shape.paths.items():
            value = arguments.get(key)
            if not isinstance(value, str) or f"'{value}'" not in error.message:
                continue
            if want == "new" and error.code == "NOT_FOUND" and "directory of" in error.message:
                return {"createDirs": True}
            found = self.jail.suggest(value, want)
            if found is not None:
                error.message += f" Did you mean '{readable(found)}'?"
                return {key: found}
        return None

    def facts(self, record: AuditRecord, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The contract facts of a call: its audit id, the policy's decision, the server's mode (and the timeout
        in force, for a server that runs commands)."""
        facts: dict[str, Any] = {
            "auditId": record.audit_id,
            "policyDecision": record.decision,
            "mode": self.config.mode.value,
        }
        # Every result says its timeout (the agent CLI's contract): 0 is "none" for a tool that runs nothing.
        facts["timeoutSeconds"] = self.timeout_for(arguments) if self.timeout_for is not None else 0.0
        return facts

    def finished(self, out: ToolOutput, arguments: Mapping[str, Any]) -> ToolOutput:
        """A tool's output with the contract facts of the call under way."""
        record = audit.current()
        if record is None:  # in-process use without the audit wrapper
            return out.model_copy(update={"mode": self.config.mode.value})
        record.approved_by = record.approved_by or "policy"
        return out.model_copy(update=self.facts(record, arguments))


def decision_of(category: str | None, decision: str) -> str:
    """The policy decision of a refused call: a guard's refusal is deny (or the ask's own outcome); any other
    failure (bad arguments, a missing file, a crash) is error: the policy did not refuse it."""
    if decision in ("ask-declined", "ask-unavailable"):
        return decision
    return "deny" if category == Category.SECURITY.value else "error"


async def asked_first(tools: Tools, spec: ToolSpec, args: ToolInput, session: Session) -> Answer:
    """A gated tool's question before the call runs (``ToolSpec.gate``), asked through ``session`` and bounded
    by the policy's ``question_timeout_seconds`` (threat: a client that declares elicitation and never answers
    held the call for ever) — as the SDK's way bounds its resolvers (``GuardedServer._asking_bounded``)."""
    assert spec.gate is not None
    limit = tools.config.policy.shell_exec.question_timeout_seconds
    with anyio.move_on_after(limit) as scope:
        asked = await spec.gate(args, session)
        if not isinstance(asked, Question):
            return Answer(ACCEPT, asked)
        try:
            return await session.elicit(asked.message, asked.form)
        except ValueError:
            raise answer_invalid() from None
    assert scope.cancelled_caught
    raise approval_timeout(limit)


async def early_call(
    tools: Tools, name: str, arguments: dict[str, Any], actor: str | None, session: Session
) -> dict[str, Any]:
    """One call, as ``GuardedServer.call_tool`` answers it, without the SDK: the wire's ``CallToolResult`` (a
    refusal is an ``isError`` result, never an exception), its links as the wire has them."""
    spec = tools.specs[name]
    record = tools.record(name, arguments, actor)
    with tools.audit.call(record):
        normalized = arguments
        try:
            normalized = tools.normalized(name, arguments)
            try:
                args = spec.input_model.model_validate(normalized)
            except ValidationError as exc:
                raise validation_refusal(exc, name) from None
            answered = () if spec.gate is None else (await asked_first(tools, spec, args, session),)
            # Fail closed: the record of intent is written before the tool acts; no record, no action.
            tools.audit.intent()
            out = tools.finished(await spec.handler(args, session, *answered), normalized)
        except GuardError as exc:
            return tools.refusal(exc, name, normalized, record)
        except Exception:
            log.exception("tool %s raised an unexpected exception", name)
            error = HostError("INTERNAL_ERROR", f"{name} failed unexpectedly.", "Try again; if it persists, report it.")
            return tools.refusal(error, name, normalized, record)
        text = {"type": "text", "text": out.text()}
        return {"content": [text, *out.links()], "structuredContent": out.structured(), "isError": False}
