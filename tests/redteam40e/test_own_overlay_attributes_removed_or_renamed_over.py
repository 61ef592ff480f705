"""Fidelity (issue 40): a project's OWN ``user.overlay.*`` attributes are data — but a command's removal of one
(``setfattr -x`` / ``os.removexattr``) never lands, on a file or a directory, the last one or one of several.

* ``setfattr -x user.overlay.note m``: natively ``m`` has no attribute left; through shell_exec it keeps
  ``user.overlay.note=mine``. ``setfattr -x user.overlay.a two`` (``two`` has ``a`` and ``b``): natively ``b`` only;
  through shell_exec both. ``setfattr -x user.overlay.opaque od`` (a directory): it stays marked opaque (the test's
  bookkeeping check reports it too: overlayfs reads it as its own in later copies).
* The result says ``unchanged``: there is no record and no undo of it either.

Why (reading the code): ``upper._Reader.metadata`` compares only ``xattrs.seen`` — every ``user.*`` name BUT
``user.overlay.*`` — between the upper entry and the real one, so a change to the project's own overlay attributes
alone is no change at all, and the meta step (``set_seen``) never touches them even beside another change. The
escape layer shows them to the command (``user.overlay.overlay.*`` in the upper layer); nobody reads what the
command left of them on a same-bytes entry. First call of a fresh server and later calls alike.


Also (the same project): an unmarked project file renamed
over a marked one (``mv plain m``, ``mv plain od/hid``) lands with the REPLACED file's marks, and a file whose last
mark the command removed while also rewriting it (``setfattr -x user.overlay.note m && echo x >> m``) keeps it.

Natively the name holds ``plain``'s inode afterwards, with no attributes (docs/shell_exec.md: "a file renamed over
it (``mv -f n m``) brings its own" — here its own are none). Through shell_exec ``m`` keeps
``user.overlay.note=mine``, ``od/hid`` keeps ``user.overlay.whiteout`` (in an opaque-marked directory: a later copy
would hide it as a whiteout).

Why (reading the code): the copied-up file renamed there has overlayfs's ``origin``, so ``steps._kept_own`` takes it
for a rewrite in place and asks ``xattrs.kept_in_place``, which keeps ALL the real file's own ``user.overlay.*``
attributes whenever the upper entry carries no escaped ``user.overlay.overlay.*`` name ("the copy could not show
them"). With the escape layer the copy did show them; an upper entry without any is what a rename of an unmarked
file (or a removal of the last mark) leaves. ``cp plain fresh && mv fresh m`` (no origin) lands right.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.differential import differential, one_call

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

OLD_NS = 1_200_000_000 * 10**9


def marked(root: Path) -> None:
    (root / "m").write_text("marked\n")
    os.setxattr(root / "m", "user.overlay.note", b"mine")
    (root / "two").write_text("two marks\n")
    os.setxattr(root / "two", "user.overlay.a", b"1")
    os.setxattr(root / "two", "user.overlay.b", b"2")
    (root / "od").mkdir()
    os.setxattr(root / "od", "user.overlay.opaque", b"x")
    (root / "od" / "hid").write_text("")
    os.setxattr(root / "od" / "hid", "user.overlay.whiteout", b"")
    (root / "plain").write_text("plain\n")
    for p in ("m", "two", "od/hid", "plain", "od"):
        os.utime(root / p, ns=(OLD_NS, OLD_NS))


COMMANDS = [
    "setfattr -x user.overlay.note m",
    "setfattr -x user.overlay.a two",
    "python3 -c \"import os; os.removexattr('m', 'user.overlay.note')\"",
    "setfattr -x user.overlay.opaque od",
    "setfattr -x user.overlay.a two && chmod 600 two && setfattr -n user.plain -v 1 two",
]


@pytest.mark.parametrize("command", COMMANDS)
async def test_an_own_overlay_attribute_removed_goes_as_natively_first_call(workspace: Path, command: str) -> None:
    problems, _out = await differential(workspace, marked, command)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("command", COMMANDS[3:4])
async def test_an_own_overlay_attribute_removed_goes_as_natively_later_call(workspace: Path, command: str) -> None:
    problems, _out = await differential(workspace, marked, command, warmup=one_call)
    assert not problems, "\n".join(problems)


RENAMES = [
    "mv plain m",
    "mv plain od/hid",
    "setfattr -x user.overlay.note m && echo more >> m",
    "cp plain fresh && mv fresh m",  # control: lands right (no origin)
]


@pytest.mark.parametrize("command", RENAMES)
async def test_the_renamed_over_mark_goes_as_natively_first_call(workspace: Path, command: str) -> None:
    problems, _out = await differential(workspace, marked, command)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("command", RENAMES[:1])
async def test_the_renamed_over_mark_goes_as_natively_later_call(workspace: Path, command: str) -> None:
    problems, _out = await differential(workspace, marked, command, warmup=one_call)
    assert not problems, "\n".join(problems)
