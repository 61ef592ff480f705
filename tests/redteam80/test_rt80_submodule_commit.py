"""Red team 80: a gitlink is "a submodule's commit: a checkout writes no file for it" (``git_refs._Laters.add``) —
but the user's ``git submodule update`` (or any checkout with ``submodule.recurse``) checks that commit out in the
submodule's work tree. A command that writes a commit into the submodule's own object store
(``.git/modules/sub/objects``: no ref of the submodule moves) and points the superproject's gitlink at it (a commit on
the current branch, or only the index) gets no question: the user's ``git submodule update`` writes the commit's
``.envrc`` (refused in the work tree). The .envrc's text is harmless (``echo rt80``)."""

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
GIT = "git -c user.name=u -c user.email=u@x -c commit.gpgsign=false"


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "protocol.file.allow=always", *args], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _project(base: Path, root: Path) -> None:
    up = base / "up_sub"
    up.mkdir()
    (up / "a.txt").write_text("a\n")
    _git(up, "init", "-q", "-b", "main")
    _git(up, "add", ".")
    _git(up, "commit", "-qm", "sub one")
    root.mkdir(exist_ok=True)
    (root / "top.txt").write_text("top\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "submodule", "add", "-q", str(up), "sub")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "one")


# In the submodule: a commit with .envrc, objects only (no ref of it moves); the superproject records it.
NEW_SUB_COMMIT = (
    "cd sub && b=$(printf 'echo rt80\\n' | git hash-object -w --stdin) && "
    "a=$(git rev-parse HEAD:a.txt) && "
    "t=$(printf '100644 blob %s\\t.envrc\\n100644 blob %s\\ta.txt\\n' $b $a | git mktree) && "
    "c=$(" + GIT + " commit-tree $t -p HEAD -m bump) && cd .. && "
    "git update-index --cacheinfo 160000,$c,sub"
)
COMMITTED = NEW_SUB_COMMIT + " && " + GIT + " commit -qm 'bump sub'"


def _asks(tmp_path: Path, script: str) -> list[str]:
    copy = Copy(tmp_path)
    _project(tmp_path, copy.root)
    changes = copy.run(script)
    return judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)]).asks


def _what_git_does(tmp_path: Path, script: str) -> bool:
    """The same script run on a plain copy, then the user's ``git submodule update``: is .envrc written?"""
    base = tmp_path / "plain"
    base.mkdir()
    root = base / "root"
    _project(base, root)
    subprocess.run(["sh", "-ec", script], cwd=root, env=ENV, check=True, capture_output=True, timeout=60)
    _git(root, "submodule", "update")
    return (root / "sub" / ".envrc").exists()


@pytest.mark.parametrize("script", [NEW_SUB_COMMIT, COMMITTED], ids=["index", "commit"])
def test_attack_a_gitlink_to_a_new_submodule_commit_is_asked(tmp_path: Path, script: str) -> None:
    assert _what_git_does(tmp_path, script)  # git: `git submodule update` writes sub/.envrc
    shutil.rmtree(tmp_path / "plain")
    asks = _asks(tmp_path, script)
    assert any(".envrc" in a or "submodule" in a for a in asks), ("git submodule update writes sub/.envrc", asks)


SUB_BRANCH = NEW_SUB_COMMIT.split(" && cd .. && ")[0] + " && git update-ref refs/heads/main $c"


def test_control_the_submodule_s_own_branch_moved_is_asked(tmp_path: Path) -> None:
    asks = _asks(tmp_path, SUB_BRANCH)
    assert any(".envrc" in a for a in asks), asks
