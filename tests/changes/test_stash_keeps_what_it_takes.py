"""Issue 45 item 2: ``git stash -u`` deletes the untracked files it saves into a new stash commit — git keeps them
(refs/stash, its reflog, the commit's trees), so no "Git has no copy of" question. Exactly what the stash commit's
trees hold counts: a file the stash did not take, or one a forged stash commit only names (its blob is not in the
store, or holds other bytes), is still asked; a symlink counts as kept only where the stash holds that link."""

from __future__ import annotations

import os
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
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    (root / "a.txt").write_text("a\n")
    subprocess.run(f"{GIT} add -A && {GIT} commit -qm init", shell=True, cwd=root, check=True, timeout=60)
    (root / "a.txt").write_text("a\nwork on a\n")
    (root / "notes.txt").write_text("untracked notes\n")
    (root / "work").mkdir()
    (root / "work" / "draft.md").write_text("untracked draft\n")
    os.symlink("a.txt", root / "link")


def _asks(copy: Copy, script: str) -> list[str]:
    return judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)]).asks


def test_git_stash_u_keeps_the_untracked_files_and_links_it_saves(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    asks = _asks(copy, f"{GIT} stash -q -u")
    assert not any("no copy" in a or "deletes" in a for a in asks), asks


def test_git_stash_keeps_tracked_work_it_saves(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    assert _asks(copy, f"{GIT} stash -q") == []


def test_a_file_the_stash_did_not_take_is_still_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    asks = _asks(copy, f"{GIT} stash push -q -u -- notes.txt && rm work/draft.md")
    assert any("work/draft.md" in a for a in asks), asks
    assert not any("notes.txt" in a for a in asks), asks


def test_a_link_deleted_beside_a_stash_of_other_files_is_still_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    asks = _asks(copy, f"{GIT} stash push -q -u -- notes.txt && rm link")
    assert any("link" in a for a in asks), asks


def test_a_forged_stash_naming_a_blob_the_store_lacks_keeps_nothing(tmp_path: Path) -> None:
    """A stash commit made by plumbing whose tree names the deleted file's blob id, the blob never written."""
    copy = Copy(tmp_path)
    _repo(copy)
    forge = (
        "b=$(git hash-object notes.txt) && "
        'tree=$(printf "100644 blob $b\\tnotes.txt\\n" | git mktree --missing) && '
        f'c=$({GIT} commit-tree -p HEAD -m forged "$tree") && '
        'git update-ref refs/stash "$c" && rm notes.txt'
    )
    asks = _asks(copy, forge)
    assert any("notes.txt" in a for a in asks), asks


def test_a_forged_stash_whose_blob_holds_other_bytes_keeps_nothing(tmp_path: Path) -> None:
    """The blob written under the deleted file's id with other bytes (a loose object that lies about its id)."""
    copy = Copy(tmp_path)
    _repo(copy)
    forge = (
        "b=$(git hash-object notes.txt) && o=$(echo other | git hash-object -w --stdin) && "
        'd=.git/objects/$(echo "$b" | cut -c1-2) && mkdir -p "$d" && '
        'cp ".git/objects/$(echo "$o" | cut -c1-2)/$(echo "$o" | cut -c3-)" "$d/$(echo "$b" | cut -c3-)" && '
        'tree=$(printf "100644 blob $b\\tnotes.txt\\n" | git mktree --missing) && '
        f'c=$({GIT} commit-tree -p HEAD -m forged "$tree") && '
        'git update-ref refs/stash "$c" && rm notes.txt'
    )
    asks = _asks(copy, forge)
    assert any("notes.txt" in a for a in asks), asks


def test_a_stash_holding_a_file_where_a_link_was_keeps_no_link(tmp_path: Path) -> None:
    """The stash holds a regular file with the link's target as its bytes: not a copy of the link."""
    copy = Copy(tmp_path)
    _repo(copy)
    forge = (
        "b=$(printf a.txt | git hash-object -w --stdin) && "
        'tree=$(printf "100644 blob $b\\tlink\\n" | git mktree) && '
        f'c=$({GIT} commit-tree -p HEAD -m forged "$tree") && '
        'git update-ref refs/stash "$c" && rm link'
    )
    asks = _asks(copy, forge)
    assert any("link" in a for a in asks), asks


def _stashed_before(copy: Copy) -> None:
    """The project with its work stashed (``git stash -u``) before the call: the stash is the only copy."""
    _repo(copy)
    subprocess.run(f"{GIT} stash -q -u", shell=True, cwd=copy.root, check=True, timeout=60)


def test_git_stash_pop_of_the_last_stash_is_not_asked(tmp_path: Path) -> None:
    """Popping drops the stash ref and its reflog once the work is back in the tree: nothing is lost."""
    copy = Copy(tmp_path)
    _stashed_before(copy)
    asks = _asks(copy, "git stash pop -q")
    assert asks == [], asks


def test_dropping_the_last_stash_unapplied_is_still_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _stashed_before(copy)
    asks = _asks(copy, "git stash drop -q")
    assert any("refs/stash" in a for a in asks), asks


def test_popping_the_stash_then_deleting_what_it_gave_back_is_still_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _stashed_before(copy)
    asks = _asks(copy, "git stash pop -q && rm notes.txt")
    assert any("refs/stash" in a for a in asks), asks


def test_git_deleting_its_auto_merge_is_not_asked(tmp_path: Path) -> None:
    """AUTO_MERGE names the tree git's last merge computed (conflicts and all): ``git merge --abort`` deletes it."""
    copy = Copy(tmp_path)
    root = copy.root
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, timeout=60)
    (root / "a.txt").write_text("a\n")
    setup = (
        f"{GIT} add -A && {GIT} commit -qm one && git checkout -qb other && echo other > a.txt && "
        f"{GIT} commit -qam other && git checkout -q main && echo mine > a.txt && {GIT} commit -qam mine && "
        f"({GIT} merge -q other || true)"
    )
    subprocess.run(setup, shell=True, cwd=root, check=True, timeout=60, capture_output=True)
    assert (root / ".git" / "AUTO_MERGE").exists()
    asks = _asks(copy, "git merge --abort")
    assert not any("AUTO_MERGE" in a for a in asks), asks
