"""The registry's log of what a tool landed (``files.planted``): what it keeps, read from where the last read ended,
shared by every server of the user, compacted within its bound to what is still there."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from mcp_server_guard.changes import effects
from mcp_server_guard.files import planted as planted_module
from mcp_server_guard.files.planted import Planted, kept, planted


def test_the_log_keeps_markers_and_a_site_packages_modules_top_entry_only() -> None:
    site = "/p/.venv/lib/python3.12/site-packages"
    assert kept("/p/out/CACHEDIR.TAG") == "/p/out/CACHEDIR.TAG"
    assert kept(f"{site}/_virtualenv.py") == f"{site}/_virtualenv.py"
    assert kept(f"{site}/pkg/sub/mod.py") == f"{site}/pkg/"
    assert kept(f"{site}/__pycache__/x.cpython-312.pyc") is None
    assert kept("/p/src/main.py") is None


def test_every_marker_a_judgement_trusts_is_one_the_log_keeps() -> None:
    for directory, marks in effects._SHOWN_BY.items():
        assert all(kept(f"/p/{directory}/{mark}") == f"/p/{directory}/{mark}" for mark in marks)
    assert kept("/p/src/CACHEDIR.TAG") is None  # (no directory a marker makes a cache: nothing to remember)


def test_a_flood_of_modules_landed_never_pushes_a_planted_marker_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(planted_module, "_MAX_BYTES", 8192)
    monkeypatch.setattr(planted_module, "_KEEP_BYTES", 4096)
    marker = tmp_path / "out" / "CACHEDIR.TAG"
    site = tmp_path / ".venv" / "lib" / "python3.12" / "site-packages"
    for directory in (marker.parent, site):
        directory.mkdir(parents=True)
    marker.write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    log = Planted(tmp_path / "planted")
    log.add([str(marker)])
    for i in range(400):  # modules landed after it, all still there: more than the log keeps
        (site / f"m{i}.py").write_text("x = 1\n")
        log.add([str(site / f"m{i}.py")])
    assert os.path.getsize(tmp_path / "planted" / "log") <= 8192
    assert str(marker) in Planted(tmp_path / "planted").paths()


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


def test_past_its_bound_the_log_keeps_what_is_still_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planted_module, "_MAX_BYTES", 4096)
    monkeypatch.setattr(planted_module, "_KEEP_BYTES", 2048)
    there = tmp_path / "out" / "CACHEDIR.TAG"
    there.parent.mkdir()
    there.write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    log = Planted(tmp_path / "planted")
    log.add([str(there)])
    for i in range(200):  # markers landed and gone since
        log.add([f"{tmp_path}/gone{i}/out/CACHEDIR.TAG"])
    assert os.path.getsize(tmp_path / "planted" / "log") <= 4096
    assert str(there) in Planted(tmp_path / "planted").paths()
    assert f"{tmp_path}/gone0/out/CACHEDIR.TAG" not in Planted(tmp_path / "planted").paths()
    assert str(there) in log.paths()  # (a reader of the old log reads the new one whole)
