"""Git's own files are read at LF only, as git reads them: a CR inside a reflog entry's message starts no line git
sees, so two ids after it name nothing. Attack: move the only name of a commit elsewhere and append to ``logs/HEAD`` an
entry whose message is ``\\r<id> <id>``: read at every line end Python knows, the judge took the commit as still
named and let the deletion land unasked (git's next gc may prune the commit). The lines travel as data
(git_lines_cases.json); a person declines every question."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.hooked import git, git_out, one_commit

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

LINES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "git_lines_cases.json").read_text())


def _tagged_alone(root: Path) -> str:
    """A commit only the tag ``lonetag`` names (no branch, no reflog entry)."""
    one_commit(root)
    git(root, "checkout", "-q", "-b", "side")
    (root / "a.txt").write_text("released work, tagged only\n")
    git(root, "commit", "-q", "--no-verify", "-am", "release")
    git(root, "tag", "lonetag")
    git(root, "checkout", "-q", "main")
    git(root, "branch", "-q", "-D", "side")
    git(root, "reflog", "expire", "--expire=now", "--all")
    return git_out(root, "rev-parse", "lonetag").strip()


def _named(root: Path, commit: str) -> bool:
    listed = subprocess.run(["git", "rev-list", "--all", "--reflog"], cwd=root, capture_output=True, text=True,
                            timeout=30, check=False).stdout.split()  # fmt: skip
    return commit in listed


@pytest.mark.parametrize("case", sorted(LINES))
async def test_attack_a_cr_in_a_reflog_message_hides_work_left_unnamed(workspace: Path, case: str) -> None:
    work = _tagged_alone(workspace)
    assert _named(workspace, work)
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, LINES[case], cwd=str(workspace))
    assert person.questions, (case, out.get("transaction"), out.get("changes"))
    assert _named(workspace, work), case


@pytest.mark.parametrize(
    ("data", "names"),
    [
        (b"3.12\n", False),
        (b"# pinned for CI: see /docs/python.md\n3.12\n", False),
        (b"./tools/py\n", True),
        (b"3.12\r# ./tools/py\n", True),
        (b"3.12\x0c# ./tools/py\n", True),
        ("3.12\u2028# ./tools/py\n".encode(), True),
        (b"\x1f# ./tools/py\n", True),
        (b"3.12\r\n# see /docs/python.md\r\n", False),
    ],
)
def test_attack_a_version_file_hides_an_interpreter_path_behind_a_line_end_uv_does_not_split_at(
    data: bytes, names: bool
) -> None:
    # Threat: `.python-version` read by uv at LF only; the judge read it at every line end Python knows, so
    # `3.12\r# ./tools/py` was a version and a comment to it and one interpreter path to uv (which runs it).
    from mcp_server_guard.python_startup import version_path

    assert version_path(".python-version", data) is names
