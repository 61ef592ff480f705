"""Red team 80: git state files that name a commit git writes into the work tree later, outside ``may_be_git_state``
(``[A-Z_]*HEAD``, ``refs/``, ``logs/``, the rebase dirs …), so the judge never reads them:

* ``.git/MERGE_AUTOSTASH`` (``git merge --autostash``): the user's ``git commit`` that concludes the merge, or
  ``git merge --abort``, runs ``git stash apply <that id>`` — its untracked-files parent's ``.envrc`` is written;
* ``.git/BISECT_START``: ``git bisect reset`` checks out what it names (a commit id here).

The commits are objects only (no ref moves). The .envrc's text is harmless (``echo rt80``)."""

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
           GIT_CONFIG_GLOBAL="/dev/null", GIT_EDITOR="true")  # fmt: skip
GIT = "git -c user.name=u -c user.email=u@x -c commit.gpgsign=false"


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=60)


def _project(root: Path) -> None:
    root.mkdir(exist_ok=True)
    (root / "a.txt").write_text("a\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "one"], ["branch", "side"]):
        assert _git(root, *args).returncode == 0
    (root / "b.txt").write_text("b\n")
    for args in (["add", "."], ["commit", "-qm", "two"]):
        assert _git(root, *args).returncode == 0


# A stash-like commit whose untracked-files parent holds .envrc: objects only, the work tree left as it was.
_ENVRC_STASH = (
    "b=$(printf 'echo rt80\\n' | git hash-object -w --stdin) && "
    "u=$(printf '100644 blob %s\\t.envrc\\n' $b | git mktree) && "
    "uc=$(" + GIT + " commit-tree $u -m 'untracked files on main') && "
    "h=$(git rev-parse HEAD) && t=$(git rev-parse HEAD^{tree}) && "
    "i=$(" + GIT + " commit-tree $t -p $h -m 'index on main') && "
    "s=$(" + GIT + " commit-tree $t -p $h -p $i -p $uc -m 'On main: autostash') && "
)
MERGE_AUTOSTASH = (
    _ENVRC_STASH + "echo $s > .git/MERGE_AUTOSTASH && git rev-parse side > .git/MERGE_HEAD && "
    "echo 'Merge branch side' > .git/MERGE_MSG && : > .git/MERGE_MODE"
)
# A commit with .envrc over HEAD's tree: objects only.
_ENVRC_COMMIT = (
    "b=$(printf 'echo rt80\\n' | git hash-object -w --stdin) && "
    "t=$( (git ls-tree HEAD; printf '100644 blob %s\\t.envrc\\n' $b) | git mktree) && "
    "c=$(" + GIT + " commit-tree $t -p HEAD -m x) && "
)
BISECT_START = _ENVRC_COMMIT + "echo $c > .git/BISECT_START && echo '# bisect log' > .git/BISECT_LOG"

USER = {"merge_autostash_commit": ["commit", "--no-edit"], "merge_autostash_abort": ["merge", "--abort"],
        "bisect_reset": ["bisect", "reset"]}  # fmt: skip
SCRIPTS = {"merge_autostash_commit": MERGE_AUTOSTASH, "merge_autostash_abort": MERGE_AUTOSTASH,
           "bisect_reset": BISECT_START}  # fmt: skip


def _what_git_does(tmp_path: Path, script: str, user: list[str]) -> bool:
    root = tmp_path / "plain"
    _project(root)
    subprocess.run(["sh", "-ec", script], cwd=root, env=ENV, check=True, capture_output=True, timeout=60)
    _git(root, *user)
    return (root / ".envrc").exists()


@pytest.mark.parametrize("case", sorted(USER))
def test_attack_a_state_file_naming_an_envrc_commit_is_asked(tmp_path: Path, case: str) -> None:
    assert _what_git_does(tmp_path, SCRIPTS[case], USER[case]), "git writes no .envrc: the test is wrong"
    shutil.rmtree(tmp_path / "plain")
    copy = Copy(tmp_path)
    _project(copy.root)
    changes = copy.run(SCRIPTS[case])
    asks = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)]).asks
    assert any(".envrc" in a or "could not" in a for a in asks), (f"git {' '.join(USER[case])} writes .envrc", asks)
