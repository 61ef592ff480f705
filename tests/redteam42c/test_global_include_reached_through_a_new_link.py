"""Issue 42 (2): "every file your global configs include" is protected, and "so does a link or a new directory put
on the way to an included file" (docs/shell_exec.md, "One protected list"). The user's ~/.gitconfig includes
``~/proj/.gitconfig.d/user.inc`` (optional, not there yet); ``~/proj`` is the allowed directory. A command makes
``real/user.inc`` and a link ``.gitconfig.d -> real``: every git of the user then reads it. The repository-level
check (``_on_the_way``) is not applied to the global includes. Observed: applies; expected refused, as writing
``.gitconfig.d/user.inc`` by that name is (the control)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


def _setup(base: Path) -> Copy:
    home = Path(os.environ["HOME"])
    copy = Copy(base)
    (home / ".gitconfig").write_text(f"[include]\n\tpath = {copy.root}/.gitconfig.d/user.inc\n")
    return copy


def test_attack_link_on_the_way_to_a_global_include(tmp_path: Path) -> None:
    direct = _setup(tmp_path / "direct")
    changes = direct.run("mkdir .gitconfig.d && echo '[user]' > .gitconfig.d/user.inc")
    judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(direct.root)])
    assert ".gitconfig.d/user.inc" in {p for (_r, p) in judged.refused}, judged.refused  # the control

    copy = _setup(tmp_path / "linked")
    changes = copy.run("mkdir real && printf '[core]\\n\\tpager = x\\n' > real/user.inc && ln -s real .gitconfig.d")
    judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert {p for (_r, p) in judged.refused} & {".gitconfig.d", "real/user.inc", "real"}, judged.refused
