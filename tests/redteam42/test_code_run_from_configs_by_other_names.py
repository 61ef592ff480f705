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
    # Red team 42o: more of the same.
    ".config/emacs/init.el",
    ".doom.d/init.el",
    ".spacemacs",
    ".direnvrc",
    ".local/share/nvim/lazy/x/plugin/a.lua",
    ".config/kitty/kitty.conf",
    ".local/share/dbus-1/services/x.service",
    ".config/bspwm/bspwmrc",
    ".config/pip/pip.conf",
    ".config/uv/uv.toml",
    ".config/husky/init.sh",
    ".huskyrc",
    ".jupyter/x.py",
    # Red team 42q E.
    ".config/goose/config.yaml",
    ".copilot/mcp-config.json",
    ".lmstudio/mcp.json",
    ".config/amp/settings.json",
    ".augment/settings.json",
    ".factory/mcp.json",
    ".config/mcphub/servers.json",
    ".config/go/env",
    ".bunfig.toml",
    ".npm-init.js",
    ".config/lesskey",
    ".config/helix/languages.toml",
    ".local/share/systemd/user/x.service.d/override.conf",
    ".local/share/gnome-shell/extensions/x@y/extension.js",
    ".config/JetBrains/IdeaIC2024.1/idea64.vmoptions",
    ".pyenv/versions/3.12.1/lib/python3.12/site-packages/x.pth",
    "miniconda3/lib/python3.12/site-packages/x.pth",
    ".local/share/uv/python/cpython-3.12-linux/lib/python3.12/site-packages/x.pth",
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
    "proj.code-workspace",
    ".devcontainer.json",
    ".dir-locals-2.el",
    ".lintstagedrc",
    "lint-staged.config.js",
    ".pnpmfile.cjs",
    "pnpm-workspace.yaml",
    "bunfig.toml",
    ".qwen/settings.json",
    ".opencode/plugin/x.ts",
    "crush.json",
    ".yarn/releases/yarn-4.1.0.cjs",
    ".junie/mcp/mcp.json",
    ".aider.conf.yml",
    ".helix/languages.toml",
    "commitlint.config.js",
    ".commitlintrc.js",
    "husky.config.js",
    ".simple-git-hooks.json",
    "simple-git-hooks.cjs",
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
def test_attack_a_program_put_in_a_directory_on_path_within_home_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # HOME is the allowed root here. Refused: a directory on PATH (~/go/bin), one a login adds (~/bin, not on PATH
    # yet), and a PATH entry that is a link, re-pointed by the command. Not: a project's own (node_modules/.bin on
    # PATH in a project served as a root of its own).
    copy = Copy(tmp_path)
    home = copy.root
    for directory in ("go/bin", "dotfiles/tools", "proj/node_modules/.bin", "bin"):
        (home / directory).mkdir(parents=True)
    (home / "tools").symlink_to("dotfiles/tools")
    monkeypatch.setenv("HOME", str(home))
    entries = [home / "go" / "bin", home / "tools", home / "proj" / "node_modules" / ".bin"]
    monkeypatch.setenv("PATH", os.pathsep.join([*map(str, entries), os.environ["PATH"]]))
    script = ("echo x > go/bin/ls && echo y > bin/ls && echo z > dotfiles/tools/ls && rm tools && mkdir evil && "
              "ln -s evil tools && echo n > notes.txt")  # fmt: skip
    protection = protection_for(POLICY)
    judged = judge([copy.run(script)], protection, POLICY.effects, [str(home)])
    refused = {name for _root, name in judged.refused}
    assert {"go/bin/ls", "bin/ls", "dotfiles/tools/ls", "tools"} <= refused, judged.refused
    assert "notes.txt" not in refused, judged.refused
    # The same project served on its own (HOME elsewhere): its node_modules/.bin on PATH is its own.
    project = [str(home / "proj"), str(home)]
    assert protection.write_rule([str(home / "proj/node_modules/.bin/tool")], None, project) is None


def test_attack_a_file_under_xdg_data_home_is_judged_as_under_local_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".xdgdata"))
    protection = protection_for(POLICY)
    for path in (".xdgdata/nvim/site/plugin/a.lua", ".xdgdata/bash-completion/completions/git"):
        assert protection.write_rule([path, str(home / path)], None, [str(home)]) is not None, path
    assert protection.write_rule([str(home / ".xdgdata/notes.txt")], None, [str(home)]) is None
