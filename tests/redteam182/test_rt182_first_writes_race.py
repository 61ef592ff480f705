"""Red team 182: file_write's first calls, several at once (the front runs up to 4 on threads of their own), race the
first import of the git rule (git_dirs, hook_runs … loaded with the first path judged since af5cef6): each protected
target must still be refused, in a repository that exists at the start and in one made during the session."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from support import RawClient, console_script

FW = "mcp-server-file-write"
TARGETS = {
    ".git/hooks/pre-commit": "refused",
    ".git/config": "refused",
    "sub/.git/hooks/post-checkout": "refused",  # a repository made by the test before the calls, below the root
    "plain-1.txt": "written",
    "plain-2.txt": "written",
    ".git/info/exclude": "written",  # (not something git runs: written before the change too)
}


def _start(root: Path, state: Path) -> RawClient:
    state.mkdir(parents=True, exist_ok=True)
    args = [console_script(FW), "--allow-path", str(root), "--audit-log", str(state / "audit.jsonl"),
            "--history-dir", str(state / "history")]  # fmt: skip
    raw = RawClient(args, root, env=None, stderr=state / "err.txt")
    raw.initialize()
    return raw


@pytest.mark.parametrize("attempt", range(2))
def test_concurrent_first_writes_race_the_lazy_git_rule(workspace: Path, tmp_path: Path, attempt: int) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True, timeout=60)
    raw = _start(workspace, tmp_path / f"state{attempt}")
    try:
        # a repository made during the session (after the start, before any call): the git rule must see it
        subprocess.run(["git", "init", "-q", str(workspace / "sub")], check=True, timeout=60)
        ids = {}
        for i, path in enumerate(TARGETS, start=10):
            ids[i] = path
            arguments = {"path": path, "content": "echo rt182\n", "overwrite": True, "createDirs": True}
            call = {"name": "file_write", "arguments": arguments}
            raw.send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": call})
        results: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + 60
        while len(results) < len(ids) and time.monotonic() < deadline:
            message = raw.recv(timeout=60)
            if message.get("id") in ids:
                results[ids[message["id"]]] = message
    finally:
        raw.close()
    got = {}
    for path, message in results.items():
        result = message.get("result", {})
        got[path] = "refused" if result.get("isError") else "written"
        if result.get("isError"):
            text = str(result)
            assert "SECURITY" in text or "protected" in text.lower() or "git" in text.lower(), (path, text[:400])
    assert got == TARGETS, (got, sys.version)
    assert (workspace / ".git" / "hooks" / "pre-commit").exists() is False
