"""Issue 42 claim 1: "group/other-writable … refused on protected paths and directories holding them (unless sticky)";
docs/shell_exec.md "Judging": a directory holding a git dir or a protected path made writable by others is refused
("``chmod 777 app`` holding ``app/.git``: anyone could rename it away and put their own there").

Setup: ``a/b/.git`` (a repository one level further down), or ``a/b/.vscode/tasks.json``; a HOME root holding
``.local/bin`` and ``.config/git/config``.
Command: ``chmod 777 a`` (and ``chmod 777 .`` in HOME).
Expected: refused — with ``a`` writable by anyone, another user renames ``a/b`` away and makes ``a/b/.git`` (hooks,
config) of their own, exactly the threat the rule names; ``chmod 777 a/b`` is refused.
Observed: only asked ("It makes a (0777) writable by others.").
Guessed cause: the holder check looks at the directory's own entries (a protected or git dir directly in it), not at
protected paths further down."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


def _refused(copy: Copy, script: str) -> tuple[set[str], list[str]]:
    j = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return {path for (_root, path) in j.refused}, list(j.asks)


def test_control_direct_holder_is_refused(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    subprocess.run(["git", "init", "-q", str(copy.root / "a" / "b")], check=True, capture_output=True)
    refused, _ = _refused(copy, "chmod 777 a/b")
    assert "a/b" in refused


@pytest.mark.parametrize("kind", ["git", "vscode"])
def test_holder_two_levels_up_is_refused(tmp_path: Path, kind: str) -> None:
    copy = Copy(tmp_path)
    if kind == "git":
        subprocess.run(["git", "init", "-q", str(copy.root / "a" / "b")], check=True, capture_output=True)
    else:
        (copy.root / "a" / "b" / ".vscode").mkdir(parents=True)
        (copy.root / "a" / "b" / ".vscode" / "tasks.json").write_text("{}")
    refused, asks = _refused(copy, "chmod 777 a")
    assert "a" in refused, f"chmod 777 a (holding a/b/.{kind}) was not refused; asks: {asks}"


def test_home_holding_local_bin_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = Copy(tmp_path)
    monkeypatch.setenv("HOME", str(copy.root))
    (copy.root / ".local" / "bin").mkdir(parents=True)
    (copy.root / ".config" / "git").mkdir(parents=True)
    (copy.root / ".config" / "git" / "config").write_text("[user]\n")
    os.chmod(copy.root, 0o755)
    refused, asks = _refused(copy, "chmod 777 .")
    assert "." in refused, f"chmod 777 ~ (holding ~/.local/bin, ~/.config/git) was not refused; asks: {asks}"
