"""The mcp-guard companion CLI: the demo end to end, and the audit viewer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support import console_script


def run(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(cwd / "state"), "HOME": str(cwd)}
    return subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL
    )


def test_demo_shows_an_allowed_read_and_refusals_with_codes(tmp_path: Path) -> None:
    proc = run([console_script("mcp-guard"), "demo"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "✓ read README.md" in out
    for code in ("PATH_OUTSIDE_JAIL", "SYMLINK_ESCAPE", "BINARY_FILE"):
        assert code in out
    assert "PRIVATE KEY" not in out
    for code in ("FILE_EXISTS", "SYMLINK_TARGET", "EXECUTABLE_EXTENSION", "PROTECTED_PATH"):
        assert code in out
    assert "previous content saved as" in out
    assert "mcp-guard history restore" in out and "notes.md now: 'first draft'" in out
    assert "✓ an allowed pipeline" in out and "│ apple" in out
    for code in ("COMMAND_DENIED", "ASK_DECLINED", "REDIRECT_OUTSIDE_JAIL"):
        assert code in out
    assert "the human answers: approve" in out and "approved by a human" in out
    assert "all guards behaved as expected" in out
    assert "policyDecision None" not in out and "decision None" not in out
    # Which layers confined the commands is said, whatever they were (never implied by "as expected").
    assert "layers that confined the commands: " in out or "NO kernel sandbox" in out
    if "a bubblewrap box" not in out:
        assert "the box (bubblewrap) did NOT start" in out


def test_the_demo_says_when_the_box_did_not_start() -> None:
    from mcp_server_guard.admin.demo import _layers_said

    said = _layers_said(["landlock-v7+seccomp"])
    assert "Landlock ABI 7" in said and "did NOT start" in said
    assert "NO kernel sandbox" in _layers_said(["none"])
    assert "did NOT start" not in _layers_said(["bwrap+pidns+mountns+nocaps+seccomp+landlock-v7+netns+egress-proxy"])


def test_mcp_guard_alone_prints_its_help_laid_out_and_has_a_version(tmp_path: Path) -> None:
    alone = run([console_script("mcp-guard")], tmp_path)
    assert alone.returncode == 0 and alone.stdout.startswith("Usage: mcp-guard")
    assert len(alone.stdout.splitlines()) > 10 and "error" not in alone.stderr
    version = run([console_script("mcp-guard"), "--version"], tmp_path)
    assert version.returncode == 0 and version.stdout.strip().startswith("mcp-guard ")  # the program, by its name
    assert version.stdout.strip().endswith("(mcp-server-guard)")
    era = run([console_script("mcp-guard"), "demo", "--mode", "legacy"], tmp_path)
    assert era.returncode == 2 and "--mode" in era.stderr  # the protocol era is --protocol: --mode is a permission


def test_audit_command_shows_the_last_entries(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    entries = [
        {
            "time": f"2026-11-21T00:00:0{i}.000+00:00",
            "server": "file_read",
            "tool": "file_read",
            "arguments": {"path": f"f{i}.txt"},
            "decision": "deny" if i % 2 else "allow",
            "code": "PATH_OUTSIDE_JAIL" if i % 2 else None,
            "bytes": None,
            "durationMs": 1.5,
        }
        for i in range(5)
    ]
    log.write_text("".join(json.dumps(e) + "\n" for e in entries) + "not json\n", encoding="utf-8")
    proc = run([console_script("mcp-guard"), "audit", "-n", "2", "--audit-log", str(log)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2
    assert "f3.txt" in lines[0] and "deny PATH_OUTSIDE_JAIL" in lines[0]
    assert "f4.txt" in lines[1] and "allow" in lines[1]


def test_audit_command_reads_the_default_log(tmp_path: Path) -> None:
    default = tmp_path / "state" / "mcp-guard" / "audit.jsonl"
    default.parent.mkdir(parents=True)
    default.write_text(
        json.dumps({"server": "file_read", "decision": "allow", "arguments": {}}) + "\n", encoding="utf-8"
    )
    proc = run([console_script("mcp-guard"), "audit", "--json"], tmp_path)
    assert json.loads(proc.stdout)["decision"] == "allow"


def test_config_prints_host_json_for_the_three_servers(tmp_path: Path) -> None:
    proj, other = tmp_path / "proj", tmp_path / "other"
    proj.mkdir()
    other.mkdir()
    base = [console_script("mcp-guard"), "config", "--allow-path", str(proj), "--allow-path", str(other)]
    generic = json.loads(
        run([*base, "--network", "deny", "--policy", "readonly", "--mode", "read-only"], tmp_path).stdout
    )
    vscode = json.loads(run([*base, "--host", "vscode"], tmp_path).stdout)
    servers = generic["mcpServers"]
    assert set(servers) == {"file_read", "file_write", "shell_exec"}
    for name, entry in servers.items():
        assert Path(entry["command"]).is_absolute() and Path(entry["command"]).exists()
        assert entry["args"][:4] == ["--launch-dir", str(proj), "--allow-path", str(other)]
        assert "--policy" in entry["args"]
        assert entry["args"][entry["args"].index("--mode") + 1] == "read-only"
        assert ("--network" in entry["args"]) is (name == "shell_exec")
    assert set(vscode["servers"]) == set(servers)
    assert all(e["type"] == "stdio" for e in vscode["servers"].values())
    bad = run([console_script("mcp-guard"), "config", "--allow-path", str(tmp_path / "nope")], tmp_path)
    assert bad.returncode == 2 and "no such directory" in bad.stderr


def test_config_never_prints_a_configuration_that_cannot_start(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    bad_policy = tmp_path / "bad.toml"
    bad_policy.write_text("[file_read]\nmax_read_byte = 3\n", encoding="utf-8")
    config = [console_script("mcp-guard"), "config"]
    cases = {
        "policy": ([*config, "--allow-path", str(proj), "--policy", str(bad_policy)], "did you mean 'max_read_bytes'"),
        "root": ([*config, "--allow-path", "/"], "audit"),
        "empty": ([*config, "--allow-path", ""], "is empty"),
        "tilde": ([*config, "--allow-path", "~/no-such-project"], "'~' is not expanded"),
    }
    for name, (args, said) in cases.items():
        done = run(args, tmp_path)
        assert done.returncode == 2 and said in done.stderr, (name, done.stderr)
        assert done.stdout == "", name  # nothing to paste
    home = run([*config, "--allow-path", str(tmp_path)], tmp_path)  # run() makes tmp_path the HOME
    assert home.returncode == 0 and "is an allowed root: everything below it is in the jail" in home.stderr
    # The mode is always printed (hosts assume different ones), and what is printed starts.
    printed = json.loads(
        run([*config, "--allow-path", str(proj), "--audit-log", str(tmp_path / "a.jsonl")], tmp_path).stdout
    )
    for entry in printed["mcpServers"].values():
        assert entry["args"][entry["args"].index("--mode") + 1] == "workspace-write"
        started = subprocess.run(
            [entry["command"], *entry["args"]], cwd=tmp_path, input=b"", capture_output=True, timeout=60, check=False
        )
        assert started.returncode == 0, started.stderr


def test_launch_dir_replaces_the_working_directory(tmp_path: Path) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "a.txt").write_text("from the launch dir\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("cwd file\n", encoding="utf-8")
    params = StdioServerParameters(
        command=console_script("mcp-server-file-read"),
        args=["--launch-dir", str(proj), "--audit-log", str(tmp_path / "audit.jsonl")],
        cwd=str(tmp_path),
    )

    async def main() -> tuple[object, object]:
        async with Client(params, mode="legacy") as client:
            return await client.call_tool("file_read", {"path": "a.txt"}), await client.call_tool(
                "file_read", {"path": str(tmp_path / "b.txt")}
            )

    inside, cwd_file = anyio.run(main)
    assert inside.structured_content["content"] == "from the launch dir\n"  # type: ignore[attr-defined]
    assert cwd_file.is_error  # type: ignore[attr-defined]  # the real cwd is not a root any more


def test_audit_command_pairs_intent_and_outcome_into_one_line_per_call(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()

    def record(audit_id: str, phase: str, pid: int, **extra: object) -> dict[str, object]:
        base = {"audit_id": audit_id, "phase": phase, "time": f"2026-11-21T00:00:0{len(audit_id)}.000+00:00"}
        return {**base, "server": "file_write", "tool": "file_write", "pid": pid, **extra}

    lines = [
        {"server": "file_read", "decision": "allow", "arguments": {"path": "legacy.txt"}, "durationMs": 1.0},
        record("a1", "intent", dead.pid, arguments={"path": "done.txt"}),
        record("b22", "intent", dead.pid, arguments={"path": "crashed.txt"}),
        record("c333", "outcome", dead.pid, arguments={"path": "../out"}, decision="deny", code="PATH_OUTSIDE_JAIL"),
        record("a1", "outcome", dead.pid, arguments={"path": "done.txt"}, decision="allow", bytes=5, durationMs=2.5),
        record("d4444", "intent", os.getpid(), arguments={"path": "slow.txt"}),
    ]
    log = tmp_path / "audit.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    proc = run([console_script("mcp-guard"), "audit", "--audit-log", str(log)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    shown = proc.stdout.strip().splitlines()
    assert len(shown) == 5, shown  # one line per call, in the order the calls started
    assert "legacy.txt" in shown[0]
    assert "done.txt" in shown[1] and "allow" in shown[1] and "5B" in shown[1]
    assert "crashed.txt" in shown[2] and "INTERRUPTED" in shown[2]
    assert "../out" in shown[3] and "deny PATH_OUTSIDE_JAIL" in shown[3]
    assert "slow.txt" in shown[4] and "RUNNING" in shown[4]
    last_two = run([console_script("mcp-guard"), "audit", "-n", "2", "--json", "--audit-log", str(log)], tmp_path)
    calls = [json.loads(line) for line in last_two.stdout.splitlines()]
    assert [(c["audit_id"], c["status"]) for c in calls] == [("c333", "done"), ("d4444", "running")]


def test_audit_records_name_their_project_and_the_view_filters_and_follows(tmp_path: Path, isolated_home: Path) -> None:
    import anyio

    from support import serve

    log = tmp_path / "audit.jsonl"
    one, two = tmp_path / "one", tmp_path / "two"
    for project in (one, two):
        project.mkdir()
        (project / "a.txt").write_text("x\n", encoding="utf-8")
    view = [console_script("mcp-guard"), "audit", "--audit-log", str(log), "--json"]

    def filters() -> None:
        records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        assert {r["launch_dir"] for r in records} == {str(one), str(two)}
        assert all(r["roots"] == [r["launch_dir"]] for r in records)
        mine = [json.loads(line) for line in run([*view, "--project", str(one)], tmp_path).stdout.splitlines()]
        assert len(mine) == 2 and {e["launch_dir"] for e in mine} == {str(one)}
        denied = [json.loads(line) for line in run([*view, "--decision", "deny"], tmp_path).stdout.splitlines()]
        assert len(denied) == 1 and denied[0]["code"] == "PATH_OUTSIDE_JAIL"
        assert run([*view, "--since", "1d"], tmp_path).stdout.count("\n") == 3
        assert run([*view, "--since", "2999-01-01"], tmp_path).stdout == ""
        assert run([*view, "--server", "file_write"], tmp_path).stdout == ""
        assert run([*view, "--since", "yesterday"], tmp_path).returncode == 2

    async def scenario() -> None:
        # One server per project serves both rounds of calls: a call's record is in the log when its answer
        # came (the views below read it with the servers idle).
        async with (
            serve("mcp-server-file-read", one, audit=log) as in_one,
            serve("mcp-server-file-read", two, audit=log) as in_two,
        ):

            async def calls() -> None:
                with anyio.fail_after(60):
                    await in_one.call_tool("file_read", {"path": "a.txt"})
                    await in_one.call_tool("file_read", {"path": "../two/a.txt"})  # refused: outside the jail
                    await in_two.call_tool("file_read", {"path": "a.txt"})

            await calls()
            filters()
            # --follow prints calls as they end, from the end of the log on.
            env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}
            follower = subprocess.Popen(
                [*view, "--last", "1", "--follow", "--project", str(two)], stdout=subprocess.PIPE, text=True, env=env
            )
            try:
                assert json.loads(_line(follower))["launch_dir"] == str(two)  # the last matching call
                await calls()
                fresh = json.loads(_line(follower))  # the new call in two (the two in one are not shown)
                assert fresh["launch_dir"] == str(two) and fresh["status"] == "done"
            finally:
                follower.kill()
                follower.wait(timeout=10)
                if follower.stdout is not None:
                    follower.stdout.close()

    anyio.run(scenario)


def _line(proc: subprocess.Popen[str], timeout: float = 30) -> str:
    import select

    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "no line in time"
    return proc.stdout.readline()


def test_a_path_of_the_wrong_kind_is_one_line_and_exit_1_not_a_traceback(tmp_path: Path) -> None:
    a_dir, a_file = tmp_path / "d", tmp_path / "f"
    a_dir.mkdir()
    a_file.write_text("x")
    for args in (
        ["audit", "--audit-log", str(a_dir)],
        ["history", "list", "--history-dir", str(a_file)],
        ["history", "prune", "--history-dir", str(a_file)],
    ):
        done = run([console_script("mcp-guard"), *args], tmp_path)
        assert done.returncode == 1, (args, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert done.stderr.startswith("mcp-guard: ") and str(tmp_path) in done.stderr


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
def test_check_leads_with_what_the_server_does_on_this_machine(tmp_path: Path) -> None:
    """``rm -rf build`` runs on a copy here (the box works): the first line and the exit code say so, then the
    plain verdict for a server that writes the files directly (issue 43: it led with deny, exit 20)."""
    done = run([console_script("mcp-guard"), "check", "rm -rf build"], tmp_path)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done
    assert lines[0].startswith("on this machine: allow") and lines[1].startswith("decision: deny"), lines


def _without_bwrap(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH has everything of the real one but bubblewrap: no box here."""
    shadow = tmp_path / "no-bwrap-bin"
    shadow.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        for entry in Path(directory).glob("*") if Path(directory).is_dir() else []:
            if entry.name != "bwrap" and not (shadow / entry.name).exists():
                (shadow / entry.name).symlink_to(entry)
    return {**os.environ, "PATH": str(shadow), "XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}


def _check_file(tmp_path: Path, *flags: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    listing = tmp_path / "lines.txt"
    listing.write_text("rm -rf build\nls -la\nsudo apt install vim\n", encoding="utf-8")
    argv = [console_script("mcp-guard"), "check", "--file", str(listing), *flags]
    if env is None:
        return run(argv, tmp_path)
    return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
                          stdin=subprocess.DEVNULL, check=False)  # fmt: skip


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
def test_check_file_leads_with_what_the_server_does_on_this_machine(tmp_path: Path) -> None:
    # Issue 45 item 6: `rm -rf build` runs on a copy here. --file said "deny rm-recursive-force" and exited 20 (the
    # plain verdict); the situation comes first now, each line's verdict here before the plain one, and the exit code
    # is what a server here does (the strictest: `sudo` is asked).
    done = _check_file(tmp_path)
    lines = done.stdout.splitlines()
    assert done.returncode == 10, done
    assert lines[0].startswith("on this machine: shell_exec runs each command on a copy here"), lines
    assert lines[2].split()[:4] == ["1", "allow", "deny", "rm-recursive-force"], lines
    assert lines[3].split()[:3] == ["2", "allow", "allow"] and lines[4].split()[:3] == ["3", "ask", "ask"], lines
    assert "3 lines on this machine: 2 allow, 1 ask, 0 deny (plain: 1 allow, 1 ask, 1 deny)" in done.stderr
    as_json = _check_file(tmp_path, "--json")
    verdicts = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert as_json.returncode == 10 and list(verdicts[0])[2:5] == ["onThisMachine", "situation", "decision"]
    assert [(v["onThisMachine"], v["decision"]) for v in verdicts] == [("allow", "deny"), ("allow", "allow"),
                                                                      ("ask", "ask")]  # fmt: skip
    assert "on a copy here" in verdicts[0]["situation"]


def test_check_file_without_the_box_says_so_and_exits_by_the_rules(tmp_path: Path) -> None:
    env = _without_bwrap(tmp_path)
    done = _check_file(tmp_path, env=env)
    lines = done.stdout.splitlines()
    assert done.returncode == 20, done
    assert lines[0].startswith("on this machine: no box here"), lines
    assert lines[2].split()[:4] == ["1", "deny", "deny", "rm-recursive-force"], lines
    one = subprocess.run([console_script("mcp-guard"), "check", "rm -rf build"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env=env, check=False)  # fmt: skip
    assert one.returncode == 20 and one.stdout.startswith("on this machine: deny (no box here"), one


def test_check_file_with_mode_read_only_leads_with_what_a_read_only_server_does_here(tmp_path: Path) -> None:
    done = _check_file(tmp_path, "--mode", "read-only")
    first = done.stdout.splitlines()[0]
    assert first.startswith("on this machine, --mode read-only: "), done
    if shutil.which("bwrap") is not None:
        assert "read-only view" in first and done.returncode == 10, done
    else:
        assert "allow-list" in first and done.returncode == 20, done


def test_check_with_mode_read_only_leads_with_what_a_read_only_server_does_here(tmp_path: Path) -> None:
    # Issue 45 item 6: with the box a read-only session runs a linter (the kernel refuses its writes); without it
    # the read-only allow-list refuses what it does not name. The deny rules hold either way.
    lint = run([console_script("mcp-guard"), "check", "--mode", "read-only", "ruff check ."], tmp_path)
    denied = run([console_script("mcp-guard"), "check", "--mode", "read-only", "rm -rf ~"], tmp_path)
    assert denied.returncode == 20 and "rule:     rm-recursive" in denied.stdout, denied
    first = lint.stdout.splitlines()[0]
    if shutil.which("bwrap") is not None:
        assert lint.returncode == 0 and first.startswith("on this machine, --mode read-only: allow"), lint
        assert "read-only view" in first, first
    else:
        assert lint.returncode == 20 and "allow-list" in first, lint
