"""Git configs are judged with everything git reads: the files a repository's config includes (``include.path``,
``includeIf``) are protected like the config itself, in the judgement of a command's effects and in file_write,
and a ``core.hooksPath`` set in one of them protects its hooks directory."""

from __future__ import annotations

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


def repository(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "team.gitconfig").write_text("[user]\n\tname = team\n")
    (root / "conf").mkdir()
    (root / "conf" / "when.gitconfig").write_text("[core]\n\thooksPath = .githooks\n")
    (root / ".githooks").mkdir()
    git = ["git", "-C", str(root), "config"]
    subprocess.run([*git, "include.path", "../team.gitconfig"], check=True)  # relative to .git/config's directory
    subprocess.run([*git, "includeIf.gitdir:/nowhere/.path", "../conf/when.gitconfig"], check=True)


@needs_overlay
def test_attack_fsmonitor_appended_to_an_included_config_is_refused(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    repository(copy.root)
    changes = copy.run(
        "printf '[core]\\n\\tfsmonitor = touch ran\\n' >> team.gitconfig && echo x > conf/when.gitconfig && "
        "echo 'echo hi' > .githooks/pre-commit && echo fine > notes.txt"
    )
    judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    refused = {path: why for (_root, path), why in judged.refused.items()}
    assert {"team.gitconfig", "conf/when.gitconfig", ".githooks/pre-commit"} <= set(refused), refused
    assert "includes" in refused["team.gitconfig"] and "notes.txt" not in refused


@pytest.mark.anyio
async def test_attack_file_write_to_an_included_config_is_refused(workspace: Path) -> None:
    repository(workspace)
    async with serve("mcp-server-file-write", workspace) as client:
        wrote = await client.call_tool(
            "file_write", {"path": "team.gitconfig", "content": "[core]\n\tfsmonitor = touch ran\n", "overwrite": True}
        )
        other = await client.call_tool("file_write", {"path": "notes.txt", "content": "fine\n"})
    assert wrote.is_error and error_of(wrote)["code"] == "PROTECTED_PATH", wrote
    assert not other.is_error
    assert "fsmonitor" not in (workspace / "team.gitconfig").read_text()


@pytest.mark.anyio
async def test_attack_file_write_to_a_submodules_config_is_refused_whatever_the_git_dir_looks_like(
    workspace: Path,
) -> None:
    (workspace / ".git" / "modules" / "sub").mkdir(parents=True)  # no HEAD, objects or refs yet: git's all the same
    async with serve("mcp-server-file-write", workspace) as client:
        wrote = await client.call_tool(
            "file_write", {"path": ".git/modules/sub/config", "content": "[core]\n\tfsmonitor = touch ran\n"}
        )
    assert wrote.is_error and error_of(wrote)["code"] == "PROTECTED_PATH", wrote
    assert not (workspace / ".git" / "modules" / "sub" / "config").exists()
