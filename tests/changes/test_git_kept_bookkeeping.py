"""Deleting git's object files is bookkeeping only where every object is still there, as what its id says
(``changes.git_kept``): a pack exploded into loose objects and deleted asks nothing; one whose loose stand-in for an
object is forged is a loss, counted (git reads the loose object once no pack has the id)."""

from __future__ import annotations

import subprocess
import zlib
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()
GIT = ["git", "-c", "user.name=u", "-c", "user.email=u@x", "-c", "commit.gpgsign=false"]


def _packed_repo(copy: Copy) -> str:
    (copy.root / "a.txt").write_text("the user's text\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "one"], ["gc", "-q"]):
        subprocess.run([*GIT, "-C", str(copy.root), *args], check=True, capture_output=True, timeout=60)
    done = subprocess.run([*GIT, "-C", str(copy.root), "rev-parse", "HEAD:a.txt"], capture_output=True, text=True)
    return done.stdout.strip()


def _explode(aside: Path, forge: str = "") -> str:
    # Unpacking into the same repository needs the pack moved out of the way first (git skips objects it has).
    return (
        f"mv .git/objects/pack/*.pack {aside} && rm .git/objects/pack/*.idx && "
        f"git unpack-objects -q < {aside} && rm {aside}" + forge
    )


def test_a_pack_exploded_into_loose_objects_and_deleted_asks_nothing(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _packed_repo(copy)
    asks = judge(
        [copy.run(_explode(tmp_path / "aside.pack"))], protection_for(POLICY), POLICY.effects, [str(copy.root)]
    ).asks
    assert not asks, asks


def test_attack_a_forged_loose_object_standing_in_for_a_deleted_pack_is_a_loss(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    blob = _packed_repo(copy)
    forged = tmp_path / "forged"
    forged.write_bytes(zlib.compress(b"blob 7\0forged\n"))
    loose = f".git/objects/{blob[:2]}/{blob[2:]}"
    asks = judge(
        [copy.run(_explode(tmp_path / "aside.pack", f" && chmod u+w {loose} && cp {forged} {loose}"))],
        protection_for(POLICY),
        POLICY.effects,
        [str(copy.root)],
    ).asks
    assert any(".pack" in a or ".idx" in a for a in asks), asks
