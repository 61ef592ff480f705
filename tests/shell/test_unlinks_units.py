"""The call init's note of names removed and made again (``shell.sandbox.unlinks``) and the server's search for the
directories it watches (``changes.linked_dirs``), without the box."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcp_server_guard.changes import linked_dirs
from mcp_server_guard.changes.linked_dirs import LinkedDirs
from mcp_server_guard.shell.sandbox import unlinks

pytestmark = pytest.mark.anyio


def _root_fd() -> int:
    return os.open("/", os.O_PATH | os.O_DIRECTORY)


def test_a_name_removed_and_made_again_in_a_watched_directory_is_said(tmp_path: Path) -> None:
    (tmp_path / "h1").write_text("x")
    os.link(tmp_path / "h1", tmp_path / "h2")
    (tmp_path / "gone").write_text("x")
    (tmp_path / "relinked").write_text("x")
    watched = unlinks.watch([str(tmp_path)])
    assert watched is not None
    (tmp_path / "h1").unlink()
    (tmp_path / "h1").write_text("new")  # made again: said
    (tmp_path / "gone").unlink()  # removed only: not said
    (tmp_path / "relinked").unlink()
    os.link(tmp_path / "h2", tmp_path / "relinked")  # a name of a file with several names again: not said
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub").rmdir()
    view = _root_fd()
    try:
        assert unlinks.remade(watched, view) == ([f"{tmp_path}/h1"], [])
    finally:
        os.close(view)
    assert watched.fd == -1  # closed once read


def test_a_name_made_again_as_a_symlink_or_under_a_symlinked_directory_is_not_said(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_text("x")
    (tmp_path / "link").symlink_to("real")
    (tmp_path / "s").write_text("x")
    watched = unlinks.watch([str(tmp_path), str(tmp_path / "link")])  # the last name a link: not watched
    assert watched is not None and list(watched.dirs.values()) == [str(tmp_path)]
    (tmp_path / "s").unlink()
    (tmp_path / "s").symlink_to("real/f")
    view = _root_fd()
    try:
        assert unlinks.remade(watched, view) == ([], [])
    finally:
        os.close(view)


def test_lost_events_say_nothing_rather_than_some(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a").write_text("x")
    watched = unlinks.watch([str(tmp_path)])
    assert watched is not None
    (tmp_path / "a").unlink()
    (tmp_path / "a").write_text("y")
    monkeypatch.setattr(unlinks, "_READ_MAX", 1)  # past what may be read: as lost
    view = _root_fd()
    try:
        assert unlinks.remade(watched, view) == ([], [])
    finally:
        os.close(view)


def test_nothing_to_watch_makes_no_inotify_instance() -> None:
    assert unlinks.watch([]) is None
    assert unlinks.watch(["/nonexistent/dir"]) is None


async def test_the_search_finds_directories_of_linked_files_but_not_the_own_area_or_git_objects(tmp_path: Path) -> None:
    for d in ("a/b", "c", ".mcp-guard/copies", ".git/objects/ab", "plain"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("x")
    os.link(tmp_path / "a" / "b" / "f", tmp_path / "c" / "g")
    (tmp_path / ".mcp-guard" / "copies" / "u").write_text("x")
    os.link(tmp_path / ".mcp-guard" / "copies" / "u", tmp_path / ".mcp-guard" / "copies" / "v")
    (tmp_path / ".git" / "objects" / "ab" / "o").write_text("x")
    os.link(tmp_path / ".git" / "objects" / "ab" / "o", tmp_path / ".git" / "objects" / "ab" / "p")
    (tmp_path / "plain" / "one").write_text("x")
    (tmp_path / "top").write_text("x")
    os.link(tmp_path / "top", tmp_path / "top2")
    (tmp_path / "plain" / "ln").symlink_to("../top")  # a link is not followed
    found = await LinkedDirs().dirs([str(tmp_path)])
    assert sorted(found) == sorted([str(tmp_path), f"{tmp_path}/a/b", f"{tmp_path}/c"])


async def test_the_search_is_bounded_and_redone_only_after_its_gap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(5):
        (tmp_path / f"d{n}").mkdir()
        (tmp_path / f"d{n}" / "f").write_text("x")
        os.link(tmp_path / f"d{n}" / "f", tmp_path / f"d{n}" / "g")
    monkeypatch.setattr(linked_dirs, "MAX_DIRS", 3)
    dirs = LinkedDirs()
    assert len(await dirs.dirs([str(tmp_path)])) == 3
    monkeypatch.setattr(linked_dirs, "MAX_DIRS", 10)
    dirs.refresh([str(tmp_path)])  # within its gap: the last result stays
    assert len(await dirs.dirs([str(tmp_path)])) == 3


async def test_the_directories_said_stay_within_a_bound_of_bytes_whatever_their_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Red team 49 F2: long names of bytes that are not UTF-8 (six bytes each in the call's request) made every
    later request too large for the box."""
    for n in range(20):
        d = tmp_path / os.fsdecode(bytes([0xFF]) * 200 + str(n).encode())
        d.mkdir()
        (d / "f").write_text("x")
        os.link(d / "f", d / "g")
    monkeypatch.setattr(linked_dirs, "MAX_BYTES", 10_000)
    found = await LinkedDirs().dirs([str(tmp_path)])
    assert 0 < len(found) < 20
    assert sum(len(json.dumps(d)) + 2 for d in found) <= 10_000


def test_deletions_in_a_watched_directory_moved_away_are_not_taken_for_its_old_path(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    watched = unlinks.watch([str(tmp_path / "d")])
    assert watched is not None
    (tmp_path / "d").rename(tmp_path / "e")
    (tmp_path / "e" / "f").unlink()
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("new")  # another directory's file at the old path: not said
    view = _root_fd()
    try:
        assert unlinks.remade(watched, view) == ([], [])
    finally:
        os.close(view)


def test_a_name_the_call_linked_to_a_file_is_said_apart_with_its_source(tmp_path: Path) -> None:
    (tmp_path / "h1").write_text("x")
    watched = unlinks.watch([str(tmp_path)])
    assert watched is not None
    (tmp_path / "h1").unlink()
    (tmp_path / "h1").write_text("y")
    view = _root_fd()
    try:
        linked = {f"{tmp_path}/h1": f"{tmp_path}/h2"}
        assert unlinks.remade(watched, view, linked) == ([], [(f"{tmp_path}/h1", f"{tmp_path}/h2")])
    finally:
        os.close(view)
