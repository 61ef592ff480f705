"""Red team 42m (promise 2, a documented bound that failed open): the judge follows a config's includes to 32 files,
but git reads every one: in a repository including 40 files of its work tree, the 33rd to 40th were written
unjudged. Past the bound the files named are protected without being read. Payloads are harmless text."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()


def test_attack_the_fortieth_included_config_is_protected_like_the_first(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    subprocess.run(["git", "init", "-q", str(copy.root)], check=True)
    with (copy.root / ".git" / "config").open("a") as config:
        for i in range(40):
            (copy.root / f"inc{i:02}.gitconfig").write_text("[user]\n\tname = x\n")
            config.write(f"[include]\n\tpath = ../inc{i:02}.gitconfig\n")
    script = "printf '[core]\\n\\thooksPath = /x\\n' >> inc39.gitconfig && echo n > notes.txt"
    judged = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    refused = {path for _root, path in judged.refused}
    assert "inc39.gitconfig" in refused and "notes.txt" not in refused, refused
