"""Red team 78: claim 4 — deletion questions look at what was lost.

"Git has a copy" is read from the real index alone: a command that deletes a file git has staged (the index names
its blob) and, in the same call, the loose object that blob is, loses the file's one copy outside the history —
and is asked nothing; the judgement also lists the file as not an only copy (the history may then evict it)."""

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


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, timeout=30)
    return done.stdout.strip()


def test_attack_file_and_its_staged_blob_deleted_is_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    root = copy.root
    _git(root, "init", "-q")
    (root / "work.txt").write_text("the only copy of a day's work\n")
    _git(root, "add", "work.txt")  # staged, never committed: the loose blob is git's one copy
    blob = _git(root, "rev-parse", ":work.txt")
    script = f"rm work.txt .git/objects/{blob[:2]}/{blob[2:]}"
    changes = copy.run(script)
    judgement = judge([changes], protection_for(POLICY), POLICY.effects, [str(root)])
    assert not judgement.refused, judgement.refused
    assert judgement.asks, ("nothing asked", judgement.summary)


def test_attack_file_and_its_packed_blob_deleted_is_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    root = copy.root
    _git(root, "init", "-q")
    for i in range(5):
        (root / f"f{i}.txt").write_text(f"file {i}: work\n")
    _git(root, "add", ".")
    _git(root, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "one")
    _git(root, "gc", "-q")  # everything in one pack
    # The command removes the files and every pack: what git had of them is gone with them.
    script = "rm f0.txt f1.txt f2.txt f3.txt f4.txt && rm -f .git/objects/pack/*"
    changes = copy.run(script)
    judgement = judge([changes], protection_for(POLICY), POLICY.effects, [str(root)])
    print(judgement.refused, judgement.asks, judgement.summary)
    assert judgement.asks or judgement.refused, ("nothing asked", judgement.summary)
