"""Issue 42 claim 1: "group/other-writable … refused on protected paths and directories holding them (unless sticky)";
docs/shell_exec.md "Judging": "anything of a git dir or a protected path made writable by group or others … is
refused, and so is a directory holding one (… anyone could rename it away and put their own there; not with the
sticky bit)".

Setup: a project with ``d/.envrc`` and ``.envrc`` (protected: direnv runs it), or a HOME root with ``.bashrc``.
Command: ``chmod 777 d`` / ``chmod 777 .``.
Expected: refused, as ``chmod 777 a/b`` is where ``a/b`` holds ``.vscode`` or ``.git``.
Observed: only asked ("It makes d (0777) writable by others."): a yes lands it, and any local user can then replace
``d/.envrc`` (or ``~/.bashrc``) with their own.
Guessed cause: the "holds a protected one" check of a re-moded directory looks for protected directories and git
dirs among its entries, not protected files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


def _judged(copy: Copy, script: str) -> tuple[dict[str, str], list[str]]:
    j = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return {path: why for (_root, path), why in j.refused.items()}, list(j.asks)


def test_control_directory_holding_a_protected_directory_is_refused(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    (copy.root / "d" / ".vscode").mkdir(parents=True)
    (copy.root / "d" / ".vscode" / "tasks.json").write_text("{}")
    refused, _ = _judged(copy, "chmod 777 d")
    assert "d" in refused


@pytest.mark.parametrize("name", [".envrc", ".mcp.json", ".npmrc"])
def test_directory_holding_a_protected_file_made_world_writable_is_refused(tmp_path: Path, name: str) -> None:
    copy = Copy(tmp_path)
    (copy.root / "d").mkdir()
    (copy.root / "d" / name).write_text("x\n")
    refused, asks = _judged(copy, "chmod 777 d")
    assert "d" in refused, f"chmod 777 d (holding d/{name}) was not refused; asks: {asks}"


def test_home_holding_bashrc_made_world_writable_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = Copy(tmp_path)
    monkeypatch.setenv("HOME", str(copy.root))
    (copy.root / ".bashrc").write_text("# rc\n")
    os.chmod(copy.root, 0o755)
    refused, asks = _judged(copy, "chmod 777 .")
    assert "." in refused, f"chmod 777 ~ (holding ~/.bashrc) was not refused; asks: {asks}"
