"""A program that reads its program text from stdin has that text judged like a line: the call's ``stdin``, a
here-string, ``-``/``/dev/stdin``/``/dev/fd/0``, a background job's later input. Through the real console script
(and ``mcp-guard check --stdin``); the engine's table of forms in test_shell_policy.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine
from support import Human, console_script, error_of, serve, text_of

pytestmark = pytest.mark.anyio
SX = "mcp-server-shell-exec"
POLICY = """
[[shell_exec.rules]]
id = "zap"
action = "ask"
reason = "zaps a file"
programs = ["zap"]
"""


async def _call(client: Any, **arguments: Any) -> dict[str, Any]:
    with anyio.fail_after(60):
        result = await client.call_tool("shell_exec", {"command": "", **arguments})
    if result.is_error:
        return error_of(result) | {"refused": True}
    return dict(result.structured_content or {}) | {"text": text_of(result)}


# Each form a shell or an interpreter takes its script from the call's stdin by.
STDIN_FORMS: list[dict[str, Any]] = [
    {"command": "bash"},
    {"command": "sh"},
    {"command": "bash -s"},
    {"command": "bash -"},
    {"command": "sh /dev/stdin"},
    {"command": "bash /dev/fd/0"},
    {"command": "source /dev/stdin"},
    {"command": "bash", "args": ["-s"]},
    {"command": "timeout 5 bash -s"},
    {"command": "sh -c 'bash'"},
    # eval of what it reads: the stdin's lines are command lines all the same
    {"command": 'eval "$(cat)"'},
    {"command": 'while read -r l; do eval "$l"; done'},
    # a program named by what it reads, or code that hands what it reads to a shell
    {"command": "read -r l; $l"},
    {"command": "$(cat)"},
    {"command": "python3 -c 'import os, sys; os.system(sys.stdin.read())'"},
    {"command": "python3 -c 'import subprocess, sys; subprocess.run(sys.stdin.read(), shell=True)'"},
]


async def test_a_script_fed_on_stdin_to_a_shell_is_judged_like_a_line(workspace: Path) -> None:
    async with serve(SX, workspace) as client:  # one server walks every form (the calls are independent)
        seen = {
            _form_id(form): (
                await _call(client, **form, stdin="echo start\nshutdown -h now\n"),
                await _call(client, **form, stdin="echo from-stdin\n"),
            )
            for form in STDIN_FORMS
        }
    for form, (refused, ran) in seen.items():
        assert refused.get("refused") and refused["code"] == "COMMAND_DENIED", (form, refused)
        assert "power-off" in refused["message"], form
        assert ran.get("exitCode") == 0 and "from-stdin" in ran["stdout"], (form, ran)


def _form_id(form: dict[str, Any]) -> str:
    return " ".join([form["command"], *form.get("args", [])])


async def test_code_fed_to_an_interpreter_on_stdin_is_judged_like_its_c_code(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        bomb = await _call(client, command="python3 -", stdin="import os\nwhile True:\n    os.fork()\n")
        fine = await _call(client, command="python3", stdin="print(6 * 7)\n")
    assert bomb.get("refused") and "fork-bomb" in bomb["message"], bomb
    assert fine["stdout"] == "42\n"


async def test_stdin_of_a_program_that_reads_data_is_never_judged(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        out = await _call(client, command="sort", stdin="shutdown -h now\nrm -rf ~\n")
    assert out["stdout"] == "rm -rf ~\nshutdown -h now\n"


async def test_full_access_mode_refuses_a_destructive_script_on_stdin(workspace: Path, tmp_path: Path) -> None:
    """Threat: in full-access mode the deny rules are the only guard; stdin was a way around them."""
    victim = tmp_path / "outside" / "victim"
    victim.mkdir(parents=True)
    (victim / "keep.txt").write_text("keep\n", encoding="utf-8")
    async with serve(SX, workspace, "--mode", "full-access") as client:
        refused = await _call(client, command="bash", stdin=f"rm -rf {victim}\n")
    assert refused.get("refused") and refused["code"] == "COMMAND_DENIED", refused
    assert (victim / "keep.txt").read_text(encoding="utf-8") == "keep\n"


async def test_the_question_shows_the_stdin_and_a_line_grant_covers_only_that_stdin(
    workspace: Path, tmp_path: Path, mode: str
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    human = Human(remember="line")
    async with serve(SX, workspace, "--policy", str(policy), mode=mode, elicitation_callback=human) as client:
        first = await _call(client, command="bash", stdin="zap a.txt\n")
        again = await _call(client, command="bash", stdin="zap a.txt\n")
        other = await _call(client, command="bash", stdin="zap b.txt\n")
    assert len(human.questions) == 2, [q for q, _ in human.questions]
    assert "zap a.txt" in human.questions[0][0] and "standard input" in human.questions[0][0]
    assert "zap b.txt" in human.questions[1][0]
    assert first["approval"] != "once" and again["approval"] == first["approval"]  # the grant covered the re-run
    assert not other.get("refused"), other  # asked again (the second question above), and approved


@pytest.mark.parametrize("runner", ["bash", 'while read -r l; do eval "$l"; done'])
async def test_a_jobs_input_is_judged_at_each_write_even_split_over_two_writes(workspace: Path, runner: str) -> None:
    async with serve(SX, workspace) as client:
        started = await _call(client, command=runner, yieldAfterSeconds=0.2)
        assert started["status"] == "running", started
        whole = await _call(client, jobId=started["jobId"], stdin="shutdown -h now\n")
        head = await _call(client, jobId=started["jobId"], stdin="shut")
        tail = await _call(client, jobId=started["jobId"], stdin="down -h now\n")
        fine = await _call(client, jobId=started["jobId"], stdin="\necho job-ok\n", yieldAfterSeconds=2)
        # A backslash at the end of a write joins its line to the next write's (`shut\` + newline, `down -h now`).
        continued = await _call(client, jobId=started["jobId"], stdin="shut\\\n")
        joined = await _call(client, jobId=started["jobId"], stdin="down -h now\n")
        await _call(client, jobId=started["jobId"], signal="KILL")
    assert whole.get("refused") and "power-off" in whole["message"], whole
    assert not head.get("refused"), head
    assert tail.get("refused") and "power-off" in tail["message"], tail
    assert "job-ok" in fine["stdout"], fine
    assert not continued.get("refused"), continued
    assert joined.get("refused") and "power-off" in joined["message"], joined


async def test_stdin_evaluated_as_arithmetic_is_judged_in_a_call_and_at_each_job_write(workspace: Path) -> None:
    """Threat: `read n; echo $((n))` (or `(( $(cat) ))`, `declare -i n; read n`) fed `a[$(shutdown -h now)]`: bash
    evaluates the subscript's $(…) as it evaluates the arithmetic."""
    line = "while read -r n; do echo $((n * 2)); done"
    async with serve(SX, workspace) as client:
        refused = await _call(client, command=line, stdin="a[$(shutdown -h now)]\n")
        doubled = await _call(client, command=line, stdin="21\n")
        started = await _call(client, command=line, yieldAfterSeconds=0.2)
        attack = await _call(client, jobId=started["jobId"], stdin="a[$(shutdown -h now)]\n")
        fine = await _call(client, jobId=started["jobId"], stdin="4\n", closeStdin=True, yieldAfterSeconds=5)
    assert refused.get("refused") and "power-off" in refused["message"], refused
    assert doubled["stdout"] == "42\n", doubled
    assert attack.get("refused") and "power-off" in attack["message"], attack
    assert fine["stdout"] == "8\n", fine


async def test_data_read_and_counted_is_not_judged_as_commands(workspace: Path) -> None:
    readme = "# Install\nRun `sudo reboot` after the upgrade.\nshutdown scheduled for 22:00\n"
    async with serve(SX, workspace) as client:
        counted = await _call(client, command="n=0; while read -r l; do n=$((n+1)); done; echo $n", stdin=readme)
        # bash runs a $(…) or backtick of an evaluated value only inside a subscript: summing these runs nothing
        summed = await _call(
            client,
            command="t=0; while read -r n; do [[ $n =~ ^[0-9]+$ ]] && t=$((t + n)); done; echo $t",
            stdin="10\n20\n" + readme,
        )
        numbered = await _call(
            client, command='mapfile -t L; for i in "${!L[@]}"; do echo "$i ${L[i]:0:3}"; done', stdin=readme
        )
    assert counted.get("stdout") == "3\n", counted
    assert summed.get("exitCode") == 0 and summed.get("stdout") == "30\n", summed
    assert numbered.get("stdout") == "0 # I\n1 Run\n2 shu\n", numbered


async def test_a_cat_job_takes_any_input_as_data(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        started = await _call(client, command="cat", yieldAfterSeconds=0.2)
        echoed = await _call(client, jobId=started["jobId"], stdin="shutdown -h now\n", closeStdin=True,
                             yieldAfterSeconds=5)  # fmt: skip
    assert echoed["stdout"] == "shutdown -h now\n"


# (program, what its stdin holds, the decision before running, without a copy), judged by the engine in this
# process; `mcp-guard check` shows the same through its console script (a few rows, below).
STDIN_PROGRAMS = [
    ("bash", "shutdown -h now", "deny"),
    ("python3 /dev/stdin", "import os\nwhile 1: os.fork()", "deny"),
    ("awk -f /dev/stdin", 'BEGIN { system("shutdown -h now") }', "deny"),
    ("awk -f /dev/stdin", "BEGIN { system($1) }", "ask"),
    ("awk -f /dev/stdin", "{ print $1 }", "allow"),
    ("make -f -", "all:\n\tshutdown -h now", "deny"),
    ("make -f -", "all:\n\techo built", "allow"),
    ("gdb -batch -x /dev/stdin", "python import os", "ask"),
    ("gdb -q", "shell shutdown -h now", "deny"),
    ("sqlite3 app.db", ".shell shutdown -h now", "deny"),
    ("sqlite3 app.db", "select count(*) from users;", "allow"),
    ("ed -s notes.txt", "!shutdown -h now", "deny"),
    ("bash +x", "shutdown -h now", "deny"),
    ("bash /dev/./stdin", "shutdown -h now", "deny"),
    ("bash", "r\\\nm -rf ~", "deny"),
    ("python3 -W ignore", "import os; os.system('shutdown -h now')", "deny"),
    ("perl -ne 'system $_'", "shutdown -h now", "deny"),
    ("python3 -c 'import sys; exec(sys.stdin.read())'", "import os; os.system('shutdown -h now')", "deny"),
    ("python3", 'import subprocess\nsubprocess.run(["git", "push", "--force"])', "ask"),
    ("bash", "git push --force origin main", "ask"),
    ("bash", "ls -la\ngit status", "allow"),
    ("wc -l", "shutdown -h now", "allow"),
    # bash evaluating what was read as arithmetic or as a name runs the $(…) of a subscript in it
    ("read -r n; echo $((n + 1))", "a[$(shutdown -h now)]", "deny"),
    ("(( $(cat) ))", "a[$(shutdown -h now)]", "deny"),
    ('let "$(cat)"', "a[$(shutdown -h now)]", "deny"),
    ("declare -i n; read -r n", "a[$(shutdown -h now)]", "deny"),
    ("read -r l; [[ -v $l ]]", "a[$(shutdown -h now)]", "deny"),
    ('read -r l; printf -v "$l" x', "a[$(shutdown -h now)]", "deny"),
    ("x=$(cat); echo $((x * 2))", "a[$(shutdown -h now)]", "deny"),
    ("(( $(cat) > 3 ))", "41", "allow"),
    # ... whatever quotes, `#` or (read without -r) backslashes surround the subscript's $(…) or backticks
    ("read -r n; echo $((n))", "x=a['$(shutdown -h now)']", "deny"),
    ("(( $(cat) ))", "a[ #$(shutdown -h now)]", "deny"),
    ("read n; echo $((n))", "x=a[\\`shutdown -h now\\`]", "deny"),
    ('read l; eval "$l"', "x=\\`shutdown -h now\\`", "deny"),
    # ... and wherever the value travels: a copy, a name it holds, an offset, a subscript, $1, REPLY
    ("read -r n; x=$n; y=x; echo $((y))", "a[$(shutdown -h now)]", "deny"),
    ("read -r n; s=abc; echo ${s:n}", "a[$(shutdown -h now)]", "deny"),
    ("read -r n; a[n]=3", "a[$(shutdown -h now)]", "deny"),
    ('f() { echo $(($1)); }; f "$(cat)"', "a[$(shutdown -h now)]", "deny"),
    ("read -r; echo $((REPLY))", "a[$(shutdown -h now)]", "deny"),
    ("read -r n; ref=n; echo $((${!ref}))", "a[$(shutdown -h now)]", "deny"),
    ("(( $(cat) ))", "a[$((shutdown -h now) )]", "deny"),  # $((…) ) is a subshell's substitution to bash
    ("read n; echo $((n))", "a[$\\\n(shutdown -h now)]", "deny"),  # read drops backslash-newline
    ('read -r "n"; echo $((n))', "a[$(shutdown -h now)]", "deny"),
    ('read -r l; declare "$l"', "x=($(shutdown -h now))", "deny"),
    ('set -- "$(cat)"; echo $(( $* ))', "a[$(shutdown -h now)]", "deny"),
    ('read -r l; printf -v"$l" x', "a[$(shutdown -h now)]", "deny"),
    ('read -r l; sleep 0 & wait -p "$l" -n', "a[$(shutdown -h now)]", "deny"),
    # data read and only counted, measured or compared by [ ] is never judged as commands
    ("while read -r l; do [[ ${#l} -gt 20 ]] && echo long; done", "shutdown -h now", "allow"),
    ('while read -r a b; do [ "$b" -gt 3 ] && echo y; done', "x shutdown -h now", "allow"),
]


@pytest.mark.parametrize(("command", "stdin", "decision"), STDIN_PROGRAMS)
def test_the_engine_judges_the_stdin_a_program_runs(command: str, stdin: str, decision: str) -> None:
    assert PolicyEngine(load_policy().shell_exec).decide(command, stdin=stdin).action == decision


def test_mcp_guard_check_judges_the_stdin_a_program_runs() -> None:
    rows = [row for row in STDIN_PROGRAMS if row[0] in ("bash", "awk -f /dev/stdin", "(( $(cat) ))", "wc -l")]
    for command, stdin, decision in rows:
        done = subprocess.run(
            [console_script("mcp-guard"), "check", "--json", "--stdin", stdin, command],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert json.loads(done.stdout)["decision"] == decision, (command, stdin, done.stdout + done.stderr)


async def test_a_sqlite3_or_plus_x_shell_job_has_each_write_judged(workspace: Path) -> None:
    """Threat: a job started as a program whose stdin language runs commands (sqlite3 .shell, bash +x): later
    writes are judged like the first."""
    async with serve(SX, workspace) as client:
        cases = [
            ("bash +x", "shutdown -h now\n", "echo fine\n"),
            ("python3", "import os\nos.system('shutdown -h now')\n", "x = 1\n"),
        ]
        if shutil.which("sqlite3"):
            cases.append(("sqlite3", ".shell shutdown -h now\n", "select 40 + 2;\n"))
        for command, bad, good in cases:
            started = await _call(client, command=command, yieldAfterSeconds=0.2)
            refused = await _call(client, jobId=started["jobId"], stdin=bad)
            fine = await _call(client, jobId=started["jobId"], stdin=good, yieldAfterSeconds=0.2)
            await _call(client, jobId=started["jobId"], signal="KILL")
            assert refused.get("refused") and "power-off" in refused["message"], (command, refused)
            assert not fine.get("refused"), (command, fine)


async def test_a_quoted_newline_fed_to_a_read_eval_loop_is_judged_line_by_line(workspace: Path) -> None:
    """Threat: one write that is a harmless quoted assignment as a whole script, while a read loop evals it line
    by line — its second line is a command of its own."""
    payload = "x='\nshutdown -h now\n'\n"
    async with serve(SX, workspace) as client:
        once = await _call(client, command='while read -r l; do eval "$l"; done', stdin=payload)
        started = await _call(client, command='while read -r l; do eval "$l"; done', yieldAfterSeconds=0.2)
        fed = await _call(client, jobId=started["jobId"], stdin=payload)
        await _call(client, jobId=started["jobId"], signal="KILL")
    for refused in (once, fed):
        assert refused.get("refused") and "power-off" in refused["message"], refused
