"""Red team 68 F6: a file owned by someone else (a build run with ``sudo`` or in docker left it) in a directory of
one's own, replaced by a rename (``echo mine > f.new && mv -f f.new f``, the way editors save): natively the
directory's rights allow it. Through the server it was "conflict: not applied: Operation not permitted" and the
command's new bytes were nowhere: keeping the old file's pre-image by a hard link is refused by the kernel for a
file one does not own (``fs.protected_hardlinks``). The pre-image is copied then, as across file systems, and the
command's version lands; undo puts the other owner's file back, owner and all.

The server must run as a user (no CAP_FOWNER, no CAP_DAC_OVERRIDE): run as root, the module runs again that way
(``support.as_a_user``); the file is given away (chown) by the root test process before."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.as_a_user import again_as_a_user, as_a_user
from support.roots_differential import multi

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bwrap")]

OTHER_UID = 4322  # someone else (giving a file away needs root: done by the outer test process)
GIVEN = "RT68_FOREIGN_GIVEN"  # where the outer process made the trees, for the inner one


def test_a_foreign_file_replaced_by_a_rename_as_a_user(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("giving a file away needs root here")
    for name in CASES:
        foreign_file(tmp_path / "given" / name / "nat")
        foreign_file(tmp_path / "given" / name / "box")
    os.environ[GIVEN] = str(tmp_path / "given")
    try:
        again_as_a_user(__file__, tmp_path)
    finally:
        del os.environ[GIVEN]


def foreign_file(parent: Path) -> None:
    a = parent / "A"
    (a / "d").mkdir(parents=True)
    for p in (a / "left.txt", a / "d" / "in.txt"):
        p.write_text("left behind by a build run as someone else\n")
        os.chown(p, OTHER_UID, OTHER_UID)
        os.chmod(p, 0o644)


def owners(parent: Path) -> dict[str, tuple[int, int]]:
    return {
        os.path.relpath(os.path.join(d, n), parent): (os.lstat(os.path.join(d, n)).st_uid,
                                                      os.lstat(os.path.join(d, n)).st_gid)
        for d, ds, fs in os.walk(parent) for n in ds + fs if ".mcp-guard" not in d
    }  # fmt: skip


# (The same bytes renamed over it, ``cp f x && mv -f x f``, are read as a new time for the same file, which only
# its owner may set: a conflict, said, the file as it was — docs/shell_exec.md, "Ownership the box cannot show".)
CASES = {
    "new-bytes": "echo mine > left.txt.new && mv -f left.txt.new left.txt",
    "new-bytes-in-a-directory": "printf mine > d/in.txt.tmp && mv -f d/in.txt.tmp d/in.txt",
}


@as_a_user
@pytest.mark.parametrize("name", list(CASES))
async def test_a_file_of_someone_elses_replaced_by_a_rename_lands_and_undoes_with_its_owner(
    tmp_path: Path, name: str
) -> None:
    given = os.environ.get(GIVEN)
    if given is None:
        pytest.skip("run by test_a_foreign_file_replaced_by_a_rename_as_a_user (the files are given away as root)")
    from support.boxed import undo

    work = Path(given) / name
    before = owners(work / "box")
    found, out = await multi(work, foreign_file, CASES[name], roots=("A",), undo_too=False, made=True)
    assert not found, "\n".join(found) + f"\n{out['changes']}"
    assert not [p for p in out["changes"]["paths"] if p["action"] == "conflict"], out["changes"]
    undo_id, why = undo(str(out["auditId"]))
    assert undo_id, why
    assert owners(work / "box") == before
    redo_id, why = undo(undo_id)
    assert redo_id, why
