"""Red team 183 F3 (LOW): the state directory that holds ``compiled/`` (and ``front/``) is registered as the server's
own (hidden from every other server's tools and commands, ``registry``) only when build_config finds it in use: a
server whose state paths are all explicit (``--audit-log`` elsewhere, as hosts and this suite pass it) registers
only those, and its front makes ``$XDG_STATE_HOME/mcp-guard/compiled`` afterwards (at the first answer). A second
server of the user with another XDG_STATE_HOME, whose root holds that directory (HOME as launch directory: warned
but allowed), then does not hide it: its model rewrites (or reads, deletes, swaps: see F2) the first server's
sealed code cache, which that server runs OUTSIDE the box at its next start. The seal still stops code of the
model's choosing (it holds the user's key, which stays hidden), so the class is "a file the server executes is
reachable by another server's tools", with the seal as the only wall left.

Run: cd /work/rt183 && timeout 600 .venv/bin/python -m pytest -n 1 -p no:cacheprovider \
         tests/redteam183/test_rt183_f3_unregistered_state_dir.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from support import RawClient, console_script


def _first_server(workspace: Path, *extra: str) -> None:
    """Server B: file_read on the project, default XDG_STATE_HOME (the test's HOME), one call (its cache kept)."""
    argv = [console_script("mcp-server-file-read"), "--launch-dir", str(workspace), *extra]
    client = RawClient(argv, workspace)
    try:
        client.initialize()
        client.request(1, "tools/call", {"name": "file_read", "arguments": {"path": "hello.txt"}}, timeout=60)
        client.end_input()
    finally:
        client.close()


def _second_server_writes(home: Path, other_state: Path, relative: str) -> dict[str, Any]:
    """Server A: file_write launched in HOME, with another XDG_STATE_HOME; its model writes ``relative``."""
    env = dict(os.environ, XDG_STATE_HOME=str(other_state))
    argv = [console_script("mcp-server-file-write"), "--launch-dir", str(home),
            "--audit-log", str(other_state / "a-audit.jsonl")]  # fmt: skip
    client = RawClient(argv, home, env=env)
    try:
        client.initialize()
        arguments = {"path": relative, "content": "not a cache\n", "overwrite": True}
        answer = client.request(1, "tools/call", {"name": "file_write", "arguments": arguments}, timeout=60)
        client.end_input()
    finally:
        client.close()
    return answer


def _attempt(workspace: Path, home: Path, tmp_path: Path, *b_flags: str) -> tuple[bytes, bytes, dict[str, Any]]:
    _first_server(workspace, *b_flags)
    compiled = home / ".local" / "state" / "mcp-guard" / "compiled"
    assert len(list(compiled.iterdir())) == 1  # B's sealed cache
    # (file_write refuses a "*.bin" name anywhere, as an executable's: a file beside it shows the reach; A's
    # shell_exec, whose box does not hide the directory either, moves, copies or removes the .bin itself)
    target = compiled / "beside.txt"
    other_state = tmp_path / "other-state"
    other_state.mkdir(mode=0o700)
    answer = _second_server_writes(home, other_state, str(target.relative_to(home)))
    return b"", target.read_bytes() if target.exists() else b"", answer


def test_attack_another_servers_file_write_reaches_the_code_cache_of_a_server_with_an_explicit_audit_log(
    workspace: Path, isolated_home: Path, tmp_path: Path
) -> None:
    audit = tmp_path / "b-audit.jsonl"
    before, after, answer = _attempt(workspace, isolated_home, tmp_path, "--audit-log", str(audit))
    assert after == before, (
        "server A's model wrote into server B's compiled/ (B's state directory is not registered as B's, so A "
        f"does not hide it): {json.dumps(answer)[:300]}"
    )


def test_control_the_same_write_is_refused_when_the_state_directory_was_registered(
    workspace: Path, isolated_home: Path, tmp_path: Path
) -> None:
    before, after, answer = _attempt(workspace, isolated_home, tmp_path)  # B's audit log in its state directory
    assert after == before, json.dumps(answer)[:300]
    assert answer.get("result", {}).get("isError") or "error" in answer
