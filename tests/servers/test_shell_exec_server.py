"""shell_exec through the real console script over stdio, in both protocol eras.

Attack and hygiene tests are named after what they stop: denied commands, human approval in both
eras, environment injection and secret leaks, orphaned processes, output floods.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult

from mcp_server_guard.shell.sandbox.planning import landlock_abi
from support import (
    RawClient,
    console_script,
    error_of,
    marker,
    my_children_with,
    processes_with,
    serve,
    text_of,
    wait_until,
)

pytestmark = pytest.mark.anyio
SX = "mcp-server-shell-exec"
ASK_TOUCH = (
    '[[shell_exec.rules]]\nid = "ask-touch"\naction = "ask"\nreason = "touch needs a yes."\nprograms = ["touch"]\n'
)


async def sh(client: Any, command: str, **extra: Any) -> Any:
    with anyio.fail_after(60):
        return await client.call_tool("shell_exec", {"command": command, **extra})


@pytest.fixture
def ask_policy(tmp_path: Path) -> Path:
    path = tmp_path / "ask.toml"
    # Put the ask rule in front of the default rules (a policy's rules list replaces the default's).
    from mcp_server_guard.policy import default_policy_path

    default = default_policy_path().read_text(encoding="utf-8")
    head, marker_, tail = default.partition("[[shell_exec.rules]]")
    path.write_text(head + ASK_TOUCH + "\n" + marker_ + tail, encoding="utf-8")
    return path


@pytest.fixture
def no_leftovers() -> Iterator[list[str]]:
    tokens: list[str] = []
    yield tokens
    for token in tokens:
        for proc in processes_with(token):
            proc.kill()


# -- the contract --------------------------------------------------------------------------------


async def test_shell_exec_tool_matches_the_seed_004_contract(workspace: Path, mode: str) -> None:
    async with serve(SX, workspace, mode=mode) as client:
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == ["shell_exec"]
    tool = tools[0]
    assert tool.description == "指定されたシェルコマンドを実行し、その標準出力と標準エラー出力を返します。"
    hints = tool.annotations
    assert hints is not None
    assert (hints.read_only_hint, hints.destructive_hint, hints.open_world_hint) == (False, True, True)
    assert tool.input_schema["required"] == ["command"]
    assert tool.input_schema["properties"]["args"]["default"] == []
    assert tool.input_schema["properties"]["args"]["items"]["type"] == "string"
    assert tool.output_schema is not None
    assert tool.output_schema["required"][:3] == ["stdout", "stderr", "exitCode"]


async def test_allowed_pipeline_runs_in_the_launch_directory(workspace: Path, mode: str) -> None:
    async with serve(SX, workspace, mode=mode) as client:
        result = await sh(client, "echo hello | tr a-z A-Z && pwd && echo oops >&2; exit 3")
    out = result.structured_content
    assert not result.is_error
    assert out["stdout"] == f"HELLO\n{workspace}\n"
    assert out["stderr"] == "oops\n"
    assert out["exitCode"] == 3
    assert out["timedOut"] is False and out["truncated"] is False and "signal" not in out
    assert out["sandbox"] == "none" or f"landlock-v{landlock_abi()}" in out["sandbox"]
    assert (out["policyDecision"], out["mode"], out["timeoutSeconds"]) == ("allow", "workspace-write", 30.0)
    assert "HELLO" in text_of(result) and "exit code 3" in text_of(result)
    last = text_of(result, facts=True).splitlines()[-1]
    assert last == f"[auditId={out['auditId']} policyDecision=allow mode=workspace-write timeoutSeconds=30.0]"


async def test_args_run_the_program_without_a_shell(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        result = await sh(client, "echo", args=["a; touch pwned", "$(touch pwned2)", "*"])
        missing = await sh(client, "no-such-program-xyz", args=["x"])
    assert result.structured_content["stdout"] == "a; touch pwned $(touch pwned2) *\n"
    assert not (workspace / "pwned").exists() and not (workspace / "pwned2").exists()
    assert error_of(missing)["code"] == "COMMAND_NOT_FOUND"
    assert error_of(missing)["category"] == "EXECUTION"


async def test_cwd_is_jailed(workspace: Path, mode: str) -> None:
    async with serve(SX, workspace, mode=mode) as client:
        inside = await sh(client, "pwd", cwd="sub")
        outside = await sh(client, "pwd", cwd="../outside")
        sibling = await sh(client, "pwd", cwd=str(workspace.parent / "proj-evil"))
    assert inside.structured_content["stdout"] == f"{workspace / 'sub'}\n"
    assert error_of(outside)["code"] == "PATH_OUTSIDE_JAIL"
    assert error_of(sibling)["code"] == "PATH_OUTSIDE_JAIL"


# -- the policy ----------------------------------------------------------------------------------


async def test_rm_rf_runs_on_the_copy_and_nothing_is_deleted_without_a_yes(workspace: Path, mode: str) -> None:
    # The deletion is judged by its effect, whatever the spelling: a client that cannot ask the user gets nothing
    # applied.
    async with serve(SX, workspace, mode=mode) as client:
        plain = await sh(client, "rm -rf sub")
        hidden = await sh(client, "echo ok && bash -c \"$'\\x72m' -fr sub\"")
        argv = await sh(client, "/bin/rm", args=["-r", "--force", "sub"])
    for result in (plain, hidden, argv):
        out = result.structured_content
        assert not result.is_error and out is not None
        assert (out["transaction"], out["changes"]["deleted"]) == ("declined", 1), out
        assert "cannot ask the user" in out["changes"]["reason"]
    assert (workspace / "sub" / "inner.txt").exists()


async def test_machine_level_commands_are_still_denied_before_they_run(workspace: Path, mode: str) -> None:
    async with serve(SX, workspace, mode=mode) as client:
        plain = await sh(client, "shutdown -h now")
        hidden = await sh(client, "echo ok && bash -c \"$'\\x6d'kfs.ext4 /dev/sda\"")
    assert error_of(plain)["code"] == error_of(hidden)["code"] == "COMMAND_DENIED"


async def test_redirect_outside_the_jail_is_refused(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        outside = await sh(client, f"echo pwned > {workspace.parent / 'outside' / 'x'}")
        dotdot = await sh(client, "echo pwned >> ../outside/y")
        inside = await sh(client, "echo fine > out.txt && echo quiet > /dev/null")
    assert error_of(outside)["code"] == "REDIRECT_OUTSIDE_JAIL"
    assert error_of(dotdot)["code"] == "REDIRECT_OUTSIDE_JAIL"
    assert not (workspace.parent / "outside" / "x").exists()
    assert inside.structured_content["exitCode"] == 0
    assert (workspace / "out.txt").read_text(encoding="utf-8") == "fine\n"


# -- ask: the human decides, in both protocol eras -----------------------------------------------


def _asked_once_and_obeyed(asked: list[str], result: Any, answer: str, approved: Path) -> list[str]:
    """What is wrong with one ask: not asked exactly once, a question missing its parts, or the answer not obeyed."""
    if len(asked) != 1:
        return [f"asked {len(asked)} times: {asked}"]
    message = asked[0]
    problems = []
    if not ("touch approved.txt" in message and "sub" in message):
        problems.append(f"the question does not name the line and its directory: {message}")
    if not ("ask-touch" in message and "touch needs a yes." in message):
        problems.append(f"the question does not name the rule and its reason: {message}")
    if answer == "accept":
        if result.is_error or (result.structured_content["policyDecision"], result.structured_content["rule"]) != (
            "ask-approved",
            "ask-touch",
        ):
            problems.append(f"not run as approved: {result}")
        if not approved.exists():
            problems.append("approved.txt was not made")
    else:
        if not result.is_error or error_of(result)["code"] != "ASK_DECLINED":
            problems.append(f"not ASK_DECLINED: {result}")
        if approved.exists():
            problems.append("approved.txt was made")
    return problems


async def test_ask_rule_runs_only_on_explicit_approval(workspace: Path, ask_policy: Path, mode: str) -> None:
    """Each answer in turn through one server (nothing is remembered: each asks anew); the yes last, so the file
    it makes is absent for the others. Each failing answer is named."""
    asked: list[str] = []
    answer = ""

    async def elicit(_ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        if answer == "accept":
            return ElicitResult(action="accept", content={"approve": True})
        if answer == "accept-but-no":
            return ElicitResult(action="accept", content={"approve": False})
        return ElicitResult(action=answer)  # type: ignore[arg-type]

    problems: list[str] = []
    async with serve(SX, workspace, "--policy", str(ask_policy), mode=mode, elicitation_callback=elicit) as client:
        for answer in ["decline", "cancel", "accept-but-no", "accept"]:
            asked.clear()
            result = await sh(client, "touch approved.txt", cwd="sub")
            found = _asked_once_and_obeyed(asked, result, answer, workspace / "sub" / "approved.txt")
            problems += [f"[{answer}] {p}" for p in found]
    assert not problems, "\n".join(problems)


async def test_ask_without_elicitation_support_is_refused_with_a_policy_hint(
    workspace: Path, ask_policy: Path, mode: str
) -> None:
    async with serve(SX, workspace, "--policy", str(ask_policy), mode=mode) as client:
        result = await sh(client, "touch nope.txt")
        undecidable = await sh(client, "sh < notes.txt")  # a script from data: undecidable, on a copy too
    error = error_of(result)
    assert error["code"] == "ASK_UNAVAILABLE"
    assert "ask-touch" in error["suggestion"] and "--policy" in error["suggestion"]
    assert error_of(undecidable)["code"] == "ASK_UNAVAILABLE"
    assert not (workspace / "nope.txt").exists() and not (workspace / "nope2.txt").exists()


async def test_denied_line_is_refused_before_any_question(workspace: Path, ask_policy: Path) -> None:
    asked: list[str] = []

    async def elicit(_ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    async with serve(SX, workspace, "--policy", str(ask_policy), elicitation_callback=elicit) as client:
        result = await sh(client, "touch a && shutdown -h now")
    assert error_of(result)["code"] == "COMMAND_DENIED"
    assert asked == []


# -- process hygiene -----------------------------------------------------------------------------


async def test_server_secrets_never_reach_the_child_environment(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-value")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-value")
    monkeypatch.setenv("LANG", "C.UTF-8")
    from mcp import Client

    from support import server_params

    params = server_params(SX, workspace)
    params.env = dict(os.environ)  # the server itself sees the secrets
    async with Client(params, mode="legacy") as client:
        result = await sh(client, "env", env={"EXTRA": "visible"})
    out = result.structured_content["stdout"]
    assert "sk-test-secret-value" not in out and "aws-secret-value" not in out
    assert "OPENAI_API_KEY" not in out
    names = {line.split("=", 1)[0] for line in out.splitlines() if "=" in line}
    assert "EXTRA" in names and "PATH" in names and "HOME" in names
    assert names <= {
        "EXTRA",
        "PATH",
        "HOME",
        "LOGNAME",
        "SHELL",
        "TERM",
        "USER",
        "LANG",
        "TZ",
        "PWD",
        "SHLVL",
        "_",
        "TMPDIR",
    } | {n for n in names if n.startswith("LC_") or n.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}


INJECTIONS = [
    {"LD_PRELOAD": "/tmp/evil.so"},
    {"BASH_ENV": "/tmp/evil.sh"},
    {"ENV": "/tmp/evil.sh"},
    {"BASH_FUNC_ls%%": "() { rm -rf ~; }"},
    {"PROMPT_COMMAND": "touch pwned"},
    {"PS4": "$(touch pwned)"},
    {"IFS": "/"},
    {"SHELLOPTS": "xtrace"},
    {"NODE_OPTIONS": "--require /tmp/evil.js"},
    {"PYTHONSTARTUP": "/tmp/evil.py"},
    {"PERL5OPT": "-Mevil"},
    {"RUBYOPT": "-revil"},
    {"GIT_SSH_COMMAND": "touch pwned"},
    {"DYLD_INSERT_LIBRARIES": "/tmp/evil.dylib"},
    {"INNOCENT": "() { echo shellshock; }"},
]


def _judged_alike(through_field: Any, in_the_line: Any, value: str) -> list[str]:
    """What differs between the env field and the same assignment in the line (a function value: refused)."""
    if value.startswith("()"):
        if not through_field.is_error or error_of(through_field)["code"] != "ENV_REFUSED":
            return [f"a function value through the field is not ENV_REFUSED: {through_field}"]
        return []
    if through_field.is_error != in_the_line.is_error:
        return [f"field {through_field} but in the line {in_the_line}"]
    if through_field.is_error and error_of(through_field)["code"] != error_of(in_the_line)["code"]:
        return [f"codes {error_of(through_field)['code']} != {error_of(in_the_line)['code']}"]
    return []


async def test_environment_injection_is_judged_as_the_same_assignment_in_the_line(workspace: Path) -> None:
    """The env field is judged exactly as the same assignments written before the line (issue 43: the field
    refused ``PYTHONPATH`` while ``PYTHONPATH=src python -m pytest`` ran): never let through where the line is not;
    a value that is no variable at all (an exported bash function) is refused outright. Every case through one
    server; each failing one is named."""
    problems: list[str] = []
    async with serve(SX, workspace) as client:
        for env in INJECTIONS:
            [(name, value)] = env.items()
            through_field = await sh(client, "true", env=env)
            in_the_line = await sh(client, f"{name}={shlex.quote(value)} true")
            found = _judged_alike(through_field, in_the_line, value)
            if not value.startswith("()") and (workspace / "pwned").exists():
                found.append("pwned exists")
            problems += [f"[{name}] {p}" for p in found]
    assert not problems, "\n".join(problems)


async def test_stdin_is_fed_or_empty(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        fed = await sh(client, "cat | wc -l", stdin="a\nb\nc\n")
        empty = await sh(client, "cat; echo done")
    assert fed.structured_content["stdout"].strip() == "3"
    assert empty.structured_content["stdout"] == "done\n"


async def test_timeout_kills_the_whole_group(workspace: Path, no_leftovers: list[str]) -> None:
    token = marker()
    no_leftovers.append(token)
    async with serve(SX, workspace) as client:
        result = await sh(client, f"sleep {token} & sleep {token}; echo never", timeoutSeconds=0.5)
    out = result.structured_content
    assert out["timedOut"] is True and out["signal"] in ("SIGTERM", "SIGKILL")
    assert "never" not in out["stdout"]
    await wait_until(lambda: not processes_with(token))


async def test_background_children_do_not_outlive_the_call(workspace: Path, no_leftovers: list[str]) -> None:
    token = marker()
    no_leftovers.append(token)
    async with serve(SX, workspace) as client:
        result = await sh(client, f"sleep {token} & echo started", timeoutSeconds=20)
        assert result.structured_content["stdout"] == "started\n"
        assert result.structured_content["timedOut"] is False  # the call ends with its main process
        await wait_until(lambda: not processes_with(token))


async def test_client_cancellation_kills_the_process_group(workspace: Path, no_leftovers: list[str]) -> None:
    token = marker()
    no_leftovers.append(token)
    async with serve(SX, workspace) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(sh, client, f"sleep {token} & sleep {token}")
            await wait_until(lambda: len(processes_with(token)) >= 2)
            tg.cancel_scope.cancel()
        await wait_until(lambda: not processes_with(token))
        still_serving = await sh(client, "echo alive")
    assert still_serving.structured_content["stdout"] == "alive\n"


async def test_what_a_cancelled_call_wrote_on_its_copy_is_thrown_away(workspace: Path, no_leftovers: list[str]) -> None:
    # Documented (red team 40q D): a call the client cancels applies nothing; a timeout applies what it left.
    token = marker()
    no_leftovers.append(token)
    async with serve(SX, workspace) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(sh, client, f"echo written > w.txt; sleep {token}")
            await wait_until(lambda: len(processes_with(token)) >= 1)
            tg.cancel_scope.cancel()
        await wait_until(lambda: not processes_with(token))
        await sh(client, "true")  # the cancelled call is over by the time this one is answered
        timed_out = await sh(client, "echo kept > k.txt; sleep 30", timeoutSeconds=1)
    assert not (workspace / "w.txt").exists()
    assert timed_out.structured_content["timedOut"] is True and (workspace / "k.txt").read_text() == "kept\n"


@pytest.mark.parametrize("how", ["stdin-eof", "sigterm"])
def test_server_shutdown_kills_running_commands(workspace: Path, no_leftovers: list[str], how: str) -> None:
    token = marker()
    no_leftovers.append(token)
    raw = RawClient([console_script(SX), "--audit-log", str(workspace.parent / "a.jsonl")], workspace)
    try:
        raw.initialize()
        raw.send(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "shell_exec", "arguments": {"command": f"sleep {token} & sleep {token}"}},
            }
        )
        anyio.run(wait_until, lambda: len(processes_with(token)) >= 2)
        if how == "sigterm":
            raw.proc.send_signal(signal.SIGTERM)
    finally:
        raw.close()
    anyio.run(wait_until, lambda: not processes_with(token))


async def test_output_flood_is_bounded_head_and_tail(workspace: Path) -> None:
    # 300 MB: more than the peak RSS allowed below (150 MiB) twice over, so a server that held the whole flood (or
    # half of it) fails; a larger flood is read the same way, only longer.
    flood = 300_000_000
    async with serve(SX, workspace) as client:
        result = await sh(
            client, f"echo FIRST; head -c {flood} /dev/zero | tr '\\0' x; echo; echo LAST", maxOutputBytes=65536
        )
        server = my_children_with(SX)[0]
        hwm_kib = int(
            next(
                ln for ln in Path(f"/proc/{server.pid}/status").read_text().splitlines() if ln.startswith("VmHWM")
            ).split()[1]
        )
    out = result.structured_content
    assert out["truncated"] is True
    assert out["stdoutBytes"] == flood + len("FIRST\n") + len("\nLAST\n")
    assert out["stdout"].startswith("FIRST\nxxx") and out["stdout"].endswith("xxx\nLAST\n")
    assert "bytes omitted" in out["stdout"]
    assert len(out["stdout"].encode()) < 65536 + 100
    assert hwm_kib < 150 * 1024, f"server peak RSS {hwm_kib} KiB"


async def test_concurrent_calls_run_concurrently(workspace: Path) -> None:
    # Each call works on its own copy, so they cannot meet through a file: four one-second sleeps in flight at
    # once end well before four seconds would pass one after another.
    async with serve(SX, workspace) as client:
        results: dict[str, Any] = {}

        async def call(name: str) -> None:
            results[name] = await sh(client, f"sleep 1; echo {name} > {name}.txt; echo {name}", timeoutSeconds=20)

        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            for name in "abcd":
                tg.start_soon(call, name)
        took = time.monotonic() - started
    assert took < 3.0, took
    for name in "abcd":
        assert results[name].structured_content["stdout"] == f"{name}\n"
        assert (workspace / f"{name}.txt").read_text() == f"{name}\n"


async def test_signals_are_reported(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        result = await sh(client, "kill -9 $$")
    assert result.structured_content["signal"] == "SIGKILL"
    assert result.structured_content["exitCode"] == 137


async def test_every_call_is_audited_with_decision_and_rule(workspace: Path, tmp_path: Path, ask_policy: Path) -> None:
    audit = tmp_path / "shell-audit.jsonl"

    async def elicit(_ctx: ClientRequestContext, _params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"approve": True})

    async with serve(SX, workspace, "--policy", str(ask_policy), audit=audit, elicitation_callback=elicit) as client:
        await sh(client, "echo hi", env={"TOKEN": "secret-value"})
        await sh(client, "shutdown -h now")
        await sh(client, "touch t.txt")
    records = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    entries = [r for r in records if r["phase"] == "outcome"]  # a call that acted also has its intent record
    assert [(e["policy_result"], e["code"], e["approved_by"]) for e in entries] == [
        ("allow", None, "policy"),
        ("deny", "COMMAND_DENIED", None),
        ("ask-approved", None, "human:elicitation"),
    ]
    assert [e["target"] for e in entries] == ["echo hi", "shutdown -h now", "touch t.txt"]
    assert entries[1]["reason"] and entries[2]["reason"] == "touch needs a yes."
    assert {e["action"] for e in entries} == {"exec"} and {e["mode"] for e in entries} == {"workspace-write"}
    assert entries[0]["exitCode"] == 0 and entries[2]["rule"] == "ask-touch"
    assert entries[0]["arguments"]["env"] == {"keys": ["TOKEN"]}
    assert "secret-value" not in audit.read_text(encoding="utf-8")


def test_mcp_guard_check_prints_the_verdict_and_exits_by_decision(tmp_path: Path) -> None:
    def check(line: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [console_script("mcp-guard"), "check", line], capture_output=True, text=True, timeout=30, cwd=tmp_path
        )

    allow, ask, deny = check("ls -la | wc -l"), check("sudo apt install vim"), check("sudo sh -c 'rm -rf /'")
    assert allow.returncode == 0 and "decision: allow" in allow.stdout and "- wc -l" in allow.stdout
    assert ask.returncode == 10 and "rule:     privilege-escalation" in ask.stdout
    assert deny.returncode == 20 and "rm-recursive-force" in deny.stdout and "- rm -rf /" in deny.stdout


def test_mcp_guard_check_judges_every_line_of_a_history_and_reports_lines_that_do_not_parse(tmp_path: Path) -> None:
    history = "ls -la\n#1700000000\nrm 2>/dev/null -rf ~\n\nif then\ngit push --force\n"
    proc = subprocess.run(
        [console_script("mcp-guard"), "check", "--file", "-", "--json"],
        input=history, capture_output=True, text=True, timeout=30, cwd=tmp_path,
    )  # fmt: skip
    verdicts = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(v["line"], v["decision"], v["parseError"]) for v in verdicts] == [
        (1, "allow", False), (3, "deny", False), (5, "ask", True), (6, "ask", False),
    ]  # fmt: skip
    assert proc.returncode == 20 and verdicts[1]["rule"] == "rm-recursive-force"
    listing = tmp_path / "team.txt"
    listing.write_text("ls\nif then\n", encoding="utf-8")
    text = subprocess.run(
        [console_script("mcp-guard"), "check", "--policy", "readonly", "-f", str(listing)],
        capture_output=True, text=True, timeout=30, cwd=tmp_path,
    )  # fmt: skip
    assert "(does not parse)" in text.stdout and "2 lines" in text.stderr
    # The exit code is what a server here does (issue 45 item 6): on a copy a line that does not parse runs and is
    # judged by its effects; without the box it is refused as before.
    assert text.returncode == (0 if shutil.which("bwrap") is not None else 20), text


async def test_words_after_a_redirection_and_inline_variables_are_judged_by_the_server(workspace: Path) -> None:
    (workspace / "keep").mkdir()
    async with serve(SX, workspace, "--policy", "readonly") as client:
        hidden = await sh(client, "rm 2>/dev/null -rf keep")
        pager = await sh(client, "LESSOPEN='|touch pwned %s' less README.md")
        escape = await sh(client, "find . 2>/dev/null -exec touch pwned2 \\;")
    for result in (hidden, pager, escape):
        assert error_of(result)["code"] == "COMMAND_DENIED", result
    assert (workspace / "keep").is_dir()
    assert not (workspace / "pwned").exists() and not (workspace / "pwned2").exists()


async def test_a_valid_bash_line_the_parser_cannot_read_runs_on_the_copy(workspace: Path) -> None:
    # Issue 45 item 3: `if (cmd) then …` is valid bash tree-sitter-bash cannot read; on a copy it runs, unasked.
    async with serve(SX, workspace) as client:
        result = await sh(client, "if (true) then echo ok > made.txt; fi")
    if shutil.which("bwrap") is None:
        pytest.skip("no box here: such a line is asked before running")
    out = result.structured_content
    assert out is not None and out["exitCode"] == 0 and out["transaction"] == "applied", result
    assert (workspace / "made.txt").read_text() == "ok\n"
