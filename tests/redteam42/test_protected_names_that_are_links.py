"""Red team 42m F0 (promises 1, 2): a protected name the user made a link — dotfiles (`~/.bashrc ->
dotfiles/bashrc`, `~/.config -> dotfiles/config`), a project's `.vscode -> shared/vscode` — was written through its
target: the copy shows the write at the target's path, which no pattern names. What such a name leads to (at HOME
and at the top of each allowed directory) is now judged as that name. Payloads are harmless text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()


def test_attack_dotfiles_and_a_project_setting_written_through_the_links_the_user_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = Copy(tmp_path)
    home = copy.root
    monkeypatch.setenv("HOME", str(home))
    (home / "dotfiles" / "config" / "git").mkdir(parents=True)
    (home / "dotfiles" / "bashrc").write_text("# mine\n")
    (home / "dotfiles" / "notes.txt").write_text("notes\n")
    (home / "shared" / "vscode").mkdir(parents=True)
    os.symlink("dotfiles/bashrc", home / ".bashrc")
    os.symlink("dotfiles/config", home / ".config")
    os.symlink("shared/vscode", home / ".vscode")
    script = (
        "echo 'echo marker' >> dotfiles/bashrc && printf '[core]\\n\\thooksPath = /x\\n' > .config/git/config"
        " && echo '{}' > shared/vscode/tasks.json && echo more >> dotfiles/notes.txt"
    )
    judged = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(home)])
    refused = {path for _root, path in judged.refused}
    wanted = {"dotfiles/bashrc", "dotfiles/config/git/config", "shared/vscode/tasks.json"}
    assert wanted <= refused and "dotfiles/notes.txt" not in refused, (refused, judged.summary)
