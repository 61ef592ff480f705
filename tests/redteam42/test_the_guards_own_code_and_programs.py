"""Red team 42q K, N (promise 3): the guard's own code where it is installed (``uv tool``, pipx, a project's
``.venv``, an editable install's sources) was written by file_write and by a command when a root held it — the next
start, with no box, runs it; and the programs the server runs itself (git to read a config, bubblewrap for the box)
were found first on its PATH, where a project's ``.venv/bin`` may lie. Nothing planted here is run."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import mcp_server_guard
from mcp_server_guard import git_config
from mcp_server_guard.paths import code_dirs, program_outside, system_program
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for

POLICY = load_policy()


def test_attack_the_guards_own_modules_are_refused_to_the_writer_when_a_root_holds_them() -> None:
    package = Path(mcp_server_guard.__file__).resolve().parent
    root = str(package.parent)  # the site-packages (or the sources) the servers import from, served as a root
    protection = protection_for(POLICY)
    for name in ("protected.py", "changes/effects.py", "evil.pth"):
        target = str(package / name) if name != "evil.pth" else f"{root}/evil.pth"
        rule = protection.write_rule([os.path.relpath(target, root), target], None, [root])
        assert rule is not None and "own code" in rule, (name, rule)


def test_the_code_directories_never_hold_the_working_directory_or_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A PYTHONPATH naming the project (or HOME) must not make the whole project the guard's code.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path.parent))
    found = code_dirs()
    assert str(tmp_path) not in found and str(tmp_path.parent) not in found
    assert str(Path(mcp_server_guard.__file__).resolve().parents[1]) in found


@pytest.mark.skipif(system_program("git") is None, reason="git is missing")
def test_attack_a_git_planted_first_on_the_servers_path_is_not_the_one_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = tmp_path / "venv-bin"
    planted.mkdir()
    for name in ("git", "bwrap"):
        fake = planted / name
        fake.write_text("#!/bin/sh\nexit 0\n")  # prints nothing: every config would read as empty
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{planted}{os.pathsep}{os.environ.get('PATH', '')}")
    assert not str(system_program("git")).startswith(str(planted))
    entries = git_config.git_config_entries(b"[core]\n\tfsmonitor = marker\n")
    assert entries == [("core.fsmonitor", "marker")]


def test_attack_a_bubblewrap_planted_in_a_project_directory_on_path_is_not_the_box(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "proj"
    planted = project / ".venv" / "bin"
    planted.mkdir(parents=True)
    fake = planted / "bwrap"
    fake.write_text("#!/bin/sh\nexit 0\n")  # a box that boxes nothing
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    elsewhere = tmp_path / "tools"
    elsewhere.mkdir()
    (elsewhere / "bwrap").write_text("#!/bin/sh\nexit 0\n")
    (elsewhere / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{planted}{os.pathsep}{elsewhere}")
    assert program_outside("bwrap", [str(project)]) == str(elsewhere / "bwrap")
    assert program_outside("bwrap", [str(tmp_path)]) is None
