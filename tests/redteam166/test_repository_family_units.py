"""Every work tree and submodule of a repository is read for what its config includes (red teams 164, 166): a
submodule's git dir at any depth of ``modules/`` (its name holds a ``/``), and past the bound of members read, the
judge says it cannot guard the repository instead of passing over the rest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard.errors import SecurityError
from mcp_server_guard.git_dirs import _repo_files
from mcp_server_guard.git_search import git_family


def _git_dir(path: Path) -> None:
    (path / "objects").mkdir(parents=True)
    (path / "refs").mkdir()
    (path / "HEAD").write_text("ref: refs/heads/main\n")


def test_a_submodule_whose_name_holds_a_slash_is_one_of_the_family(tmp_path: Path) -> None:
    _git_dir(tmp_path / ".git")
    _git_dir(tmp_path / ".git" / "modules" / "vendor" / "lib")
    _git_dir(tmp_path / ".git" / "modules" / "a" / "b" / "c" / "d")
    family = set(git_family(str(tmp_path / ".git")))
    assert str(tmp_path / ".git" / "modules" / "vendor" / "lib") in family
    assert str(tmp_path / ".git" / "modules" / "a" / "b" / "c" / "d") in family
    assert str(tmp_path / ".git" / "modules" / "vendor") not in family


def test_an_include_of_a_nested_submodules_config_is_protected(tmp_path: Path) -> None:
    _git_dir(tmp_path / ".git")
    module = tmp_path / ".git" / "modules" / "vendor" / "lib"
    _git_dir(module)
    (module / "config").write_text("[include]\n\tpath = ../../../../notes/settings.ini\n")
    _hooks, included = _repo_files(os.path.realpath(tmp_path), None)
    assert os.path.join(os.path.realpath(tmp_path), "notes", "settings.ini") in included


def test_a_repository_past_the_members_read_cannot_be_guarded(tmp_path: Path) -> None:
    _git_dir(tmp_path / ".git")
    for n in range(1030):
        (tmp_path / ".git" / "worktrees" / f"w{n}").mkdir(parents=True)
    with pytest.raises(SecurityError) as raised:
        _repo_files(os.path.realpath(tmp_path), None)
    assert raised.value.code == "PROTECTION_UNAVAILABLE"
