"""Red team 112 F1: red team 110 F2's answer (``git_upstreams``) asks for a remote url naming a repository inside
the allowed directories, by comparing the url's normalised text with the roots. Two spellings of the same place
pass the comparison and git reads them as that place: ``//<root>/.cache/up.git`` (``posixpath.normpath`` keeps two
leading slashes; the kernel reads them as one) and ``/proc/self/root<root>/.cache/up.git`` (the root of whatever
process reads it: git's). A command clones the project bare into ``.cache/up.git``, adds with git's plumbing one
commit on ``main`` whose tree adds ``.envrc``, and ``git remote set-url origin`` to one of those spellings. No
question; the user's next ``git pull`` (outside the box) fast-forwards onto the model's commit and writes ``.envrc``
(direnv runs it on the next ``cd``).

The command's program and the file's bytes travel as data (redirect_upstream_spelled.sh, envrc_payload.txt). A
person declines every question. Control: the plain absolute spelling (red team 110 F2) is asked, declined, and the
pull writes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.hooked import git, git_out

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

HERE = Path(__file__).resolve().parent


def _project(tmp_path: Path) -> Path:
    """An upstream (a bare repository outside the root) and the user's clone of it, the root."""
    seed = tmp_path / "seed"
    seed.mkdir()
    git(seed, "init", "-q", "-b", "main")
    (seed / "a.txt").write_text("a\n")
    git(seed, "add", "a.txt")
    git(seed, "commit", "-q", "--no-verify", "-m", "init")
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(tmp_path / "upstream.git"))
    git(tmp_path, "clone", "-q", str(tmp_path / "upstream.git"), str(tmp_path / "proj"))
    root = tmp_path / "proj"
    (root / ".t").mkdir()
    shutil.copy(HERE / "redirect_upstream_spelled.sh", root / ".t" / "redirect.sh")
    shutil.copy(HERE / "envrc_payload.txt", root / ".t" / "payload")
    (root / ".git" / "info" / "exclude").write_text(".t/\n.cache/\n")
    return root


@pytest.mark.parametrize("spelling", ["slashes", "proc", "plain"])
async def test_the_users_next_pull_does_not_write_what_the_call_put_upstream(tmp_path: Path, spelling: str) -> None:
    root = _project(tmp_path)
    person = Person(False)
    async with shell(root, person) as client:
        out = await run(client, f"sh .t/redirect.sh .t/payload {spelling}", cwd=str(root))
    url = git_out(root, "remote", "get-url", "origin").strip()
    git(root, "pull", "-q", "--ff-only")  # the user's next everyday command, outside the box
    assert not (root / ".envrc").exists(), (spelling, person.questions, url, out.get("changes"), out.get("stdout"))
