"""Unit tests of the protected and hidden lists: git's layout, the git config sanitizer, the survey."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.errors import SecurityError
from mcp_server_guard.policy import PolicyError, load_policy
from mcp_server_guard.protected import Protection, git_runnable, is_git_dir, sanitize_git_config


@pytest.mark.parametrize(
    ("rel", "runnable"),
    [
        ("config", True),
        ("hooks/pre-commit", True),
        ("hooks", True),
        ("commondir", True),
        ("modules/a/b/modules/c/config", True),
        ("modules/lib/hooks/post-checkout", True),
        ("worktrees/w/config.worktree", True),
        ("objects/ab/cdef", False),
        ("refs/heads/main", False),
        ("index", False),
        ("logs/HEAD", False),
        ("description", False),
    ],
)
def test_git_runnable_entries_are_config_hooks_and_pointers_only(rel: str, runnable: bool) -> None:
    assert git_runnable(rel) is runnable


def test_program_keys_are_dropped_from_a_git_config_and_safe_ones_kept() -> None:
    text = (
        "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch /x\n\thooksPath = hk\n"
        '[alias]\n\tst = !touch /x\n[user]\n\temail = a@b\n[remote "origin"]\n\turl = https://h/r\n'
        '\tfetch = +refs/heads/*:refs/remotes/origin/*\n[includeIf "gitdir:/"]\n\tpath = /evil\n'
        '[filter "x"]\n\tclean = touch /x\n[core] pager = touch /x\n[diff "d"]\n\ttextconv = a \\\n\tb\n'
    )
    safe, dropped = sanitize_git_config(text)
    assert "fsmonitor" not in safe and "hooksPath" not in safe and "!touch" not in safe and "/evil" not in safe
    assert "clean" not in safe and "pager" not in safe and "textconv" not in safe and "\tb" not in safe
    assert "email = a@b" in safe and "url = https://h/r" in safe and "repositoryformatversion" in safe
    assert len(dropped) == 7


def test_git_knows_a_git_dir_by_its_layout_not_its_name(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "anything")], check=True)
    assert is_git_dir(str(tmp_path / "anything"))
    assert not is_git_dir(str(tmp_path))


def test_the_survey_mounts_what_exists_and_watches_what_does_not(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path / "proj")], check=True)
    (tmp_path / "proj" / ".vscode").mkdir()
    survey = Protection(load_policy().paths.protected).survey([str(tmp_path / "proj")])
    root = tmp_path / "proj"
    assert {str(root / ".git" / "config"), str(root / ".git" / "hooks"), str(root / ".vscode")} <= set(survey.read_only)
    assert str(root / ".mcp.json") in survey.missing and str(root / ".git" / "commondir") in survey.missing


def test_an_unreadable_git_file_fails_closed(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".git").write_text("not a pointer\n")
    with pytest.raises(SecurityError) as refused:
        Protection([]).survey([str(tmp_path)])
    assert refused.value.code == "PROTECTION_UNAVAILABLE"


def test_hidden_never_covers_home_a_root_or_the_python_runtime(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    protection = Protection([], ["~/.ssh", "~", str(tmp_path), "/usr"], home=str(home))
    assert protection.hidden_paths([str(tmp_path / "proj")]) == [str(home / ".ssh")]


def test_the_old_protected_paths_key_names_its_new_place(tmp_path: Path) -> None:
    old = tmp_path / "old.toml"
    old.write_text("[file_write]\nprotected_paths = ['x']\n")
    with pytest.raises(PolicyError, match=r"\[paths\]\.protected"):
        load_policy(old)
