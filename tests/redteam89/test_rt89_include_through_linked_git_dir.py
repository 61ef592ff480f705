"""Red team 89 F1 (LOW): a relative include.path of a repository whose ``.git`` is a symlink is resolved by the git
rule lexically (``.git/..`` cancelled), while git resolves it through the link (git opens ``.git/config``, and the
kernel takes ``.git/../x`` from the link's target).

Claim (issue 42, 2): include.path targets are protected like .git/config in every writer (file_write too).
``git_dirs._repo_files`` names the config ``<tree>/.git/config`` and ``_with_includes``/``_named`` join the include to
``<tree>/.git`` and ``os.path.normpath`` it: for a git dir kept elsewhere (``lib/.git -> ~/gitstore/libs/lib.git``)
whose config includes ``../../../proj/.../lib/team.gitconfig`` (the work tree's own file, as git finds it from the
git dir), the rule protects a path that does not exist and not ``lib/team.gitconfig``. With ``.git`` a plain
directory the ancestors' rule protects the work tree's included file at any depth (the control); with the link, that
file is protected only where the search for repositories within the roots (``protected._repositories_within``: 6
levels, 2,000 directories) happens to reach the link. Past it, file_write writes ``core.fsmonitor`` into the file
the user's git includes, and their next ``git status`` runs it outside the box. (Checked with git 2.39: ``git config
--show-origin`` in such a work tree reports the file resolved through the link.)

Fix idea: in ``_repo_files`` read the configs at ``os.path.realpath(git_dir)`` (git realpaths a git dir it
discovers from a subdirectory, and from the top the kernel follows the link), or add each relative include resolved
against the realpath of the including file's directory as well as the lexical one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.protected import protection_for
from support.settling import POLICY


def _layout(tmp_path: Path, *, linked: bool) -> tuple[Path, Path, Path]:
    """A root ``proj`` with a repository 7 levels down whose git dir includes ``lib/team.gitconfig`` of its own work
    tree; ``linked``: its ``.git`` is a link to a git dir kept outside the root (else a plain directory)."""
    home = tmp_path / "home"
    home.mkdir()
    root = tmp_path / "proj"
    tree = root.joinpath("a", "b", "c", "d", "e", "f", "lib")
    tree.mkdir(parents=True)
    git_dir = tmp_path / "gitstore" / "libs" / "lib.git" if linked else tree / ".git"
    for name in ("objects", "refs"):
        (git_dir / name).mkdir(parents=True)
    (git_dir / "HEAD").write_text("ref: refs/heads/main\n")
    # The include, relative to the git dir git really reads: the work tree's own team.gitconfig.
    back = os.path.relpath(tree / "team.gitconfig", git_dir)
    (git_dir / "config").write_text(f"[core]\n\tbare = false\n[include]\n\tpath = {back}\n")
    if linked:
        (tree / ".git").symlink_to(git_dir)
    return home, root, tree


def test_git_reads_the_include_through_the_link(tmp_path: Path) -> None:
    """The control: git itself reads ``lib/team.gitconfig`` (the include resolved through the link)."""
    if shutil.which("git") is None:
        pytest.skip("no git")
    home, _root, tree = _layout(tmp_path, linked=True)
    (tree / "team.gitconfig").write_text("[user]\n\tname = included\n")
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", "config", "--show-origin", "user.name"], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=30, check=False)  # fmt: skip
    assert done.stdout.strip().endswith("included"), (done.stdout, done.stderr)


def test_control_a_plain_git_dir_at_the_same_depth_protects_its_include(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, root, tree = _layout(tmp_path, linked=False)
    monkeypatch.setenv("HOME", str(home))
    why = protection_for(POLICY).write_rule([str(tree / "team.gitconfig")], None, [str(root)])
    assert why is not None


def test_file_write_refuses_the_config_a_linked_git_dir_includes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, root, tree = _layout(tmp_path, linked=True)
    monkeypatch.setenv("HOME", str(home))
    why = protection_for(POLICY).write_rule([str(tree / "team.gitconfig")], None, [str(root)])
    assert why is not None, "the file git includes for proj/a/b/c/d/e/f/lib is writable by file_write"
