"""Issue 42 (2): a file a repository's config includes is protected like ``.git/config`` itself, "included by a
repository beside or below the written path", "through symlinks", in the judge and in file_write
(docs/shell_exec.md "Git is known the way git knows itself"). The search for repositories beside or below a path
(protected._git_dirs) once missed repositories git itself finds: one five levels down, one whose ``.git`` is a
symlink. (One behind more than 2,000 directories is beyond the documented bound.) Each test writes only a harmless
line to the included file (what lands would be read by the user's git as its config)."""

from __future__ import annotations

import os
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


def _repo_including(work_tree: Path, include: str) -> None:
    subprocess.run(["git", "init", "-q", str(work_tree)], check=True)
    subprocess.run(["git", "-C", str(work_tree), "config", "include.path", include], check=True)


def _git_reads(work_tree: Path, key: str) -> str:
    done = subprocess.run(["git", "-C", str(work_tree), "config", "--includes", "--get", key],
                          capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    return done.stdout.strip()


def _refused(copy: Copy, script: str) -> dict[str, str]:
    changes = copy.run(script)
    judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return {path: why for (_root, path), why in judged.refused.items()}


@needs_overlay
def test_attack_config_included_by_a_repository_five_levels_down_is_written(tmp_path: Path) -> None:
    """Observed: ``shared.gitconfig`` (included by ``a/b/c/d/app/.git/config``) lands; expected refused."""
    copy = Copy(tmp_path)
    app = copy.root / "a" / "b" / "c" / "d" / "app"
    _repo_including(app, "../../../../../../shared.gitconfig")  # relative to app/.git
    (copy.root / "shared.gitconfig").write_text("[user]\n\tname = team\n")
    assert _git_reads(app, "user.name") == "team"  # git reads it
    refused = _refused(copy, "echo '[user]' >> shared.gitconfig")
    assert "shared.gitconfig" in refused, refused


@needs_overlay
def test_attack_config_included_by_a_repository_whose_dot_git_is_a_symlink_is_written(tmp_path: Path) -> None:
    """``lib/.git`` is a symlink to a git dir kept outside the project (git follows it; the search skips a ``.git``
    that is neither a directory nor a file). Observed: the include lands; expected refused."""
    copy = Copy(tmp_path)
    store = tmp_path / "gitdirs"
    store.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(store / "lib.git")], check=True)
    subprocess.run(["git", "--git-dir", str(store / "lib.git"), "config", "core.bare", "false"], check=True)
    subprocess.run(["git", "--git-dir", str(store / "lib.git"), "config", "include.path",
                    str(copy.root / "shared.gitconfig")], check=True)  # fmt: skip
    (copy.root / "lib").mkdir()
    os.symlink(store / "lib.git", copy.root / "lib" / ".git")
    (copy.root / "shared.gitconfig").write_text("[user]\n\tname = team\n")
    assert _git_reads(copy.root / "lib", "user.name") == "team"
    refused = _refused(copy, "echo '[user]' >> shared.gitconfig")
    assert "shared.gitconfig" in refused, refused


@pytest.mark.anyio
async def test_attack_file_write_to_a_config_included_five_levels_down(workspace: Path) -> None:
    """file_write takes the same rule. Observed: written; expected PROTECTED_PATH."""
    app = workspace / "a" / "b" / "c" / "d" / "app"
    _repo_including(app, "../../../../../../shared.gitconfig")
    (workspace / "shared.gitconfig").write_text("[user]\n\tname = team\n")
    assert _git_reads(app, "user.name") == "team"
    async with serve("mcp-server-file-write", workspace) as client:
        wrote = await client.call_tool(
            "file_write", {"path": "shared.gitconfig", "content": "[user]\n\tname = other\n", "overwrite": True}
        )
    assert wrote.is_error and error_of(wrote)["code"] == "PROTECTED_PATH", wrote
