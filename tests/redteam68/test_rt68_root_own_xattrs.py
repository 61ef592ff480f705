"""Red team 68, finding F3 (MEDIUM): the root directory's *own* ``user.*`` attributes (and its ``user.overlay.*``
data) are invisible to a command on the copy, and what a command does to them is lost without a word:

* ``getfattr -d .`` shows none of them (natively ``user.tag``);
* ``setfattr -x user.tag .`` fails ("No such attribute"), natively it removes it;
* ``setfattr -n user.tag -v changed .`` / ``setfattr -n user.more -v 1 .`` exit 0, the call says ``applied`` (or
  ``unchanged``), and nothing lands: the root keeps its old attributes.

Attributes of every other directory behave (a subdirectory's are seen, changed, removed and moved as natively).
docs/shell_exec.md promises user.* attributes and a project's own user.overlay.* attributes "seen exactly as the
host has them".

Cause: shell/sandbox/overlays.py ``mount_copy``: the merged root is the fresh upper directory ``u<i>``, given the
root's mode and times only; its attributes are neither copied there nor read back (changes/transactions.py
``read_upper`` / ``_untouched`` compare the root's mode and mtime with the ``m<i>`` note and nothing else).

FAILS while the command does not see, or cannot change, the root's own attributes as natively."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.roots_differential import multi

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bwrap"),
]

OLD_NS = 1_000_000_000 * 10**9


def tagged_root(parent: Path) -> None:
    a = parent / "A"
    (a / "d").mkdir(parents=True)
    (a / "f.txt").write_text("f\n")
    os.setxattr(a, "user.tag", b"root's own")
    os.setxattr(a / "d", "user.tag", b"d's own")
    for p in (a / "f.txt", a / "d", a):
        os.utime(p, ns=(OLD_NS, OLD_NS))


CASES = {
    "sees-its-attributes": "getfattr -d -m - --absolute-names . d 2>&1 | grep -v '^#' | sort > seen.txt",
    "removes-one": "setfattr -x user.tag .",
    "changes-one": "setfattr -n user.tag -v changed .",
    "adds-one": "setfattr -n user.more -v 1 .",
}


@pytest.mark.parametrize("name", list(CASES))
async def test_the_roots_own_attributes_as_natively(tmp_path: Path, name: str) -> None:
    found, _out = await multi(tmp_path, tagged_root, CASES[name], roots=("A",))
    assert not found, "\n".join(found)
