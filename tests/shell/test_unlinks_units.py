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


def _where(path: Path) -> unlinks.Where:
    """A name as the box's rename helper says it (its directory's device and inode, its last name)."""
    st = os.stat(path.parent)
    return ((st.st_dev, st.st_ino), os.fsencode(path.name))


def _link(source: Path, target: Path) -> int | None:
    """``ln source target`` as the box's rename helper makes it: told to the watch first."""

    def make() -> int:
        try:
            os.link(source, target)
        except OSError as exc:
            return exc.errno or 1
        return 0

    return unlinks.linking(_where(target), _where(source), make)


def _said(watched: unlinks.Watch | None) -> tuple[list[str], list[tuple[str, str]]]:
    view = _root_fd()
    try:
        return unlinks.remade(watched, view)
    finally:
        os.close(view)


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
    assert _link(tmp_path / "h2", tmp_path / "relinked") == 0  # the file h2 had: said with h2
    (tmp_path / "fresh").write_text("a name the call made: no file was there")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub").rmdir()
    assert _said(watched) == ([f"{tmp_path}/h1"], [(f"{tmp_path}/relinked", f"{tmp_path}/h2")])
    assert watched.fd == -1  # closed once read
    assert not unlinks.watching()


def test_a_name_made_again_then_linked_elsewhere_is_still_made_again(tmp_path: Path) -> None:
    """``rm h1 && cp b h1 && ln h1 x``: the name holds a file with two names at the end, a file of the call's."""
    (tmp_path / "h1").write_text("x")
    os.link(tmp_path / "h1", tmp_path / "h2")
    watched = unlinks.watch([str(tmp_path)])
    (tmp_path / "h1").unlink()
    (tmp_path / "h1").write_text("new")
    assert _link(tmp_path / "h1", tmp_path / "x") == 0
    assert _said(watched) == ([f"{tmp_path}/h1"], [])


def test_the_file_a_name_had_renamed_back_to_another_of_its_names_is_said_with_that_name(tmp_path: Path) -> None:
    """``echo z >> h2 && rm h1 && mv h2 h1``, and through a temporary name (``ln -f h2 h1``)."""
    (tmp_path / "h1").write_text("x")
    os.link(tmp_path / "h1", tmp_path / "h2")
    os.link(tmp_path / "h1", tmp_path / "h3")
    watched = unlinks.watch([str(tmp_path)])
    (tmp_path / "h1").unlink()
    (tmp_path / "h2").rename(tmp_path / "h1")
    assert _link(tmp_path / "h3", tmp_path / "t") == 0
    (tmp_path / "h3").unlink()
    (tmp_path / "t").rename(tmp_path / "h3")  # back where it was: said with its own name (red team 53 F1)
    assert _said(watched) == ([], [(f"{tmp_path}/h1", f"{tmp_path}/h2"), (f"{tmp_path}/h3", f"{tmp_path}/h3")])


def test_a_link_whose_name_another_process_made_meanwhile_is_said_made_by_the_call(tmp_path: Path) -> None:
    """Two creations of the name while the helper linked: which one was the link cannot be said, so the name is
    taken for a file of the call's (it then reaches no other name of the project's file)."""
    (tmp_path / "h1").write_text("x")
    os.link(tmp_path / "h1", tmp_path / "h2")
    watched = unlinks.watch([str(tmp_path)])
    (tmp_path / "h1").unlink()

    def racing() -> int:
        (tmp_path / "h1").write_text("someone else's")
        (tmp_path / "h1").unlink()
        os.link(tmp_path / "h2", tmp_path / "h1")
        return 0

    assert unlinks.linking(_where(tmp_path / "h1"), _where(tmp_path / "h2"), racing) == 0
    assert _said(watched) == ([f"{tmp_path}/h1"], [])


def test_a_file_of_the_project_linked_out_of_sight_and_back_is_not_said(tmp_path: Path) -> None:
    """Linked to a directory not watched: a file that comes back from there may be it (cannot say)."""
    (tmp_path / "d").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "d" / "h1").write_text("x")
    os.link(tmp_path / "d" / "h1", tmp_path / "d" / "h2")
    watched = unlinks.watch([str(tmp_path / "d")])
    assert _link(tmp_path / "d" / "h2", tmp_path / "out" / "t") == 0
    (tmp_path / "d" / "h1").unlink()
    (tmp_path / "out" / "t").rename(tmp_path / "d" / "h1")
    assert _said(watched) == ([], [])


def test_names_under_a_directory_moved_above_the_watched_one_are_not_said(tmp_path: Path) -> None:
    (tmp_path / "a" / "c").mkdir(parents=True)
    (tmp_path / "a" / "c" / "f").write_text("x")
    watched = unlinks.watch([str(tmp_path / "a" / "c")])
    (tmp_path / "a").rename(tmp_path / "b")
    (tmp_path / "b" / "c" / "f").unlink()
    (tmp_path / "b" / "c" / "f").write_text("new")
    (tmp_path / "a" / "c").mkdir(parents=True)
    (tmp_path / "a" / "c" / "f").write_text("another directory's file at the old path")
    assert _said(watched) == ([], [])


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
