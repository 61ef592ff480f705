"""Red team 52, without the box: the call init's follow of names (shell.sandbox.unlinks) fooled by another process
acting while the rename helper exchanges two names (``unlinks.exchanging``)."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from mcp_server_guard.shell.sandbox import unlinks

_LIBC = ctypes.CDLL(None, use_errno=True)


def _where(path: Path) -> unlinks.Where:
    st = os.stat(path.parent)
    return ((st.st_dev, st.st_ino), os.fsencode(path.name))


def _exchange(a: Path, b: Path) -> int:
    if _LIBC.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:
        return ctypes.get_errno()
    return 0


def _said(watched: unlinks.Watch | None) -> tuple[list[str], list[tuple[str, str]]]:
    view = os.open("/", os.O_PATH | os.O_DIRECTORY)
    try:
        return unlinks.remade(watched, view)
    finally:
        os.close(view)


def test_a_name_another_process_remade_while_the_helper_exchanged_is_not_said_as_the_project_file(
    tmp_path: Path,
) -> None:
    """F1: ``exchanging`` sets what both ends hold after its second drain, over any event another process queued
    between its first drain and that one. Here another process removes ``h2`` and writes a new file there right after
    the exchange (no rename: not serialised behind the helper). The init then says h2 holds h1's file (relinked with
    h1, the same real inode: the server takes h2 for the real file rewritten in place, so d/h3 gets h2's new bytes)."""
    (tmp_path / "d").mkdir()
    (tmp_path / "h1").write_text("important original\n")
    os.link(tmp_path / "h1", tmp_path / "h2")
    os.link(tmp_path / "h1", tmp_path / "d" / "h3")
    watched = unlinks.watch([str(tmp_path), str(tmp_path / "d")])
    assert watched is not None
    os.rename(tmp_path / "h1", tmp_path / "t")  # t holds h1's file (followed)

    def make() -> int:
        error = _exchange(tmp_path / "h2", tmp_path / "t")
        # another process of the command, in the window before the helper's second drain:
        (tmp_path / "h2").unlink()
        (tmp_path / "h2").write_text("EVIL, a file of the call's\n")
        return error

    assert unlinks.moving((_where(tmp_path / "h2"), _where(tmp_path / "t")), make, swap=True) == (0, False)
    _remade, relinked = _said(watched)
    h2 = f"{tmp_path}/h2"
    assert h2 not in dict(relinked), f"h2 (a new file) said to hold another name's original file: {relinked}"


def test_links_the_kernel_is_left_to_make_do_not_grow_the_init_without_bound(tmp_path: Path) -> None:
    """F3 (LOW): every link the helper leaves to the kernel (a source that cannot be looked at, AT_EMPTY_PATH) into a
    watched directory adds ``pending[name] = _UNKNOWN`` (``unlinks.unsaid``); a failed link never creates the name,
    so the entry is never popped. ``names`` is bounded (_NAMES_MAX), ``pending`` is not: a command looping
    ``link("missing", "d/x<i>")`` grows the init by ~0.2 KiB a call for the whole call."""
    (tmp_path / "h1").write_text("x")
    os.link(tmp_path / "h1", tmp_path / "h2")
    watched = unlinks.watch([str(tmp_path)])
    assert watched is not None
    try:
        n = unlinks._NAMES_MAX + 1000
        st = os.stat(tmp_path)
        for i in range(n):
            unlinks.unsaid(((st.st_dev, st.st_ino), b"x%d" % i))  # the helper's call for a link it leaves
        assert len(watched.pending) <= unlinks._NAMES_MAX, f"{len(watched.pending)} names pending, unbounded"
    finally:
        watched.close()


def test_a_project_file_exchanged_out_of_sight_and_linked_back_is_not_said_made_by_the_call(tmp_path: Path) -> None:
    """F4: ``exchanging`` with one end in a directory not watched moves a project file out of sight but sets neither
    ``out`` nor ``away``; linked back from there (``rm h2 && ln n/x h2``) the name is then taken for a file the call
    made (``_NEW``: said ``remade``) instead of "cannot say" — the docs say nothing is said then. Natively h2 is a name
    of the file again; through the server it lands as a file of its own (hard link lost)."""
    proj, n = tmp_path / "p", tmp_path / "n"
    proj.mkdir()
    n.mkdir()
    (proj / "h1").write_text("x")
    os.link(proj / "h1", proj / "h2")
    watched = unlinks.watch([str(proj)])
    assert watched is not None
    (n / "x").write_text("new")
    ends = (_where(n / "x"), _where(proj / "h2"))  # (n is not watched: the watch knows no key for n/x)
    assert unlinks.moving(ends, lambda: _exchange(n / "x", proj / "h2"), swap=True) == (0, True)
    (proj / "h2").unlink()

    def make() -> int:
        os.link(n / "x", proj / "h2")
        return 0

    assert unlinks.linking(_where(proj / "h2"), _where(n / "x"), make) == 0
    (n / "x").unlink()
    remade, _relinked = _said(watched)
    assert f"{proj}/h2" not in remade, "the project's file, brought back from out of sight, said made by the call"
