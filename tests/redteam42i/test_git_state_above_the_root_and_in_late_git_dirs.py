"""Issue 42, red team i: what git reads from places the judge did not look.

Claim 2: "Git configs are judged with everything git would read" (includes, core.hooksPath, a git dir's state);
claim 1: a directory made writable by others that holds a git dir is refused; claim 4: deleting work git has no copy
of is asked.

- A root below its repository's top (``~/outer`` served as ``~/outer/proj``): the repository's includes and its
  core.hooksPath were never read (the git rule walked up only inside the roots), nor its index (uncommitted work
  deleted unasked).
- A rebase's state written in a plain directory (nothing judges it there), made a git dir by a later HEAD and
  commondir, with a ``.git`` file pointing at it: the user's ``git rebase --continue`` there ran the todo's exec.
- ``mkdir -m 777 sub && git init sub/pkg``: only asked (the directory's new entries were not looked at); a git dir
  under a directory anyone may write is one anyone may replace.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def _git(cwd: Path, *args: str) -> str:

    done = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **ENV}, capture_output=True, text=True, check=True
    )
    return done.stdout


def _judged(copy: Copy, script: str) -> tuple[dict[str, str], list[str]]:
    j = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return {path: why for (_root, path), why in j.refused.items()}, list(j.asks)


def _outer(tmp_path: Path) -> Copy:
    """A copy whose root (``base/root``) lies inside a repository whose top is ``base``."""
    copy = Copy(tmp_path)
    _git(tmp_path, "init", "-q", "-b", "main")
    return copy


def test_a_config_a_repository_above_the_root_includes_cannot_be_written(tmp_path: Path) -> None:
    copy = _outer(tmp_path)
    (copy.root / "team.gitconfig").write_text("[user]\n\tname = t\n", encoding="utf-8")
    _git(tmp_path, "config", "include.path", "../root/team.gitconfig")  # relative to .git/config
    refused, _ = _judged(copy, "echo '# more' >> team.gitconfig")
    assert "includes" in refused.get("team.gitconfig", ""), refused


def test_a_hooks_directory_a_repository_above_the_root_names_cannot_be_filled(tmp_path: Path) -> None:
    copy = _outer(tmp_path)
    _git(tmp_path, "config", "core.hooksPath", "root/.githooks")
    refused, _ = _judged(copy, "mkdir -p .githooks && echo true > .githooks/pre-commit")
    assert "hook" in refused.get(".githooks/pre-commit", ""), refused


def test_deleting_uncommitted_work_of_a_repository_above_the_root_is_asked(tmp_path: Path) -> None:
    copy = _outer(tmp_path)
    (copy.root / "a.txt").write_text("one\n", encoding="utf-8")
    _git(tmp_path, "add", "root/a.txt")
    _git(tmp_path, "commit", "-q", "-m", "one")
    (copy.root / "a.txt").write_text("edited, not committed\n", encoding="utf-8")
    _, asks = _judged(copy, "rm a.txt")
    assert any("Git has no copy of a.txt" in ask for ask in asks), asks


def _rebase_state(root: Path, todo: str) -> None:
    """A rebase's state in a plain directory of the project (as an earlier call could leave it)."""
    state = root / "store" / "rebase-merge"
    state.mkdir(parents=True)
    head = _git(root, "rev-parse", "HEAD").strip()
    for name, text in {"git-rebase-todo": todo, "interactive": "", "head-name": "refs/heads/main", "onto": head,
                       "orig-head": head, "done": "", "msgnum": "0", "end": "1"}.items():  # fmt: skip
        (state / name).write_text(text + "\n", encoding="utf-8")


@pytest.mark.parametrize("how", ["commondir-and-pointer", "commondir-only"])
def test_a_rebase_todo_that_runs_a_command_in_a_directory_made_a_git_dir_later_is_refused(
    tmp_path: Path, how: str
) -> None:
    copy = Copy(tmp_path)
    _git(copy.root, "init", "-q", "-b", "main")
    _git(copy.root, "commit", "-q", "--allow-empty", "-m", "one")
    _rebase_state(copy.root, "exec true")
    script = "git rev-parse HEAD > store/HEAD && printf '../.git\\n' > store/commondir"
    if how == "commondir-and-pointer":
        script += " && mkdir wt && printf 'gitdir: ../store\\n' > wt/.git"
    refused, _ = _judged(copy, script)
    assert any("rebase state" in why for why in refused.values()), refused


def test_control_a_rebase_todo_without_a_command_in_a_directory_made_a_git_dir_later_is_applied(
    tmp_path: Path,
) -> None:
    copy = Copy(tmp_path)
    _git(copy.root, "init", "-q", "-b", "main")
    _git(copy.root, "commit", "-q", "--allow-empty", "-m", "one")
    _rebase_state(copy.root, "pick 0000000 one")
    refused, _ = _judged(copy, "git rev-parse HEAD > store/HEAD && printf '../.git\\n' > store/commondir")
    assert not any("rebase state" in why for why in refused.values()), refused


@pytest.mark.parametrize(
    "script",
    [
        "mkdir -m 777 sub && git init -q sub/pkg",
        "mkdir -p build && chmod 777 build && git init -q build/pkg",
        "git init -q pkg && mkdir -m 777 np && mv pkg np/",
    ],
)
def test_a_directory_made_writable_by_others_holding_a_git_dir_the_command_made_is_refused(
    tmp_path: Path, script: str
) -> None:
    copy = Copy(tmp_path)
    refused, _ = _judged(copy, script)
    directory = script.rsplit("-m 777 ", maxsplit=1)[-1].split(" ", maxsplit=1)[0] if "-m 777" in script else "build"
    assert "writable by others" in refused.get(directory, ""), refused
