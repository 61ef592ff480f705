"""The serving layer every guarded server shares.

``GuardedServer`` is an ``MCPServer`` whose every tool call is audited and whose every refusal -
a ``GuardError`` from a guard, an argument that fails the input model, an unexpected crash -
reaches the client as one structured ``isError`` result. ``register_tool`` publishes one tool from
a pydantic input model and a pydantic output model: the schemas the client sees come from them.
The client's MCP roots narrow the jail before each call (fetched once, refreshed on
``notifications/roots/list_changed``).
"""

from __future__ import annotations

import inspect
import logging
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar
from urllib.parse import unquote, urlparse

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import ListRoots, Resolve
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.types import CallToolResult, ListRootsResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError

from mcp_server_guard.audit import AuditLog, AuditRecord
from mcp_server_guard.errors import ERROR_META_KEY, GuardError, ParamError, SystemError_
from mcp_server_guard.files.jail import Jail
from mcp_server_guard.policy import Policy

log = logging.getLogger("mcp_server_guard")

# Roots are deprecated in the 2026-07-28 protocol but still the only way a client can narrow us.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)


class ToolInput(BaseModel):
    """Base of tool input models (camelCase field names are the wire names)."""

    model_config = ConfigDict(populate_by_name=True)


class ToolOutput(BaseModel):
    """Base of tool output models; ``to_text`` is the text block old clients read."""

    def to_text(self) -> str:
        return self.model_dump_json(by_alias=True)


@dataclass
class ServerConfig:
    """Everything a guarded server needs, built by the CLI from flags and the policy file."""

    name: str
    version: str
    jail: Jail
    policy: Policy
    audit: AuditLog
    log_level: str = "WARNING"


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


def _root_paths(result: ListRootsResult) -> list[str]:
    paths: list[str] = []
    for root in result.roots:
        parsed = urlparse(str(root.uri))
        if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
            paths.append(unquote(parsed.path))
    return paths


def _as_guard_error(exc: ToolError, tool: str) -> GuardError:
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, GuardError):
            return cause
        if isinstance(cause, ValidationError):
            first = cause.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "arguments"
            more = f" (and {cause.error_count() - 1} more problems)" if cause.error_count() > 1 else ""
            return ParamError(
                "INVALID_ARGUMENT",
                f"Invalid argument '{where}': {first['msg']}{more}.",
                f"Call {tool} with arguments that match its input schema.",
            )
        cause = cause.__cause__
    if str(exc).startswith("Unknown tool"):
        return ParamError("UNKNOWN_TOOL", str(exc), "Call tools/list to see the tool this server offers.")
    return SystemError_("INTERNAL_ERROR", f"{tool} failed unexpectedly.", "Try again; if it persists, report it.")


class GuardedServer(MCPServer[Any]):
    """An MCPServer that audits every call and turns every failure into a structured refusal."""

    def __init__(self, config: ServerConfig, *, instructions: str | None = None) -> None:
        super().__init__(
            name=config.name,
            version=config.version,
            instructions=instructions,
            log_level=config.log_level,  # type: ignore[arg-type]
        )
        self.config = config
        self.jail = config.jail
        self.policy = config.policy
        self.audit = config.audit
        self.roots_current = False
        self._said_empty_roots = False
        self.cleanups: list[Callable[[], None]] = []  # run when the server stops
        # Middleware sees every inbound message in both eras; the 2026-07-28 runner would drop this
        # notification before any handler (no handshake), yet a stale, wider jail must not survive it.
        self.middleware.append(self._watch_roots_changed)

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

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None) -> Any:
        record = AuditRecord(server=self.name, tool=name, arguments=dict(arguments))
        # Cancelled by the client, or the server going down: the call still leaves a trace ("cancelled").
        with self.audit.call(record) as recording:
            try:
                result = await super().call_tool(name, arguments, context)
            except ToolError as exc:
                error = _as_guard_error(exc, name)
                if error.code == "INTERNAL_ERROR":
                    log.error("tool %s crashed", name, exc_info=exc)
                result = error.to_result()
            except MCPError as exc:
                record.decision, record.code = "error", f"MCP_{exc.code}"
                raise
            if isinstance(result, CallToolResult):
                if result.is_error:
                    record.decision = "deny" if record.decision == "allow" else record.decision
                    payload = (result.meta or {}).get(ERROR_META_KEY)
                    record.code = payload.get("code") if isinstance(payload, dict) else None
            elif record.intent_written:
                # Asked for input after acting (no tool of ours does): close the record; the retry is a new call.
                record.decision = "input_required"
            else:
                # An input_required round (2026-07-28): the tool has not acted; the retry that does is audited.
                recording.discard()
        return result


def register_tool(
    server: GuardedServer,
    *,
    name: str,
    description: str,
    annotations: ToolAnnotations,
    input_model: type[InT],
    output_model: type[OutT],
    handler: Callable[..., Awaitable[OutT]],
    title: str | None = None,
    resolvers: Mapping[str, Any] | None = None,
) -> None:
    """Publish ``handler(args, ctx, **resolved)`` as tool ``name`` with schemas taken from the two models.

    ``resolvers`` maps extra handler keyword names to ``Annotated[T, Resolve(fn)]`` types (e.g. an
    elicitation gate); they are resolved by the SDK before the handler runs and never reach the schema.
    """
    resolvers = dict(resolvers or {})

    async def call(**kwargs: Any) -> Any:
        ctx: Context[Any, Any] = kwargs.pop("ctx")
        server.apply_roots(kwargs.pop("client_roots", None))
        resolved = {name: kwargs.pop(name) for name in resolvers}
        args = input_model.model_construct(**kwargs)
        # Fail closed: the record of intent is written before the tool acts; no record, no action.
        # Only the round that runs the handler acts (an input_required round never gets here).
        server.audit.intent()
        out = await handler(args, ctx, **resolved)
        return CallToolResult(
            content=[TextContent(type="text", text=out.to_text())],
            structured_content=out.model_dump(mode="json", by_alias=True),
        )

    params = [
        inspect.Parameter(field, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[info.annotation, info])
        for field, info in input_model.model_fields.items()
    ]
    extras: dict[str, Any] = {"ctx": Context, "client_roots": ClientRoots, **resolvers}
    params += [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, annotation=v) for k, v in extras.items()]
    call.__signature__ = inspect.Signature(params, return_annotation=output_model)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in params} | {"return": output_model}
    call.__name__ = name
    server.add_tool(call, name=name, title=title, description=description, annotations=annotations)
