"""Red team 68 F5: a root owned by a teammate (another user's directory, group-writable and setgid, the user a
member of its group). Natively the user makes files in it and the kernel moves its time. Through the server every
call that made anything there was a conflict on ``.`` ("not applied: Operation not permitted": the writer set the
root's time explicitly, which only its owner may), and its undo failed the same way. A directory of someone else's
now keeps the time the kernel gave it (on undo too: only its owner may set it, natively as well).

The server must run as a member of that group without CAP_DAC_OVERRIDE/CAP_FOWNER: run as root, this module runs
again that way (``setpriv --groups``), as a user would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.as_a_user import capable
from support.fidelity import differences, snapshot
from support.roots_differential import multi

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bwrap")]

GID = 4321  # the team's group
OTHER_UID = 4322  # the teammate who owns the root
as_a_member = pytest.mark.skipif(capable(), reason="run by test_as_a_team_member, without CAP_DAC_OVERRIDE")


def test_as_a_team_member(tmp_path: Path) -> None:
    if not capable():
        pytest.skip("this process is a user already")
    if shutil.which("setpriv") is None or os.getuid() != 0:
        pytest.skip("needs root and setpriv to become a team member")
    done = subprocess.run(
        ["setpriv", "--groups", f"{os.getgid()},{GID}", "--bounding-set=-dac_override,-dac_read_search,-fowner",
         sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:logging", "-n", "0",
         "-k", "not test_as_a_team_member", "--basetemp", str(tmp_path / "member"), __file__],
        capture_output=True, text=True, timeout=600, check=False, cwd=Path(__file__).parents[2],
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    assert done.returncode == 0 and " passed" in done.stdout and "skipped" not in done.stdout, done.stdout[-6000:]


def teammates_root(parent: Path) -> None:
    a = parent / "A"
    a.mkdir()
    (a / "f.txt").write_text("f\n")
    os.chmod(a, 0o2775)
    os.chown(a, OTHER_UID, GID)  # (CAP_CHOWN: the member's process is still uid 0 here)


CASES = {
    "new-file": "echo x > new.txt",
    "new-file-in-a-new-directory": "mkdir -p sub && echo x > sub/new.txt",
    "a-file-removed": "rm f.txt",
}


@as_a_member
@pytest.mark.parametrize("name", list(CASES))
async def test_a_file_made_or_removed_in_a_teammates_root_lands_without_a_conflict_and_undoes(
    tmp_path: Path, name: str
) -> None:
    from support.boxed import undo

    for side in ("nat", "box"):
        (tmp_path / side).mkdir()
        teammates_root(tmp_path / side)
    before = snapshot(tmp_path / "box")
    found, out = await multi(tmp_path, teammates_root, CASES[name], roots=("A",), undo_too=False, made=True)
    assert not found, "\n".join(found) + f"\n{out['changes']}"
    assert out["transaction"] == "applied" and not out["changes"]["conflicts"], out["changes"]
    after = snapshot(tmp_path / "box")
    # Undo and its undo: exact but for the root's own time, which only its owner may set (natively too).
    undo_id, why = undo(str(out["auditId"]))
    assert undo_id, why
    assert not differences(before, snapshot(tmp_path / "box"))
    redo_id, why = undo(undo_id)
    assert redo_id, why
    assert not differences(after, snapshot(tmp_path / "box"))
