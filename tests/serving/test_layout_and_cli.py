"""Packaging, the public surface, and the command-line contract (exit codes, stderr only)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import RawClient, console_script

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["common", "policies"])
def test_no_bare_top_level_common_or_policies_import(name: str) -> None:
    assert importlib.util.find_spec(name) is None


def run(args: list[str], cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(cwd / "state")}
    return subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL
    )


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_missing_allow_path_exits_2_with_one_line(tmp_path: Path) -> None:
    proc = run([console_script("mcp-server-file-read"), "--allow-path", str(tmp_path / "nope")], tmp_path)
    assert "no such directory" in one_error_line(proc)


def test_bad_flag_exits_2_with_one_line(tmp_path: Path) -> None:
    proc = run([console_script("mcp-server-file-read"), "--frobnicate"], tmp_path)
    assert "frobnicate" in one_error_line(proc)
    proc = run([console_script("mcp-server-file-read"), "--symlinks", "sometimes"], tmp_path)
    assert "sometimes" in one_error_line(proc)


def test_invalid_policy_file_exits_2_naming_the_key(tmp_path: Path) -> None:
    policy = tmp_path / "bad.toml"
    policy.write_text("[file_read]\nmax_read_bytes = -1\n", encoding="utf-8")
    line = one_error_line(run([console_script("mcp-server-file-read"), "--policy", str(policy)], tmp_path))
    assert "[file_read].max_read_bytes" in line
    line = one_error_line(run([console_script("mcp-server-file-read"), "--policy", str(tmp_path / "x")], tmp_path))
    assert "cannot read policy file" in line


def test_version_and_python_dash_m(tmp_path: Path) -> None:
    proc = run([console_script("mcp-server-file-read"), "--version"], tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("mcp-server-file-read ")
    proc = run([sys.executable, "-m", "mcp_server_file_read", "--help"], tmp_path)
    assert proc.returncode == 0 and "--allow-path" in proc.stdout


def test_malformed_input_on_stdin_never_kills_the_server(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("ok\n", encoding="utf-8")
    raw = RawClient([console_script("mcp-server-file-read"), "--audit-log", str(tmp_path / "audit.jsonl")], tmp_path)
    try:
        raw.send_raw(b"this is not json\n")
        raw.initialize()
        raw.send_raw(b"\xff\xfe garbage \x00\n")
        raw.send_raw(b'{"jsonrpc": "2.0", "id": 99, "method": "no/such/method"}\n')
        bad = raw.request(2, "tools/call", {"name": "file_read", "arguments": "x"})
        huge = raw.request(3, "tools/call", {"name": "file_read", "arguments": {"path": "a" * 100_000}})
        good = raw.request(4, "tools/call", {"name": "file_read", "arguments": {"path": "a.txt"}})
    finally:
        raw.close()
    assert "error" in bad or bad["result"]["isError"]
    assert huge["result"]["isError"]
    assert good["result"]["structuredContent"]["content"] == "ok\n"


def test_server_logs_only_to_stderr(tmp_path: Path) -> None:
    init = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", '
        b'"capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}\n'
    )
    proc = subprocess.run(
        [console_script("mcp-server-file-read"), "--log-level", "DEBUG", "--audit-log", str(tmp_path / "a.jsonl")],
        cwd=tmp_path,
        input=init,
        capture_output=True,
        timeout=30,
    )
    for line in proc.stdout.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert proc.stderr  # the debug log went somewhere: stderr


def test_installed_package_finds_its_policy_without_the_repository() -> None:
    spec = importlib.util.find_spec("mcp_server_guard")
    assert spec is not None and spec.origin is not None
    policy = importlib.import_module("mcp_server_guard.policy")
    assert policy.default_policy_path().read_text(encoding="utf-8") == (ROOT / "policies" / "default.toml").read_text(
        encoding="utf-8"
    )
