"""The mcp-guard companion CLI: the demo end to end, and the audit viewer."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

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
