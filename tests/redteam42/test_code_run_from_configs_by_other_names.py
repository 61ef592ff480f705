"""Red team 42n (promise 1): files that make a shell, an editor, a session, a build tool or a hook manager run code
as the user, outside any box, that the protected list did not name — HOME's (``~/.bash_completion``, a completion
directory, ``~/.bashrc.d``, neovim's site plugins, VS Code forks' settings, gradle's init scripts, cargo's config,
IPython's startup, i3's and Plasma's session scripts) and a project's (lefthook and mise in every format they
read) — were written by file_write and applied from a command. The class: every spelling such a program reads,
and every directory on the user's PATH that lies in an allowed root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
FROM_HOME = [
    ".bash_completion",
    ".local/share/bash-completion/completions/git",
    ".bashrc.d/aliases",
    ".zshrc.d/x.zsh",
    ".local/share/nvim/site/plugin/x.lua",
    ".config/vim/vimrc",
    ".config/Code - OSS/User/settings.json",
    ".config/VSCodium/User/tasks.json",
    ".config/Cursor/User/settings.json",
    ".vscode-server/data/Machine/x.json",
    ".gradle/init.d/x.gradle",
    ".gradle/init.gradle.kts",
    ".cargo/config.toml",
    ".cargo/bin/cargo-x",
    ".ipython/profile_default/startup/00.py",
    ".pdbrc",
    ".config/starship.toml",
    ".xsession",
    ".config/i3/config",
    ".config/plasma-workspace/env/x.sh",
    ".pam_environment",
    ".config/powershell/profile.ps1",
    ".irbrc",
    ".psqlrc",
]
IN_A_PROJECT = [
    "lefthook.toml",
    ".lefthook.toml",
    "lefthook.json",
    "lefthook.jsonc",
    "lefthook-local.toml",
    ".lefthook-local.yml",
    ".lefthook/pre-commit/x.sh",
    ".lefthook-local/pre-push/x.sh",
    ".mise/config.toml",
    "mise/config.toml",
    ".mise.local.toml",
    "mise.dev.toml",
    ".config/mise.toml",
    ".hg/hgrc",
    ".Rprofile",
]


@pytest.mark.parametrize("path", FROM_HOME + IN_A_PROJECT)
def test_attack_a_config_that_runs_code_is_protected_in_every_spelling(path: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    protection = protection_for(POLICY)
    target = str(home / path)
    assert protection.write_rule([path, target], None, [str(home)]) is not None, path


@pytest.mark.parametrize("path", ["src/lefthook_runner.py", "docs/mise-en-place.md", "notes/bashrc-tips.txt"])
def test_names_that_only_look_alike_stay_writable(path: str, tmp_path: Path) -> None:
    protection = protection_for(POLICY)
    assert protection.write_rule([path, str(tmp_path / path)], None, [str(tmp_path)]) is None


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_attack_a_program_put_in_a_directory_on_path_within_a_root_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = Copy(tmp_path)
    (copy.root / "tools" / "bin").mkdir(parents=True)
    (copy.root / ".venv" / "bin").mkdir(parents=True)
    (copy.root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    path = os.pathsep.join([str(copy.root / "tools" / "bin"), str(copy.root / ".venv" / "bin"), os.environ["PATH"]])
    monkeypatch.setenv("PATH", path)
    script = "echo x > tools/bin/ls && echo y > .venv/bin/tool && echo z > notes.txt"
    judged = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    refused = {name for _root, name in judged.refused}
    # A virtual environment's own bin is on PATH only while it is active: installing into it is everyday work.
    assert refused == {"tools/bin/ls"}, judged.refused
