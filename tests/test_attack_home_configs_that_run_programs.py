"""Red team 74 F6 (issue 42): files in an allowed HOME that make the user's session or tools run a program,
outside the box, and that the protected list does not name (``[paths].protected``; the docs promise what "a
shell, an editor or a session sources from a home directory that is allowed").

- ``.inputrc`` / ``.config/readline/inputrc``: readline's key bindings. A macro bound to Return
  (``"\\C-m": "\\C-e; cmd\\C-j"``) appends a command to every line the user's interactive bash (and any readline
  program: python's REPL, gdb, psql) runs.
- ``.config/pipewire/**``, ``.config/wireplumber/**``: ``context.exec`` in ``pipewire.conf`` and WirePlumber's Lua
  scripts run at every login of a desktop session.
- ``.config/waybar/**``, ``.config/polybar/**``: custom modules' ``exec`` run every few seconds while the bar runs.
- ``.config/dunst/**``, ``.config/mako/**``: a ``script`` / ``on-notify=exec`` runs at each notification.
- ``.config/kak/**`` (kakoune's ``kakrc`` runs ``%sh{}`` at every start), ``.config/micro/**`` (``init.lua``),
  ``.config/mpv/scripts/**``, ``.lldbinit`` (lldb runs its commands, ``script``/``platform shell``), ``.tigrc``
  (``bind … !cmd``), ``.config/lazygit/**`` (custom commands).

Payloads are harmless: nothing is written or run; the test asks the one rule every writer uses.
Passes when each is protected where HOME is an allowed directory.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.protected import protection_for
from support.home_rule import (
    POLICY,
    home_write_rule,
)

PATHS = [
    ".inputrc",
    ".config/readline/inputrc",
    ".config/pipewire/pipewire.conf.d/10-x.conf",
    ".config/wireplumber/scripts/x.lua",
    ".config/waybar/config",
    ".config/polybar/config.ini",
    ".config/dunst/dunstrc",
    ".config/mako/config",
    ".config/kak/kakrc",
    ".config/micro/init.lua",
    ".config/mpv/scripts/x.lua",
    ".lldbinit",
    ".tigrc",
    ".config/lazygit/config.yml",
]


@pytest.mark.parametrize("path", PATHS)
def test_attack_home_config_that_runs_a_program_is_writable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    assert home_write_rule(tmp_path, monkeypatch, path) is not None, path


KEPT = [
    ".bash_history", ".python_history", ".wget-hsts", ".cache/pip/x", ".npm/_cacache/x", ".local/state/x",
    ".config/configstore/update-notifier-npm.json", "proj/.config/x.toml", "proj/.inputrc", "notes.txt",
]  # fmt: skip


@pytest.mark.parametrize("path", KEPT)
def test_histories_caches_and_projects_in_an_allowed_home_are_not_its_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    assert home_write_rule(tmp_path, monkeypatch, path) is None, path


def test_a_project_served_inside_home_config_is_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".config" / "mytool").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    protection = protection_for(POLICY)
    root = str(home / ".config" / "mytool")
    assert protection.write_rule(["lua/x.lua", f"{root}/lua/x.lua"], None, [root]) is None
