"""The serving layer every guarded server shares.

``GuardedServer`` is an ``MCPServer`` whose every tool call is audited and whose every refusal -
a ``GuardError`` from a guard, an argument that fails the input model, an unexpected crash -
reaches the client as one structured ``isError`` result. ``publish`` publishes one tool (``ToolSpec``) from
a pydantic input model and a pydantic output model: the schemas the client sees come from them.
The client's MCP roots narrow the jail before each call (fetched once, refreshed on
``notifications/roots/list_changed``).

What a small model and the agent CLI that spawns us see (see ``serving.calls``): flat schemas; arguments taken
leniently where unambiguous and refused with a corrected example call otherwise; and on every result, success
or refusal, the call's ``auditId``, ``policyDecision`` and the server's ``mode`` (structured, and as the text
block's last line).
"""

from __future__ import annotations

import contextvars
import inspect
import logging
import math
import sys
import warnings
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar
from urllib.parse import unquote, urlparse

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.elicitation import AcceptedElicitation, DeclinedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.types import (
    CallToolResult,
    InitializeRequestParams,
    ListRootsResult,
    ResourceLink,
    TextContent,
    ToolAnnotations,
)
from mcp.types import Tool as MCPTool
from pydantic import BaseModel, ValidationError

from mcp_server_guard.asking import (
    ACCEPT,
    CANCEL,
    DECLINE,
    Answer,
    Question,
    answer_invalid,
    approval_timeout,
)
from mcp_server_guard.audit import AuditRecord
from mcp_server_guard.errors import ERROR_META_KEY, GuardError, HostError, ParamError
from mcp_server_guard.serving.config import ServerConfig
from mcp_server_guard.serving.tools import (
    ToolInput,
    ToolOutput,
    Tools,
    ToolSpec,
    client_name,
    decision_of,
    mode_instructions,
    server_description,
    validation_refusal,
)

log = logging.getLogger("mcp_server_guard")
# The bound on what a call asks the client before its tool runs (see GuardedServer._asking_bounded).
_QUESTION_SCOPE: contextvars.ContextVar[anyio.CancelScope] = contextvars.ContextVar("question_scope")

# Roots are deprecated in the 2026-07-28 protocol but still the only way a client can narrow us.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)


InT = TypeVar("InT", bound=ToolInput)
OutT = TypeVar("OutT", bound=ToolOutput)


async def _roots_resolver(ctx: Context[Any, Any]) -> ListRoots | ListRootsResult | None:
    """Ask for the client's roots once per change; ``None`` when they are known or not offered.

    Async on purpose: the SDK runs a sync resolver on a worker thread, which would cost every call.
    """
    server = ctx.mcp_server
    try:
        caps = ctx.client_capabilities
    except ValueError:  # called outside a client request (in-process use)
        return None
    if not isinstance(server, GuardedServer) or caps is None or caps.roots is None or server.roots_current:
        return None
    return ListRoots()


# The client's roots (fetched once per change), for resolvers that must see the narrowed jail.
ClientRoots = Annotated[ListRootsResult | None, Resolve(_roots_resolver)]


def _client_name(params: InitializeRequestParams | None) -> str | None:
    """The audit record's actor: the client's name and version from initialize."""
    return None if params is None else client_name(params.client_info.model_dump())


def _root_paths(result: ListRootsResult) -> list[str]:
    paths: list[str] = []
    for root in result.roots:
        parsed = urlparse(str(root.uri))
        if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
            paths.append(unquote(parsed.path))
    return paths


def _from_a_question(exc: BaseException) -> bool:
    """Whether the SDK raised ``exc`` for a client's answer to a question (its "Resolver '…': …" errors)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ToolError) and "Resolver '" in str(cause):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _as_guard_error(exc: ToolError | GuardError, tool: str) -> GuardError:
    if not isinstance(exc, GuardError) and _from_a_question(exc):
        # The SDK asked the client a question (the approval form, the roots) and the client's answer did not fit
        # the form: the client's mistake, not the model's. Blaming the arguments makes a model retry in a loop.
        return answer_invalid()
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, GuardError):
            return cause
        if isinstance(cause, ValidationError):
            return validation_refusal(cause, tool)
        cause = cause.__cause__
    if str(exc).startswith("Unknown tool"):
        return ParamError("UNKNOWN_TOOL", str(exc), "Call tools/list to see the tool this server offers.")
    return HostError("INTERNAL_ERROR", f"{tool} failed unexpectedly.", "Try again; if it persists, report it.")


@contextmanager
def _rich_left_unloaded() -> Iterator[None]:
    """Memory and start-up: ``MCPServer.__init__`` calls the SDK's ``configure_logging``, which imports ``rich``
    (~6 MiB and 15-35 ms per server) to build a handler that ``logging.basicConfig`` then drops, because the
    launch installed ours on stderr first. ``rich`` is optional to the SDK (it falls back on ImportError): while
    the server is built, its import fails unless something else has loaded it already."""
    if "rich.console" in sys.modules:
        yield
        return
    sys.modules["rich.console"] = None  # type: ignore[assignment]  # None here: `import rich.console` fails
    try:
        yield
    finally:
        if sys.modules.get("rich.console", False) is None:
            del sys.modules["rich.console"]


class GuardedServer(MCPServer[Any]):
    """An MCPServer that audits every call and turns every failure into a structured refusal."""

    def __init__(self, config: ServerConfig, *, instructions: str | None = None, tools: Tools | None = None) -> None:
        mode_line = mode_instructions(config)  # what the start-up front computes too (serving.tools)
        with _rich_left_unloaded():
            super().__init__(
                name=config.name,
                version=config.version,
                description=server_description(config),
                instructions=f"{mode_line} {instructions}" if instructions else mode_line,
                log_level=config.log_level,  # type: ignore[arg-type]
            )
        # The tools and what every call shares (``serving.tools``: no SDK there, so that the start-up front can
        # answer a first call with them before the SDK has loaded).
        self.tools = tools if tools is not None else Tools(config)
        self.shapes, self.kills, self.cleanups = self.tools.shapes, self.tools.kills, self.tools.cleanups
        self.config = config
        self.jail = config.jail
        self.policy = config.policy
        self.audit = config.audit
        self.roots_current = False
        self._said_empty_roots = False
        # Tools that need nothing from the session (no question, no progress), registered without the roots
        # resolver: a call is taken directly only while the roots are known (see takes_directly).
        self.direct_tools: dict[str, Tool] = {}
        self._no_request: Context[Any, Any] = Context(mcp_server=self)  # what a direct call's tool gets (stateless)
        # Middleware sees every inbound message in both eras; the 2026-07-28 runner would drop this
        # notification before any handler (no handshake), yet a stale, wider jail must not survive it.
        self.middleware.append(self._watch_roots_changed)

    @classmethod
    def serving(cls, tools: Tools) -> GuardedServer:
        """The server publishing ``tools`` (built without the SDK: see ``serving.tools``)."""
        server = cls(tools.config, tools=tools)
        for spec in list(tools.specs.values()):
            publish(server, spec)
        for resource in tools.resources:
            server.resource(
                resource.template, name=resource.name, description=resource.description, mime_type=resource.mime_type
            )(resource.read)
        return server

    @property
    def timeout_for(self) -> Callable[[Mapping[str, Any]], float] | None:
        """shell_exec: the timeout in force for a call's arguments, shown on every result (refusals too)."""
        return self.tools.timeout_for

    @timeout_for.setter
    def timeout_for(self, value: Callable[[Mapping[str, Any]], float] | None) -> None:
        self.tools.timeout_for = value

    async def _watch_roots_changed(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "notifications/roots/list_changed":
            log.info("client roots changed; they will be fetched again before the next call")
            self.roots_current = False
        return await call_next(ctx)

    def apply_roots(self, result: ListRootsResult | None) -> None:
        if result is None:
            return
        self.roots_current = True
        if not result.roots:
            # An empty list names no roots (Inspector, editors with no folder open): no narrowing, as in
            # the reference filesystem server. Roots only ever narrow; the launch jail stays in force.
            self.jail.narrow(None)
            if not self._said_empty_roots:
                self._said_empty_roots = True
                log.warning("the client's roots list is empty: serving the allowed directories unnarrowed")
            return
        self.jail.narrow(_root_paths(result))
        log.info("jail narrowed by client roots to: %s", self.jail.describe_roots())

    async def list_tools(self) -> list[MCPTool]:
        """The tools with the flat schemas (the SDK's own are nullable unions and titles)."""
        tools = await super().list_tools()
        for tool in tools:
            shape = self.shapes.get(tool.name)
            if shape is not None:
                tool.input_schema = shape.input_schema
                tool.output_schema = shape.output_schema
        return tools

    @staticmethod
    def _actor(context: Context[Any, Any] | None) -> str | None:
        try:
            params = context.request_context.session.client_params if context is not None else None
        except (ValueError, AttributeError):
            return None
        return _client_name(params)

    # -- calls the stdio connection hands over directly (serving.stdio.DirectCalls) ---------------------------

    def takes_directly(self, name: str, client: InitializeRequestParams) -> bool:
        # Only a tool that asks nothing of the session (no elicitation, no progress), and only while the
        # client's roots are known: fetching them is a request to the client, which only the SDK's way makes.
        return name in self.direct_tools and (client.capabilities.roots is None or self.roots_current)

    async def call_directly(self, name: str, arguments: dict[str, Any], client: InitializeRequestParams) -> Any:
        # As the SDK's tools/call handler does: a protocol error stays one; any other failure is an error result.
        try:
            return await self.call_tool(name, arguments, actor=_client_name(client), direct=True)
        except MCPError:
            raise
        except Exception as exc:
            log.exception("tool %s raised an unexpected exception", name)
            return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)

    def roots_changed(self) -> None:
        self.roots_current = False

    async def _asking_bounded(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None) -> Any:
        """The SDK's call, with what it asks the client before the tool runs (the approval form, the roots)
        bounded by ``question_timeout_seconds``: a client that declares elicitation and never answers would
        hold the call forever. The bound ends where the tool itself starts (``publish``'s wrapper)."""
        limit = self.config.policy.shell_exec.question_timeout_seconds
        with anyio.CancelScope(deadline=anyio.current_time() + limit) as scope:
            token = _QUESTION_SCOPE.set(scope)
            try:
                return await super().call_tool(name, arguments, context)
            finally:
                _QUESTION_SCOPE.reset(token)
        raise approval_timeout(limit)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Context[Any, Any] | None = None,
        *,
        actor: str | None = None,
        direct: bool = False,
    ) -> Any:
        record = self.tools.record(name, arguments, actor or self._actor(context))
        # Cancelled by the client, or the server going down: the call still leaves a trace ("cancelled").
        with self.audit.call(record) as recording:
            normalized = arguments
            try:
                normalized = self.tools.normalized(name, arguments)
                if direct:
                    result = await self.direct_tools[name].run(normalized, self._no_request, convert_result=True)
                else:
                    result = await self._asking_bounded(name, normalized, context)
            except (ToolError, GuardError) as exc:  # a GuardError raised here, or wrapped by the SDK's tool runner
                error = _as_guard_error(exc, name)
                if error.code == "INTERNAL_ERROR":
                    log.error("tool %s crashed", name, exc_info=exc)
                result = CallToolResult.model_validate(self.tools.refusal(error, name, normalized, record))
            except MCPError as exc:
                record.decision, record.code = "error", f"MCP_{exc.code}"
                raise
            if isinstance(result, CallToolResult):
                if result.is_error and record.code is None:
                    payload = (result.meta or {}).get(ERROR_META_KEY)
                    category = payload.get("category") if isinstance(payload, dict) else None
                    record.decision = decision_of(category if isinstance(category, str) else None, record.decision)
                    record.code = payload.get("code") if isinstance(payload, dict) else None
            elif record.intent_written:
                # Asked for input after acting (no tool of ours does): close the record; the retry is a new call.
                record.decision = "input_required"
            else:
                # An input_required round (2026-07-28): the tool has not acted; the retry that does is audited.
                recording.discard()
        return result

    def facts(self, record: AuditRecord, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The contract facts of a call (``Tools.facts``)."""
        return self.tools.facts(record, arguments)


def _sign(fn: Callable[..., Any], name: str, input_model: type[BaseModel], extras: Mapping[str, Any], ret: Any) -> None:
    """Give ``fn(**kwargs)`` the signature the SDK reads: one keyword per input field (schema and by-name
    resolution come from it), then the context, the client's roots and ``extras``."""
    params = [
        inspect.Parameter(field, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[info.annotation, info])
        for field, info in input_model.model_fields.items()
    ]
    more: dict[str, Any] = {"ctx": Context, "client_roots": ClientRoots, **extras}
    params += [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, annotation=v) for k, v in more.items()]
    fn.__signature__ = inspect.Signature(params, return_annotation=ret)  # type: ignore[attr-defined]
    fn.__annotations__ = {p.name: p.annotation for p in params} | {"return": ret}
    fn.__name__ = fn.__qualname__ = name


def _gate_resolver(server: GuardedServer, spec: ToolSpec) -> Callable[..., Awaitable[Any]]:
    """The SDK resolver behind a tool's gate: it takes the call's arguments by name; the gate gets them as the
    input model (after the client's roots are applied: the gate may check paths) and the SDK's session; its
    ``Question`` becomes the SDK's ``Elicit``."""

    async def resolve(**kwargs: Any) -> Any:
        ctx: Context[Any, Any] = kwargs.pop("ctx")
        server.apply_roots(kwargs.pop("client_roots", None))
        assert spec.gate is not None
        asked = await spec.gate(spec.input_model.model_construct(**kwargs), SdkSession(ctx))
        return Elicit(asked.message, asked.form) if isinstance(asked, Question) else asked

    _sign(resolve, f"{spec.name}_gate", spec.input_model, {}, Elicit[spec.form] | Any)  # type: ignore[name-defined]
    return resolve


def _answer(outcome: Any) -> Answer:
    """The SDK's outcome of a gate as the handler takes it."""
    if isinstance(outcome, AcceptedElicitation):
        return Answer(ACCEPT, outcome.data)
    return Answer(DECLINE if isinstance(outcome, DeclinedElicitation) else CANCEL)


class SdkSession:
    """``asking.Session`` over the SDK's context of a call."""

    def __init__(self, ctx: Context[Any, Any]) -> None:
        self._ctx = ctx

    @property
    def can_elicit(self) -> bool:
        caps = self._ctx.client_capabilities
        return caps is not None and caps.elicitation is not None

    @property
    def can_send_request(self) -> bool:
        return bool(self._ctx.session.can_send_request)

    @property
    def wants_progress(self) -> bool:
        try:
            meta = self._ctx.request_context.meta
        except ValueError:  # no request (a direct call)
            return False
        return meta is not None and meta.get("progress_token", meta.get("progressToken")) is not None

    async def elicit(self, message: str, form: type[BaseModel]) -> Answer:
        return _answer(await self._ctx.elicit(message, form))

    async def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        await self._ctx.report_progress(progress, total, message)


def publish(server: GuardedServer, spec: ToolSpec) -> None:
    """Publish ``spec`` (one of ``server.tools``: its shape computed there) through the SDK; a tool with a gate
    gets it as the SDK resolver of its ``answer`` (the person asked before the call runs, in every round of a
    2026-07-28 call)."""
    name, input_model = spec.name, spec.input_model
    resolvers: dict[str, Any] = {}
    if spec.gate is not None:
        outcome = ElicitationResult[spec.form]  # type: ignore[name-defined]
        resolvers["answer"] = Annotated[outcome, Resolve(_gate_resolver(server, spec))]

    async def call(**kwargs: Any) -> Any:
        asking = _QUESTION_SCOPE.get(None)
        if asking is not None:
            asking.deadline = math.inf  # every question is answered: the tool's own time is its timeout's
        ctx: Context[Any, Any] = kwargs.pop("ctx")
        server.apply_roots(kwargs.pop("client_roots", None))
        answered = [_answer(kwargs.pop(name)) for name in resolvers]
        args = input_model.model_construct(**kwargs)
        # Fail closed: the record of intent is written before the tool acts; no record, no action.
        # Only the round that runs the handler acts (an input_required round never gets here).
        server.audit.intent()
        out = server.tools.finished(await spec.handler(args, SdkSession(ctx), *answered), kwargs)
        links = [ResourceLink.model_validate(link) for link in out.links()]
        return CallToolResult(
            content=[TextContent(type="text", text=out.text()), *links], structured_content=out.structured()
        )

    _sign(call, name, input_model, {**resolvers}, spec.output_model)
    annotations = ToolAnnotations.model_validate(dict(spec.annotations))
    server.add_tool(call, name=name, title=spec.title, description=spec.description, annotations=annotations)
    if not resolvers:
        tool = server._tool_manager.get_tool(name)
        assert tool is not None
        server.direct_tools[name] = tool.model_copy(update={"resolved_params": {}, "resolver_plans": {}})
