"""Red team 42q H (promise 1): what the user's shell rc files source — an installer's ``~/.fzf.bash``,
``$NVM_DIR/nvm.sh``, SDKMAN's init script, a dotfiles habit's ``~/.aliases`` — runs in every interactive shell,
outside any box; only the rc files themselves were protected. Payloads are harmless text, never run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for

POLICY = load_policy()
BASHRC = """# ~/.bashrc
[ -f ~/.fzf.bash ] && source ~/.fzf.bash
export NVM_DIR="$HOME/.nvm"
[ -s "$NVM_DIR/nvm.sh" ] && \\. "$NVM_DIR/nvm.sh"
if [ -f ~/.aliases ]; then . ~/.aliases; fi
source "${HOME}/.sdkman/bin/sdkman-init.sh"
source "$UNKNOWN/elsewhere.sh"
echo source-of-nothing
"""


def test_attack_files_the_shell_rc_files_source_are_refused_to_the_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text(BASHRC)
    (home / ".aliases").write_text(". ~/.more-aliases\n")  # sourced by what the rc sources: one level down
    os.mkfifo(home / ".profile")  # never opened so as to block
    monkeypatch.setenv("HOME", str(home))
    protection = protection_for(POLICY)
    for path in (".fzf.bash", ".nvm/nvm.sh", ".aliases", ".more-aliases", ".sdkman/bin/sdkman-init.sh"):
        assert protection.write_rule([path, str(home / path)], None, [str(home)]) is not None, path
    for path in ("elsewhere.sh", "notes.txt", "source-of-nothing"):
        assert protection.write_rule([path, str(home / path)], None, [str(home)]) is None, path
