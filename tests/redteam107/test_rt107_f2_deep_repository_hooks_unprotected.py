"""Red team 107 F2 (issue 42 items 2 and 5): a repository whose top lies deeper than PATH_MAX has its config never
read, so the hooks its ``core.hooksPath`` names are an ordinary file a command rewrites with no question.

``git_dirs._ancestors`` asks ``os.path.lexists(<directory>/.git)`` (and ``_repo_files`` reads the config, the hooks
and the included files) by absolute path: past PATH_MAX (4,096 bytes) the kernel answers ENAMETOOLONG, which
``lexists`` takes for "no such file", so the repository is not one and ``tools/hooks/pre-commit`` is not protected.
Git itself works there (a shell reaches the directory with relative ``cd``s, git opens its files relatively): the
user's next ``git commit`` in that repository runs the rewritten hook outside the box. Control: the same repository
near the root: refused.

The command's program travels as data (deep_hook_rewrite.py). A person declines every question; a case fails when
the hook's new bytes landed with no question and no refusal."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

PROGRAM = Path(__file__).resolve().parent / "deep_hook_rewrite.py"
NAME = "d" * 250
HOOK = b"#!/bin/sh\nexit 0\n"


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


def _repository(root: Path, levels: int) -> int:
    """A repository (made as ``git init`` makes one) ``levels`` long names below ``root``, its core.hooksPath
    ``tools/hooks`` with a pre-commit hook: the open fd of its top."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(levels):
        nxt = _mkdir(fd, NAME)
        os.close(fd)
        fd = nxt
    git = _mkdir(fd, ".git")
    for sub in ("objects", "refs", "info"):
        os.close(_mkdir(git, sub))
    refs = os.open("refs", os.O_RDONLY | os.O_DIRECTORY, dir_fd=git)
    os.close(_mkdir(refs, "heads"))
    os.close(_mkdir(refs, "tags"))
    os.close(refs)
    _write(git, "HEAD", b"ref: refs/heads/main\n")
    _write(git, "config", b"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\thooksPath = tools/hooks\n")
    os.close(git)
    tools = _mkdir(fd, "tools")
    hooks = _mkdir(tools, "hooks")
    _write(hooks, "pre-commit", HOOK, 0o755)
    os.close(hooks)
    os.close(tools)
    return fd


def _hook(top: int) -> bytes:
    fd = os.open("tools/hooks/pre-commit", os.O_RDONLY, dir_fd=top)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


async def _rewrite(workspace: Path, levels: int) -> tuple[bytes, dict[str, object], Person]:
    top = _repository(workspace, levels)
    (workspace / ".t").mkdir()
    shutil.copy(PROGRAM, workspace / ".t" / "rewrite.py")
    person = Person(False)
    try:
        async with shell(workspace, person) as client:
            out = await run(client, f"python3 .t/rewrite.py {levels}", cwd=str(workspace))
        return _hook(top), out, person
    finally:
        os.close(top)


async def test_control_a_shallow_repositorys_hooks_path_is_protected(workspace: Path) -> None:
    hook, out, _person = await _rewrite(workspace, 1)
    assert hook == HOOK, (out.get("transaction"), out.get("changes"))


async def test_a_repository_deeper_than_path_max_has_its_hooks_protected(workspace: Path) -> None:
    levels = 17  # 17 x 251 bytes: its top's path is past PATH_MAX
    hook, out, person = await _rewrite(workspace, levels)
    assert hook == HOOK or person.questions or out.get("transaction") in ("held", "declined"), (
        "hook rewritten unjudged",
        out.get("transaction"),
        out.get("changes"),
    )
