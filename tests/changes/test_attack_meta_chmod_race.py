"""``steps._set_meta`` changes a mode with ``os.chmod(name, mode, dir_fd=dirfd)`` — which FOLLOWS a symlink at
``name`` — after the path was lstat'ed (and, for a file, ``held``). Everything else in the apply is no-follow
(openat2 RESOLVE_NO_SYMLINKS, O_NOFOLLOW, ``follow_symlinks=False``, xattrs through /proc/self/fd/N/name). A
name swapped for a symlink between the check and the chmod (here: right after the attributes are set, the step
just before it) sends the chmod outside the root: the confused deputy the module docstrings rule out. The
window is the same for ``_unmeta`` (undo), and a directory's meta step has no ``held`` at all.

Library level: the swap is made by a stand-in for whoever else writes the project (the user, another tool, a
server of the same project in direct mode), at the one moment it matters.

FAILS when a file or directory OUTSIDE the root changes mode."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes import Applier
from mcp_server_guard.changes import steps as steps_module
from mcp_server_guard.changes.apply import now_ns
from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.files.history import HistoryStore


def _apply_meta_with_swap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> Path:
    root, upper, outside = tmp_path / "root", tmp_path / "upper", tmp_path / "outside"
    for made in (root, upper, outside):
        made.mkdir()
    target = outside / ("victim.txt" if kind == "file" else "victimdir")
    if kind == "file":
        target.write_text("outside\n")
    else:
        target.mkdir()
    os.chmod(target, 0o700)
    inside = root / "f"
    if kind == "file":
        inside.write_text("inside\n")
    else:
        inside.mkdir()
    os.chmod(inside, 0o644 if kind == "file" else 0o755)
    old = inside.stat()
    started = now_ns() + 1
    change = Change("f", "meta", "file" if kind == "file" else "dir", mode=0o4777 if kind == "file" else 0o777,
                    old_mode=stat.S_IMODE(old.st_mode), mtime_ns=old.st_mtime_ns, old_mtime_ns=old.st_mtime_ns,
                    xattrs=(("user.a", b"1"),), old_xattrs=())  # fmt: skip
    real_set_seen = getattr(steps_module, "set_seen")  # noqa: B009 - patched below

    def set_seen_then_swap(path: str, want: object, have: object) -> None:
        real_set_seen(path, want, have)
        link = root / ".swap"
        link.symlink_to(target)
        if kind != "file":
            os.rename(inside, root / "moved")
        os.rename(link, inside)

    monkeypatch.setattr(steps_module, "set_seen", set_seen_then_swap)
    store = HistoryStore(tmp_path / "history", 1 << 30)
    Applier(store).apply([ChangeSet(str(root), str(upper), (change,))], new_audit_id(), started)
    return target


@pytest.mark.parametrize("kind", ["file", "dir"])
def test_a_meta_step_never_changes_the_mode_of_anything_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    target = _apply_meta_with_swap(tmp_path, monkeypatch, kind)
    mode = stat.S_IMODE(target.stat().st_mode)
    assert mode == 0o700, f"{target} (outside the root) is now {oct(mode)}"
