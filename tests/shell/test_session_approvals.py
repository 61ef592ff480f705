"""Approvals that stick, narrowly: the approval form's "for this session" choices, through the real console script.

``pkgtool`` stands for a package manager (``npm``, ``apt-get``): a policy file asks before ``pkgtool install``
and denies ``pkgtool … --evil``. The program does not exist; what is tested is the question and the decision
(the command then ends with bash's "not found").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.grants import SessionApprovals, session_prefix
from mcp_server_guard.shell.strings.rules import PolicyEngine
from support import Human, error_of, refused_start, serve, text_of

pytestmark = pytest.mark.anyio
SX = "mcp-server-shell-exec"
POLICY = """
[[shell_exec.rules]]
id = "pkgtool-install"
action = "ask"
reason = "installs packages (and runs their install scripts)"
programs = ["pkgtool"]
subcommands = ["install"]

[[shell_exec.rules]]
id = "pkgtool-force"
action = "ask"
reason = "forces"
programs = ["pkgtool"]
flags = [["force"]]

[[shell_exec.rules]]
id = "zap"
action = "ask"
reason = "zaps a file"
programs = ["zap"]

[[shell_exec.rules]]
id = "pkgtool-evil"
action = "deny"
reason = "never"
programs = ["pkgtool"]
flags = [["evil"]]
"""


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    return path


async def _calls(
    workspace: Path, flags: list[str], human: Human, *commands: str, mode: str = "legacy"
) -> list[dict[str, Any]]:
    """Each call's structured result (or its refusal's payload, with "refused": True)."""
    out: list[dict[str, Any]] = []
    async with serve(SX, workspace, *flags, mode=mode, elicitation_callback=human) as client:
        for command in commands:
            with anyio.fail_after(60):
                result = await client.call_tool("shell_exec", {"command": command})
            if result.is_error:
                out.append(error_of(result) | {"refused": True})
            else:
                out.append(dict(result.structured_content or {}) | {"text": text_of(result)})
    return out


async def test_a_line_approved_for_the_session_runs_again_without_a_question(
    workspace: Path, policy: Path, mode: str
) -> None:
    human = Human(remember="line")
    first, again, other = await _calls(
        workspace, ["--policy", str(policy)], human, "pkgtool install left-pad", "pkgtool install left-pad",
        "pkgtool install right-pad", mode=mode,
    )  # fmt: skip
    assert len(human.questions) == 2  # the first line, and the other line; not the repeat
    assert human.questions[0][1]["remember"]["enum"] == ["no", "line", "prefix"]
    assert first["approval"] == "session-line" and first["policyDecision"] == "ask-approved"
    assert again["approval"] == "session-line" and again["policyDecision"] == "approved-session"
    assert again["rule"] == "pkgtool-install" and "[approved by the user: session-line]" in again["text"]
    assert other["approval"] == "session-line"  # asked, and remembered in its turn


async def test_a_prefix_approved_for_the_session_covers_the_subcommand_and_nothing_more(
    workspace: Path, policy: Path, mode: str
) -> None:
    human = Human(remember="prefix")
    results = await _calls(
        workspace, ["--policy", str(policy)], human,
        "pkgtool install left-pad",
        "pkgtool install right-pad --save",  # covered
        "pkgtool install a && rm -f x",  # a compound line: rm is not pkgtool install
        "pkgtool install --evil",  # deny wins over any approval
        mode=mode,
    )  # fmt: skip
    first, covered, compound, evil = results
    assert first["approval"] == "session-prefix:pkgtool install"
    assert covered["approval"] == "session-prefix:pkgtool install"
    assert covered["policyDecision"] == "approved-session"
    assert compound["policyDecision"] == "ask-approved"  # asked again
    assert evil["refused"] and evil["code"] == "COMMAND_DENIED"
    assert len(human.questions) == 2 and "rm -f x" in human.questions[1][0]


NO_PREFIX_LINES = [
    "bash -c 'pkgtool install a'",  # a shell runs anything
    "sh -c 'pkgtool install a'",
    "sudo pkgtool install a",  # a wrapper
    "env pkgtool install a",
    "xargs pkgtool install < list",
    "pkgtool install $(cat list)",  # substitution
    "pkgtool install $PKG",  # expansion
    "pkgtool install a <<EOF\nx\nEOF",  # here-document
    "pkgtool install a; echo done",  # not every sub-command is pkgtool install
    "./pkgtool install a",  # a program PATH does not choose
    "pkgtool install --force a",  # another rule asks too: a pkgtool-install grant must not cover it
    "zap notes.txt",  # the rule names no subcommand: 'zap notes.txt' would be a file, not a subcommand
]


async def test_a_prefix_is_never_offered_for_wrappers_substitutions_or_mixed_lines(
    workspace: Path, policy: Path
) -> None:
    """Every line through one server (answered yes, nothing remembered): each is asked once, with no prefix
    offered; each failing line is named."""
    human = Human()
    problems: list[str] = []
    async with serve(SX, workspace, "--policy", str(policy), mode="legacy", elicitation_callback=human) as client:
        for line in NO_PREFIX_LINES:
            asked = len(human.questions)
            with anyio.fail_after(60):
                result = await client.call_tool("shell_exec", {"command": line})
            if result.is_error:
                problems.append(f"[{line}] refused: {error_of(result)}")
            questions = human.questions[asked:]
            if len(questions) != 1:
                problems.append(f"[{line}] asked {len(questions)} times: {questions}")
            elif questions[0][1]["remember"]["enum"] != ["no", "line"]:
                problems.append(f"[{line}] offered {questions[0][1]['remember']['enum']}")
    assert not problems, "\n".join(problems)


def test_session_prefix_names_program_and_subcommand_only_for_plain_lines(policy: Path) -> None:
    engine = PolicyEngine(load_policy(policy).shell_exec)
    assert session_prefix(engine, "npm install left-pad", [], None) == "npm install"
    assert session_prefix(engine, "npm install a && npm install b", [], None) == "npm install"
    assert session_prefix(engine, "apt-get install -y jq", [], None) == "apt-get install"
    assert session_prefix(engine, "npm", ["install", "x"], None) == "npm install"
    for line in ("python3 -m pip install x", "node x.js", "npm -g install", "npm", "rm -rf build", "npm install `x`"):
        assert session_prefix(engine, line, [], None) is None, line


async def test_approvals_file_keeps_grants_across_restarts(workspace: Path, policy: Path, tmp_path: Path) -> None:
    approvals = tmp_path / "state" / "approvals.json"
    approvals.parent.mkdir()
    flags = ["--policy", str(policy), "--approvals-file", str(approvals)]
    human = Human(remember="prefix")
    [first] = await _calls(workspace, flags, human, "pkgtool install a")
    assert first["approval"] == "session-prefix:pkgtool install"
    saved = json.loads(approvals.read_text(encoding="utf-8"))
    [grant] = saved["grants"]
    assert (grant["kind"], grant["value"], grant["rule"], grant["approved_by"]) == (
        "prefix", "pkgtool install", "pkgtool-install", "human:elicitation",
    )  # fmt: skip
    # Threat: a command rewriting the approvals to grant itself more at the next start. (Tried in the restarted
    # server that then shows the grant kept: the file it started from is the one left unchanged.)
    write = f"python3 -c \"open('{approvals}', 'w').write('{{}}')\""  # the string policy has no objection
    later = Human()
    tamper, after = await _calls(workspace, flags, later, write, "pkgtool install b")
    assert tamper["exitCode"] != 0, tamper  # read-only in the box (or, under /tmp as here, not there at all)
    assert json.loads(approvals.read_text(encoding="utf-8")) == saved
    assert later.questions == [] and after["policyDecision"] == "approved-session"
    # The audit says who approved what, and when: the grant's approver and time on the covered call.
    records = [json.loads(line) for line in (workspace.parent / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    [covered] = [r for r in records if r.get("phase") == "outcome" and r.get("audit_id") == after["auditId"]]
    assert covered["approved_by"] == f"human:elicitation at {grant['at']}"
    assert covered["approval"] == "session-prefix:pkgtool install" and covered["policy_result"] == "approved-session"
    [granting] = [r for r in records if r.get("phase") == "outcome" and r.get("audit_id") == first["auditId"]]
    assert granting["granted"] == f"session-prefix:pkgtool install (rule pkgtool-install) at {grant['at']}"
    # Without the file, a restart forgets.
    forgetting = Human()
    await _calls(workspace, ["--policy", str(policy)], forgetting, "pkgtool install b")
    assert len(forgetting.questions) == 1


def test_approvals_file_inside_the_allowed_directories_is_refused(workspace: Path, tmp_path: Path) -> None:
    done = refused_start(SX, workspace, "--approvals-file", str(workspace / "approvals.json"))
    assert done.returncode == 2 and b"inside the allowed directory" in done.stderr


def test_a_broken_approvals_file_stops_the_start(workspace: Path, tmp_path: Path) -> None:
    bad = tmp_path / "approvals.json"
    bad.write_text("{not json", encoding="utf-8")
    done = refused_start(SX, workspace, "--approvals-file", str(bad))
    assert done.returncode == 2 and b"not an approvals file" in done.stderr


def test_session_approvals_are_bounded_and_never_cover_another_rule() -> None:
    grants = SessionApprovals()
    grants.grant("prefix", "npm install", rule="npm-install", approved_by="human:elicitation")
    assert grants.for_line("npm install x", "/w", "npm-install", "npm install") is not None
    assert grants.for_line("npm install -g x", "/w", "global-install", "npm install") is None
    grants.grant("line", "make deploy", rule="deploy", cwd="/w", approved_by="human:elicitation")
    assert grants.for_line("make deploy", "/elsewhere", "deploy", None) is None
    for i in range(1200):
        grants.grant("host", f"h{i}.test:443", approved_by="human:elicitation")
    assert len(grants) == 1000


async def test_a_call_with_its_own_env_is_never_covered_by_a_grant(workspace: Path, policy: Path) -> None:
    # The attack: a grant for `pkgtool install a`, reused with an env that changes what the program does.
    human = Human(remember="line")
    results = await _calls(workspace, ["--policy", str(policy)], human, "pkgtool install a")
    async with serve(SX, workspace, "--policy", str(policy), elicitation_callback=human) as client:
        with anyio.fail_after(60):
            await client.call_tool("shell_exec", {"command": "pkgtool install a"})
            result = await client.call_tool(
                "shell_exec", {"command": "pkgtool install a", "env": {"PKGTOOL_REGISTRY": "http://evil.test"}}
            )
    out = dict(result.structured_content or {})
    assert results[0]["approval"] == "session-line"
    assert out["policyDecision"] == "ask-approved" and out["approval"] == "once"
    assert "remember" not in human.questions[-1][1]  # nothing to remember for such a call


async def test_two_servers_sharing_an_approvals_file_keep_each_others_grants(
    workspace: Path, policy: Path, tmp_path: Path
) -> None:
    approvals = tmp_path / "state" / "approvals.json"
    approvals.parent.mkdir()
    flags = ["--policy", str(policy), "--approvals-file", str(approvals)]
    human = Human(remember="line")
    async with (
        serve(SX, workspace, *flags, elicitation_callback=human) as first,
        serve(SX, workspace, *flags, elicitation_callback=human) as second,
    ):
        # Both servers were started before either granted anything: each writes from what it holds in memory
        # unless it merges with what the other saved.
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(first.call_tool, "shell_exec", {"command": "zap one"})
                tg.start_soon(second.call_tool, "shell_exec", {"command": "zap two"})
            await first.call_tool("shell_exec", {"command": "zap three"})
    saved = {g["value"] for g in json.loads(approvals.read_text(encoding="utf-8"))["grants"]}
    assert saved == {"zap one", "zap two", "zap three"}
    assert [p.name for p in approvals.parent.iterdir() if p.name.endswith(".tmp")] == []
    later = Human()
    results = await _calls(workspace, flags, later, "zap one", "zap two", "zap three")
    assert later.questions == [] and {r["policyDecision"] for r in results} == {"approved-session"}


# One interpreter imports the grants module once (the SDK import is most of a process's start) and forks the eight
# workers: eight processes with their own memory, as eight servers are. Each reads the file before the barrier and
# they all start granting when it opens, so their writes do meet.
GRANT_RACE = """
import os
import sys
import traceback
from pathlib import Path
from mcp_server_guard.shell.grants import SessionApprovals
path, workers, each = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
barrier, release = os.pipe()
children = []
for who in range(workers):
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(release)
            grants = SessionApprovals(path)
            os.read(barrier, 1)  # blocks until the parent closes the last write end: all start at once
            for i in range(each):
                grant = grants.grant("line", f"zap {who}-{i}", rule="zap", cwd="/w", approved_by="human:elicitation")
                assert not grant.unsaved, grant.unsaved
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    children.append(pid)
os.close(release)
codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
sys.exit(0 if codes == [0] * workers else f"worker exit codes: {codes}")
"""


def test_eight_processes_granting_at_once_lose_no_grant(tmp_path: Path) -> None:
    import subprocess
    import sys

    approvals = tmp_path / "approvals.json"
    race = subprocess.run([sys.executable, "-c", GRANT_RACE, str(approvals), "8", "10"], timeout=120, check=False)
    assert race.returncode == 0
    saved = {g["value"] for g in json.loads(approvals.read_text(encoding="utf-8"))["grants"]}
    assert saved == {f"zap {who}-{i}" for who in range(8) for i in range(10)}
    assert sorted(p.name for p in tmp_path.iterdir()) == [".approvals.json.lock", "approvals.json"]


def _can_unshare() -> bool:
    import shutil
    import subprocess

    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=10).returncode == 0


@pytest.mark.skipif(not _can_unshare(), reason="unprivileged user+mount namespaces are not available")
async def test_a_grant_the_full_disk_could_not_keep_says_this_session_only_and_leaves_no_temp_file(
    workspace: Path, policy: Path, tmp_path: Path
) -> None:
    from mcp import Client, StdioServerParameters

    from support import console_script

    disk = tmp_path / "disk"
    disk.mkdir()
    approvals = disk / "approvals.json"
    # A 256 KiB tmpfs in a private mount namespace holding an approvals file, then filled to the last page.
    script = (
        'T="$1"; shift; mount -t tmpfs -o size=256k tmpfs "$T" && '
        'printf \'{"version": 1, "grants": []}\' > "$T/approvals.json" && '
        'dd if=/dev/zero of="$T/fill" bs=4096 2>/dev/null; exec "$@"'
    )
    # --sandbox off: a command then sees the server's own mount namespace, the tmpfs as the server left it.
    server = [console_script(SX), "--audit-log", str(tmp_path / "audit.jsonl"), "--policy", str(policy)]
    server += ["--sandbox", "off"]
    params = StdioServerParameters(
        command="unshare",
        args=["-rm", "sh", "-c", script, "sh", str(disk), *server, "--approvals-file", str(approvals)],
        cwd=str(workspace),
        env={
            k: v
            for k, v in __import__("os").environ.items()
            if k in ("PATH", "HOME", "XDG_STATE_HOME", "LANG", "MCP_GUARD_RUNTIME_DIR")
        },
    )
    human = Human(remember="line")
    async with Client(params, elicitation_callback=human) as client:  # type: ignore[arg-type]
        with anyio.fail_after(60):
            first = await client.call_tool("shell_exec", {"command": "zap one"})
            listing = await client.call_tool("shell_exec", {"command": f"ls -a {disk}"})
            again = await client.call_tool("shell_exec", {"command": "zap one"})
    approval = (first.structured_content or {})["approval"]
    assert approval.startswith("session-line (this session only: ") and "No space left" in approval, approval
    assert "approvals.json" in text_of(listing) and ".tmp" not in text_of(listing)
    assert (again.structured_content or {})["policyDecision"] == "approved-session"
    assert len(human.questions) == 1
