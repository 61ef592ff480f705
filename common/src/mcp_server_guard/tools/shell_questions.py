"""What a shell_exec call asks the person mid-call, through elicitation: whether a command may reach a host no rule
names, and whether a command's changes may be applied — now (2025-era clients), later (2026-07-28: held for a
later call), or not at all (no elicitation).
"""

from __future__ import annotations

import logging

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp_server_guard.asking import Session
from mcp_server_guard.changes.transactions import Ask
from mcp_server_guard.paths import printable, printable_lines
from mcp_server_guard.shell.approval import ApprovalForm
from mcp_server_guard.shell.grants import HostAnswer, HostAsk

log = logging.getLogger("mcp_server_guard.shell_exec")


class ChangesApproval(ApprovalForm):
    apply: bool = Field(description="Apply these changes to your files?")


class HostQuestion(BaseModel):
    model_config = ConfigDict(defer_build=True)  # (built with the first question: issue 44)

    network: HostAnswer = Field(
        description="command: let this run reach it; session: until the server stops; deny: refuse it."
    )


def host_asker(session: Session, shown: str) -> tuple[HostAsk | None, bool]:
    """How a running command's proxy asks about a host no rule names: now, through elicitation, when the
    connection can carry a request mid-call (2025 era); else (2026-07-28: questions only between rounds) before
    the next run of the same line — (None, True); or never, when the client cannot ask — (None, False)."""
    if not session.can_elicit:
        return None, False
    if not session.can_send_request:
        return None, True

    async def ask(host: str, port: int, reason: str) -> HostAnswer | None:
        answer = await session.elicit(
            f"The command\n\n    {printable_lines(shown)}\n\nwants to reach {printable(host)}:{port} "
            f"({printable(reason)}).\n\nLet it?",
            HostQuestion,
        )
        return answer.data.network if answer.accepted else None

    return ask, False


def changes_asker(session: Session, timeout: float) -> tuple[Ask | None, bool]:
    """How to get the person's yes for a change set: now (a 2025-era client, through elicitation); later, by
    holding it (2026-07-28: questions only between rounds); or not at all (a client without elicitation)."""
    if not session.can_elicit:
        return None, False
    if not session.can_send_request:
        return None, True

    async def ask(question: str) -> bool | None:
        with anyio.move_on_after(timeout):
            try:
                reply = await session.elicit(question, ChangesApproval)
            except (ValidationError, ValueError):
                log.warning("the client answered the question about a command's changes with another form")
                return None  # the client's answer did not fit the question: nothing is applied
            if reply.accepted:
                return getattr(reply.data, "apply", False) is True
            return False
        return None  # nobody answered

    return ask, False


__all__ = ["ChangesApproval", "HostQuestion", "changes_asker", "host_asker"]
