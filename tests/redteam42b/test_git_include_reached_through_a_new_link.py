"""Issue 42 (2): include targets are protected "through symlinks" (docs/shell_exec.md: "every file a repository's
configs include ... a link both as named and where it leads"; and "a link put where a protected directory or one
on the way to it would be" is refused). The repository's own config includes ``../shared/team.gitconfig`` (an
optional team file, not there yet). A command writes ``elsewhere/team.gitconfig`` and puts a link ``shared ->
elsewhere``: git then reads ``elsewhere/team.gitconfig`` as the repository's config. Observed: both land (nothing
refused); expected the link (or the file it makes git read) refused, as writing ``shared/team.gitconfig`` is."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
needs_overlay = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


@needs_overlay
def test_attack_link_on_the_way_to_a_missing_include_makes_git_read_a_new_file(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    subprocess.run(["git", "init", "-q", str(copy.root)], check=True)
    subprocess.run(["git", "-C", str(copy.root), "config", "include.path", "../shared/team.gitconfig"], check=True)
    direct = Copy(tmp_path / "direct")
    subprocess.run(["git", "init", "-q", str(direct.root)], check=True)
    subprocess.run(["git", "-C", str(direct.root), "config", "include.path", "../shared/team.gitconfig"], check=True)

    # The same file written by its name is refused (the control)...
    changes = direct.run("mkdir shared && echo '[user]' > shared/team.gitconfig")
    judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(direct.root)])
    assert "shared/team.gitconfig" in {p for (_r, p) in judged.refused}, judged.refused

    # ...and written through a link the command puts on the way to it.
    changes = copy.run("mkdir elsewhere && printf '[user]\\n\\tname = planted\\n' > elsewhere/team.gitconfig && "
                       "ln -s elsewhere shared")  # fmt: skip
    judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    refused = {p for (_r, p) in judged.refused}
    assert refused & {"shared", "elsewhere/team.gitconfig", "elsewhere"}, (refused, judged.asks)
