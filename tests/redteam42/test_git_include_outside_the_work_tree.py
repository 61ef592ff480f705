"""A repository's config may include a file anywhere, not only inside its own work tree: a nested repository
(``repos/app/.git/config``: ``[include] path = ../../../shared.gitconfig``) reads the project's top-level
``shared.gitconfig``. The guard only looks for includes in the repositories *above* the written path (it walks the
written file's ancestors), so a file included by a repository beside or below it is not protected: a command or
file_write appends ``core.fsmonitor`` there and the user's next ``git status`` in repos/app runs it.

Passes when the files any repository within the roots includes are protected wherever they lie (e.g. found from
the git dirs the box already searches), in the judge and in file_write.
"""

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


def nested(root: Path) -> None:
    app = root / "repos" / "app"
    app.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(app)], check=True, timeout=30)
    (root / "shared.gitconfig").write_text("[user]\n\tname = team\n")
    subprocess.run(["git", "-C", str(app), "config", "include.path", "../../../shared.gitconfig"], check=True)
    got = subprocess.run(["git", "-C", str(app), "config", "user.name"], capture_output=True, text=True, check=True)
    assert got.stdout.strip() == "team"  # git reads the top-level file for repos/app


@needs_overlay
def test_attack_config_a_nested_repository_includes_from_above_is_not_judged_as_git_config(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    nested(copy.root)
    changes = copy.run("printf '[core]\\n\\tfsmonitor = touch ran\\n' >> shared.gitconfig")
    judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    refused = {path: why for (_root, path), why in judged.refused.items()}
    assert "shared.gitconfig" in refused, f"repos/app's git reads shared.gitconfig, yet it was not refused: {refused}"


@pytest.mark.anyio
async def test_attack_file_write_to_a_config_a_nested_repository_includes(workspace: Path) -> None:
    nested(workspace)
    async with serve("mcp-server-file-write", workspace) as client:
        wrote = await client.call_tool(
            "file_write",
            {"path": "shared.gitconfig", "content": "[core]\n\tfsmonitor = touch ran\n", "overwrite": True},
        )
    assert wrote.is_error and error_of(wrote)["code"] == "PROTECTED_PATH", wrote
