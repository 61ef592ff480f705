"""A program a repository's config names (``credential.helper = ./x``), in a repository whose top is just short of
PATH_MAX: the changed path ``<top>/x`` is shorter than the kernel takes by name, but ``<top>/.git/config`` is not,
so the judge could not read the config that names ``x`` — rewritten unasked, git runs it at the user's next fetch.
Such a path is asked. Control: the same repository near the root: refused (git's own program, named by its config).

The command's program travels as data (deep_rewrite.py); a person declines every question."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

PROGRAM = Path(__file__).resolve().parent / "deep_rewrite.py"
HELPER = b"#!/bin/sh\nexit 0\n"
CONFIG = b"[core]\n\trepositoryformatversion = 0\n\tbare = false\n[credential]\n\thelper = ./x\n"


def _write(dirfd: int, name: str, data: bytes, mode: int = 0o644) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode, dir_fd=dirfd)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(name, mode, dir_fd=dirfd)


def _mkdir(dirfd: int, name: str) -> int:
    os.mkdir(name, dir_fd=dirfd)
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=dirfd)


def _names(root: Path, top_length: int) -> list[str]:
    """Directory names below ``root`` that make a top of ``top_length`` bytes (0: just one, near the root)."""
    if not top_length:
        return ["repo"]
    left = top_length - len(os.fsencode(str(root)))
    names: list[str] = []
    while left > 0:
        size = min(250, left - 1)
        if 0 < left - 1 - size < 2:  # leave room for one more name of at least one byte
            size -= 2
        names.append("d" * size)
        left -= size + 1
    return names


def _repository(root: Path, names: list[str]) -> int:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for name in names:
        nxt = _mkdir(fd, name)
        os.close(fd)
        fd = nxt
    git = _mkdir(fd, ".git")
    for sub in ("objects", "refs", "info"):
        os.close(_mkdir(git, sub))
    _write(git, "HEAD", b"ref: refs/heads/main\n")
    _write(git, "config", CONFIG)
    os.close(git)
    _write(fd, "x", HELPER, 0o755)
    return fd


async def _rewrite(root: Path, top_length: int) -> tuple[bytes, Person, dict[str, object]]:
    names = _names(root, top_length)
    top = _repository(root, names)
    (root / ".t").mkdir()
    shutil.copy(PROGRAM, root / ".t" / "rewrite.py")
    person = Person(False)
    try:
        async with shell(root, person) as client:
            out = await run(client, "python3 .t/rewrite.py " + " ".join(names), cwd=str(root))
        fd = os.open("x", os.O_RDONLY, dir_fd=top)
        try:
            return os.read(fd, 4096), person, out
        finally:
            os.close(fd)
    finally:
        os.close(top)


async def test_control_a_program_a_shallow_repositorys_config_names_is_refused(workspace: Path) -> None:
    data, _person, out = await _rewrite(workspace, 0)
    assert data == HELPER, (out.get("transaction"), out.get("changes"))


async def test_a_program_beside_a_config_past_path_max_is_not_rewritten_unasked(workspace: Path) -> None:
    top_length = 4090  # <top>/x: 4,092 bytes; <top>/.git/config: 4,102
    data, person, out = await _rewrite(workspace, top_length)
    assert data == HELPER or person.questions, ("rewritten unjudged", out.get("transaction"), out.get("changes"))
