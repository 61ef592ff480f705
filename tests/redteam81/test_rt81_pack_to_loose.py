"""Red team 81: git gc's exemption (``changes.git_kept``: a deleted pack each of whose objects a loose object left by
the call "still holds" is not a loss) counts a loose object by its path alone, and new loose objects are never
checked against their ids. A command that unpacks a pack into loose objects — one of them (the tree of a branch the
user checks out next) with other bytes under the same id — and deletes the pack is asked nothing; the user's
``git checkout side`` writes ``.envrc``. With every loose object left empty, the pack's objects are simply lost
(the repository corrupt, unpushed commits gone), unasked."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()
ENV = dict(os.environ, GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@x", GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@x",
           GIT_CONFIG_GLOBAL="/dev/null", GIT_EDITOR="true")  # fmt: skip
HELPER = Path(__file__).with_name("rt81_unpack.py")


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=60)


def _project(root: Path) -> None:
    root.mkdir(exist_ok=True)
    (root / "a.txt").write_text("a\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "one"], ["checkout", "-qb", "side"]):
        assert _git(root, *args).returncode == 0
    (root / "s.txt").write_text("s\n")
    for args in (["add", "."], ["commit", "-qm", "side"], ["checkout", "-q", "main"], ["gc", "-q"]):
        assert _git(root, *args).returncode == 0
    assert list((root / ".git/objects/pack").glob("*.pack")), "setup: not packed"
    shutil.copy(HELPER, root / ".git" / "rt81_unpack.py")  # (a file the call does not write)


def _script(arg: str) -> str:
    return f"python3 .git/rt81_unpack.py {arg}"


def test_attack_a_forged_loose_object_after_unpacking_is_asked(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    _project(plain)
    done = subprocess.run(["sh", "-ec", _script("forge")], cwd=plain, env=ENV, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    _git(plain, "checkout", "-q", "side")
    assert (plain / ".envrc").exists(), "git writes no .envrc: the test is wrong"
    shutil.rmtree(plain)
    copy = Copy(tmp_path)
    _project(copy.root)
    changes = copy.run(_script("forge"))
    j = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert j.asks or j.refused, ("git checkout side writes .envrc", j.summary)


def test_attack_packs_deleted_for_empty_loose_files_is_asked(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    _project(plain)
    subprocess.run(["sh", "-ec", _script("empty")], cwd=plain, env=ENV, capture_output=True, timeout=60, check=True)
    assert _git(plain, "log", "side").returncode != 0, "the history is still readable: the test is wrong"
    shutil.rmtree(plain)
    copy = Copy(tmp_path)
    _project(copy.root)
    changes = copy.run(_script("empty"))
    j = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert j.asks or j.refused, ("every commit lost", j.summary)


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_attack_through_the_real_server_is_asked(tmp_path: Path) -> None:
    """The same through shell_exec: a person who declines; the forged tree must not land unasked."""
    from support.boxed import Person, run, shell

    root = tmp_path / "p"
    _project(root)
    person = Person(answer=False)
    async with shell(root, person) as client:
        out = await run(client, _script("forge"), cwd=str(root))
    landed = not list((root / ".git/objects/pack").glob("*.pack"))
    if landed:
        _git(root, "checkout", "-q", "side")
    assert person.questions or not landed, (
        "landed unasked; git checkout side wrote .envrc:",
        (root / ".envrc").exists(),
        out.get("changes"),
    )


def test_control_packs_deleted_outright_are_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _project(copy.root)
    changes = copy.run("rm -f .git/objects/pack/pack-*")
    j = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert j.asks or j.refused, j.summary
