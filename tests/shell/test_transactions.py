"""Effects, not strings: every command works on a copy of the project, and what it did is judged, applied by
the one guarded writer, and undoable — through the real shell_exec console script.

Each test is named after what it proves. The questions a person answers here are about a command's changes
("Apply these changes?"), asked after the command ran on its copy: in the same call for a 2025-era client, in a
later call (``applyChanges``) for a 2026-07-28 one.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import ElicitRequestParams, ElicitResult

from support import RawClient, console_script, error_of, serve

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
SX = "mcp-server-shell-exec"
GIT_ENV = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"}


class Person:
    """Answers every question with ``answer`` (True: yes to every yes/no field), and remembers what was asked."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[str] = []

    async def __call__(self, _ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        self.asked.append(params.message)
        props = dict(params.requested_schema.get("properties", {}))  # type: ignore[union-attr]
        if not self.answer:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content={k: True for k, p in props.items() if p.get("type") == "boolean"})


async def sh(client: Any, command: str, **arguments: Any) -> dict[str, Any]:
    with anyio.fail_after(90):
        result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 60, **arguments})
    assert not result.is_error, result
    return dict(result.structured_content)


def victim(root: Path, files: int = 300) -> Path:
    target = root / "victim"
    for i in range(files):
        (target / f"d{i % 10}").mkdir(parents=True, exist_ok=True)
        (target / f"d{i % 10}" / f"f{i}.txt").write_text(f"file {i}\n")
    return target


def snapshot(root: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every path below ``root`` with its mode and content (a symlink's target), never following a link."""
    found: dict[str, tuple[int, bytes | str]] = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            found[str(path.relative_to(root))] = (st.st_mode, os.readlink(path))
        elif stat.S_ISREG(st.st_mode):
            found[str(path.relative_to(root))] = (st.st_mode, path.read_bytes())
        else:
            found[str(path.relative_to(root))] = (st.st_mode, b"")
    return found


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git as the user runs it: outside any sandbox."""
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False)


def undo(audit_id: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [console_script("mcp-guard"), "undo", audit_id, *flags], capture_output=True, text=True, timeout=60, check=False
    )


INDIRECT: dict[str, tuple[str, dict[str, Any]]] = {
    "a Makefile written then make": ("printf 'all:\\n\\trm -r victim\\n' > Makefile && make -s", {}),
    "a script written then bash s.sh": ("printf 'rm -r victim\\n' > s.sh && bash s.sh", {}),
    "npm run x": (
        'echo \'{"name": "p", "scripts": {"x": "rm -r victim"}}\' > package.json && npm run -s x',
        {},
    ),
    "python3 -c shutil.rmtree": ("python3 -c \"import shutil; shutil.rmtree('victim')\"", {}),
    "find -delete": ("find victim -delete", {}),
    "perl rmtree": ("perl -e 'use File::Path; rmtree(\"victim\")'", {}),
    "awk system()": ("awk 'BEGIN{system(\"rm -rf victim\")}'", {}),
    "bash reading stdin": ("bash", {"stdin": "rm -rf victim"}),
}


async def test_indirect_deletions_are_judged_by_their_effect_and_a_no_loses_nothing(workspace: Path) -> None:
    victim(workspace)
    before = snapshot(workspace / "victim")
    person = Person(False)
    async with serve(SX, workspace, mode="legacy", elicitation_callback=person) as client:
        for spelling, (command, extra) in INDIRECT.items():
            if spelling == "npm run x" and shutil.which("npm") is None:
                continue
            out = await sh(client, command, **extra)
            assert out["exitCode"] == 0, (spelling, out["stderr"])
            assert out["exitCode"] == 0  # the string layer did not stop it ...
            assert out["transaction"] == "declined", (spelling, out["changes"])  # ... the judgement of its effect did
            assert out["policyDecision"] == "ask-declined", spelling  # and the result says the person decided
            assert out["changes"]["deleted"] >= 300 and "declined" in out["changes"]["reason"], spelling
            assert snapshot(workspace / "victim") == before, spelling
    assert len(person.asked) >= 7 and all("delete 300 files under victim/" in q for q in person.asked)


async def test_an_approved_deletion_is_applied_and_undo_restores_it_byte_for_byte(workspace: Path) -> None:
    target = victim(workspace, 40)
    (target / "blob.bin").write_bytes(bytes(range(256)) * 64)
    (target / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (target / "run.sh").chmod(0o750)
    (target / "secret.txt").write_text("only me\n")
    (target / "secret.txt").chmod(0o600)
    (workspace / "hello.txt").write_text("hello\n")
    before = snapshot(workspace)
    async with serve(SX, workspace, mode="legacy", elicitation_callback=Person(True)) as client:
        out = await sh(client, "rm -r victim && echo changed >> hello.txt && echo new > new.txt")
    assert out["transaction"] == "applied", out["changes"]
    assert not target.exists() and (workspace / "new.txt").exists()
    assert out["changes"]["undo"] == f"mcp-guard undo {out['auditId']}"
    done = undo(out["auditId"])
    assert done.returncode == 0, done.stderr
    assert snapshot(workspace) == before
    again = undo(out["auditId"])
    assert again.returncode == 1 and "undone already" in again.stderr


async def test_undo_refuses_when_a_later_change_touched_the_same_files_unless_forced(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("one\n")
    async with serve(SX, workspace) as client:
        out = await sh(client, "echo two >> notes.txt")
    assert out["transaction"] == "applied"
    (workspace / "notes.txt").write_text("three, by the user\n")  # a later change by someone else
    refused = undo(out["auditId"])
    assert refused.returncode == 2 and "UNDO_CONFLICT" in refused.stderr and "notes.txt" in refused.stderr
    assert (workspace / "notes.txt").read_text() == "three, by the user\n"
    forced = undo(out["auditId"], "--force")
    assert forced.returncode == 0, forced.stderr
    assert (workspace / "notes.txt").read_text() == "one\n"
    listed = subprocess.run([console_script("mcp-guard"), "history"], capture_output=True, text=True, timeout=60)
    assert out["auditId"] in listed.stdout and "undone by" in listed.stdout


class ChangesMeanwhile(Person):
    """Says yes, but while the question is open another writer turns ``shaped/`` into a git dir in the real tree."""

    def __init__(self, shaped: Path) -> None:
        super().__init__(True)
        self.shaped = shaped

    async def __call__(self, ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        (self.shaped / "objects").mkdir(exist_ok=True)
        (self.shaped / "refs").mkdir(exist_ok=True)
        (self.shaped / "HEAD").write_text("ref: refs/heads/main\n")
        return await super().__call__(ctx, params)


async def test_changes_approved_while_another_writer_changed_the_project_are_judged_again(
    workspace: Path, tmp_path: Path
) -> None:
    shaped = workspace / "shaped"
    shaped.mkdir()
    marker = tmp_path / "outside" / "stale-judgement-ran"
    person = ChangesMeanwhile(shaped)
    command = (
        f"printf '[core]\\n\\tfsmonitor = touch {marker}\\n' > shaped/config; "
        "printf '#!/bin/sh\\n' > tool.sh && chmod +x tool.sh"
    )
    async with serve(SX, workspace, elicitation_callback=person) as client:
        out = await sh(client, command)
    assert out["transaction"] == "applied" and (workspace / "tool.sh").exists()
    assert person.asked and "tool.sh" in person.asked[0]  # the question was about the new executable only
    # Judged again at the apply: a new repository's config, applied without the key that runs a program.
    assert "fsmonitor" not in (shaped / "config").read_text()
    assert git(shaped, "config", "--get", "core.fsmonitor").stdout == ""


async def test_a_held_change_set_is_applied_by_a_later_call_after_the_users_yes(workspace: Path) -> None:
    victim(workspace, 30)
    person = Person(True)
    async with serve(SX, workspace, mode="auto", elicitation_callback=person) as client:
        out = await sh(client, "rm -rf victim")
        assert out["transaction"] == "held" and person.asked == []  # no question mid-call in the 2026-07-28 era
        pending = out["pendingChanges"]
        assert pending["id"] and "delete 30 files under victim/" in pending["summary"]
        assert (workspace / "victim").is_dir()
        applied = await sh(client, "", applyChanges=pending["id"])
    assert applied["transaction"] == "applied" and applied["policyDecision"] == "ask-approved"
    assert len(person.asked) == 1 and "delete 30 files" in person.asked[0] and "rm -rf victim" in person.asked[0]
    assert not (workspace / "victim").exists()
    assert undo(applied["auditId"]).returncode == 0
    assert len(list((workspace / "victim").rglob("*.txt"))) == 30


async def test_held_changes_can_be_dropped_and_are_then_gone(workspace: Path) -> None:
    victim(workspace, 30)
    async with serve(SX, workspace, mode="auto", elicitation_callback=Person(True)) as client:
        out = await sh(client, "rm -rf victim")
        held = out["pendingChanges"]["id"]
        dropped = await sh(client, "", dropChanges=held)
        with anyio.fail_after(60):
            again = await client.call_tool("shell_exec", {"command": "", "applyChanges": held})
    assert dropped["transaction"] == "declined"
    assert error_of(again)["code"] == "CHANGES_NOT_FOUND"
    assert len(list((workspace / "victim").rglob("*.txt"))) == 30


async def test_a_client_without_questions_gets_nothing_applied_that_needs_a_yes(workspace: Path) -> None:
    victim(workspace, 30)
    async with serve(SX, workspace, mode="auto") as client:
        out = await sh(client, "rm -rf victim; echo kept > small.txt")
    assert out["transaction"] == "declined" and "cannot ask the user" in out["changes"]["reason"]
    assert (workspace / "victim").is_dir() and not (workspace / "small.txt").exists()


# -- the server is never a confused deputy ------------------------------------------------------------------

DEPUTY = {
    "symlinked hooks": (
        "rm -rf .git/hooks && ln -s {outside}/hooks .git/hooks && echo evil > .git/hooks/pre-commit; echo done"
    ),
    "a .git file pointing outside": "mkdir -p sub && echo 'gitdir: {outside}/repo.git' > sub/.git; echo done",
    "a commondir pointing outside": (
        "git init -q g && echo {outside}/repo.git > g/.git/commondir && echo evil > g/.git/hooks/post-checkout; "
        "echo done"
    ),
    "a symlinked config.worktree": "ln -s {outside}/gitconfig .git/config.worktree; echo done",
    "a parent symlink to ~/.config": (
        "ln -s $HOME/.config cfg && mkdir -p cfg/git && echo evil > cfg/git/config; echo done"
    ),
    "a FIFO as git config": "git init -q f && rm f/.git/config && mkfifo f/.git/config; echo done",
}


@pytest.mark.parametrize("attack", list(DEPUTY))
async def test_what_a_command_plants_never_makes_the_server_act_outside(
    workspace: Path, tmp_path: Path, isolated_home: Path, attack: str
) -> None:
    assert git(workspace, "init", "-q").returncode == 0
    outside = tmp_path / "outside"
    (outside / "hooks").mkdir()
    (outside / "repo.git").mkdir()
    (outside / "gitconfig").write_text("[user]\n\tname = me\n")
    (isolated_home / ".config" / "git").mkdir(parents=True)
    (isolated_home / ".config" / "git" / "config").write_text("[user]\n\tname = me\n")
    watched = {"outside": snapshot(outside), "home": snapshot(isolated_home / ".config")}
    async with serve(SX, workspace, elicitation_callback=Person(True)) as client:
        out = await sh(client, DEPUTY[attack].format(outside=outside))
    assert out["stdout"].endswith("done\n")
    assert {"outside": snapshot(outside), "home": snapshot(isolated_home / ".config")} == watched
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    for hooks in workspace.rglob("hooks"):
        assert all(h.name.endswith(".sample") for h in hooks.iterdir() if not hooks.is_symlink()), hooks
    config = workspace / "f" / ".git" / "config"
    assert not config.exists() or stat.S_ISREG(config.lstat().st_mode)
    assert git(workspace, "status").returncode == 0  # the user's git still works, and nothing ran


async def test_a_hook_planted_in_a_deep_git_dir_of_a_large_tree_never_lands(workspace: Path) -> None:
    for i in range(3000):
        (workspace / "tree" / f"d{i % 30}" / f"e{i}").mkdir(parents=True)
    deep = workspace / "tree" / "d7" / "e7" / "x" / "repo"
    deep.mkdir(parents=True)
    assert git(deep, "init", "-q").returncode == 0
    async with serve(SX, workspace, elicitation_callback=Person(True)) as client:
        out = await sh(client, "echo evil > tree/d7/e7/x/repo/.git/hooks/pre-commit && touch tree/d1/e1/ok")
    assert not (deep / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / "tree" / "d1" / "e1" / "ok").exists()
    assert [p["path"] for p in out["changes"]["paths"] if p["action"] == "refused"] == [
        "tree/d7/e7/x/repo/.git/hooks/pre-commit"
    ]


async def test_calls_racing_to_move_the_git_dir_away_plant_nothing(workspace: Path) -> None:
    assert git(workspace, "init", "-q").returncode == 0
    config = (workspace / ".git" / "config").read_bytes()
    async with serve(SX, workspace, elicitation_callback=Person(True)) as client, anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(sh, client, "mv .git .g && sleep 0.2 && mv .g .git")
            tg.start_soon(sh, client, f"sleep 0.1; echo evil{i} > .git/hooks/pre-commit; git config core.pager x")
    assert sorted(p.name for p in (workspace / ".git" / "hooks").iterdir() if not p.name.endswith(".sample")) == []
    assert (workspace / ".git" / "config").read_bytes() == config
    assert not (workspace / ".g").exists()


# -- background jobs -------------------------------------------------------------------------------------------


async def test_a_jobs_output_reaches_the_files_at_each_look_and_its_hook_never_does(workspace: Path) -> None:
    assert git(workspace, "init", "-q").returncode == 0
    job = (
        "echo first > first.txt; echo evil > .git/hooks/pre-commit; "
        "while [ ! -e /tmp/go ]; do sleep 0.05; done; echo second > second.txt; echo done"
    )
    async with serve(SX, workspace) as client:
        started = await sh(client, job, yieldAfterSeconds=1)
        assert started["status"] == "running"
        look = await sh(client, "", jobId=started["jobId"])
        assert look["transaction"] == "applied" and (workspace / "first.txt").read_text() == "first\n"
        assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
        assert any(p["action"] == "refused" for p in look["changes"]["paths"])
        await sh(client, "", jobId=started["jobId"], stdin="")  # a look that applies nothing new
        stopped = await sh(client, "", jobId=started["jobId"], signal="TERM")
    assert stopped["status"] == "stopped"
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert not (workspace / "second.txt").exists()


async def test_a_job_rewriting_its_git_config_between_looks_never_gets_a_program_key_applied(workspace: Path) -> None:
    # The job swaps .git/config between a harmless and a harmful version as fast as it can: what a look copies is
    # never what it judged, so configs (and other content-judged files) wait for the job's end.
    assert git(workspace, "init", "-q").returncode == 0
    config = (workspace / ".git" / "config").read_bytes()
    (workspace / "safe").write_bytes(config)
    (workspace / "evil").write_bytes(config + b"[core]\n\tfsmonitor = touch /nowhere\n")
    swap = "while true; do cp safe .git/c1; mv .git/c1 .git/config; cp evil .git/c2; mv .git/c2 .git/config; done"
    async with serve(SX, workspace) as client:
        started = await sh(client, swap, yieldAfterSeconds=0.2)
        for _ in range(15):
            await sh(client, "", jobId=started["jobId"], yieldAfterSeconds=0.1)
            assert b"fsmonitor" not in (workspace / ".git" / "config").read_bytes()
        await sh(client, "", jobId=started["jobId"], signal="KILL")
    assert b"fsmonitor" not in (workspace / ".git" / "config").read_bytes()


async def test_attack_job_swapping_the_bytes_of_a_moved_file_between_looks_never_has_its_old_name_deleted(
    workspace: Path,
) -> None:
    # The job renames keep.txt (work git has no copy of: deleting it asks), then swaps the new name's bytes between
    # the original and junk as fast as it can: a look that judged a move (same bytes, so no question) must not
    # delete keep.txt and copy junk. Moves wait for the job's end.
    assert git(workspace, "init", "-q").returncode == 0
    (workspace / "keep.txt").write_text("the user's own words\n" * 50)
    (workspace / "junk").write_text("junk\n" * 200)
    swap = ("cp keep.txt orig && mv keep.txt moved.txt && while true; do cp junk m1 && mv m1 moved.txt; "
            "cp orig m2 && mv m2 moved.txt; done")  # fmt: skip
    async with serve(SX, workspace) as client:
        started = await sh(client, swap, yieldAfterSeconds=0.2)
        for _ in range(12):
            await sh(client, "", jobId=started["jobId"], yieldAfterSeconds=0.1)
            assert (workspace / "keep.txt").read_text() == "the user's own words\n" * 50
        await sh(client, "", jobId=started["jobId"], signal="KILL")


async def test_a_job_that_ends_on_its_own_has_its_changes_applied_and_named_for_undo(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        started = await sh(client, "sleep 0.5; echo built > out.txt", yieldAfterSeconds=0.1)
        with anyio.fail_after(30):
            while True:
                look = await sh(client, "", jobId=started["jobId"], yieldAfterSeconds=2)
                if look["status"] != "running":
                    break
    assert look["transaction"] == "applied" and (workspace / "out.txt").read_text() == "built\n"
    assert look["changes"]["undo"] == f"mcp-guard undo {started['auditId']}"


# -- faults and races ----------------------------------------------------------------------------------------------


def test_a_server_killed_while_applying_finishes_the_apply_at_the_next_start(
    workspace: Path, tmp_path: Path, isolated_home: Path
) -> None:
    build = workspace / "build"  # a build directory: its changes need no question
    build.mkdir()
    for i in range(1500):
        (build / f"m{i:04d}.txt").write_text(f"old {i}\n")
    journal = isolated_home / ".local" / "state" / "mcp-guard" / "history" / ".journal"
    args = [console_script(SX), "--audit-log", str(tmp_path / "audit.jsonl")]
    client = RawClient(args, workspace, env=dict(os.environ))
    try:
        client.initialize()
        append = "for f in build/m*.txt; do echo new >> $f; done"
        client.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "shell_exec", "arguments": {"command": append}}})  # fmt: skip
        deadline = time.monotonic() + 60
        while not (journal.is_dir() and any(journal.glob("apply-*.json"))):
            assert time.monotonic() < deadline, "the apply never started"
            time.sleep(0.001)
        client.proc.send_signal(signal.SIGKILL)
        client.proc.wait(timeout=10)
    finally:
        client.close()
    contents = {p.read_text().split()[-1] for p in build.glob("m*.txt")}
    restart = RawClient(args, workspace, env=dict(os.environ))
    try:
        restart.initialize()  # the start finishes what the killed server left half applied
        # (the start judges the dead run's 1,500 steps left against the tree first: seconds on a loaded machine)
        echo = {"name": "shell_exec", "arguments": {"command": "echo ok"}}
        answer = restart.request(2, "tools/call", echo, timeout=60)
        assert answer["result"]["structuredContent"]["stdout"] == "ok\n"
    finally:
        restart.close()
    finished = [p.read_text() for p in build.glob("m*.txt")]
    assert contents <= {"new"} | {str(i) for i in range(1500)}  # when killed: some already new, the rest old
    bad = [t for t in finished if not t.endswith("\nnew\n")]
    assert len(finished) == 1500 and not bad, bad[:5]
    assert not list(journal.glob("apply-*.json"))
    calls = isolated_home / ".local" / "state" / "mcp-guard" / "history" / "calls"
    assert len(list(calls.glob("*.json"))) == 1


def _records(audit: Path) -> list[dict[str, Any]]:
    lines = audit.read_text().splitlines() if audit.exists() else []
    return [json.loads(line) for line in lines if line.endswith("}")]


async def test_a_file_changed_while_the_command_ran_is_never_overwritten(workspace: Path, tmp_path: Path) -> None:
    (workspace / "shared.txt").write_text("original\n")
    audit = tmp_path / "audit.jsonl"
    async with serve(SX, workspace, audit=audit) as shell, serve("mcp-server-file-write", workspace, audit=audit) as fw:
        results: dict[str, Any] = {}

        async def command() -> None:
            results["sh"] = await sh(shell, "sleep 2; echo from-the-command > shared.txt")

        async with anyio.create_task_group() as tg:
            tg.start_soon(command)
            # The command's record of intent is written (it runs on its copy a moment later), however loaded the
            # machine: a fixed wait raced the call's start.
            with anyio.fail_after(60):
                while not any(r.get("phase") == "intent" and r.get("tool") == "shell_exec" for r in _records(audit)):
                    await anyio.sleep(0.05)
            await anyio.sleep(0.3)
            wrote = await fw.call_tool("file_write", {"path": "shared.txt", "content": "mine\n", "overwrite": True})
            assert not wrote.is_error
    out = results["sh"]
    assert (workspace / "shared.txt").read_text() == "mine\n"
    beside = workspace / f"shared.txt.mcp-guard-{out['auditId']}"
    assert beside.read_text() == "from-the-command\n"
    assert out["changes"]["conflicts"] == 1
    assert [p["action"] for p in out["changes"]["paths"]].count("conflict") == 1


def test_a_hundred_concurrent_calls_each_apply_only_their_own_changes(workspace: Path, tmp_path: Path) -> None:
    client = RawClient([console_script(SX), "--audit-log", str(tmp_path / "audit.jsonl")], workspace)
    try:
        client.initialize()
        for i in range(1, 101):
            client.send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                "name": "shell_exec", "arguments": {"command": f"echo {i} > out{i}.txt; echo tok{i}"}}})  # fmt: skip
        answers: dict[int, Any] = {}
        while len(answers) < 100:
            message = client.recv(timeout=120)
            if "id" in message and "method" not in message:
                answers[message["id"]] = message["result"]["structuredContent"]
    finally:
        client.close()
    for i, out in answers.items():
        assert out["stdout"] == f"tok{i}\n"
        assert out["transaction"] == "applied" and out["changes"]["paths"] == [
            {"path": f"out{i}.txt", "action": "create", "reason": ""}
        ]
        assert (workspace / f"out{i}.txt").read_text() == f"{i}\n"


# -- everyday work -------------------------------------------------------------------------------------------------


async def test_the_git_flow_with_directory_renames_works_on_the_copy(workspace: Path) -> None:
    flow = (
        "export GIT_AUTHOR_NAME=u GIT_AUTHOR_EMAIL=u@x GIT_COMMITTER_NAME=u GIT_COMMITTER_EMAIL=u@x; set -e; "
        "git init -q -b main; mkdir -p pkg/sub; echo a > pkg/a.py; echo b > pkg/sub/b.py; git add .; "
        "git commit -qm one; git checkout -qb feature; git mv pkg lib; git commit -qm moved; "
        "git checkout -q main; echo c > c.txt; git add c.txt; git commit -qm two; git checkout -q feature; "
        "git rebase -q main; python3 -c \"import os; os.rename('lib/sub', 'lib/sub2')\"; git add -A; "
        "git commit -qm renamed; git log --oneline | wc -l"
    )
    async with serve(SX, workspace, elicitation_callback=Person(True)) as client:
        out = await sh(client, flow)
    assert out["exitCode"] == 0, out["stderr"]
    assert out["stdout"] == "4\n" and out["transaction"] == "applied"
    assert git(workspace, "log", "--oneline").stdout.count("\n") == 4
    assert git(workspace, "status", "--porcelain").stdout == ""
    assert (workspace / "lib" / "sub2" / "b.py").read_text() == "b\n" and not (workspace / "pkg").exists()


async def test_an_install_into_node_modules_and_a_venv_is_applied_without_a_question(workspace: Path) -> None:
    person = Person(False)
    install = (
        "mkdir -p node_modules/.staging/left-pad/lib"
        " && echo 'module.exports=1' > node_modules/.staging/left-pad/index.js"
        " && mv node_modules/.staging/left-pad node_modules/left-pad && rm -r node_modules/.staging"
        " && python3 -m venv --without-pip .venv && echo ok"
    )
    async with serve(SX, workspace, mode="legacy", elicitation_callback=person) as client:
        out = await sh(client, install)
        again = await sh(client, "rm -rf node_modules .venv && echo clean")  # build and cache dirs: no question
    assert out["stdout"] == "ok\n" and out["transaction"] == "applied", out["changes"]
    assert again["transaction"] == "applied" and person.asked == []
    assert not (workspace / "node_modules").exists() and not (workspace / ".venv").exists()


async def test_npm_install_and_a_pip_install_into_a_venv_work_on_the_copy(workspace: Path) -> None:
    # Real installers, offline: npm unpacks into node_modules (renaming its staging directories), pip installs
    # itself into a new venv (thousands of files). None of it needs a question. (A build into build/: below.)
    steps = []
    if shutil.which("npm"):
        lib = workspace / "lib"
        lib.mkdir()
        (lib / "package.json").write_text('{"name": "lib", "version": "1.0.0", "main": "index.js"}')
        (lib / "index.js").write_text("module.exports = 42;\n")
        # (--no-save: a tarball saved as a dependency is asked, its package.json never judged: red team 114 F4)
        steps.append(
            "npm pack -s ./lib >/dev/null && npm install -s --offline --no-audit --no-fund --no-save ./lib-1.0.0.tgz"
        )
    if shutil.which("python3"):
        steps.append("python3 -m venv .venv && .venv/bin/pip --version > /dev/null")  # pip installs pip, offline
    if not steps:
        pytest.skip("no npm or python3 here")
    person = Person(False)
    async with serve(SX, workspace, mode="legacy", elicitation_callback=person) as client:
        with anyio.fail_after(280):
            out = await sh(client, " && ".join(steps), timeoutSeconds=240)
    assert out["exitCode"] == 0, out["stderr"]
    assert out["transaction"] == "applied" and person.asked == [], out["changes"]
    if shutil.which("npm"):
        assert (workspace / "node_modules" / "lib" / "index.js").read_text() == "module.exports = 42;\n"
    if shutil.which("python3"):
        assert list((workspace / ".venv" / "lib").glob("python3*/site-packages/pip/__init__.py"))


async def test_an_everyday_build_into_build_is_applied_without_a_question(workspace: Path) -> None:
    (workspace / "build" / "old").mkdir(parents=True)
    for i in range(50):
        (workspace / "build" / "old" / f"o{i}.o").write_text("stale")
    person = Person(False)
    build = (
        "printf 'all:\\n\\trm -rf build/old\\n\\tmkdir -p build/obj\\n"
        "\\tfor i in $$(seq 60); do echo $$i > build/obj/$$i.o; done\\n' > Makefile && make -s && ls build/obj | wc -l"
    )
    async with serve(SX, workspace, mode="legacy", elicitation_callback=person) as client:
        out = await sh(client, build)
    assert out["stdout"] == "60\n" and out["transaction"] == "applied" and person.asked == []
    assert len(list((workspace / "build" / "obj").iterdir())) == 60 and not (workspace / "build" / "old").exists()


# -- without a copy ------------------------------------------------------------------------------------------------


async def test_without_a_copy_commands_write_directly_and_say_so(workspace: Path) -> None:
    async with serve(SX, workspace, "--transactions", "off") as client:
        out = await sh(client, "echo direct > direct.txt")
    assert out["transaction"] == "none" and (workspace / "direct.txt").exists()


async def test_a_tree_deletion_without_a_copy_is_refused_naming_what_it_would_do_and_on_a_copy_judged_by_effect(
    workspace: Path,
) -> None:
    (workspace / "build").mkdir()
    (workspace / "build" / "a.o").write_bytes(b"o")
    async with serve(SX, workspace, "--transactions", "off") as client:
        refused = await client.call_tool("shell_exec", {"command": "rm -rf build"})
    error = error_of(refused)
    assert error["code"] == "COMMAND_DENIED" and "`rm -rf build` would remove or replace" in error["suggestion"]
    assert "nothing kept to undo it" in error["suggestion"] and (workspace / "build" / "a.o").exists()
    async with serve(SX, workspace) as client:
        out = await sh(client, "rm -rf build")
    assert out["transaction"] == "applied" and not (workspace / "build").exists()


def test_transactions_required_refuses_to_start_where_no_copy_can_be_made(workspace: Path) -> None:
    from support import refused_start

    done = refused_start(SX, workspace, "--transactions", "required", "--sandbox", "off")
    assert done.returncode == 2 and b"--transactions required" in done.stderr


def test_the_start_up_says_when_commands_write_the_files_directly(workspace: Path) -> None:
    proc = subprocess.run(
        [console_script(SX), "--sandbox", "off", "--audit-log", str(workspace.parent / "a.jsonl")],
        cwd=workspace,
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert b"commands write the files directly (transaction: none)" in proc.stderr


def test_changed_paths_in_the_result_are_what_the_audit_record_names(workspace: Path, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    client = RawClient([console_script(SX), "--audit-log", str(audit)], workspace)
    try:
        client.initialize()
        answer = client.request(1, "tools/call", {"name": "shell_exec", "arguments": {"command": "echo x > made.txt"}})
    finally:
        client.close()
    out = answer["result"]["structuredContent"]
    record = [json.loads(line) for line in audit.read_text().splitlines() if '"outcome"' in line][-1]
    assert record["audit_id"] == out["auditId"] and record["transaction"] == "applied"
    assert record["changes"] == out["changes"]["summary"] == "create 1 file"


async def test_a_tree_thousands_of_levels_deep_fails_cleanly_and_leaves_no_copy(workspace: Path) -> None:
    copies = Path(os.environ["XDG_STATE_HOME"]) / "mcp-guard" / "copies"
    deep = "python3 -c \"import os\nfor _ in range(1500): os.mkdir('d'); os.chdir('d')\nopen('f', 'w').write('a')\""
    async with serve(SX, workspace) as client:
        out = await sh(client, f"mkdir deep && cd deep && {deep} && echo built")
        assert out["stdout"] == "built\n"
        assert out["transaction"] == "failed" and "levels deep" in out["changes"]["reason"], out["changes"]
        assert not (workspace / "deep").exists()
        left = [p for part in copies.iterdir() for p in part.glob("*/u*/deep")]
        assert left == []  # the copy went with it (the copies ready for the next calls are empty)
        again = await sh(client, "echo ok > ok.txt")  # the server goes on
        assert again["transaction"] == "applied" and (workspace / "ok.txt").read_text() == "ok\n"


def forged_journal(victim: Path, upper: Path) -> dict[str, Any]:
    """An apply journal that would have the applier put ``upper``'s file over ``victim``, outside every root."""
    change = {"path": victim.name, "action": "modify", "kind": "file", "size": 6, "old_size": 0, "mode": 0o644,
              "old_mode": 0o644, "top": "", "opaque": False, "origin": False, "mtime_ns": 0}  # fmt: skip
    op = {"kind": "place", "root": str(victim.parent), "path": victim.name, "upper": str(upper), "entry": "a" * 12,
          "change": change}  # fmt: skip
    return {"audit_id": "f0f0f0f0f0f0", "started_ns": 1 << 62, "what": {}, "baseline": {}, "ops": [op]}


async def test_a_history_forged_through_the_tools_never_makes_undo_or_a_start_act_outside(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # a server's fallback state directory, kept in the test
    (tmp_path / "tmp").mkdir()
    victim = tmp_path / "outside-the-roots" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text("user data\n")
    forged = isolated_home / "forged"
    forged.mkdir()
    (forged / "evil").mkdir()
    (forged / "evil" / "victim.txt").write_text("PWNED\n")
    (forged / "apply.json").write_text(json.dumps(forged_journal(victim, forged / "evil")) + "\n")
    record = {"audit_id": "f0f0f0f0f0f0", "roots": [str(victim.parent)], "time": "2026-01-01T00:00:00",
              "changes": [{"path": str(victim), "action": "create", "kind": "file"}]}  # fmt: skip
    (forged / "call.json").write_text(json.dumps(record))
    history = "~/.local/state/mcp-guard/history"
    plant = (
        f"mkdir -p {history}/.journal {history}/calls && "
        f"cp forged/apply.json {history}/.journal/apply-f0f0f0f0f0f0.json && "
        f"cp forged/call.json {history}/calls/f0f0f0f0f0f0.json; echo hi > note.txt; echo done"
    )
    for _ in range(2):  # the second start would finish a journal it found
        async with serve(SX, isolated_home) as client:
            out = await sh(client, plant)
            assert out["stdout"] == "done\n" and out["transaction"] == "applied", out  # the state dir in a root: a copy
            async with serve("mcp-server-file-write", isolated_home) as writer:
                with anyio.fail_after(30):
                    wrote = await writer.call_tool(
                        "file_write",
                        {"path": ".local/state/mcp-guard/history/calls/f0f0f0f0f0f0.json", "content": "{}"},
                    )
                assert wrote.is_error and error_of(wrote)["code"] in ("PATH_DENIED", "PROTECTED_PATH"), wrote
    state = isolated_home / ".local" / "state" / "mcp-guard"
    assert not list(state.rglob("*f0f0f0f0f0f0*"))
    assert (isolated_home / "note.txt").read_text() == "hi\n"
    done = undo("f0f0f0f0f0f0")
    assert done.returncode == 1, done.stderr
    assert victim.read_text() == "user data\n"


def server_fds(cwd: Path) -> int:
    """How many descriptors the shell_exec server started in ``cwd`` holds (found through /proc)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if SX in (proc / "cmdline").read_bytes().decode(errors="replace") and os.readlink(proc / "cwd") == str(cwd):
                return len(os.listdir(proc / "fd"))
        except OSError:
            continue
    raise AssertionError("the server's process was not found")


async def test_applying_a_thousand_files_leaves_no_descriptor_open(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        await sh(client, "echo warm > warm.txt")
        before = server_fds(workspace)
        for batch in range(3):  # files in an existing directory: one step each (a new directory is one rename)
            out = await sh(client, f"mkdir -p many && touch $(seq -f 'many/b{batch}-%g' 1 1000)")
            assert out["transaction"] == "applied" and out["changes"]["created"] >= 1000, out["changes"]
        assert server_fds(workspace) <= before + 8  # a few come and go (ready boxes, spools); not one per file
    assert len(list((workspace / "many").iterdir())) == 3000


async def test_an_apply_waits_while_another_server_holds_the_project(workspace: Path) -> None:
    from mcp_server_guard.files.treelock import tree_lock

    copies = Path(os.environ["XDG_STATE_HOME"]) / "mcp-guard" / "copies"
    async with serve(SX, workspace) as client:
        await sh(client, "true")  # started, its copies' area made
        result: dict[str, Any] = {}

        async def call() -> None:
            result.update(await sh(client, "echo late > late.txt"))

        with contextlib.ExitStack() as held:
            held.enter_context(tree_lock([os.stat(workspace).st_dev]))  # another server, mid-apply
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(call)
                with anyio.fail_after(30):
                    while not list(copies.glob("*/*/u*/late.txt")):  # the command has run on its copy
                        await anyio.sleep(0.01)
                await anyio.sleep(0.3)  # the other server's apply takes its time
                released = time.time_ns()
                held.close()  # ... and is done
    assert result["transaction"] == "applied"
    # Applied only once the lock was free (file times are stamped with a coarse clock: a few ms of slack).
    assert (workspace / "late.txt").stat().st_ctime_ns >= released - 20_000_000


async def test_names_that_are_not_utf8_or_hold_control_characters_are_shown_escaped_and_undo(
    workspace: Path,
) -> None:
    person = Person(True)
    async with serve(SX, workspace, elicitation_callback=person) as client:
        out = await sh(client, "touch $'junk\\xff' && echo edit > hello.txt")
        assert out["transaction"] == "applied"
        assert "junk\\xff" in {p["path"] for p in out["changes"]["paths"]}
        asked = await sh(client, "printf x > $'tool\\n\\nNothing else.\\e[8m' && chmod +x tool*")
    assert asked["transaction"] == "applied"
    assert person.asked and "\n" not in person.asked[0] and "\x1b" not in person.asked[0]
    assert "tool\\n\\nNothing else.\\x1b[8m" in person.asked[0]
    assert os.path.exists(os.fsencode(workspace) + b"/junk\xff")
    done = undo(out["auditId"])
    assert done.returncode == 0, done.stderr
    assert not os.path.exists(os.fsencode(workspace) + b"/junk\xff")
    assert (workspace / "hello.txt").read_text() == "hello\nworld\n"


async def test_a_command_that_throws_away_uncommitted_work_asks_and_a_stash_or_an_edit_does_not(
    workspace: Path,
) -> None:
    """git reset --hard, checkout -- and restore put files back to git's copy: on a copy they are judged by that
    effect, asked, and (declined) change nothing; git stash keeps the work, and an edit keeps it too."""
    assert git(workspace, "init", "-q", "-b", "main").returncode == 0
    (workspace / "a.txt").write_text("committed\n")
    (workspace / "b.txt").write_text("committed\n")
    assert git(workspace, "add", "a.txt", "b.txt").returncode == 0
    assert git(workspace, "commit", "-qm", "one").returncode == 0
    (workspace / "a.txt").write_text("my uncommitted work\n")
    person = Person(False)
    async with serve(SX, workspace, elicitation_callback=person) as client:
        for discard in ("git checkout -- a.txt", "git reset -q --hard", "git restore a.txt"):
            out = await sh(client, discard)
            assert out["transaction"] != "applied", (discard, out)
            assert (workspace / "a.txt").read_text() == "my uncommitted work\n", discard
        assert len(person.asked) == 3 and all("discards uncommitted changes" in q for q in person.asked)
        edited = await sh(client, "sed -i 's/work/WORK/' a.txt && echo more >> b.txt")
        assert edited["transaction"] == "applied" and len(person.asked) == 3
        stashed = await sh(client, f"{' '.join(f'{k}={v}' for k, v in GIT_ENV.items())} git stash -q")
    assert stashed["transaction"] == "applied" and len(person.asked) == 3
    assert (workspace / "a.txt").read_text() == "committed\n"
    assert "my uncommitted WORK" in git(workspace, "stash", "show", "-p").stdout


@pytest.mark.parametrize("transactions", ["auto", "off"])
async def test_a_roots_own_area_is_hidden_from_commands_and_cannot_be_reshaped(
    workspace: Path, transactions: str
) -> None:
    # Another server's copies in this root's own area (its state directory on another file system): its
    # unapplied work, and the part directories a start-up clean-up judges by their locks.
    part = workspace / ".mcp-guard" / "copies" / "4242-0badc0de"
    (part / "abc" / "u0").mkdir(parents=True)
    (part / "abc" / "u0" / "draft.txt").write_text("TOPSECRET-draft\n", encoding="utf-8")
    (part / "lock").write_text("", encoding="utf-8")
    reshape = (
        "cat .mcp-guard/copies/*/*/u0/draft.txt; ls -a .mcp-guard; "
        "mv .mcp-guard/copies .mcp-guard/c.old; ln -s / .mcp-guard/copies; rm -f .mcp-guard/copies/4242-0badc0de/lock"
    )
    async with serve(SX, workspace, "--transactions", transactions) as client:
        out = await sh(client, reshape)
    assert "TOPSECRET" not in out["stdout"] + out["stderr"]
    assert (part / "lock").exists() and not (workspace / ".mcp-guard" / "copies").is_symlink()
    assert (part / "abc" / "u0" / "draft.txt").read_text(encoding="utf-8") == "TOPSECRET-draft\n"


def test_the_start_up_clean_up_never_follows_an_area_or_a_part_made_a_symlink(tmp_path: Path) -> None:
    from mcp_server_guard.files.liveness import OwnedDir
    from mcp_server_guard.files.trees import remove_dead

    victim = tmp_path / "victim"
    (victim / ".starting-1-aaaaaaaa").mkdir(parents=True)
    (victim / "5-bbbbbbbb").mkdir()
    (victim / "5-bbbbbbbb" / "lock").write_text("", encoding="utf-8")
    area = tmp_path / "area"
    area.symlink_to(victim)
    assert remove_dead(area) == 0 and len(list(victim.iterdir())) == 2  # nothing followed, nothing removed
    with pytest.raises(OSError):
        OwnedDir(area)
    real = tmp_path / "real"
    real.mkdir()
    (real / "6-cccccccc").symlink_to(victim / "5-bbbbbbbb")  # a part of our name that is a symlink
    assert remove_dead(real) == 0 and (victim / "5-bbbbbbbb" / "lock").exists()


def test_an_area_a_command_made_a_symlink_stops_the_call_rather_than_being_masked_through() -> None:
    import tempfile

    from mcp_server_guard.errors import SecurityError
    from mcp_server_guard.protected import own_areas

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        assert own_areas([str(root)]) == []
        (root / ".mcp-guard").symlink_to("/")
        with pytest.raises(SecurityError, match="not a directory"):
            own_areas([str(root)])
        (root / ".mcp-guard").unlink()
        (root / ".mcp-guard").mkdir()
        assert own_areas([str(root)]) == [str(root / ".mcp-guard")]


async def test_attack_refused_bytes_in_held_change_sets_count_against_the_held_bound(
    workspace: Path, tmp_path: Path
) -> None:
    """Held sets keep their whole copy (refused files too): those bytes count, so two sets that each keep 3 MB of
    refused data are not both kept under a 4 MB bound."""
    victim(workspace, 30)
    policy = tmp_path / "policy.toml"
    policy.write_text("[effects]\nheld_max_bytes = 4000000\n")
    big = "head -c 3000000 /dev/zero > .vscode/big.bin"
    async with serve(SX, workspace, "--policy", str(policy), mode="auto", elicitation_callback=Person(True)) as client:
        first = await sh(client, f"mkdir -p .vscode && {big}; rm -rf victim/d1")
        second = await sh(client, f"mkdir -p .vscode && {big}; rm -rf victim/d2")
        assert first["transaction"] == second["transaction"] == "held", (first, second)
        with anyio.fail_after(60):
            again = await client.call_tool("shell_exec", {"command": "", "applyChanges": first["pendingChanges"]["id"]})
    assert again.is_error and error_of(again)["code"] == "CHANGES_NOT_FOUND", again


async def test_attack_a_change_set_alone_over_the_held_bound_is_never_reported_waiting(
    workspace: Path, tmp_path: Path
) -> None:
    """A set that needs a yes and alone keeps more than held_max_bytes is dropped at once: the result says so
    ("failed", nothing applied), never "held" with an id that applyChanges then does not find."""
    victim(workspace, 30)
    policy = tmp_path / "policy.toml"
    policy.write_text("[effects]\nheld_max_bytes = 1000000\n")
    async with serve(SX, workspace, "--policy", str(policy), mode="auto", elicitation_callback=Person(True)) as client:
        result = await sh(client, "head -c 3000000 /dev/zero > big.bin; rm -rf victim/d1")
    assert result["transaction"] == "failed" and "held_max_bytes" in result["changes"]["reason"], result
    assert not result["pendingChanges"]["id"]
    assert not (workspace / "big.bin").exists() and (workspace / "victim" / "d1").is_dir()
