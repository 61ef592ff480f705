"""Red team 83 F3: a long apply lets go of the tree lock now and then (``treelock.breathe``) so that other servers'
writers never wait past their bound. A writer that came in such a gap could change what the apply's later steps
were judged against: server B made ``shaped/`` a git dir (and a ``w/.git`` file naming it) while server A's apply
was half done, and A's later step landed ``shaped/config`` with ``core.fsmonitor``, judged for a plain directory:
the user's ``git status`` ran it. Now when a breath let another writer in, the steps left are judged again; one
now refused (or whose config would now be rewritten) stops the run, which goes back whole and says why.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from mcp_server_guard.changes import apply as apply_module
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.what import What
from mcp_server_guard.files import treelock
from support.settling import breath_letting_in, git_dir_made, settle, untouched_copy

pytestmark = pytest.mark.anyio


async def test_attack_a_write_in_a_long_applys_breath_never_leaves_its_later_steps_on_a_stale_judgement(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    (root / "a").mkdir()
    for i in range(5):
        (root / "a" / f"f{i}.txt").write_text("old\n")
    shaped, work = root / "shaped", root / "w"
    shaped.mkdir()
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    marker = tmp_path / "ran-outside-the-box"
    started = time.time_ns()
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "a").mkdir()
    for i in range(5):
        (copy / "u0" / "a" / f"f{i}.txt").write_text("new\n")  # a codemod's rewrites (20,000 of them: > 2 s)
    (copy / "u0" / "shaped").mkdir()
    (copy / "u0" / "shaped" / "config").write_text(f"[core]\n\tfsmonitor = touch {marker}\n")
    seen: list[bool] = []

    real_breathe = treelock.breathe

    def breathing(every_s: float = treelock.BREATHE_S) -> bool:
        if seen:
            return real_breathe(every_s)
        seen.append((shaped / "config").exists())  # A's config has not landed yet
        return breath_letting_in(lambda: git_dir_made(shaped, work), real_breathe)  # A has run for 2 s

    monkeypatch.setattr(apply_module, "breathe", breathing)
    roots = [str(root)]
    done = await transactions.settle(
        copy.name, True, audit_id="a1", started_ns=started, roots=roots, ask=None, hold=False, shown="x", what=What()
    )
    assert done.transaction == "failed" and "shaped/config" in done.reason and "refused now" in done.reason
    assert seen == [False]  # the breath came before A's config step
    assert (work / ".git").exists() and (shaped / "HEAD").exists()
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    subprocess.run(["git", "status"], cwd=work, env=env, capture_output=True, timeout=60, check=False)
    assert not marker.exists() and not (shaped / "config").exists()
    assert all((root / "a" / f"f{i}.txt").read_text() == "old\n" for i in range(5))  # gone back whole


async def test_a_writer_let_in_elsewhere_does_not_stop_a_long_apply(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    (root / "a").mkdir()
    (root / "a" / "f.txt").write_text("old\n")
    started = time.time_ns()
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "a").mkdir()
    (copy / "u0" / "a" / "f.txt").write_text("new\n")
    (copy / "u0" / "b.txt").write_text("b\n")
    real_breathe = treelock.breathe
    breaths: list[bool] = []

    def another_writer() -> None:
        with treelock.tree_lock([root.stat().st_dev], wait_s=5):
            (root / "notes.txt").write_text("n\n")

    def breathing(every_s: float = treelock.BREATHE_S) -> bool:
        if breaths:
            return real_breathe(every_s)
        breaths.append(breath_letting_in(another_writer, real_breathe))
        return breaths[0]

    monkeypatch.setattr(apply_module, "breathe", breathing)
    assert await settle(transactions, copy.name, started) == "applied"
    assert breaths == [True]  # the writer came in, and what it did refuses nothing of the steps left
    assert (root / "a" / "f.txt").read_text() == "new\n" and (root / "b.txt").read_text() == "b\n"


def test_a_breath_says_whether_another_writer_came_in(tmp_path: Path) -> None:
    device = [tmp_path.stat().st_dev]
    with treelock.tree_lock(device):
        assert not treelock.breathe(every_s=0)  # nobody came in
    other = threading.Event()

    def another_writer() -> None:
        with treelock.tree_lock(device, wait_s=5):
            other.set()

    with treelock.tree_lock(device):
        writer = threading.Thread(target=another_writer)
        writer.start()
        threading.Event().wait(0.05)
        assert treelock.breathe(every_s=0) and other.is_set()
        writer.join(10)
