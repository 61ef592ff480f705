"""A journal line the disk cannot take whole is cut off again, and the seal chain stays at the last line written
(red team 73 F1b: a line torn by a full disk, then later lines written after it, sealed over a line that was never
there — the next start found every later line unsealed and left the journal, its run half done, alone)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from mcp_server_guard.changes.journal import Journal, read_journal
from mcp_server_guard.changes.plan import Applied, Plan
from mcp_server_guard.changes.reserve import Reserve, reserve_size
from mcp_server_guard.changes.what import What

pytestmark = pytest.mark.unit

KEY = b"k" * 32


def torn_writes(monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    """Every write from now on takes ``after`` bytes, then the disk is full."""
    calls = {"n": 0}
    real = os.write

    def write(fd: int, data: bytes | memoryview) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real(fd, bytes(data)[:after])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("mcp_server_guard.files.kept.os.write", write)


def test_a_line_torn_by_a_full_disk_is_cut_off_and_the_next_line_still_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = Plan("a00000000001", 1, (), What())
    journal = Journal.create(tmp_path, plan, {}, KEY)
    record = Applied(str(tmp_path / "f"), "create", "file")
    journal.done(0, [record], [])
    size = os.fstat(journal.fd).st_size
    with monkeypatch.context() as patched:
        torn_writes(patched, after=7)
        with pytest.raises(OSError) as raised:
            journal.done(1, [record], [])
    assert raised.value.errno == errno.ENOSPC
    assert os.fstat(journal.fd).st_size == size  # the torn bytes are gone
    journal.done(2, [record], [])  # room again: the next line is whole and sealed after the last one written
    lines = journal.path.read_text().splitlines()
    replay = read_journal(lines, KEY, journal.path)
    assert not replay.untrusted, replay.untrusted
    assert sorted(replay.done) == [0, 2]
    journal.close()


def test_a_reserve_holds_room_until_it_is_given_back(tmp_path: Path) -> None:
    size = reserve_size(10_000, 3)
    reserve = Reserve.take(tmp_path, "a00000000001", size)
    held = os.stat(reserve.path)
    assert held.st_blocks * 512 >= size  # real blocks, not a sparse promise
    reserve.give_back()
    assert not reserve.path.exists()
    reserve.give_back()  # twice: nothing happens
