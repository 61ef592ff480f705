"""Upstream urls a call sets: network remotes and remotes' names land unasked; a repository on this machine (any
path, absolute or relative, or a file: url: a place inside the allowed directories has many spellings) as a remote,
a branch's remote or a submodule's url is asked (red teams 110 F2, 112 F1)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcp_server_guard.changes.git_upstreams import _local
from support.boxed import Person, run, shell
from support.hooked import one_commit


@pytest.mark.parametrize(
    ("value", "named", "local"),
    [
        ("https://github.com/org/repo.git", False, False),
        ("git@github.com:org/repo.git", False, False),
        ("ssh://host/repo", False, False),
        ("origin", True, False),
        (".", True, False),
        ("/srv/x/up.git", False, True),
        ("//srv/x/up.git", False, True),
        ("/proc/self/root/srv/x/up.git", True, True),
        ("file:///srv/x/up.git", False, True),
        ("FILE:////srv/x/up.git", False, True),
        ("../up.git", False, True),
        ("up.git", False, True),
        ("./up.git", True, True),
    ],
)
def test_whether_an_upstream_url_is_on_this_machine(value: str, named: bool, local: bool) -> None:
    assert _local(value, named=named) is local


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_everyday_remotes_land_and_a_local_upstream_inside_the_roots_is_asked(workspace: Path) -> None:
    one_commit(workspace)
    person = Person(False)
    async with shell(workspace, person) as client:
        added = await run(client, "git remote add origin https://example.com/org/repo.git && git config "
                          "branch.main.remote origin && git config branch.main.merge refs/heads/main",
                          cwd=str(workspace))  # fmt: skip
        assert added.get("transaction") == "applied" and not person.questions, added
        local = await run(client, f"git remote set-url origin {workspace}/.cache/up.git", cwd=str(workspace))
    assert person.questions and "upstream" in person.questions[0], local
    assert "example.com" in (workspace / ".git/config").read_text()


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_a_push_url_to_a_repository_on_this_machine_is_asked(workspace: Path, tmp_path: Path) -> None:
    # Threat: `git remote set-url --push origin /elsewhere/repo.git` (or branch.*.pushRemote, remote.pushDefault
    # spelled as a path): the user's next `git push` writes commits and branches outside the allowed directories.
    one_commit(workspace)
    person = Person(False)
    elsewhere = tmp_path / "elsewhere.git"
    async with shell(workspace, person) as client:
        everyday = await run(client, "git remote add origin https://example.com/org/repo.git && git remote set-url "
                             "--push origin git@example.com:org/repo.git", cwd=str(workspace))  # fmt: skip
        assert everyday.get("transaction") == "applied" and not person.questions, everyday
        for line in (f"git remote set-url --push origin {elsewhere}", f"git config branch.main.pushRemote {elsewhere}",
                     f"git config remote.pushDefault file://{elsewhere}"):  # fmt: skip
            person.questions.clear()
            await run(client, line, cwd=str(workspace))
            assert person.questions and "git push" in person.questions[0], line
    config = (workspace / ".git/config").read_text()
    assert str(elsewhere) not in config and "git@example.com" in config
