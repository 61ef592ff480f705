"""Red team 101 B: since 21b285d, file_write with createDirs waits for the tree lock twice. The first wait is in
``Writer._parent`` (up to BUSY_WAIT_S, 10 s), to make the directories. The second is in ``Writer._landing``, up to a
fresh BUSY_WAIT_S, because ``Writer.write`` sets its ``deadline`` only after ``_parent`` returns.

Another server's apply holds the tree lock for 6 s, lets go for a moment (``treelock.breathe``'s gap) and takes it
again for 6 s. That keeps one file_write waiting about 12 s. The documented bound is broken (docs/errors.md
FILE_BUSY: "other writers kept the file for 10 s"; docs/shell_exec.md: "file_write waits for it 10 s at most"):
the call should end, written or FILE_BUSY, by about 10 s.

The race is made deterministic: ``writing.tree_lock`` is wrapped so the other writer takes the lock again right
after ``_parent`` lets it go, before ``_landing`` asks for it (in a real run the gap between them is the temp
file's write and fsync)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.errors import GuardError
from mcp_server_guard.files import writing
from mcp_server_guard.files.jail import Jail
from mcp_server_guard.files.treelock import tree_lock
from mcp_server_guard.policy import load_policy

HOLD_S = 6.0


def test_attack_a_create_dirs_write_waits_for_the_tree_lock_past_its_ten_second_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    device = [root.stat().st_dev]
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text("")
    writer = writing.open_writer(Jail(str(root), [str(root)]), load_policy(policy_file), tmp_path / "audit.jsonl",
                                 tmp_path / "history")  # fmt: skip
    held, parent_done, reheld = threading.Event(), threading.Event(), threading.Event()
    calls: list[str] = []
    real_tree_lock = tree_lock  # (what writing.tree_lock is)

    @contextlib.contextmanager
    def watched(*args: Any, **kwargs: Any) -> Iterator[bool]:
        calls.append("taken")
        with real_tree_lock(*args, **kwargs) as changed:
            yield changed
        if len(calls) == 1:  # _parent's taking ends: the other writer comes back before _landing asks
            parent_done.set()
            assert reheld.wait(HOLD_S + 5)

    monkeypatch.setattr(writing, "tree_lock", watched)

    def other_apply() -> None:
        with tree_lock(device):
            held.set()
            time.sleep(HOLD_S)
        assert parent_done.wait(HOLD_S + 10)
        with tree_lock(device):
            reheld.set()
            time.sleep(HOLD_S)

    other = threading.Thread(target=other_apply)
    other.start()
    assert held.wait(10)
    began = time.monotonic()
    outcome: object
    try:
        outcome = writer.write("new/dir/notes.md", b"x\n", overwrite=False, create_dirs=True)
    except GuardError as exc:
        outcome = exc
    waited = time.monotonic() - began
    other.join(30)
    writer.close()
    # Bounded: written or FILE_BUSY within file_write's wait (10 s) and a margin, never near twice that.
    assert waited < 10.5, (waited, outcome, calls)
