"""shell_exec's start: dead servers' applies are finished and the protected paths read while the box starts (issue
44: the box's supervisor starts on another CPU while this one works; done before it, they held the box, and the first
answer, back), and a start that fails there gives the box up as a failed import does.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

_RUN = """
import sys
import mcp_server_guard
from mcp_server_guard.shell import sandbox
from mcp_server_guard.shell.sandbox import layers

from mcp_server_guard.changes import recovery

real_protection, real_begin, real_abandon = mcp_server_guard.protection_for, sandbox.begin, layers.Deciding.abandon
real_recover = recovery.recover

def protection_for(*args, **kwargs):
    print("protection", file=sys.stderr, flush=True)
    if FAIL == "protection":
        raise RuntimeError("no protection")
    return real_protection(*args, **kwargs)

def recover(*args, **kwargs):
    print("recover", file=sys.stderr, flush=True)
    if FAIL == "recover":
        raise RuntimeError("no recovery")
    return real_recover(*args, **kwargs)

def begin(*args, **kwargs):
    print("begin", file=sys.stderr, flush=True)
    return real_begin(*args, **kwargs)

def abandon(self):
    print("abandon", file=sys.stderr, flush=True)
    return real_abandon(self)

mcp_server_guard.protection_for, sandbox.begin, layers.Deciding.abandon = protection_for, begin, abandon
recovery.recover = recover
from mcp_server_shell_exec.cli import main
main(sys.argv[1:])
"""


def _start(workspace: Path, tmp_path: Path, fail: str | None) -> list[str]:
    code = f"FAIL = {fail!r}\n" + textwrap.dedent(_RUN)
    argv = [sys.executable, "-c", code, "--launch-dir", str(workspace), "--audit-log", str(tmp_path / "audit.jsonl")]
    run = subprocess.run(argv, cwd=workspace, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert (run.returncode != 0) == (fail is not None), run.stderr
    return [line for line in run.stderr.splitlines() if line in ("recover", "protection", "begin", "abandon")]


def test_dead_servers_applies_are_finished_and_the_protected_paths_read_after_the_box_began(
    workspace: Path, tmp_path: Path
) -> None:
    assert _start(workspace, tmp_path, fail=None) == ["begin", "recover", "protection"]


def test_a_start_that_fails_reading_them_gives_the_box_up(workspace: Path, tmp_path: Path) -> None:
    assert _start(workspace, tmp_path, fail="protection") == ["begin", "recover", "protection", "abandon"]


def test_a_start_whose_recovery_fails_gives_the_box_up(workspace: Path, tmp_path: Path) -> None:
    assert _start(workspace, tmp_path, fail="recover") == ["begin", "recover", "abandon"]
