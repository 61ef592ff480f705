"""``mcp-guard check``: how shell_exec's policy judges a command line, and what the server does with it here."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, NoReturn, TypedDict

import typer

from mcp_server_guard.admin.options import PolicyOpt
from mcp_server_guard.paths import json_text, printable, readable, system_program
from mcp_server_guard.policy import PolicyError, load_policy
from mcp_server_guard.serving.config import Mode
from mcp_server_guard.serving.launch import usage_error
from mcp_server_guard.shell.execution import writable_policy
from mcp_server_guard.shell.strings import PolicyEngine, TooComplex, check_examples

PROG = "mcp-guard"
CHECK_HELP = (
    "Show how the shell_exec policy judges a command line: the decision, the rule and its reason, and the "
    "commands the parser found. With --file (a file, or - for stdin) every line is judged, one verdict per line "
    "(a whole shell history, or a team's command list). Exit code: the strictest decision, 0 allow, 10 ask, "
    "20 deny (2: bad usage)."
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


def _check_many(engine: PolicyEngine, source: str, as_json: bool, on_copy: PolicyEngine | None = None) -> NoReturn:
    """Judge every line of a file (or stdin): blank lines and # comments aside, none is skipped."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        usage_error(PROG, f"cannot read {source}: {exc.strerror}")
    worst = "allow"
    counts = dict.fromkeys(_STRICTNESS, 0)
    unparsed = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        judged = _judge(engine, line)
        decision = judged["decision"]
        counts[decision] += 1
        unparsed += bool(judged["parseError"])
        worst = max(worst, decision, key=_STRICTNESS.index)
        if as_json:
            copy = {"onCopy": _judge(on_copy, line)["decision"]} if on_copy is not None else {}
            typer.echo(json_text({"line": number, "command": line, **judged, **copy}))
        else:
            note = "  (does not parse)" if judged["parseError"] else ""
            # The line is a file's (a model may have written it): its control and bidi characters shown as escapes,
            # never obeyed by the terminal (a cursor move painting "allow" over a deny: red team 74 F3).
            typer.echo(f"{number:>5}  {decision:5}  {judged['rule'] or '-':28}  {printable(line)}{note}")
    if not as_json:
        typer.echo(
            f"{sum(counts.values())} lines: {counts['allow']} allow, {counts['ask']} ask, {counts['deny']} deny"
            + (f"; {unparsed} do not parse" if unparsed else ""),
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
    if file is not None:
        if command is not None:
            usage_error(PROG, "give a command line or --file, not both")
        _check_many(engine, file, as_json, PolicyEngine(loaded, effects=True))
    if command is None:
        usage_error(PROG, "give a command line, or --file FILE (- for stdin) to judge many")
    if mode is not Mode.WORKSPACE_WRITE:
        _check_mode(mode, policy, command, args or [], stdin, as_json)
    judged = _judge(engine, command, args or [], stdin)
    # While commands work on a copy (the default where the box allows), rules that only guard the project's files
    # give way to the judgement of what the command did: say so when that changes the decision.
    on_copy = _judge(PolicyEngine(loaded, effects=True), command, args or [], stdin)
    differs = on_copy["decision"] != judged["decision"]
    # What the server does with the line by default on this machine leads (and sets the exit code): on a copy
    # where the box can make one, else the plain verdict.
    here = on_copy["decision"] if differs and _copies_here() else judged["decision"]
    if as_json:
        shown = {k: v for k, v in judged.items() if k != "parseError"}
        typer.echo(json_text({**shown, "onCopy": on_copy["decision"], "onThisMachine": here}))
    else:
        if differs and here == on_copy["decision"]:
            typer.echo(
                f"on this machine: {here} (shell_exec runs it on a copy here, and judges what it changes by its "
                "effects before anything reaches the files)"
            )
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


def _check_mode(
    mode: Mode, policy: Path | None, command: str, args: Sequence[str], stdin: str | None, as_json: bool
) -> NoReturn:
    """The decision of a server started with ``--mode`` here: read-only with the box (or Landlock) judges as a
    workspace-write session and runs the line on a read-only view; read-only without either, the read-only
    allow-list; full-access, the plain rules (no box, no copy)."""
    boxed = _copies_here()
    if mode is Mode.READ_ONLY:
        chosen = load_policy(policy if policy is not None else Path("readonly"))
        if boxed and policy is None:  # an explicit --policy is kept as given (readonly: the allow-list decides)
            engine = PolicyEngine(writable_policy(chosen.source, chosen.shell_exec), effects=True)
            how = "a read-only session runs it on a read-only view here: the kernel refuses every write"
        else:
            engine = PolicyEngine(chosen.shell_exec)
            how = "the read-only allow-list decides" if boxed else "no box here: the read-only allow-list decides"
    else:
        engine = PolicyEngine(load_policy(policy).shell_exec)
        how = "full-access: no box and no copy, the rules alone decide"
    judged = _judge(engine, command, args, stdin)
    if as_json:
        shown = {k: v for k, v in judged.items() if k != "parseError"}
        typer.echo(json_text({**shown, "mode": mode.value, "onThisMachine": judged["decision"]}))
    else:
        typer.echo(f"on this machine, --mode {mode.value}: {judged['decision']} ({how})")
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
