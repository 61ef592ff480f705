"""Red team 42n (promise 1, a bound that failed open): ``chmod 777 DIR`` where DIR holds a nested repository is
refused — anyone could move the repository away and put their own, with hooks, in its place — but the walk that
looks for it stops after 5,000 entries: with 5,000 files before it, the re-mode landed unasked in a scratch
directory and was only asked elsewhere. A walk cut short now refuses."""

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


@pytest.mark.parametrize("top", ["_deps", "vendor"])
def test_attack_a_directory_padded_past_the_walk_is_refused_as_if_it_held_a_repository(
    tmp_path: Path, top: str
) -> None:
    copy = Copy(tmp_path)
    filler = copy.root / top / "a"
    filler.mkdir(parents=True)
    for i in range(5_000):
        (filler / f"f{i:05}").touch()
    (copy.root / top / "zlib").mkdir()
    subprocess.run(["git", "init", "-q", str(copy.root / top / "zlib")], check=True)
    judged = judge([copy.run(f"chmod 777 {top}")], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    refused = dict(judged.refused)
    assert (str(copy.root), top) in refused, (refused, judged.asks)
    assert "writable by others" in refused[(str(copy.root), top)]


def test_a_small_directory_made_writable_by_others_is_only_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    (copy.root / "shared").mkdir()
    for i in range(10):
        (copy.root / "shared" / f"f{i}").touch()
    judged = judge([copy.run("chmod 777 shared")], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert not judged.refused
    assert any("shared" in ask for ask in judged.asks), judged.asks
