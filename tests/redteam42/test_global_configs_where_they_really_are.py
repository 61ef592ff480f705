"""Red team 42m F1 (promises 1, 2): the user's global git config and the per-user configs the protected list names
under `.config/` were protected only at `~/.gitconfig` and `~/.config/...`. With `XDG_CONFIG_HOME` (or
`GIT_CONFIG_GLOBAL`) naming a place inside an allowed directory, a command (and file_write) wrote git's global
config there — a core.hooksPath every repository then runs — and made autostart entries, unasked. Payloads are
harmless text, never run: the test reads the judgement."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()


def refused(copy: Copy, script: str) -> set[str]:
    judged = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return {path for _root, path in judged.refused}


def test_attack_configs_under_xdg_config_home_inside_a_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = Copy(tmp_path)
    (copy.root / "xdg").mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(copy.root / "xdg"))
    script = (
        "mkdir -p xdg/git xdg/autostart && printf '[core]\\n\\thooksPath = /x\\n' > xdg/git/config"
        " && echo '[Desktop Entry]' > xdg/autostart/x.desktop && echo notes > xdg/notes.txt"
    )
    found = refused(copy, script)
    # (Every file there is the user's configuration, as a class since red team 74 F6: notes.txt too.)
    assert {"xdg/git/config", "xdg/autostart/x.desktop", "xdg/notes.txt"} <= found, found


def test_attack_the_file_git_config_global_names_inside_a_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = Copy(tmp_path)
    (copy.root / "dotfiles").mkdir()
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(copy.root / "dotfiles" / "gitconfig"))
    found = refused(copy, "printf '[core]\\n\\thooksPath = /x\\n' > dotfiles/gitconfig && echo n > dotfiles/notes")
    assert "dotfiles/gitconfig" in found and "dotfiles/notes" not in found, found
