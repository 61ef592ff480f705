"""An apply that fails for want of room turns round ("a change set lands whole or not at all"), but the way back does
not make the names of one file one file again: a file with two names (``a.txt`` and ``b.txt``, hard links) that the
command rewrote through one name comes back, after the rollback, as two separate files. The tree is not "all old":
from then on an edit through one name no longer shows through the other (and an earlier undo's rejoin logic, which
the normal ``undo`` uses and gets right, is not applied on the rollback path).

Shown with the library, on a real upper layer: the command appends to ``b.txt`` (one of two names) and deletes the
other name ``a.txt``; the history's second keep (the deletion's) fails with ENOSPC, as on a full disk. The rollback
puts ``b.txt`` back from the copy kept of it (a file with other names is copied, not linked) and ``a.txt`` was
never deleted: two inodes. (The same change set killed and recovered, or applied and undone, keeps them one file.)

To pass: the rollback (``Applier._back``) must restore a file kept as a copy beside its other names the way undo does
— linked back to the name that stayed (``run.names`` / ``_rejoin``) — so that the tree after ``NotApplied`` has the
same hard-link groups as before."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from mcp_server_guard.changes.apply import Applier, NotApplied
from mcp_server_guard.files.history import HistoryStore
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


def test_a_rollback_after_enospc_leaves_two_names_of_one_file_as_two_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = Copy(tmp_path / "p")
    (copy.root / "a.txt").write_text("shared\n")
    os.link(copy.root / "a.txt", copy.root / "b.txt")
    changes = copy.run("echo more >> b.txt; rm a.txt")
    store = HistoryStore(tmp_path / "history", 1 << 30)
    real_keep = HistoryStore.keep
    kept: list[object] = []

    def keep_on_a_full_disk(self: HistoryStore, *args: object, **kwargs: object) -> object:
        kept.append(args)
        if len(kept) == 2:  # the deletion of a.txt: its pre-image no longer fits the disk
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_keep(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(HistoryStore, "keep", keep_on_a_full_disk)
    with pytest.raises(NotApplied) as failed:
        Applier(store).apply([changes], "a00000000001", copy.started)
    assert failed.value.left == [], failed.value.left
    assert (copy.root / "b.txt").read_text() == "shared\n" and (copy.root / "a.txt").read_text() == "shared\n"
    a, b = os.stat(copy.root / "a.txt"), os.stat(copy.root / "b.txt")
    assert (a.st_ino, a.st_nlink) == (b.st_ino, 2), (
        f"after the rollback a.txt and b.txt are two files (inodes {a.st_ino}, {b.st_ino}; links {a.st_nlink}, "
        f"{b.st_nlink}), not one file with two names as before"
    )
