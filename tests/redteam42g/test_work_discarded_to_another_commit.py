"""Issue 42 claim 4: "Discarding uncommitted work (git checkout -- f, reset --hard, restore) is asked";
docs/shell_exec.md "Judging": asked — "putting a changed file back to the index's content (uncommitted work thrown
away: git reset --hard, git checkout -- f, git restore ...)".

Everyday slip: the file holds uncommitted work and the command puts it back to *another commit's* content rather
than the index's: ``git reset --hard HEAD~1``, ``git checkout HEAD~1 -- f.txt``, ``git restore --source=HEAD~1 f.txt``,
``git checkout -f other`` (a branch where f.txt differs). The work is gone exactly as with ``git checkout -- f.txt``
(no commit, no stash, no index entry holds it). Observed: nothing asked — it is judged an ordinary rewrite.
Expected: asked like ``git checkout -- f.txt`` (which is, see the control case).
Guessed cause: ``git_index.discarded`` asks only when the new content equals the *index's* blob (the index read
before the command); a file overwritten with any other committed blob is taken for a rewrite, though the bytes it
lost (changed since the index) exist in no git object."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
GIT = "git -c user.name=t -c user.email=t@t"


def _repo(copy: Copy) -> None:
    root = copy.root
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    (root / "f.txt").write_text("v1\n")
    subprocess.run(f"{GIT} add -A && {GIT} commit -qm one && {GIT} branch other", shell=True, cwd=root, check=True)
    (root / "f.txt").write_text("v2\n")
    subprocess.run(f"{GIT} commit -qam two", shell=True, cwd=root, check=True)
    (root / "f.txt").write_text("v2\nhours of uncommitted work\n")


def _asks(copy: Copy, script: str) -> list[str]:
    j = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return list(j.asks)


def test_control_checkout_to_the_index_is_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    asks = _asks(copy, "git checkout -- f.txt")
    assert any("f.txt" in a for a in asks), asks


@pytest.mark.parametrize(
    "script",
    [
        "git reset -q --hard HEAD~1",
        "git checkout -q HEAD~1 -- f.txt",
        "git restore --source=HEAD~1 f.txt",
        "git checkout -q -f other",
    ],
)
def test_work_put_back_to_another_commit_is_asked(tmp_path: Path, script: str) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    asks = _asks(copy, script)
    assert (copy.root / "f.txt").read_text() == "v2\nhours of uncommitted work\n"  # the real tree, untouched
    assert any("f.txt" in a for a in asks), asks


def test_a_discard_to_a_packed_version_is_asked_and_an_edit_is_not(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    subprocess.run(["git", "gc", "-q"], cwd=copy.root, check=True)  # every version in a pack now
    assert not list((copy.root / ".git" / "objects").glob("??/*"))
    asks = _asks(copy, "git reset -q --hard HEAD~1")
    assert any("f.txt" in a for a in asks), asks


def test_an_edit_of_a_file_with_uncommitted_work_is_not_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    asks = _asks(copy, "echo more >> f.txt")
    assert not any("discards" in a for a in asks), asks


def test_a_jobs_look_leaves_a_rewrite_of_uncommitted_work_for_the_jobs_end(tmp_path: Path) -> None:
    # The attack (claim 6): a job's look judges an ordinary rewrite of a file with uncommitted work, then the job
    # puts the file back to git's version (same size) before the look copies it: the discard would land unasked.
    # Such a rewrite is judged by its content: a look (which applies all but these) leaves it for the job's end.
    copy = Copy(tmp_path)
    _repo(copy)
    j = judge([copy.run("printf 'v2\\nhours of uncommitted worK\\n' > f.txt")], protection_for(POLICY), POLICY.effects,
              [str(copy.root)])  # fmt: skip
    assert not j.asks and (str(copy.root), "f.txt") in j.by_content, (j.asks, j.by_content)
