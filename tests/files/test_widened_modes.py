"""Units: owner bits widened for one step are noted on disk until put back, and the next start puts back what a
killed server left widened (``files.widened``, red team 64 F2) — only that very inode, only while it has the mode
it was given, only inside the directories the start names, never while the server that widened it lives."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mcp_server_guard.files import widened


@pytest.fixture
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(widened._where, "directory", tmp_path / "widened")
    return tmp_path / "widened"


def _secret(root: Path) -> tuple[Path, int]:
    root.mkdir()
    secret = root / "secret"
    secret.write_text("s\n")
    secret.chmod(0)
    return secret, os.open(secret, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_mode_widened_and_put_back_leaves_no_note(tmp_path: Path, notes: Path) -> None:
    secret, handle = _secret(tmp_path / "root")
    note = widened.widen(handle, 0, 0o400)
    assert _mode(secret) == 0o400 and len(list(notes.glob("*.json"))) == 1
    widened.narrow(handle, 0, note)
    assert _mode(secret) == 0 and not list(notes.glob("*.json"))
    os.close(handle)


def test_attack_a_server_killed_while_a_mode_was_widened_has_it_put_back_at_the_next_start(
    tmp_path: Path, notes: Path
) -> None:
    secret, handle = _secret(tmp_path / "root")
    note = widened.widen(handle, 0, 0o400)
    looked: list[tuple[tuple[int, ...], os.stat_result]] = []
    assert widened.put_back([str(tmp_path / "root")]) == 0  # its server lives (the note's lock held): left alone
    assert _mode(secret) == 0o400
    os.close(note)  # the server killed: the lock goes with it, the note stays
    assert widened.put_back([str(tmp_path / "root")], lambda was, now: looked.append((was, now))) == 1
    assert _mode(secret) == 0 and not list(notes.glob("*.json"))
    assert looked and looked[0][0][:3] == (looked[0][1].st_dev, looked[0][1].st_ino, 0)
    os.close(handle)


def test_a_mode_set_since_or_an_entry_outside_the_named_directories_is_left_as_it_is(
    tmp_path: Path, notes: Path
) -> None:
    secret, handle = _secret(tmp_path / "root")
    os.close(widened.widen(handle, 0, 0o400))
    secret.chmod(0o640)  # someone else's chmod after the kill: theirs stays
    other, other_handle = _secret(tmp_path / "elsewhere")
    os.close(widened.widen(other_handle, 0, 0o400))
    assert widened.put_back([str(tmp_path / "root")]) == 0
    assert _mode(secret) == 0o640 and _mode(other) == 0o400  # (a note naming a path outside: nothing done there)
    for fd in (handle, other_handle):
        os.close(fd)


def test_attack_someone_elses_chmod_while_a_mode_was_widened_stays(tmp_path: Path, notes: Path) -> None:
    # Red team 66 F2: the mode put back at a step's end overwrote a chmod made meanwhile, and no conflict was said.
    secret, handle = _secret(tmp_path / "root")
    note = widened.widen(handle, 0, 0o400)
    secret.chmod(0o640)
    assert not widened.narrow(handle, 0, note)
    assert _mode(secret) == 0o640 and not list(notes.glob("*.json"))
    os.close(handle)


@pytest.mark.parametrize("first_done", ["read", "apply"])
def test_attack_two_steps_letting_one_directory_in_at_once_leave_it_as_found(
    tmp_path: Path, notes: Path, first_done: str
) -> None:
    # Red team 66 F1: one call's read let a 000 directory in (u+rx), another's apply then widened it (u+w) taking
    # 0500 for its mode; the read's end put 000 back under the apply, whose end put 0500 back: left 0500 for good.
    (tmp_path / "root" / "d").mkdir(parents=True, mode=0)
    d = tmp_path / "root" / "d"
    read, apply = (os.open(d, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC) for _ in range(2))
    read_note = widened.widen(read, 0, 0o500)
    apply_note = widened.widen(apply, 0o500, 0o700)  # (as the apply found it: let in by the read)
    assert _mode(d) == 0o700
    order = [(read, read_note), (apply, apply_note)]
    if first_done == "apply":
        order.reverse()
    assert not widened.narrow(order[0][0], 0o500, order[0][1])  # the other still has it let in
    assert _mode(d) == 0o700
    assert widened.narrow(order[1][0], 0o500, order[1][1])
    assert _mode(d) == 0 and not list(notes.glob("*.json"))
    for fd in (read, apply):
        os.close(fd)
