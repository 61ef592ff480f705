"""Red team 110 F4: in a repository whose index is split (``core.splitIndex = true``, or ``git update-index
--split-index``), the shared index ``.git/sharedindex.<id>`` is listed by ``git_state_files.KNOWN`` as inert, and a
command that rewrites it in place (its last 20 bytes, which git takes for its id, kept: git does not hash an index
it reads) lands with no question, ``.git/index`` untouched. Git reads the entries from it: here HEAD's tree plus
``.envrc``. The user's next ``git checkout -- .`` (or ``git restore .``, ``git stash`` + ``pop``) writes ``.envrc``
into the work tree, outside the box.

Red team 76 F4 made a *changed* index that is split asked (``git_refs._staged``: "the index is split"); the shared
file it reads was left out. The command's program and the file's bytes travel as data (forge_shared_index.py,
envrc_payload.txt). A person declines every question. Control: the same index, not split, given ``.envrc`` by the
command (``git add``): asked or refused, nothing lands."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.hooked import git, git_out

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

HERE = Path(__file__).resolve().parent


def _project(root: Path, split: bool) -> None:
    git(root, "init", "-q", "-b", "main")
    if split:
        git(root, "config", "core.splitIndex", "true")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "--no-verify", "-m", "init")
    (root / ".t").mkdir()
    shutil.copy(HERE / "forge_shared_index.py", root / ".t" / "forge.py")
    shutil.copy(HERE / "envrc_payload.txt", root / ".t" / "payload")
    (root / ".git" / "info" / "exclude").write_text(".t/\n")


async def test_the_users_checkout_of_the_index_does_not_write_what_the_shared_index_was_given(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    _project(root, split=True)
    assert list((root / ".git").glob("sharedindex.*"))
    person = Person(False)
    async with shell(root, person) as client:
        out = await run(client, "python3 .t/forge.py .envrc .t/payload", cwd=str(root))
    status = git_out(root, "status", "--porcelain")
    git(root, "checkout", "--", ".")  # the user's next everyday command, outside the box
    assert not (root / ".envrc").exists(), (person.questions, status, out.get("changes"), out.get("stdout"),
                                             out.get("stderr"))  # fmt: skip


async def test_control_envrc_staged_by_the_command(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    _project(root, split=False)
    person = Person(False)
    async with shell(root, person) as client:
        out = await run(client, "cp .t/payload .envrc && git add .envrc && rm .envrc", cwd=str(root))
    git(root, "checkout", "--", ".")
    assert person.questions or out["changes"]["refused"], out["changes"]
    assert not (root / ".envrc").exists(), person.questions
