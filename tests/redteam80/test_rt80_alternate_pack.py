"""Red team 80: a new pack in a repository another one borrows from (``objects/info/alternates``, as ``git clone
--shared``/``--reference`` leave it; set up before the call, not by the command). Git searches every pack — its own
and its alternates' — before loose objects, so a pack the command adds to A, naming an id B holds loose with other
content, is what B's git reads. ``git_objects.shadowed`` checks a new pack's entries only against the ids A had; B
moved nothing and is not looked at. The user's ``git checkout feature`` in B writes the forged bytes (here into
``.envrc``, refused in the work tree). Both texts are harmless."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()
HERE = Path(__file__).parent
ENV = dict(os.environ, GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@x", GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@x",
           GIT_CONFIG_GLOBAL="/dev/null")  # fmt: skip


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _project(root: Path) -> str:
    """A and B (cloned --shared from A); B's branch feature adds .envrc (its blob loose in B). The blob's id."""
    a = root / "a"
    a.mkdir(parents=True)
    (a / "x.txt").write_text("x\n")
    _git(a, "init", "-q", "-b", "main")
    _git(a, "add", ".")
    _git(a, "commit", "-qm", "one")
    _git(root, "clone", "-q", "--shared", "a", "b")
    b = root / "b"
    _git(b, "checkout", "-q", "-b", "feature")
    (b / ".envrc").write_text("echo rt80-good\n")
    _git(b, "add", ".")
    _git(b, "commit", "-qm", "envrc")
    _git(b, "checkout", "-q", "main")
    return _git(b, "rev-parse", "feature:.envrc")


def _script(blob: str) -> str:
    return f"cd a && {sys.executable} {HERE / 'rt80_forge.py'} {blob} {HERE.parent / 'support'}"


def test_attack_a_pack_in_an_alternate_substituting_a_borrower_s_object_is_asked(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    blob = _project(plain)
    subprocess.run(["sh", "-ec", _script(blob)], cwd=plain, env=ENV, check=True, capture_output=True, timeout=60)
    _git(plain / "b", "checkout", "-q", "feature")
    assert (plain / "b" / ".envrc").read_text() == "echo rt80-forged\n"  # git wrote the substitute
    shutil.rmtree(plain)
    copy = Copy(tmp_path)
    blob = _project(copy.root)
    changes = copy.run(_script(blob))
    asks = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)]).asks
    assert asks, ("b's git checkout feature writes the forged .envrc", [c.path for c in changes.changes])
