"""Git configs are judged with what git reads — but the guard reads an include's path differently from git.

Three shapes git follows and the guard does not:

* ``include.path = ~USER/…``: git expands ``~user`` to that user's home (``interpolate_path``); the guard only
  knows ``~`` and ``~/`` and takes ``~user/…`` as a path relative to ``.git/``. ``~root/../<project>/team.gitconfig``
  is the project's own file to git.
* a relative include inside a file that was itself included through a symlink: git takes it relative to the path
  it opened (the symlink's directory); the guard resolves the symlink first and protects a file beside its target.
* an included file reached through a symlink the command re-points (``ln -sfn other.gitconfig team.gitconfig``):
  the guard protects the link's old target only, so the link and the new target both land.

Each lets a command (or file_write) put ``core.fsmonitor`` where the user's own git reads it, outside the box.
Passes when the guard expands ``~user`` as git does, resolves relative includes against the including path as
opened, and protects the path git names (the link itself), not only its realpath.
"""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support import error_of, serve
from support.copies import Copy, overlays_work

POLICY = load_policy()
needs_overlay = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
APPEND = "printf '[core]\\n\\tfsmonitor = touch ran\\n' >> "  # data for the copy's shell; never run on the host


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, timeout=30)
    return done.stdout.strip()


def tilde_user_repo(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
    (root / "team.gitconfig").write_text("[user]\n\tname = team\n")
    user = pwd.getpwuid(os.getuid()).pw_name
    git(root, "config", "include.path", f"~{user}/..{root}/team.gitconfig")
    # Git itself reads the project's file through that include.
    assert git(root, "config", "--show-origin", "user.name").endswith("team")


def refused_paths(root: Path, copy: Copy, script: str) -> dict[str, str]:
    judged = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(root)])
    return {path: why for (_root, path), why in judged.refused.items()}


@needs_overlay
def test_attack_tilde_user_include_is_not_protected_in_the_judge(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    tilde_user_repo(copy.root)
    refused = refused_paths(copy.root, copy, APPEND + "team.gitconfig")
    assert "team.gitconfig" in refused, f"git reads it via ~user/; not refused: {refused}"


@pytest.mark.anyio
async def test_attack_tilde_user_include_is_writable_by_file_write(workspace: Path) -> None:
    tilde_user_repo(workspace)
    async with serve("mcp-server-file-write", workspace) as client:
        wrote = await client.call_tool(
            "file_write", {"path": "team.gitconfig", "content": "[core]\n\tfsmonitor = touch ran\n", "overwrite": True}
        )
    assert wrote.is_error and error_of(wrote)["code"] == "PROTECTED_PATH", wrote
    assert "fsmonitor" not in (workspace / "team.gitconfig").read_text()


def linked_include_repo(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
    (root / "conf").mkdir()
    (root / "conf" / "real.gitconfig").write_text("[user]\n\tname = team\n[include]\n\tpath = inner.gitconfig\n")
    (root / "inner.gitconfig").write_text("[user]\n\temail = team@example.invalid\n")
    (root / "other.gitconfig").write_text("[user]\n\temail = other@example.invalid\n")
    os.symlink("conf/real.gitconfig", root / "team.gitconfig")
    git(root, "config", "include.path", "../team.gitconfig")
    # Git takes inner.gitconfig beside the link it opened (the project's root), not beside conf/real.gitconfig.
    assert git(root, "config", "user.email") == "team@example.invalid"


@needs_overlay
def test_attack_relative_include_inside_a_symlinked_include_is_judged_beside_the_wrong_file(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    linked_include_repo(copy.root)
    refused = refused_paths(copy.root, copy, APPEND + "inner.gitconfig")
    assert "inner.gitconfig" in refused, f"git reads ./inner.gitconfig, yet the change was not refused: {refused}"


@needs_overlay
def test_attack_included_symlink_repointed_at_a_new_config_lands(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    linked_include_repo(copy.root)
    refused = refused_paths(copy.root, copy, APPEND + "other.gitconfig && ln -sfn other.gitconfig team.gitconfig")
    assert {"team.gitconfig", "other.gitconfig"} & set(refused), (
        f"the include now leads git to other.gitconfig (with core.fsmonitor), yet nothing was refused: {refused}"
    )
