"""Red team 42q G (promise 2): a git config names programs by their path — ``credential.helper``,
``core.sshCommand``, a filter's ``smudge``, a shell alias — and git runs them, outside the box, on ordinary fetches,
pushes and checkouts. They were rewritten unasked. Payloads are harmless text, never run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for

POLICY = load_policy()


def _rule(home: Path, root: Path, path: str) -> str | None:
    return protection_for(POLICY).write_rule([path, str(root / path)], None, [str(root)])


def test_attack_programs_the_users_global_git_config_names_are_refused_to_the_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    (home / ".gitconfig").write_text(
        f"[credential]\n\thelper = {home}/scripts/git-cred\n[core]\n\tsshCommand = ~/scripts/ssh-wrap -v\n"
        "[alias]\n\tsync = !~/scripts/sync.sh\n\tst = status\n"
    )
    for path in ("scripts/git-cred", "scripts/ssh-wrap", "scripts/sync.sh"):
        assert _rule(home, home, path) is not None, path
    assert _rule(home, home, "scripts/notes.txt") is None
    assert _rule(home, home, "status") is None


def test_attack_programs_a_repositorys_config_names_are_refused_to_the_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    with (root / ".git" / "config").open("a") as config:
        config.write('[filter "crypt"]\n\tsmudge = ./tools/crypt-smudge %f\n\tclean = tools/crypt-clean\n')
        config.write('[alias]\n\tbuild = !./tools/build --fast\n[diff "img"]\n\ttextconv = tools/exif\n')
    for path in ("tools/crypt-smudge", "tools/crypt-clean", "tools/build", "tools/exif"):
        rule = _rule(home, root, path)
        assert rule is not None and "program git runs" in rule, (path, rule)
    assert _rule(home, root, "tools/readme.md") is None
