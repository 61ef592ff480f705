"""Unit tests of the path jail, through both resolution paths: openat2 and the O_NOFOLLOW walk."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_server_guard.errors import GuardError
from mcp_server_guard.files import openat2 as _openat2
from mcp_server_guard.files.jail import Jail, SymlinkMode


@pytest.fixture(params=["openat2", "walk"])
def resolution(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "walk":
        # Simulate a kernel without openat2 (ENOSYS): the portable component walk must hold alone.
        monkeypatch.setattr(_openat2, "available", lambda: False)
    return str(request.param)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / "sub" / "f.txt").write_text("inside", encoding="utf-8")
    (tmp_path / "proj-evil").mkdir()
    (tmp_path / "proj-evil" / "f.txt").write_text("evil", encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "f.txt").write_text("outside", encoding="utf-8")
    return proj


@pytest.fixture
def jail(tree: Path) -> Iterator[Jail]:
    j = Jail(str(tree))
    yield j
    j.close()


def read_via(jail: Jail, path: str) -> str:
    _, fd, _ = jail.open_file(path)
    try:
        return os.read(fd, 100).decode()
    finally:
        os.close(fd)


def code_of(jail: Jail, path: str) -> str:
    with pytest.raises(GuardError) as info:
        read_via(jail, path)
    return info.value.code


def test_inside_paths_resolve(jail: Jail, tree: Path, resolution: str) -> None:
    assert read_via(jail, "sub/f.txt") == "inside"
    assert read_via(jail, str(tree / "sub" / "f.txt")) == "inside"
    assert read_via(jail, "./sub//f.txt") == "inside"


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("../outside/f.txt", "PATH_OUTSIDE_JAIL"),
        ("sub/../../outside/f.txt", "PATH_OUTSIDE_JAIL"),
        ("../proj-evil/f.txt", "PATH_OUTSIDE_JAIL"),
        ("/etc/passwd", "PATH_OUTSIDE_JAIL"),
        ("", "INVALID_PATH"),
        ("   ", "INVALID_PATH"),
        ("sub/f.txt\x00", "INVALID_PATH"),
        ("sub/missing", "NOT_FOUND"),
        ("sub", "IS_DIRECTORY"),
        ("sub/f.txt/x", "NOT_A_DIRECTORY"),
    ],
)
def test_refusals_table(jail: Jail, path: str, code: str, resolution: str) -> None:
    assert code_of(jail, path) == code


def test_sibling_prefix_is_not_contained(tmp_path: Path, jail: Jail) -> None:
    assert code_of(jail, str(tmp_path / "proj-evil" / "f.txt")) == "PATH_OUTSIDE_JAIL"


def test_symlink_escape_through_file_dir_and_chain(jail: Jail, tree: Path, resolution: str) -> None:
    outside = tree.parent / "outside"
    (tree / "abs").symlink_to(outside / "f.txt")
    (tree / "rel").symlink_to("../outside/f.txt")
    (tree / "dirlink").symlink_to(outside)
    (tree / "chain1").symlink_to("chain2")
    (tree / "chain2").symlink_to(str(outside / "f.txt"))
    (tree / "sub" / "up").symlink_to("../../outside")
    for path in ("abs", "rel", "dirlink/f.txt", "chain1", "sub/up/f.txt"):
        assert code_of(jail, path) == "SYMLINK_ESCAPE", path


def test_in_jail_symlinks_are_followed(jail: Jail, tree: Path, resolution: str) -> None:
    (tree / "abs").symlink_to(tree / "sub" / "f.txt")
    (tree / "rel").symlink_to("sub/f.txt")
    (tree / "sub" / "back").symlink_to("../sub/f.txt")
    (tree / "dl").symlink_to(tree / "sub")
    for path in ("abs", "rel", "sub/back", "dl/f.txt"):
        assert read_via(jail, path) == "inside", path


def test_symlink_loop_is_refused(jail: Jail, tree: Path, resolution: str) -> None:
    (tree / "a").symlink_to("b")
    (tree / "b").symlink_to("a")
    assert code_of(jail, "a") in ("INVALID_PATH", "SYMLINK_REJECTED")


def test_symlink_into_a_second_allowed_root_is_followed(tree: Path, resolution: str) -> None:
    other = tree.parent / "outside"
    (tree / "to-other").symlink_to(other / "f.txt")
    jail = Jail(str(tree), [str(other)])
    try:
        assert read_via(jail, "to-other") == "outside"
    finally:
        jail.close()


def test_reject_mode_refuses_every_symlink(tree: Path, resolution: str) -> None:
    (tree / "rel").symlink_to("sub/f.txt")
    (tree / "dl").symlink_to("sub")
    jail = Jail(str(tree), symlinks=SymlinkMode.REJECT)
    try:
        assert code_of(jail, "rel") == "SYMLINK_REJECTED"
        assert code_of(jail, "dl/f.txt") == "SYMLINK_REJECTED"
        assert read_via(jail, "sub/f.txt") == "inside"
    finally:
        jail.close()


def test_fifo_socket_and_device_nodes_are_refused_without_blocking(jail: Jail, tree: Path) -> None:
    import socket

    os.mkfifo(tree / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tree / "sock"))
    try:
        assert code_of(jail, "fifo") == "NOT_REGULAR_FILE"
        assert code_of(jail, "sock") == "NOT_REGULAR_FILE"
    finally:
        sock.close()


def test_narrowing_by_client_roots_only_ever_shrinks(jail: Jail, tree: Path) -> None:
    jail.narrow([str(tree / "sub")])
    assert read_via(jail, "sub/f.txt") == "inside"
    (tree / "top.txt").write_text("top", encoding="utf-8")
    assert code_of(jail, "top.txt") == "PATH_OUTSIDE_JAIL"
    jail.narrow([str(tree.parent)])  # a root above the allowed dir narrows to the allowed dir only
    assert read_via(jail, "top.txt") == "top"
    assert code_of(jail, "../outside/f.txt") == "PATH_OUTSIDE_JAIL"
    jail.narrow([str(tree.parent / "outside")])
    assert code_of(jail, "top.txt") == "NO_ALLOWED_ROOTS"
    jail.narrow(None)
    assert read_via(jail, "top.txt") == "top"


def test_display_is_relative_to_the_launch_dir(jail: Jail, tree: Path) -> None:
    assert jail.display(jail.locate(str(tree / "sub" / "f.txt"))) == "sub/f.txt"
    assert jail.display(jail.locate(".")) == "."


def test_openat2_is_used_on_this_kernel() -> None:
    fd = _openat2.openat2(os.open("/", os.O_PATH), ".", os.O_PATH, _openat2.RESOLVE_BENEATH)
    os.close(fd)
    assert _openat2.available()
