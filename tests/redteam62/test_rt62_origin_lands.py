"""Red team 62 F1: a project file its owner may not write (mode 0444: a generated file, a vendored one, one `chmod
a-w`; or 000) that a command renames lands with overlayfs's bookkeeping ``user.overlay.origin`` on it. Landing
strips every ``user.overlay.*`` of an upper inode (``xattrs.land`` -> ``_remove``), but removing a ``user.*``
attribute needs write permission on the file: EACCES, suppressed. The server runs as a user (run as root, this
module runs again without CAP_DAC_OVERRIDE: support.as_a_user). Native ``mv`` leaves no attribute. The commands
are data (rt62_origin.json). Now
``xattrs.land`` gives such an entry u+w while it changes its attributes, its mode put back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support.as_a_user import again_as_a_user, as_a_user
from support.boxed import Person, run, shell

CASES = json.loads((Path(__file__).parent / "rt62_origin.json").read_text())
pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
BAD = ("user.overlay.origin", "user.overlay.redirect", "user.overlay.impure", "user.overlay.opaque")


def test_origin_lands_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)


def _project(root: Path) -> None:
    root.mkdir()
    (root / "d").mkdir()
    (root / "a.txt").write_text("a\n")
    (root / "ro.txt").write_text("read only\n")
    (root / "secret.key").write_text("s3\n")
    (root / "rodir").mkdir()
    (root / "rodir" / "gen.txt").write_text("generated\n")
    (root / "rodir" / "gen.txt").chmod(0o444)
    env = {**os.environ, "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u",
           "GIT_COMMITTER_EMAIL": "u@x"}  # fmt: skip
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "seed"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    (root / "ro.txt").chmod(0o444)
    (root / "secret.key").chmod(0)


def _bookkeeping(root: Path) -> list[str]:
    found = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".git"]
        for n in dirs + files:
            p = os.path.join(d, n)
            found += [f"{os.path.relpath(p, root)}: {x}" for x in os.listxattr(p, follow_symlinks=False) if x in BAD]
    return found


@as_a_user
@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_renamed_file_its_owner_may_not_write_lands_without_overlay_bookkeeping(
    tmp_path: Path, case: str
) -> None:
    root = tmp_path / "w" / "p"
    (tmp_path / "w").mkdir()
    _project(root)
    async with shell(tmp_path / "w", Person()) as client:
        out = await run(client, CASES[case], cwd=str(root))
    assert out.get("exitCode") == 0, out
    assert out.get("transaction") == "applied", out
    assert not _bookkeeping(root), (_bookkeeping(root), out.get("changes"))


@as_a_user
async def test_a_renamed_read_only_sparse_file_lands_as_sparse_as_natively(tmp_path: Path) -> None:
    """Red team 62's side note to F3: a sparse file of mode 0444 the command renamed landed dense — the server's
    ``thin_copy_up`` could not open it to punch its zeros (now it opens it as its owner may, mode put back)."""
    root = tmp_path / "w" / "p"
    (root / "d").mkdir(parents=True)
    with open(root / "disk.img", "wb") as f:
        for at in range(0, 64 << 20, 2 << 20):
            f.seek(at)
            f.write(os.urandom(4096))
        f.truncate(64 << 20)
    (root / "disk.img").chmod(0o444)
    natively = os.lstat(root / "disk.img").st_blocks
    async with shell(tmp_path / "w", Person()) as client:
        out = await run(client, "mv disk.img d/", cwd=str(root))
    assert out.get("transaction") == "applied", out
    landed = os.lstat(root / "d" / "disk.img")
    assert landed.st_mode & 0o7777 == 0o444
    assert landed.st_blocks <= 2 * natively + 2048, (natively, landed.st_blocks)
