"""The approval gate of shell_exec: a command whose rule says "ask" runs only on a human's explicit yes.

The gate runs as an SDK resolver, before the tool body, in the same task and request round: it checks
the call (refusals surface before any question), asks the human through elicitation when the policy
says ask, and leaves what it checked for the body, which reuses it only for identical arguments.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping, Sequence
from typing import Any

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit
from pydantic import BaseModel, Field

from mcp_server_guard import audit
from mcp_server_guard.errors import SecurityError
from mcp_server_guard.shell.execution import Prepared, ShellExec
from mcp_server_guard.shell.rules import Verdict

__all__ = ["Approval", "Checked", "NoQuestion", "question", "require_approval"]


class Approval(BaseModel):
    approve: bool = Field(description="Run this command?")


class NoQuestion(BaseModel):
    """What the gate returns when it does not ask the human."""

    why: str  # "not-asked" or "unavailable"


_Key = tuple[object, ...]


class Checked:
    """The command the gate checked in this request round, for the body to reuse (parse and check once).

    Authoritative: the body holds the decision; it reuses the gate's only for identical arguments in the
    same round (same task, same jail), and decides afresh otherwise.
    """

    def __init__(self, shell: ShellExec) -> None:
        self.shell = shell
        self._last: contextvars.ContextVar[tuple[_Key, Prepared] | None] = contextvars.ContextVar(
            "shell_exec_checked", default=None
        )

    @staticmethod
    def _key(command: str, args: Sequence[str], cwd: str | None, env: Mapping[str, str] | None) -> _Key:
        return (command, tuple(args), cwd, tuple(sorted((env or {}).items())))

    async def check(
        self, command: str, args: Sequence[str], cwd: str | None, env: Mapping[str, str] | None
    ) -> Prepared:
        """The gate's check: prepare the call and remember it for this round."""
        prepared = await self.shell.prepare_off_loop(command, args, cwd, env)
        self._last.set((self._key(command, args, cwd, env), prepared))
        return prepared

    async def reuse(
        self, command: str, args: Sequence[str], cwd: str | None, env: Mapping[str, str] | None
    ) -> Prepared:
        """The body's: the gate's result for the very same arguments, or a fresh check."""
        last = self._last.get()
        if last is not None and last[0] == self._key(command, args, cwd, env):
            return last[1]
        return await self.shell.prepare_off_loop(command, args, cwd, env)


def question(prepared: Prepared, ctx: Context[Any, Any]) -> Elicit[Approval] | NoQuestion:
    """What the gate answers: no question for allowed lines or clients that cannot ask; else the question."""
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


def require_approval(answer: ElicitationResult[Approval], verdict: Verdict) -> None:
    """Only an explicit human yes runs an 'ask' command."""
    if isinstance(answer, AcceptedElicitation):
        data = answer.data
        if isinstance(data, Approval) and data.approve:
            return
        if isinstance(data, NoQuestion) and data.why == "unavailable":
            audit.note(decision="ask-unavailable", rule=verdict.rule, reason=verdict.reason)
            raise SecurityError(
                "ASK_UNAVAILABLE",
                f"Rule '{verdict.rule}' needs a human's approval, and this client cannot ask (no elicitation).",
                f"Run it yourself, use a client with elicitation, or change rule '{verdict.rule}' to allow in a "
                "policy file passed with --policy.",
            )
    audit.note(decision="ask-declined", rule=verdict.rule, reason=verdict.reason)
    raise SecurityError(
        "ASK_DECLINED",
        f"The user did not approve this command (rule '{verdict.rule}': {verdict.reason}).",
        "Do not retry it; ask the user how they want to proceed.",
    )
