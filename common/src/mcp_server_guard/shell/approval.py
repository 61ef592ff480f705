"""The approval gate of shell_exec: a command whose rule says "ask" runs only on a human's explicit yes.

The gate runs before the tool body (``ToolSpec.gate``: an SDK resolver, in the same task and request round, or the
start-up front's first step): it checks the call (refusals surface before any question), asks the human through
elicitation when the policy says ask (a ``Question``), and leaves what it checked for the body, which reuses it only
for identical arguments.

The form offers to remember the yes for the session (``grants``): this exact line, or — where
``session_prefix`` finds it safe — the program and subcommand. A line a grant covers is not asked again.
Under ``--network policy`` the same form asks about hosts the last run of the same line could not reach
because nobody could be asked while it ran (2026-07-28 clients answer questions only between rounds).
"""

from __future__ import annotations

import contextvars
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from mcp_server_guard import audit
from mcp_server_guard.asking import Answer, Question, Session
from mcp_server_guard.errors import SecurityError
from mcp_server_guard.paths import printable, printable_lines
from mcp_server_guard.shell.egress import warning
from mcp_server_guard.shell.execution import Prepared, ShellExec
from mcp_server_guard.shell.grants import Grant, HostAnswer, SessionApprovals
from mcp_server_guard.shell.strings import Verdict

__all__ = [
    "Approval",
    "ApprovalForm",
    "Checked",
    "Consent",
    "HostAnswer",
    "NoQuestion",
    "consent",
    "question",
    "require_approval",
]

APPROVED_BY = "human:elicitation"


class ApprovalForm(BaseModel):
    """Base of every form the gate shows; the fields depend on the question (see ``_form``)."""

    model_config = ConfigDict(defer_build=True)  # (built with the first question: issue 44)


class Approval(ApprovalForm):
    approve: bool = Field(description="Run this command?")


class NoQuestion(BaseModel):
    """What the gate returns when it does not ask the human."""

    why: str  # "not-asked", "unavailable" or "approved-session"


_Key = tuple[object, ...]
Input = tuple[str | None, bool]  # the call's stdin text, and whether the line runs as a background job


@dataclass(frozen=True)
class Asked:
    """What the gate checked for one call: the command, its prefix, the hosts to ask about."""

    prepared: Prepared
    prefix: str | None  # the session prefix the form may offer (None: only the exact line)
    # hosts the last run of this line could not ask about, each with the special addresses it resolved to
    hosts: tuple[tuple[str, tuple[str, ...]], ...]
    # Threat: a grant given for `npm install x` reused with an `env` that changes what it does
    # (npm_config_registry=…): a call with its own env is never covered, and offers nothing to remember.
    grantable: bool = True
    generation: int = 0  # the grants' generation when it was checked (``SessionApprovals.given_by``)


class Checked:
    """The command the gate checked in this request round, for the body to reuse (parse and check once).

    Authoritative: the body holds the decision; it reuses the gate's only for identical arguments in the
    same round (same task, same jail), and decides afresh otherwise.
    """

    def __init__(self, shell: ShellExec, grants: SessionApprovals | None = None) -> None:
        self.shell = shell
        self.grants = grants if grants is not None else SessionApprovals()
        self._last: contextvars.ContextVar[tuple[_Key, Asked] | None] = contextvars.ContextVar(
            "shell_exec_checked", default=None
        )

    @staticmethod
    def _key(command: str, args: Sequence[str], cwd: str | None, env: Mapping[str, str] | None, stdin: Input) -> _Key:
        return (command, tuple(args), cwd, tuple(sorted((env or {}).items())), stdin)

    async def _asked(
        self, command: str, args: Sequence[str], cwd: str | None, env: Mapping[str, str] | None, stdin: Input
    ) -> Asked:
        text, job = stdin
        prepared = await self.shell.prepare_off_loop(command, args, cwd, env, text, job)
        prefix = None
        verdict = prepared.verdict
        # Threat: a prefix grant for `bash` covering any script fed on stdin: a line whose stdin is code offers none.
        if verdict.action == "ask" and set(verdict.asking) <= {verdict.rule} and not verdict.stdin_code:
            # Threat: a prefix granted for one rule covering a line another rule also asks about (`git push
            # --delete … --receive-pack=…`), or a "prefix" that is a program's first operand (`shred x`): only
            # a line one rule asks about, and only a subcommand that rule names.
            rule = next((r for r in self.shell.policy.rules if r.id == verdict.rule), None)
            prefix = self.shell.session_prefix(command, args, env)
            if prefix is not None and (rule is None or prefix.split(" ", 1)[1] not in rule.subcommands):
                prefix = None
        grantable = not env
        hosts = self.grants.pending_hosts(prepared.shown, prepared.cwd)
        return Asked(prepared, prefix if grantable else None, hosts, grantable, self.grants.generation)

    async def check(
        self,
        command: str,
        args: Sequence[str],
        cwd: str | None,
        env: Mapping[str, str] | None,
        stdin: str | None = None,
        job: bool = False,
    ) -> Asked:
        """The gate's check: prepare the call (with the stdin it is fed; ``job``: it will run as a background job)
        and remember it for this round."""
        asked = await self._asked(command, args, cwd, env, (stdin, job))
        self._last.set((self._key(command, args, cwd, env, (stdin, job)), asked))
        return asked

    async def reuse(
        self,
        command: str,
        args: Sequence[str],
        cwd: str | None,
        env: Mapping[str, str] | None,
        stdin: str | None = None,
        job: bool = False,
    ) -> Asked:
        """The body's: the gate's result for the very same arguments, or a fresh check."""
        last = self._last.get()
        if last is not None and last[0] == self._key(command, args, cwd, env, (stdin, job)):
            return last[1]
        return await self._asked(command, args, cwd, env, (stdin, job))


def _form(asks_command: bool, prefix: str | None, hosts: bool, grantable: bool = True) -> type[ApprovalForm]:
    """The form for one question: the same inputs give the same form (a 2026-07-28 retry must see the same)."""
    fields: dict[str, Any] = {}
    if asks_command:
        fields["approve"] = (bool, Field(description="Run this command?"))
        if grantable:
            choices = ("no", "line", "prefix") if prefix else ("no", "line")
            described = "no: ask again next time; line: this exact command line" + (
                f"; prefix: any '{prefix} …' line" if prefix else ""
            )
            fields["remember"] = (
                Literal[choices],
                Field(default="no", description=f"Remember the yes for this session? {described}."),
            )
    if hosts:
        network_field: Any = Field(description="Let the command reach these hosts? command: this run only; "
            "session: until the server stops; deny: no.")  # fmt: skip
        if asks_command:
            network_field = Field(default="deny", description=network_field.description)
        fields["network"] = (HostAnswer, network_field)
    return create_model("Approval", __base__=ApprovalForm, **fields)


def question(asked: Asked, session: Session, grants: SessionApprovals) -> Question | NoQuestion:
    """What the gate answers: no question for allowed or granted lines or clients that cannot ask; else the
    question, with the hosts the last run of this line could not ask about."""
    prepared = asked.prepared
    verdict = prepared.verdict
    asks_command = verdict.action == "ask"
    if (
        asks_command
        and asked.grantable
        and grants.for_line(prepared.key, prepared.cwd, verdict.rule, asked.prefix) is not None
    ):
        asks_command = False
        why = "approved-session"
    else:
        why = "not-asked"
    if not asks_command and not asked.hosts:
        return NoQuestion(why=why)
    if not session.can_elicit:
        return NoQuestion(why="unavailable" if asks_command else why)
    parts = []
    # Threat: a line that reads as another one (a carriage return, an ANSI escape, a bidi control) in the
    # question a person answers: every text from the command is shown with its controls escaped.
    shown, cwd = printable_lines(prepared.shown), printable(prepared.cwd_display)
    if asks_command:
        parts.append(
            f"shell_exec wants to run:\n\n    {shown}\n\nin: {cwd}\n"
            + stdin_shown(prepared.stdin, verdict.stdin_code)
            + f"rule: {verdict.rule}\nreason: {printable_lines(verdict.reason)}\n\nRun it?"
        )
    else:
        parts.append(f"shell_exec will run:\n\n    {shown}\n\nin: {cwd}")
    if asked.hosts:
        parts.append(
            "Its last run tried to reach hosts no [network] rule names:\n"
            + "".join(
                f"    {printable(h)}" + (f" ({warning(shown)})" if shown else "") + "\n" for h, shown in asked.hosts
            )
            + "Let it reach them?"
        )
    return Question("\n\n".join(parts), _form(asks_command, asked.prefix, bool(asked.hosts), asked.grantable))


@dataclass(frozen=True)
class Consent:
    """What the human (or a grant) said for one call."""

    approval: str  # "" (nothing asked), "once", or the label of the grant that covers or now covers the line
    hosts: dict[str, tuple[str, ...]]  # hosts approved for this run only (with the special addresses shown)
    grant: Grant | None = None


def consent(answer: Answer, asked: Asked, grants: SessionApprovals) -> Consent:
    """The body's decision on the gate's answer (authoritative: grants are looked up again here)."""
    prepared, verdict = asked.prepared, asked.prepared.verdict
    data = answer.data if answer.accepted else None
    approval = ""
    granted: Grant | None = None
    if verdict.action == "ask":
        covering = grants.for_line(prepared.key, prepared.cwd, verdict.rule, asked.prefix) if asked.grantable else None
        if covering is not None and not grants.given_by(covering, asked.generation):
            # Threat (red team 44 F1): the person declines this call while another call of the same line, asked at
            # the same time, is approved "for the session": that grant, given after this call was checked and
            # asked, never overrides this call's own answer.
            covering = None
        if covering is not None:
            # Threat: none new — the human said yes to this line (or its prefix) under this very rule.
            audit.note(
                decision="approved-session",
                approved_by=f"{covering.approved_by} at {covering.at}",
                approval=covering.label,
                reason=verdict.reason,
            )
            approval, granted = covering.label, covering
        else:
            require_approval(answer, verdict)
            remember = getattr(data, "remember", "no")
            if asked.grantable and (remember == "line" or (remember == "prefix" and asked.prefix is not None)):
                kind: Literal["line", "prefix"] = "line" if remember == "line" else "prefix"
                value = prepared.key if kind == "line" else str(asked.prefix)
                granted = grants.grant(kind, value, rule=str(verdict.rule), cwd=prepared.cwd, approved_by=APPROVED_BY)
                audit.note(granted=f"{granted.label} (rule {granted.rule}) at {granted.at}")
                approval = granted.label
            else:
                approval = "once"
            audit.note(decision="ask-approved", approved_by=APPROVED_BY, approval=approval, reason=verdict.reason)
    hosts: dict[str, tuple[str, ...]] = {}
    if asked.hosts:
        choice = getattr(data, "network", None)
        grants.forget_pending(prepared.shown, prepared.cwd)
        if choice == "command":
            hosts = dict(asked.hosts)
        elif choice == "session":
            for host, shown in asked.hosts:
                grants.grant("host", host, approved_by=APPROVED_BY, addresses=shown)
        audit.note(hosts_asked=[h for h, _ in asked.hosts], hosts_answer=choice or "no answer")
    return Consent(approval, hosts, granted)


STDIN_SHOWN_CHARS = 4000  # a longer stdin is shown head and tail, with its size and hash


def stdin_shown(text: str | None, reader: str) -> str:
    """The stdin a question approves, as the human sees it (the whole of it, up to a bound)."""
    if text is None:
        return ""
    what = {"": "as data", "shell": "run as a shell script"}.get(
        reader, f"run as {reader.removeprefix('opaque:')} code"
    )
    body = "\n".join(printable(line) for line in text.split("\n"))  # lines kept; escapes and the like shown as such
    if len(body) > STDIN_SHOWN_CHARS:
        digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        half = STDIN_SHOWN_CHARS // 2
        body = f"{body[:half]}\n… ({len(text)} characters in all, sha256:{digest}) …\n{body[-half:]}"
    shown = "".join(f"    {line}\n" for line in body.split("\n"))
    return f"with this on its standard input ({what}):\n\n{shown}\n"


def require_approval(answer: Answer, verdict: Verdict) -> None:
    """Only an explicit human yes runs an 'ask' command."""
    if answer.accepted:
        data = answer.data
        if isinstance(data, ApprovalForm) and getattr(data, "approve", False) is True:
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
