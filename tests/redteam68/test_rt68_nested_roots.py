"""Red team 68, finding F1 (MEDIUM): a root inside another root, given after it (the launch directory ``A`` and
``--allow-path A/sub``; or ``--allow-path B --allow-path B/sub``; or ``--allow-path <parent> --allow-path
<parent>/A/sub``) turns the copy off for the whole server: at start-up overlayfs refuses the inner root's mount
(``mount …: Invalid argument``), ``--transactions auto`` falls back to writing the real files directly, and every
call ends ``transaction: "none"`` — no judging of effects (no question before deleting a tree), no history, no
``mcp-guard undo``. Only a line on the server's stderr says so. The same roots given inner-first work (the outer
overlay covers the inner one), as do nested MCP roots sent by the client; the documented reasons for the fallback
are an old kernel or a file system that cannot be an overlay layer, not the order of two --allow-path flags.

Cause: files/jail.py ``Jail.__init__`` drops only a root equal to an earlier one, not one inside an earlier one;
shell/sandbox/overlays.py ``mount_copy`` then mounts one overlay per root in that order, and the inner root's lower
layer is already inside the outer root's overlay (refused by the kernel); shell/sandbox/layers.py ``_ready`` makes
that ``copy_error`` the server's, for every call.

FAILS while such a server's calls are not applied on a copy (transaction "none", no auditId to undo)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.roots_differential import multi

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bwrap"),
]


def project(parent: Path) -> None:
    for r in ("A/sub", "B/sub"):
        (parent / r).mkdir(parents=True)
        (parent / r / "s.txt").write_text("s\n")
    (parent / "A" / "f.txt").write_text("f\n")


NESTS = {
    "launch-dir-then-its-subdir": lambda box: [str(box / "A" / "sub")],
    "allowed-dir-then-its-subdir": lambda box: [str(box / "B"), str(box / "B" / "sub")],
    "parent-of-launch-then-a-subdir": lambda box: [str(box), str(box / "A" / "sub")],
}


@pytest.mark.parametrize("name", list(NESTS))
async def test_a_root_inside_an_earlier_root_keeps_the_copy(tmp_path: Path, name: str) -> None:
    found, out = await multi(tmp_path, project, "echo more >> f.txt && echo new > sub/n.txt && rm sub/s.txt",
                             roots=("A",), allow=NESTS[name])  # fmt: skip
    assert out["transaction"] == "applied" and out["auditId"], f"transaction {out['transaction']!r}: {found}"
    assert not found, "\n".join(found)
