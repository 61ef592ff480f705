"""Red team 62 F4: a file in a directory its owner may not write (0555: a Go module cache, a vendored tree made
read-only, a build's output `chmod 555`) written in place by a command (``echo more >> rodir/f.txt``), or a
directory the command itself writes in and then makes read-only (``echo g > d/g.txt; chmod 555 d``). Natively the
write needs no write permission on the directory, and the chmod comes after the writes. Landed: "not applied:
Permission denied" said as a conflict on the path (the writer lands a file by a temp name and a rename in its
directory, and a new tree by a rename into it), the transaction "applied", the command's bytes and files dropped
(the project keeps the old file; ``d/g.txt``, ``out/`` missing; no copy beside). Not among the documented limits. The
server runs as a user (root: this module runs again without CAP_DAC_OVERRIDE). Commands are data
(rt62_rodir.json). Now a
rename into (or of) such a directory of the user's gives it u+w for the rename and puts its mode back
(``nofollow.rename_at``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.as_a_user import again_as_a_user, as_a_user
from support.boxed import Person, run, shell

CASES = json.loads((Path(__file__).parent / "rt62_rodir.json").read_text())
pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
EXPECT = {
    "append-in-readonly-dir": {"rodir/f.txt": "f\nmore\n"},
    "rewrite-in-readonly-dir": {"rodir/f.txt": "new\n"},
    "write-then-make-dir-readonly": {"d/f.txt": "f\nmore\n", "d/g.txt": "g\n"},
    "install-readonly-dir-with-file": {"out/lib.txt": "built\n"},
    "control-touch-in-readonly-dir": {"rodir/f.txt": "f\n"},
}


def test_readonly_dir_edit_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)


@as_a_user
@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_write_in_a_directory_its_owner_may_not_write_lands(tmp_path: Path, case: str) -> None:
    root = tmp_path / "w" / "p"
    (root / "rodir").mkdir(parents=True)
    (root / "d").mkdir()
    (root / "rodir" / "f.txt").write_text("f\n")
    (root / "d" / "f.txt").write_text("f\n")
    (root / "rodir").chmod(0o555)
    async with shell(tmp_path / "w", Person()) as client:
        out = await run(client, CASES[case], cwd=str(root))
    assert out.get("exitCode") == 0, out
    got = {rel: (root / rel).read_text() if (root / rel).exists() else None for rel in EXPECT[case]}
    assert got == EXPECT[case], json.dumps(out.get("changes"))[:3000]
    assert out.get("transaction") in ("applied", "unchanged"), out
