"""The server's own reader of git objects reads every object of a repository — loose, and packed with deltas — as
git does (checked against ``git cat-file``), and says Unreadable rather than guess."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.git_objects import Objects, Unreadable, changed_paths, tree_of
from support.hooked import git

pytestmark = pytest.mark.unit


def project(root: Path) -> None:
    (root / "d").mkdir(parents=True)
    for i in range(20):
        (root / "d" / f"f{i}.txt").write_text(f"line {i}\n" * 200)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    for i in range(5):
        (root / "d" / f"f{i}.txt").write_text(f"line {i}\n" * 200 + "more\n")
        git(root, "commit", "-q", "-am", f"edit {i}")


def objects_of(root: Path) -> Objects:
    return Objects([os.open(root / ".git" / "objects", os.O_RDONLY | os.O_DIRECTORY)])


def every_object(root: Path) -> list[tuple[str, str]]:
    out = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)"],
                         cwd=root, capture_output=True, text=True, check=True).stdout  # fmt: skip
    return [tuple(line.split()) for line in out.splitlines()]  # type: ignore[misc]


@pytest.mark.parametrize("packed", [False, True])
def test_every_object_reads_as_git_reads_it(tmp_path: Path, packed: bool) -> None:
    project(tmp_path)
    if packed:
        git(tmp_path, "gc", "-q", "--aggressive")
        assert not list((tmp_path / ".git" / "objects").glob("??/*")), "gc left loose objects"
    objects = objects_of(tmp_path)
    try:
        for oid, kind in every_object(tmp_path):
            body = subprocess.run(["git", "cat-file", kind, oid], cwd=tmp_path, capture_output=True,
                                  check=True).stdout  # fmt: skip
            assert objects.get(bytes.fromhex(oid)) == (kind, body), oid
    finally:
        objects.close()


def test_changed_paths_are_what_a_checkout_writes(tmp_path: Path) -> None:
    project(tmp_path)
    git(tmp_path, "gc", "-q")
    head = subprocess.run(["git", "rev-parse", "HEAD", "HEAD~3"], cwd=tmp_path, capture_output=True, text=True,
                          check=True).stdout.split()  # fmt: skip
    objects = objects_of(tmp_path)
    try:
        new, old = (tree_of(objects, bytes.fromhex(h)) for h in head)
        assert sorted(changed_paths(objects, old, new)) == ["d/f2.txt", "d/f3.txt", "d/f4.txt"]
        assert len(changed_paths(objects, None, new)) == 20
        with pytest.raises(Unreadable):
            objects.get(b"\x01" * 20)
    finally:
        objects.close()
