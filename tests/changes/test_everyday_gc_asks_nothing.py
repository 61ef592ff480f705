"""Everyday `git gc` (and the `gc --auto` a `git commit` may run) asks nothing (red team 79's note): the loose
objects it packs, the old packs it replaces and the loose refs it packs are git's own bookkeeping — every object and
ref is still there (``changes.git_kept``) — and the new pack's check that it substitutes nothing reads a
repository's objects beyond the judgement's 64 MB (its own budget: 1 GB, 20 s)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes import git_objects
from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()
GIT = ["git", "-c", "user.name=u", "-c", "user.email=u@x", "-c", "commit.gpgsign=false"]


@pytest.mark.parametrize("beyond_budget", [False, True])
def test_everyday_gc_asks_nothing_of_a_small_or_a_large_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, beyond_budget: bool
) -> None:
    if beyond_budget:  # the judgement's own budget made smaller than the repository (64 MB vs 80 MB, scaled down)
        defaults = git_objects.Objects.__init__.__defaults__
        monkeypatch.setattr(git_objects.Objects.__init__, "__defaults__", (256 << 10, *(defaults or ())[1:]))
    copy = Copy(tmp_path)
    (copy.root / "data").mkdir()
    for i in range(8):  # 8 files of 128 KiB of text, each its own
        line = f"file {i} row of sample data, the same shape each time\n".encode()
        (copy.root / "data" / f"{i}.csv").write_bytes(line * ((1 << 20) // 8 // len(line)))
    (copy.root / "a.txt").write_text("a\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "one"]):
        subprocess.run([*GIT, "-C", str(copy.root), *args], check=True, capture_output=True, timeout=120)
    changes = copy.run("git gc -q")
    assert any(c.action == "delete" and "/objects/" in c.path for c in changes.changes)  # (it packed something)
    asks = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)]).asks
    assert not asks, asks
