"""Units: a ctime only this process's name changes moved is no change (``changes.name_changes``, red team 9 F3),
and a sparse file's holes made again where a copy wrote zeros (``linux.punch_like``, red team 9 F1)."""

from __future__ import annotations

import json
import os
import time
from collections import OrderedDict
from pathlib import Path

import pytest

from mcp_server_guard import linux
from mcp_server_guard.changes import name_changes


def test_a_ctime_moved_only_by_a_name_this_process_made_is_no_change(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("x")
    since = time.time_ns()
    time.sleep(0.02)  # a ctime tick after the start
    before = os.lstat(f)
    os.link(f, tmp_path / "g")
    name_changes.note(before, os.lstat(f))
    assert os.lstat(f).st_ctime_ns > since
    assert name_changes.only_names(os.lstat(f), since)


def test_someone_elses_chmod_after_a_name_change_of_ours_is_a_change(tmp_path: Path) -> None:
    # Threat: a real change hidden behind a name change of ours (the chain must reach back to the start).
    f = tmp_path / "f"
    f.write_text("x")
    since = time.time_ns()
    time.sleep(0.02)
    os.chmod(f, 0o600)  # someone else, after the start
    time.sleep(0.05)  # more than a tick apart
    before = os.lstat(f)
    os.link(f, tmp_path / "g")
    name_changes.note(before, os.lstat(f))
    assert not name_changes.only_names(os.lstat(f), since)


def test_a_change_after_a_name_change_of_ours_is_a_change(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("x")
    since = time.time_ns()
    time.sleep(0.02)
    before = os.lstat(f)
    os.link(f, tmp_path / "g")
    name_changes.note(before, os.lstat(f))
    time.sleep(0.05)
    os.chmod(f, 0o600)
    assert not name_changes.only_names(os.lstat(f), since)
    assert not name_changes.only_names(os.lstat(tmp_path / "g"), since)


def test_a_directory_time_known_back_to_the_start_through_applies_of_ours(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    os.utime(d, ns=(10**18, 10**18))
    since = time.time_ns()
    time.sleep(0.02)
    read = os.lstat(d)
    began = time.time_ns()
    (d / "new").write_text("x")
    name_changes.note_dir(os.lstat(d), read.st_ctime_ns, read.st_mtime_ns, began)
    assert name_changes.dir_time_at(os.lstat(d), os.lstat(d).st_ctime_ns, since) == 10**18
    time.sleep(0.05)
    (d / "other").write_text("y")  # not ours: unknown
    assert name_changes.dir_time_at(os.lstat(d), os.lstat(d).st_ctime_ns, since) is None


def test_zeros_where_the_old_file_had_holes_become_holes_and_written_bytes_stay(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    size = 8 << 20
    with open(old, "wb") as f:
        f.truncate(size)
        for at in (0, 3 << 20, 6 << 20):
            f.seek(at)
            f.write(b"d" * 4096)
    with open(new, "wb") as f:  # a dense copy, with one byte written in a hole of the old file
        f.write(old.read_bytes())
        f.seek((5 << 20) + 7)
        f.write(b"Z")
    dense = os.lstat(new).st_blocks
    expected = new.read_bytes()
    fd_new, fd_old = os.open(new, os.O_RDWR), os.open(old, os.O_RDONLY)
    try:
        made = linux.punch_like(fd_new, fd_old, size)
    finally:
        os.close(fd_new)
        os.close(fd_old)
    assert new.read_bytes() == expected
    assert made > 7 << 20 and os.lstat(new).st_blocks * 512 <= 4 * 4096 + 4096, (made, dense, os.lstat(new))


def test_a_new_file_given_the_number_of_a_file_our_step_freed_is_a_change(tmp_path: Path) -> None:
    # Red team 10 F7: a name note keyed by (device, inode) alone took a new file with a reused number (made by
    # someone else just after our step freed it) for the file our step left. The note holds what the step left.
    since = time.time_ns()
    time.sleep(0.02)  # a clock tick after the start
    reused = None
    for _ in range(50):
        old = tmp_path / "old"
        old.write_text("o")
        before = os.lstat(old)
        fd = os.open(old, os.O_RDONLY)
        os.unlink(old)  # our step took its last name (the history keeps a copy elsewhere)
        left = os.fstat(fd)
        os.close(fd)
        name_changes.note(before, left)
        new = tmp_path / "new"
        new.write_text("someone else's")
        if os.lstat(new).st_ino == before.st_ino:
            reused = os.lstat(new)
            break
        new.unlink()
    if reused is None:
        pytest.skip("this file system reuses no inode number at once")
    assert not name_changes.only_names(reused, since)


def _looked_into(d: Path) -> tuple[os.stat_result, os.stat_result]:
    """A look into ``d`` as ``trees.own_dirs_as_found`` makes one: let in, its mode given back (ctime moved)."""
    before = os.lstat(d)
    for _ in range(1000):  # (until the coarse clock stamps a ctime later than the one before: a tick at most)
        os.chmod(d, 0o700)
        os.chmod(d, 0)
        if os.lstat(d).st_ctime_ns > before.st_ctime_ns:
            break
    after = os.lstat(d)
    assert after.st_ctime_ns > before.st_ctime_ns
    return before, after


def test_a_look_into_a_directory_kept_by_another_process_is_no_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Threat (red team 63 F7, as found again in one server): a later call's look into a project directory of mode 000
    # moved its ctime, and the undo of the earlier call that made it, in another process, took it for a change.
    # (Red team 66 F3: past the file's bound the first looks were dropped; now a directory's looks in a row become
    # one when the file is compacted.)
    monkeypatch.setattr(name_changes._looks, "path", tmp_path / "looks")
    monkeypatch.setattr(name_changes, "_LOOKS_BYTES", 1000)
    d = tmp_path / "d"
    d.mkdir(mode=0)
    since = os.lstat(d).st_ctime_ns
    for _ in range(30):  # (about 2,700 bytes of looks: compacted on the way)
        name_changes.note(*_looked_into(d))
    monkeypatch.setattr(name_changes, "_done", OrderedDict())  # what this process knew: gone
    assert (tmp_path / "looks").stat().st_size < 1000
    assert name_changes.only_names(os.lstat(d), since)


def test_someone_elses_entry_in_a_directory_after_a_kept_look_is_a_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(name_changes._looks, "path", tmp_path / "looks")
    d = tmp_path / "d"
    d.mkdir(mode=0o700)
    since = os.lstat(d).st_ctime_ns
    name_changes.note(*_looked_into(d))
    os.chmod(d, 0o700)
    (d / "theirs").write_text("x")  # someone else, after the look
    os.chmod(d, 0)
    monkeypatch.setattr(name_changes, "_done", OrderedDict())
    assert not name_changes.only_names(os.lstat(d), since)


def test_a_look_known_one_by_one_and_compacted_in_the_file_is_found_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Red team 67 (an undo refused in a batch of 30 calls): this process knew a directory's looks one by one, the
    # compacted file had them as one look; following the first step found (this process's) led to a look whose own
    # predecessor the file had merged away. Every path back is followed now.
    monkeypatch.setattr(name_changes._looks, "path", tmp_path / "looks")
    d = tmp_path / "d"
    d.mkdir()
    now = os.lstat(d)
    since = now.st_ctime_ns - 3_000
    known = OrderedDict({(now.st_dev, now.st_ino): [(now.st_ctime_ns - 1_000, name_changes._mark(now))]})
    monkeypatch.setattr(name_changes, "_done", known)  # (a look from a ctime after the start: its start unknown here)
    kept = [now.st_dev, now.st_ino, since - 1, *name_changes._mark(now)]
    (tmp_path / "looks").write_text(json.dumps(kept) + "\n")  # (the same looks, compacted: from before the start)
    assert name_changes.only_names(now, since)
    (tmp_path / "looks").write_text("")
    assert not name_changes.only_names(now, since)
