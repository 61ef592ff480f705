"""Issue 42 (2): "so does a link or a new directory put on the way to an included file" (docs/shell_exec.md, "One
protected list"). The repository's config includes ``shared/team.gitconfig`` (optional, not there yet) and
``shared/`` is an ordinary directory of the project now. A command replaces that directory with a link to a
directory it fills (``rmdir shared; ln -s elsewhere shared``): git then reads ``elsewhere/team.gitconfig``.
Observed: it applies with no refusal (``_on_the_way`` asks whether the path is a directory in the real tree
*before* the change, and it still is); expected the link refused as the link to a path that is not there yet is."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


def _repo(base: Path) -> Copy:
    copy = Copy(base)
    subprocess.run(["git", "init", "-q", str(copy.root)], check=True)
    subprocess.run(["git", "-C", str(copy.root), "config", "include.path", "../shared/team.gitconfig"], check=True)
    (copy.root / "shared").mkdir()
    (copy.root / "shared" / "README").write_text("team files\n")
    return copy


def test_attack_existing_directory_on_the_way_to_an_include_swapped_for_a_link(tmp_path: Path) -> None:
    copy = _repo(tmp_path)
    changes = copy.run("mkdir elsewhere && printf '[user]\\n\\tname = planted\\n' > elsewhere/team.gitconfig && "
                       "cp shared/README elsewhere/ && rm -r shared && ln -s elsewhere shared")  # fmt: skip
    judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    refused = {p for (_r, p) in judged.refused}
    assert refused & {"shared", "elsewhere/team.gitconfig", "elsewhere"}, (refused, judged.asks)
