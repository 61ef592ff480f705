"""Issue 42 claim 1: "a file/dir made group/other-writable is asked outside build/cache dirs and refused on protected
paths and their directories"; docs/shell_exec.md "Judging": refused — "anything of a git dir or a protected path made
writable by group or others (chmod 777 .git/hooks ...)".

Case: the directory that *holds* a protected directory or a git dir is made writable by others: ``chmod 777 .local``
(HOME allowed: holds ``.local/bin``), ``chmod 777 .config`` (holds ``.config/git``, ``.config/autostart``), or
``chmod 777 sub`` where ``sub`` is a work tree holding ``sub/.git``. Without the sticky bit any local user may then
rename the protected child away and put their own in its place (``mv .local/bin x; mkdir .local/bin; plant ls``, or a
``sub/.git`` with a hook), which the user's own shell or git then runs. ``chmod 777 .local/bin`` itself is refused;
its parent, which grants the same power, is only asked ("makes .local (0777) writable by others") — the question does
not say that a protected directory lies in it.
Guessed cause: ``effects._guarded`` probes the directory and ``dir/_`` against the protected list; ``.local/_`` matches
no pattern (``.local/bin/**``) and only paths *in* a git dir are git's own, not the directory holding ``.git``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import Judgement, judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


def _judge(copy: Copy, script: str, monkeypatch: pytest.MonkeyPatch) -> Judgement:
    monkeypatch.setenv("HOME", str(copy.root))  # HOME is the allowed root
    return judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])


def _home(copy: Copy) -> None:
    r = copy.root
    (r / ".local" / "bin").mkdir(parents=True)
    (r / ".config" / "git").mkdir(parents=True)
    (r / ".config" / "autostart").mkdir(parents=True)
    (r / "sub").mkdir()
    subprocess.run(["git", "init", "-q", str(r / "sub")], check=True)


def test_control_protected_dir_itself_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = Copy(tmp_path)
    _home(copy)
    j = _judge(copy, "chmod 777 .local/bin", monkeypatch)
    assert any(p == ".local/bin" for (_r, p) in j.refused), (j.refused, j.asks)


@pytest.mark.parametrize("target", [".local", ".config", "sub"])
def test_directory_holding_a_protected_dir_made_writable_by_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    copy = Copy(tmp_path)
    _home(copy)
    j = _judge(copy, f"chmod 777 {target}", monkeypatch)
    assert any(p == target for (_r, p) in j.refused), (j.refused, j.asks)
