"""Upstream urls a call sets: network remotes and remotes' names land unasked; a local repository inside the allowed
directories (or a relative path) as a remote, a branch's remote or a submodule's url is asked (red team 110 F2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcp_server_guard.changes.git_upstreams import _local_place
from support.boxed import Person, run, shell
from support.hooked import one_commit


@pytest.mark.parametrize(
    ("value", "named", "place"),
    [
        ("https://github.com/org/repo.git", False, None),
        ("git@github.com:org/repo.git", False, None),
        ("ssh://host/repo", False, None),
        ("origin", True, None),
        (".", True, None),
        ("/srv/x/up.git", False, "/srv/x/up.git"),
        ("/srv/x/up.git", True, "/srv/x/up.git"),
        ("file:///srv/x/up.git", False, "/srv/x/up.git"),
        ("../up.git", False, ""),
        ("up.git", False, ""),
        ("./up.git", True, ""),
    ],
)
def test_where_an_upstream_url_lies(value: str, named: bool, place: str | None) -> None:
    assert _local_place(value, named=named) == place


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
