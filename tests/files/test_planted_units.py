"""The registry's log of what a tool landed (``files.planted``): what it keeps, read from where the last read ended,
shared by every server of the user, compacted within its bound to each marker once."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from mcp_server_guard.changes import effects
from mcp_server_guard.files import planted as planted_module
from mcp_server_guard.files.planted import OVERFLOW, Planted, kept, planted


def test_the_log_keeps_markers_in_the_directories_they_make_caches_only() -> None:
    assert kept("/p/out/CACHEDIR.TAG") == "/p/out/CACHEDIR.TAG"
    assert kept("/p/.venv/lib/python3.12/site-packages/_virtualenv.py") is None
    assert kept("/p/src/main.py") is None


def test_every_marker_a_judgement_trusts_is_one_the_log_keeps() -> None:
    for directory, marks in effects._SHOWN_BY.items():
        assert all(kept(f"/p/{directory}/{mark}") == f"/p/{directory}/{mark}" for mark in marks)
    assert kept("/p/src/CACHEDIR.TAG") is None  # (no directory a marker makes a cache: nothing to remember)


def test_a_flood_of_markers_landed_after_it_never_pushes_a_planted_one_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(planted_module, "_MAX_BYTES", 8192)
    marker = f"{tmp_path}/out/CACHEDIR.TAG"
    log = Planted(tmp_path / "planted")
    log.add([marker])
    for i in range(400):  # newer markers, long paths, each landed many times: the oldest line is still kept
        log.add([f"{tmp_path}/{'x' * 200}/f{i % 20}/out/CACHEDIR.TAG"])
    seen = Planted(tmp_path / "planted").paths()
    assert marker in seen and OVERFLOW not in seen
    assert os.path.getsize(tmp_path / "planted" / "log") <= 8192 + 300  # (compacted: each marker once)


def test_past_the_count_it_keeps_the_log_says_so_and_every_marker_counts_as_planted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(planted_module, "_MAX_BYTES", 2048)
    monkeypatch.setattr(planted_module, "_MAX_KEPT", 10)
    log = Planted(tmp_path / "planted")
    for i in range(40):  # markers a command planted, all still there: more than the log keeps
        (tmp_path / f"d{i}" / "out").mkdir(parents=True)
        (tmp_path / f"d{i}" / "out" / "CACHEDIR.TAG").write_text("")
        log.add([f"{tmp_path}/d{i}/out/CACHEDIR.TAG"])
    assert OVERFLOW in Planted(tmp_path / "planted").paths()
    matcher = effects._Matcher(["out"], Planted(tmp_path / "planted").paths())
    (tmp_path / "mine" / "out").mkdir(parents=True)
    (tmp_path / "mine" / "out" / "CACHEDIR.TAG").write_text("")  # the user's own tool's: counts as planted too
    assert not matcher.name("mine/out/a.txt", str(tmp_path))  # (fail closed: its deletion is asked)


def test_a_read_takes_only_what_was_appended_since_and_never_half_a_line(tmp_path: Path) -> None:
    log = Planted(tmp_path / "planted")
    log.add(["/p/out/CACHEDIR.TAG"])
    assert set(log.paths()) == {"/p/out/CACHEDIR.TAG"}
    with open(tmp_path / "planted" / "log", "ab") as file:
        file.write(b'"/p/tmp/CACHEDIR.T')  # a line being appended
    assert set(log.paths()) == {"/p/out/CACHEDIR.TAG"}
    with open(tmp_path / "planted" / "log", "ab") as file:
        file.write(b'AG"\n')
    assert set(log.paths()) == {"/p/out/CACHEDIR.TAG", "/p/tmp/CACHEDIR.TAG"}


def test_every_server_of_the_user_reads_the_same_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planted().add(["/p/out/CACHEDIR.TAG"])
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "another-state"))
    assert "/p/out/CACHEDIR.TAG" in planted().paths()


def test_appends_from_many_threads_all_land(tmp_path: Path) -> None:
    log = Planted(tmp_path / "planted")
    threads = [threading.Thread(target=log.add, args=([f"/p/d{i}/out/CACHEDIR.TAG"],)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert set(Planted(tmp_path / "planted").paths()) == {f"/p/d{i}/out/CACHEDIR.TAG" for i in range(20)}


def test_a_reader_tells_a_compacted_log_from_the_old_one_on_the_same_inode(tmp_path: Path) -> None:
    log = Planted(tmp_path / "planted")
    log.add(["/p/a/out/CACHEDIR.TAG", "/p/b/out/CACHEDIR.TAG"])
    assert len(log.paths()) == 2
    # another log in its place, its inode and size no smaller (as a second compaction may leave it)
    (tmp_path / "planted" / "log").write_text('"#0123456789abcdef"\n"/p/c/out/CACHEDIR.TAG"\n"/p/d/out/CACHEDIR.TAG"\n')
    assert set(log.paths()) == {"/p/c/out/CACHEDIR.TAG", "/p/d/out/CACHEDIR.TAG"}


def test_an_apply_whose_landing_cannot_be_noted_does_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_server_guard.changes.changeset import Change, ChangeSet
    from mcp_server_guard.changes.plan import NotApplied, note_planted

    def full(*_args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Planted, "add", full)
    changes = ChangeSet(root="/p", upper="/u", changes=(Change("out/CACHEDIR.TAG", "create", "file"),))
    with pytest.raises(NotApplied, match="could not be noted"):
        note_planted([changes], frozenset())
