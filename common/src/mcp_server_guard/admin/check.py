"""``mcp-guard check``: how shell_exec's policy judges a command line, and what the server does with it here."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, NamedTuple, NoReturn, TypedDict

import typer

from mcp_server_guard.admin.options import PolicyOpt
from mcp_server_guard.paths import json_text, printable, readable, system_program
from mcp_server_guard.policy import PolicyError, default_policy_path, load_policy
from mcp_server_guard.serving.config import Mode
from mcp_server_guard.serving.launch import usage_error
from mcp_server_guard.shell.execution import writable_policy
from mcp_server_guard.shell.strings import PolicyEngine, TooComplex, check_examples

PROG = "mcp-guard"
CHECK_HELP = (
    "Show how the shell_exec policy judges a command line: what a server on this machine does with it (on a copy "
    "where the box runs, read-only with --mode read-only), then the plain decision, the rule and its reason, and the "
    "commands the parser found. With --file (a file, or - for stdin) every line is judged, one verdict per line "
    "(a whole shell history, or a team's command list), after a line on the situation. Exit code: what a server "
    "here does (the strictest of all lines), 0 allow, 10 ask, 20 deny (2: bad usage)."
)

CHECK_EXIT = {"allow": 0, "ask": 10, "deny": 20}
_STRICTNESS = ("allow", "ask", "deny")


class _Judged(TypedDict):
    decision: str
    rule: str | None
    reason: str
    trigger: str
    commands: list[str]
    redirects: list[str]
    findings: list[dict[str, str]]
    parseError: bool  # the JSON key
    stdinCode: str  # what runs the stdin as code ("" when it is data)


def _judge(engine: PolicyEngine, command: str, args: Sequence[str] = (), stdin: str | None = None) -> _Judged:
    """One line's verdict as a JSON-ready dict; a line too complex to analyse is denied, and says so."""
    try:
        verdict = engine.decide(command, args, None, stdin)
    except TooComplex as exc:
        return {"decision": "deny", "rule": "COMMAND_TOO_COMPLEX", "reason": str(exc), "trigger": command,
                "commands": [], "redirects": [], "findings": [], "parseError": False, "stdinCode": ""}  # fmt: skip
    return {
        "decision": verdict.action,
        "rule": verdict.rule,
        "reason": verdict.reason,
        "trigger": verdict.trigger,
        "commands": list(verdict.commands),
        "redirects": [f"{r.op} {r.target.raw}" for r in verdict.redirects],
        "findings": [{"kind": f.kind, "detail": f.detail} for f in verdict.findings],
        "parseError": any(f.kind == "parse-error" for f in verdict.findings),
        "stdinCode": verdict.stdin_code,
    }


def _check_many(engine: PolicyEngine, source: str, as_json: bool, here: _Here, on_copy: PolicyEngine) -> NoReturn:
    """Judge every line of a file (or stdin): blank lines and # comments aside, none is skipped. What a server here
    does with each line leads, and sets the exit code; the plain verdict (the rules alone) follows."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        usage_error(PROG, f"cannot read {source}: {exc.strerror}")
    worst = "allow"
    counts, plain_counts = dict.fromkeys(_STRICTNESS, 0), dict.fromkeys(_STRICTNESS, 0)
    unparsed = 0
    if not as_json:
        typer.echo(f"on this machine{here.mode}: {here.how}")
        typer.echo(f"{'line':>5}  {'here':5}  {'plain':5}  {'rule':28}  command")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        judged = _judge(engine, line)
        there = judged if here.engine is engine else _judge(here.engine, line)
        decision = there["decision"]
        counts[decision] += 1
        plain_counts[judged["decision"]] += 1
        unparsed += bool(judged["parseError"])
        worst = max(worst, decision, key=_STRICTNESS.index)
        if as_json:
            lead = {"onThisMachine": decision, "situation": here.how}
            copy = {"onCopy": _judge(on_copy, line)["decision"]}
            typer.echo(json_text({"line": number, "command": line, **lead, **judged, **copy}))
        else:
            note = "  (does not parse)" if judged["parseError"] else ""
            rule = there["rule"] if decision != "allow" else judged["rule"]
            # The line is a file's (a model may have written it): its control and bidi characters shown as escapes,
            # never obeyed by the terminal (a cursor move painting "allow" over a deny: red team 74 F3).
            typer.echo(f"{number:>5}  {decision:5}  {judged['decision']:5}  {rule or '-':28}  {printable(line)}{note}")
    if not as_json:
        typer.echo(
            f"{sum(counts.values())} lines on this machine: {counts['allow']} allow, {counts['ask']} ask, "
            f"{counts['deny']} deny (plain: {plain_counts['allow']} allow, {plain_counts['ask']} ask, "
            f"{plain_counts['deny']} deny)" + (f"; {unparsed} do not parse" if unparsed else ""),
            err=True,
        )
    raise typer.Exit(CHECK_EXIT[worst])


def check(
    command: Annotated[str | None, typer.Argument(help="A shell command line, quoted as one argument.")] = None,
    args: Annotated[
        list[str] | None, typer.Argument(help="With arguments after the command: run as argv, no shell.")
    ] = None,
    policy: PolicyOpt = None,
    file: Annotated[
        str | None, typer.Option("--file", "-f", help="Judge every line of this file (- reads stdin).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON (one object per line).")] = False,
    stdin: Annotated[
        str | None,
        typer.Option("--stdin", help="The text the call feeds the command (judged as code where a program runs it)."),
    ] = None,
    mode: Annotated[
        Mode, typer.Option("--mode", help="The session's --mode: what a server started so does with the line leads.")
    ] = Mode.WORKSPACE_WRITE,
) -> None:
    try:
        whole = load_policy(policy)
        check_examples(whole.shell_exec, whole.own_rules)  # as the server checks them at its start
    except PolicyError as exc:
        usage_error(PROG, str(exc))
    loaded = whole.shell_exec
    engine = PolicyEngine(loaded)
    if command is not None and file is not None:
        usage_error(PROG, "give a command line or --file, not both")
    if command is None and file is None:
        usage_error(PROG, "give a command line, or --file FILE (- for stdin) to judge many")
    situation = _situation(mode, policy, engine)
    if file is not None:
        _check_many(engine, file, as_json, situation, PolicyEngine(loaded, effects=True))
    assert command is not None
    if mode is not Mode.WORKSPACE_WRITE:
        _check_mode(situation, command, args or [], stdin, as_json)
    judged = _judge(engine, command, args or [], stdin)
    # While commands work on a copy (the default where the box allows), rules that only guard the project's files
    # give way to the judgement of what the command did: say so when that changes the decision.
    on_copy = _judge(PolicyEngine(loaded, effects=True), command, args or [], stdin)
    differs = on_copy["decision"] != judged["decision"]
    # What the server does with the line by default on this machine leads (and sets the exit code): on a copy
    # where the box can make one, else the plain verdict.
    here = on_copy["decision"] if situation.engine is not engine else judged["decision"]
    if as_json:
        shown = {k: v for k, v in judged.items() if k != "parseError"}
        typer.echo(json_text({**shown, "onCopy": on_copy["decision"], "onThisMachine": here}))
    else:
        typer.echo(f"on this machine: {here} ({situation.how})")
        if differs and here == on_copy["decision"]:
            typer.echo(f"decision: {judged['decision']} (where commands write the files directly: --transactions off, "
                       "or no box)")  # fmt: skip
        else:
            typer.echo(f"decision: {judged['decision']}")
        typer.echo(f"rule:     {judged['rule'] or '(none)'}")
        typer.echo(readable(f"reason:   {judged['reason']}"))
        if judged["trigger"]:
            typer.echo(printable(f"trigger:  {judged['trigger']}"))  # the model's line: escapes shown, never obeyed
        typer.echo("commands:")
        for found in judged["commands"]:
            typer.echo(printable(f"  - {found}"))
        for redirect in judged["redirects"]:
            typer.echo(printable(f"redirect: {redirect}"))
        for finding in judged["findings"]:
            typer.echo(printable(f"finding:  {finding['kind']}: {finding['detail']}"))
        if judged["stdinCode"]:
            reader = judged["stdinCode"]
            runs = "a shell script" if reader == "shell" else reader.removeprefix("opaque:") + " code"
            typer.echo(
                f"stdin:    run as {runs}"
                + (" (judged above)" if stdin is not None else "; a background job's input is judged at each write")
            )
        if differs and here != on_copy["decision"]:
            typer.echo(
                f"on a copy: {on_copy['decision']} (shell_exec's default where the box allows, not here: the command "
                "runs on a copy, and what it changes is judged by its effects before anything reaches the files)"
            )
    raise typer.Exit(CHECK_EXIT[here])


class _Here(NamedTuple):
    """What a server started here with ``--mode`` does: the engine that judges its lines, and the words for it."""

    engine: PolicyEngine
    how: str
    mode: str  # ", --mode read-only" (or "" for the default workspace-write)


def _situation(mode: Mode, policy: Path | None, plain: PolicyEngine) -> _Here:
    """The decision of a server started with ``--mode`` here: workspace-write with the box runs the line on a copy
    (judged by its effects), without it the plain rules; read-only with the box judges as a workspace-write session
    and runs the line on a read-only view, without it (or with an explicit --policy) the read-only allow-list;
    full-access, the plain rules (no box, no copy)."""
    boxed = _copies_here()
    if mode is Mode.READ_ONLY:
        chosen = load_policy(policy if policy is not None else default_policy_path().with_name("readonly.toml"))
        said = ", --mode read-only"
        if boxed and policy is None:  # an explicit --policy is kept as given (readonly: the allow-list decides)
            engine = PolicyEngine(writable_policy(chosen.source, chosen.shell_exec), effects=True)
            how = "a read-only session runs each command on a read-only view here: the kernel refuses every write"
            return _Here(engine, how, said)
        how = "the read-only allow-list decides" if boxed else "no box here: the read-only allow-list decides"
        return _Here(PolicyEngine(chosen.shell_exec), how, said)
    if mode is Mode.FULL_ACCESS:
        return _Here(plain, "full-access: no box and no copy, the rules alone decide", ", --mode full-access")
    if boxed:
        how = (
            "shell_exec runs each command on a copy here, and judges what it changes by its effects before anything "
            "reaches the files"
        )
        return _Here(PolicyEngine(plain.policy, effects=True), how, "")
    how = "no box here (no bubblewrap, or user namespaces blocked): commands write the files directly, the rules decide"
    return _Here(plain, how, "")


def _check_mode(here: _Here, command: str, args: Sequence[str], stdin: str | None, as_json: bool) -> NoReturn:
    """The one line's decision of a server started with ``--mode`` read-only or full-access here."""
    judged = _judge(here.engine, command, args, stdin)
    if as_json:
        shown = {k: v for k, v in judged.items() if k != "parseError"}
        typer.echo(
            json_text({**shown, "mode": here.mode.removeprefix(", --mode "), "onThisMachine": judged["decision"]})
        )
    else:
        typer.echo(f"on this machine{here.mode}: {judged['decision']} ({here.how})")
        typer.echo(f"rule:     {judged['rule'] or '(none)'}")
        typer.echo(readable(f"reason:   {judged['reason']}"))
    raise typer.Exit(CHECK_EXIT[judged["decision"]])


def _copies_here() -> bool:
    """Whether shell_exec's box can run here (bubblewrap, and user namespaces it may use): then commands work on a
    copy by default."""
    bwrap = system_program("bwrap")
    if bwrap is None:
        return False
    try:
        done = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-user", "--", "true"], capture_output=True,
                              timeout=10, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0
