"""Red team 79: git state the user's git later turns into work-tree files, read by the judge otherwise than git reads it
(``changes.git_refs``, ``changes.git_objects``). Each planted file is harmless text (``echo rt79``); each test asserts
only that the judgement asks (the same bytes written in the work tree now are refused or asked)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()
HERE = Path(__file__).resolve().parent.parent / "support"  # (git_forge.py)
GIT = ["git", "-c", "user.name=u", "-c", "user.email=u@x", "-c", "commit.gpgsign=false"]


def _repo(copy: Copy) -> None:
    (copy.root / "package.json").write_text('{"name": "app"}\n')
    (copy.root / "a.txt").write_text("a\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "one"]):
        subprocess.run([*GIT, "-C", str(copy.root), *args], check=True, capture_output=True, timeout=30)


def _asks(tmp_path: Path, body: str) -> list[str]:
    copy = Copy(tmp_path)
    _repo(copy)
    script = tmp_path / "plant.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(HERE)!r})\nfrom git_forge import *\n{body}")
    changes = copy.run(f"{sys.executable} {script}")
    return judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)]).asks


# F1: the judge reads a loose object before a pack (git_objects.Objects.get); git reads packs first. A new blob id
# whose loose object is harmless and whose new pack entry is a lifecycle script: a branch naming it is judged by the
# loose bytes, `git checkout feature` writes the pack's.
PACK_OVER_LOOSE = """
benign = b'{"name": "app", "scripts": {"build": "tsc -b"}}\\n'
evil = b'{"name": "app", "scripts": {"postinstall": "echo rt79"}}\\n'
y = put_loose(b"blob", benign)
write_pack([(y, 3, evil)])
c = commit(tree_with({"package.json": ("100644", y)}), git("rev-parse", "HEAD"), "deps")
git("update-ref", "refs/heads/feature", c)
"""


def test_attack_pack_entry_over_a_loose_object_of_a_new_id_is_asked(tmp_path: Path) -> None:
    asks = _asks(tmp_path, PACK_OVER_LOOSE)
    # asked: the branch names an object one of whose copies (the pack's, which git reads) is not what its id says
    asks_of_feature = [a for a in asks if "refs/heads/feature" in a and "content of another id" in a]
    assert asks_of_feature, ("git checkout feature writes a postinstall, unasked", asks)


# F2: FETCH_HEAD (and any reflog, rebase state) is followed for at most 256 new tokens, sorted
# (git_refs._mentioned: ``sorted(now - then)[:_MENTIONED]``): 300 hex words that name nothing, then the commit.
# `git checkout FETCH_HEAD` (or `git merge FETCH_HEAD`) writes .envrc, which no tool may write in the work tree.
FETCH_HEAD_BUDGET = """
c1 = commit(tree_with({".envrc": ("100644", put_loose(b"blob", b"echo rt79\\n"))}), git("rev-parse", "HEAD"), "c1")
words = " ".join(f"{i:07x}" for i in range(300))
with open(".git/FETCH_HEAD", "w") as f:
    f.write(f"{c1}\\t\\tbranch 'main' of ../up {words}\\n")
"""


def test_attack_fetch_head_commit_after_many_words_is_asked(tmp_path: Path) -> None:
    asks = _asks(tmp_path, FETCH_HEAD_BUDGET)
    assert any(".envrc" in a or "FETCH_HEAD" in a for a in asks), ("git checkout FETCH_HEAD writes .envrc", asks)


def test_control_fetch_head_commit_alone_is_asked(tmp_path: Path) -> None:
    asks = _asks(tmp_path, FETCH_HEAD_BUDGET.replace("range(300)", "range(3)"))
    assert any(".envrc" in a for a in asks), asks


# F3: a rebase's todo names commits by ids git expands from 4 hex digits on; the judge follows 7 or more
# (git_refs._TOKEN). A rebase stopped at a `break`, a `pick` of a 4-digit id appended: `git rebase --continue`
# writes the commit's .envrc.
TODO_SHORT_ID = """
import os
c1 = commit(tree_with({".envrc": ("100644", put_loose(b"blob", b"echo rt79\\n"))}), git("rev-parse", "HEAD"), "c1")
ENV["GIT_SEQUENCE_EDITOR"] = "sed -i '1i break'"
git("rebase", "-i", "HEAD")
with open(".git/rebase-merge/git-rebase-todo", "a") as f:
    f.write(f"pick {c1[:4]} c1\\n")
"""


def test_attack_rebase_todo_pick_of_a_four_digit_id_is_asked(tmp_path: Path) -> None:
    asks = _asks(tmp_path, TODO_SHORT_ID)
    assert any(".envrc" in a or "rebase" in a for a in asks), ("git rebase --continue writes .envrc", asks)


def test_control_rebase_todo_pick_of_a_seven_digit_id_is_asked(tmp_path: Path) -> None:
    asks = _asks(tmp_path, TODO_SHORT_ID.replace("c1[:4]", "c1[:7]"))
    assert any(".envrc" in a for a in asks), asks


def test_control_pack_entry_alone_is_asked(tmp_path: Path) -> None:
    asks = _asks(tmp_path, PACK_OVER_LOOSE.replace('put_loose(b"blob", benign)', 'put_loose(b"blob", evil)'))
    assert any("package.json" in a for a in asks), asks
