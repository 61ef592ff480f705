"""shell_exec's start: the protected paths are read while the box starts (issue 44: the box's supervisor starts on
another CPU while this one works; read before it, they held the box, and the first answer, back), and a start that
fails there gives the box up as a failed import does.
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

real_protection, real_begin, real_abandon = mcp_server_guard.protection_for, sandbox.begin, layers.Deciding.abandon

def protection_for(*args, **kwargs):
    print("protection", file=sys.stderr, flush=True)
    if FAIL:
        raise RuntimeError("no protection")
    return real_protection(*args, **kwargs)

def begin(*args, **kwargs):
    print("begin", file=sys.stderr, flush=True)
    return real_begin(*args, **kwargs)

def abandon(self):
    print("abandon", file=sys.stderr, flush=True)
    return real_abandon(self)

mcp_server_guard.protection_for, sandbox.begin, layers.Deciding.abandon = protection_for, begin, abandon
from mcp_server_shell_exec.cli import main
main(sys.argv[1:])
"""


def _start(workspace: Path, tmp_path: Path, fail: bool) -> list[str]:
    code = f"FAIL = {fail}\n" + textwrap.dedent(_RUN)
    argv = [sys.executable, "-c", code, "--launch-dir", str(workspace), "--audit-log", str(tmp_path / "audit.jsonl")]
    run = subprocess.run(argv, cwd=workspace, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert (run.returncode != 0) == fail, run.stderr
    return [line for line in run.stderr.splitlines() if line in ("protection", "begin", "abandon")]


def test_the_protected_paths_are_read_after_the_box_began(workspace: Path, tmp_path: Path) -> None:
    assert _start(workspace, tmp_path, fail=False) == ["begin", "protection"]


def test_a_start_that_fails_reading_them_gives_the_box_up(workspace: Path, tmp_path: Path) -> None:
    assert _start(workspace, tmp_path, fail=True) == ["begin", "protection", "abandon"]
