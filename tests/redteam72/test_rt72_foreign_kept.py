"""Red team 72, item 5: a pre-image that cannot be hard-linked (a file of someone else's) is copied. What of one the
server user may not even read (0600, another owner), and one with set-id bits? Run as root, the module runs again as
a user (no CAP_DAC_OVERRIDE/FOWNER; CAP_CHOWN kept), the files given away before by the root process."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from support.as_a_user import again_as_a_user, as_a_user

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bwrap")]

OTHER = 4322
GIVEN = "RT72_FOREIGN_GIVEN"

CASES = {
    # (mode of the foreign file, command)
    # (one it may not read, renamed over: a conflict, the file as it was: docs/shell_exec.md, ownership)
    "unreadable-deleted": (0o600, "rm -f v"),
    "setuid-renamed-over": (0o4755, "echo mine > v.new && mv -f v.new v"),
    "setgid-renamed-over": (0o2755, "echo mine > v.new && mv -f v.new v"),
}


def test_foreign_as_a_user(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to give files away")
    for name, (mode, _cmd) in CASES.items():
        a = tmp_path / "given" / name / "A"
        a.mkdir(parents=True)
        (a / "v").write_text("someone else's bytes\n")
        os.chown(a / "v", OTHER, OTHER)
        os.chmod(a / "v", mode)
    os.environ[GIVEN] = str(tmp_path / "given")
    try:
        again_as_a_user(__file__, tmp_path)
    finally:
        del os.environ[GIVEN]


def look(p: Path) -> tuple[int, int, int, int]:
    st = os.lstat(p)
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), st.st_size


@as_a_user
@pytest.mark.parametrize("name", list(CASES))
async def test_foreign_file_kept_and_undone(tmp_path: Path, name: str) -> None:
    given = os.environ.get(GIVEN)
    if given is None:
        pytest.skip("run by test_foreign_as_a_user")
    from support import serve
    from support.boxed import SX, Person, run, undo

    a = Path(given) / name / "A"
    before = look(a / "v")
    async with serve(SX, a, audit=tmp_path / "audit.jsonl", elicitation_callback=Person()) as client:
        out = await run(client, CASES[name][1], cwd=str(a))
    tx = out.get("transaction")
    changes = out.get("changes") or {}
    if tx == "applied" and not changes.get("conflicts"):
        # It landed: the old file must come back exactly by undo.
        undo_id, why = undo(str(out["auditId"]))
        assert undo_id, f"applied, but undo fails: {why}\n{out}"
        assert os.path.lexists(a / "v"), f"undo did not bring it back\n{out}"
        # Its mode and bytes exactly; its owner as far as the server may give it (with set-id bits, a process that
        # may chown but not chmod others' files keeps the copy its own: the bits are what matter).
        now = look(a / "v")
        assert now[2:] == before[2:] and now[:2] in (before[:2], (os.geteuid(), os.getegid())), (
            f"undo not exact: {now} != {before}\n{out}"
        )
    else:
        # Not landed: it must be said, and the foreign file must be as it was.
        assert os.path.lexists(a / "v"), f"not applied yet the file is gone: {out}"
        assert look(a / "v") == before, out
        assert not os.path.lexists(a / "v.new") or tx == "applied", out
