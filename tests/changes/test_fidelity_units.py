"""What lands is what the command did, piece by piece: the reader and the applier on real upper layers (a shell
snippet runs on an overlay in a private user and mount namespace, as the box does), then undo and its undo.

The differential tier (test_fidelity.py) checks whole scripts through the server; these name each behaviour.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.changes.xattrs import at, land, own_overlay, seen
from mcp_server_guard.files.history import HistoryStore
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


@pytest.fixture
def copy(tmp_path: Path) -> Copy:
    made = Copy(tmp_path)
    (made.root / "a.txt").write_text("a\n")
    (made.root / "h1").write_text("linked\n")
    os.link(made.root / "h1", made.root / "h2")
    (made.root / "d").mkdir()
    (made.root / "d" / "f").write_text("f\n")
    return made


def history(tmp_path: Path) -> HistoryStore:
    return HistoryStore(tmp_path / "history", 1 << 30)


def tree(root: Path) -> dict[str, tuple[object, ...]]:
    """Every path with its type, bytes, mode, mtime, user.* attributes and inode (to compare hard links)."""
    found: dict[str, tuple[object, ...]] = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        body = os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else b""
        found[str(path.relative_to(root))] = (stat.S_IFMT(st.st_mode), body, stat.S_IMODE(st.st_mode), st.st_mtime_ns,
                                              seen(str(path)))  # fmt: skip
    return found


def links(root: Path) -> set[frozenset[str]]:
    inodes: dict[int, set[str]] = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            inodes.setdefault(path.lstat().st_ino, set()).add(str(path.relative_to(root)))
    return {frozenset(names) for names in inodes.values() if len(names) > 1}


def test_overlay_bookkeeping_never_lands_and_neither_does_a_commands_own_overlay_attribute(
    copy: Copy, tmp_path: Path
) -> None:
    changes = copy.run(
        "echo more >> a.txt; python3 -c \"import os; os.setxattr('a.txt', 'user.overlay.opaque', b'x')\"; mkdir n; "
        "rm -r d; mkdir d"
    )
    assert changes.dropped == (("a.txt", "user.overlay.opaque"),)
    Applier(history(tmp_path)).apply([changes], "aaaaaaaaaaaa", copy.started)
    for path in (copy.root / "a.txt", copy.root / "n", copy.root / "d"):
        assert [n for n in os.listxattr(path, follow_symlinks=False) if n.startswith("user.overlay.")] == [], path


def test_attribute_only_changes_are_changes_and_land(copy: Copy, tmp_path: Path) -> None:
    os.setxattr(copy.root / "a.txt", "user.gone", b"1")
    changes = copy.run(
        "python3 -c \"import os; os.removexattr('a.txt', 'user.gone'); os.setxattr('d/f', 'user.new', b'2')\""
    )
    assert {c.path: c.action for c in changes.changes} == {"a.txt": "meta", "d/f": "meta"}
    Applier(history(tmp_path)).apply([changes], "aaaaaaaaaaaa", copy.started)
    assert "user.gone" not in os.listxattr(copy.root / "a.txt")
    assert os.getxattr(copy.root / "d" / "f", "user.new") == b"2"


def test_a_directorys_mode_and_time_land_even_after_entries_were_made_in_it(copy: Copy, tmp_path: Path) -> None:
    changes = copy.run("touch d/new && chmod 700 d && touch -d '2001-01-01 00:00:00' d && mkdir n && touch n/a "
                       "&& chmod 700 n")  # fmt: skip
    outcome = Applier(history(tmp_path)).apply([changes], "aaaaaaaaaaaa", copy.started)
    assert outcome.conflicts == []
    d, n = (copy.root / "d").stat(), (copy.root / "n").stat()
    assert (stat.S_IMODE(d.st_mode), d.st_mtime_ns) == (0o700, 978307200 * 10**9)
    assert stat.S_IMODE(n.st_mode) == 0o700


def test_a_rename_is_no_conflict_with_itself(copy: Copy, tmp_path: Path) -> None:
    changes = copy.run("mv a.txt renamed.txt && ln renamed.txt again.txt && mv d/f d/g && mv d/g e")
    outcome = Applier(history(tmp_path)).apply([changes], "aaaaaaaaaaaa", copy.started)
    assert outcome.conflicts == []
    assert not list(copy.root.rglob("*.mcp-guard-*"))
    assert (copy.root / "renamed.txt").read_text() == "a\n" and (copy.root / "e").read_text() == "f\n"
    assert frozenset({"renamed.txt", "again.txt"}) in links(copy.root)


def test_a_file_with_two_names_rewritten_through_one_stays_one_file(copy: Copy, tmp_path: Path) -> None:
    changes = copy.run("echo more >> h1")
    Applier(history(tmp_path)).apply([changes], "aaaaaaaaaaaa", copy.started)
    assert (copy.root / "h2").read_text() == "linked\nmore\n"
    assert frozenset({"h1", "h2"}) in links(copy.root)


def test_a_file_with_two_names_renamed_stays_one_file(copy: Copy, tmp_path: Path) -> None:
    changes = copy.run("mv h1 d/moved")
    Applier(history(tmp_path)).apply([changes], "aaaaaaaaaaaa", copy.started)
    assert frozenset({"d/moved", "h2"}) in links(copy.root) and not (copy.root / "h1").exists()


def test_a_rewritten_file_with_a_name_outside_the_root_is_never_written_through_it(tmp_path: Path) -> None:
    made = Copy(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("outside\n")
    os.link(outside, made.root / "inside.txt")
    changes = made.run("echo more >> inside.txt")
    Applier(history(tmp_path)).apply([changes], "aaaaaaaaaaaa", made.started)
    assert outside.read_text() == "outside\n"
    assert (made.root / "inside.txt").read_text() == "outside\nmore\n"


def test_a_pre_image_is_what_the_path_held_whatever_its_other_names_do_later(copy: Copy, tmp_path: Path) -> None:
    changes = copy.run("rm h1")
    store = history(tmp_path)
    Applier(store).apply([changes], "aaaaaaaaaaaa", copy.started)
    with (copy.root / "h2").open("a") as fh:
        fh.write("changed later through the other name\n")
    entry = next(e for e in store.entries() if e.path.endswith("/h1"))
    assert store.read(entry.id)[1] == b"linked\n"


@pytest.mark.parametrize(
    "script",
    [
        "mv a.txt b && ln b c && chmod 600 c && touch -d '2001-01-01 00:00:00' d && "
        "python3 -c \"import os; os.setxattr('d/f', 'user.k', b'v')\"",
        "echo more >> h1 && mv d e && rm -r e/f",
        "rm h1 && mkdir h1 && echo in > h1/in",
        "mv h1 x && mv a.txt h1 && mv x a.txt",
    ],
)
def test_undo_puts_the_tree_back_exactly_and_its_undo_brings_the_call_back(
    copy: Copy, tmp_path: Path, script: str
) -> None:
    before, before_links = tree(copy.root), links(copy.root)
    changes = copy.run(script)
    applier = Applier(history(tmp_path))
    applier.apply([changes], "aaaaaaaaaaaa", copy.started)
    after, after_links = tree(copy.root), links(copy.root)
    roots = [str(copy.root)]
    undone = applier.undo("aaaaaaaaaaaa", "bbbbbbbbbbbb", roots)
    assert undone.conflicts == []
    assert (tree(copy.root), links(copy.root)) == (before, before_links)
    redone = applier.undo("bbbbbbbbbbbb", "cccccccccccc", roots)
    assert redone.conflicts == []
    assert (tree(copy.root), links(copy.root)) == (after, after_links)


def test_landing_removes_every_overlay_attribute_and_keeps_the_projects_own(tmp_path: Path) -> None:
    upper, real = tmp_path / "upper", tmp_path / "real"
    for path in (upper, real):
        path.write_text("x")
    os.setxattr(upper, "user.overlay.origin", b"")
    os.setxattr(upper, "user.overlay.overlay.note", b"mine")
    os.setxattr(upper, "user.plain", b"1")
    os.setxattr(real, "user.overlay.kept", b"k")
    dirfd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert land(at(dirfd, "upper"), own_overlay(at(dirfd, "real")))
    finally:
        os.close(dirfd)
    assert sorted(os.listxattr(upper)) == ["user.overlay.kept", "user.plain"]


def test_the_roots_own_attributes_changed_by_the_command_land_and_undo(copy: Copy, tmp_path: Path) -> None:
    os.setxattr(copy.root, "user.tag", b"old")
    os.setxattr(copy.root, "user.gone", b"1")
    changes = copy.run("setfattr -n user.tag -v new . && setfattr -x user.gone . && setfattr -n user.more -v 1 .")
    store = history(tmp_path)
    outcome = Applier(store).apply([changes], "000000000001", copy.started)
    assert not outcome.conflicts, outcome.conflicts
    assert sorted(seen(str(copy.root))) == [("user.more", b"1"), ("user.tag", b"new")]
    Applier(store).undo("000000000001", "000000000002", [str(copy.root)])
    assert sorted(seen(str(copy.root))) == [("user.gone", b"1"), ("user.tag", b"old")]


def test_the_roots_attributes_changed_by_someone_else_during_the_call_are_a_conflict_not_overwritten(
    copy: Copy, tmp_path: Path
) -> None:
    os.setxattr(copy.root, "user.tag", b"old")
    changes = copy.run("setfattr -n user.more -v 1 .")
    os.setxattr(copy.root, "user.tag", b"theirs")  # meanwhile, by someone else
    outcome = Applier(history(tmp_path)).apply([changes], "000000000001", copy.started)
    assert [c.path for c in outcome.conflicts] == [str(copy.root)], outcome
    assert sorted(seen(str(copy.root))) == [("user.tag", b"theirs")]
