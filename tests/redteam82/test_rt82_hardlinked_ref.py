"""Red team 82 F4 (claim 2): a ref that is another name (a hard link) of a work-tree file moved with every later
write of that file — judged as a plain file, never as a ref. Call 1 ``ln notes.txt .git/refs/heads/feature``
(notes.txt names HEAD: nothing new to check out), or the other way round for the checked-out branch (``ln
.git/refs/heads/main mainref``); call 2 writes a commit whose tree adds ``.envrc`` and puts its id in the work-tree
name (in place, as natively: both names are one file). Nothing was asked in either call; the real repository's
branch then named the commit with ``.envrc`` (the user's checkout or ``reset --hard`` writes it). Now a file of
git's state and a path outside git's dirs never become names of one file.

Natively checked with real git outside any box (``test_git_moves_a_hard_linked_ref_with_the_file``), then the
judgement alone (call 1 landed by hand if it was let through), then the real server."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()
ENV = dict(os.environ, GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@x", GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@x",
           GIT_CONFIG_GLOBAL="/dev/null")  # fmt: skip

# Call 2: a commit whose tree adds .envrc (echo rt82), its id written into the work-tree name of the ref.
MAKE = (
    "b=$(echo 'echo rt82' | git hash-object -w --stdin)"
    " && t=$( (git ls-tree HEAD; printf '100644 blob %s\\t.envrc\\n' $b) | git mktree)"
    " && c=$(git commit-tree $t -p HEAD -m more < /dev/null)"
)
# (call 1, call 2, the branch that moves)
WAYS = [
    (
        "git rev-parse HEAD > notes.txt && ln notes.txt .git/refs/heads/feature",
        MAKE + " && echo $c > notes.txt",
        "feature",
    ),
    ("ln .git/refs/heads/main mainref", MAKE + " && echo $c > mainref", "main"),
]


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, env=ENV, capture_output=True, timeout=60, check=True)
    return done.stdout.decode().strip()


def _project(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.txt").write_text("a\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.name", "u")
    _git(root, "config", "user.email", "u@x")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "one")


def _judged(copy: Copy, script: str) -> tuple[list[str], dict[tuple[str, str], str]]:
    changes = copy.run(script)
    j = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return j.asks, j.refused


@pytest.mark.parametrize(("call1", "call2", "branch"), WAYS)
def test_git_moves_a_hard_linked_ref_with_the_file(tmp_path: Path, call1: str, call2: str, branch: str) -> None:
    root = tmp_path / "native"
    _project(root)
    for script in (call1, call2):
        subprocess.run(["bash", "-c", script], cwd=root, env=ENV, check=True, timeout=60, capture_output=True)
    assert ".envrc" in _git(root, "ls-tree", "--name-only", branch).split("\n")


@pytest.mark.parametrize(("call1", "call2", "branch"), WAYS)
def test_a_ref_made_a_hard_link_of_a_work_tree_file_is_judged(
    tmp_path: Path, call1: str, call2: str, branch: str
) -> None:
    copy = Copy(tmp_path)
    _project(copy.root)
    asks, refused = _judged(copy, call1)
    print("call 1:", asks, refused)
    if asks or refused:
        return  # held: the symlinked ref is asked or refused
    # Call 1 lands as judged (nothing asked): the same on the real tree.
    shutil.rmtree(copy.upper)
    shutil.rmtree(copy.work)
    copy.upper.mkdir()
    copy.work.mkdir()
    subprocess.run(["bash", "-c", call1], cwd=copy.root, env=ENV, check=True, timeout=60, capture_output=True)
    asks, refused = _judged(copy, call2)
    print("call 2:", asks, refused)
    assert asks or refused, "a branch moved to a commit that adds .envrc through a plain file write: nothing asked"


# ---- end to end: the real shell_exec, a person who declines every question ----

from support.boxed import Person, run, shell  # noqa: E402

pytestmark_e2e = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")


@pytestmark_e2e
@pytest.mark.anyio
@pytest.mark.parametrize(("call1", "call2", "branch"), WAYS)
async def test_through_the_real_server_the_branch_does_not_move_unasked(
    workspace: Path, call1: str, call2: str, branch: str
) -> None:
    root = workspace / "p"
    _project(root)
    person = Person(False)
    outs = []
    async with shell(workspace, person) as client:
        for script in (call1, call2):
            outs.append(await run(client, script, cwd=str(root)))
    print([(o["transaction"], o["changes"]["summary"]) for o in outs], person.questions)
    feature = (
        subprocess.run(["git", "ls-tree", "--name-only", branch], cwd=root, env=ENV, capture_output=True, timeout=60)
        .stdout.decode()
        .split("\n")
    )
    assert ".envrc" not in feature, ([(o["transaction"], o["changes"]["summary"]) for o in outs], person.questions)
