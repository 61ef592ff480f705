"""Red team 66: the ``looks`` file and the ``widened`` notes, between processes. Library level, run without
CAP_DAC_OVERRIDE (``support.as_a_user``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mcp_server_guard.changes import changeset as changeset_module
from mcp_server_guard.changes import name_changes
from mcp_server_guard.changes.apply import now_ns
from mcp_server_guard.files.trees import own_dirs_as_found
from support.as_a_user import again_as_a_user, as_a_user


def test_looks_and_notes_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)


def _look(rootfd: int, name: str) -> None:
    """One read of a change set that opens the project directory ``name`` (mode 000): ``read_upper``'s scope."""
    with own_dirs_as_found(name_changes.note):
        fd = changeset_module.open_dir(name, rootfd)
        assert fd is not None
        os.close(fd)


@as_a_user
@pytest.mark.parametrize("calls", [1, 30])  # (1: the control, passes on HEAD)
def test_a_look_is_still_known_to_another_process_after_many_looks_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calls: int
) -> None:
    """A project with 200 directories of mode 000 that every read walks (the walk for a linked file's other names,
    ``Names.everywhere``; an undo's ``names_in``): each look appends a line to ``looks``; past 256 KiB the file
    becomes ``looks.old`` and the older ``.old`` is dropped. After ~30 such calls the first look into ``keep`` is
    gone: ``mcp-guard undo`` (another process) of the call before it takes the ctime the look moved for someone
    else's change and refuses — what the docs say a later call's look never does."""
    monkeypatch.setattr(name_changes._looks, "path", None)
    monkeypatch.setattr(name_changes._looks, "seen", ())
    monkeypatch.setattr(name_changes._looks, "found", {})
    history = tmp_path / "history"
    history.mkdir()
    name_changes.keep_looks_in(history / "looks")
    root = tmp_path / "root"
    root.mkdir()
    names = [f"d{i:03}" for i in range(200)]
    for name in ["keep", *names]:
        (root / name).mkdir()
        (root / name).chmod(0)
    time.sleep(0.05)
    since = now_ns()  # the call that made ``keep`` (or changed it) was recorded here
    rootfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        time.sleep(0.05)
        _look(rootfd, "keep")  # the next call's read looks into it (its ctime moves)
        for _call in range(calls):  # later calls' reads walk every 000 directory
            for name in names:
                _look(rootfd, name)
    finally:
        os.close(rootfd)
    # Another process (``mcp-guard undo``): nothing of this one's memory, only the history's looks file.
    monkeypatch.setattr(name_changes, "_done", type(name_changes._done)())
    monkeypatch.setattr(name_changes._looks, "seen", ())
    st = os.stat(root / "keep")
    assert st.st_ctime_ns > since
    size = sum(os.path.getsize(p) for p in history.iterdir())
    assert name_changes.only_names(st, since), (
        f"the one look into 'keep' (mode 000) after the call is forgotten after {calls * 200} looks elsewhere "
        f"(looks files: {size} bytes): an undo of that call from the command line now refuses"
    )
