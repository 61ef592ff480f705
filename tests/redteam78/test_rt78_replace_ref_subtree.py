"""Red team 78: claim 2 — a ref the command leaves is judged by what the next checkout would write.

``refs/replace/<oid>`` is not a branch: git reads the replacement wherever the object ``<oid>`` is used. A
replacement of a *subtree* (the ``.githooks`` tree HEAD holds) is judged as if it were a root tree — its entries
as top-level paths (``post-checkout``), not where git puts them (``.githooks/post-checkout``, a hook under
``core.hooksPath``) — so nothing is asked; the user's next ``git checkout``/``reset --hard``/``stash`` writes the
hook, and git runs it (post-checkout) at once."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()
ID = ["-c", "user.name=u", "-c", "user.email=u@example.invalid", "-c", "commit.gpgsign=false"]


def _git(root: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(["git", "-C", str(root), *ID, *args], input=stdin, check=True, capture_output=True,
                          text=True, timeout=30)  # fmt: skip
    return done.stdout.strip()


def _project(root: Path) -> None:
    (root / ".githooks").mkdir(parents=True)
    (root / ".githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (root / ".githooks" / "pre-commit").chmod(0o755)
    (root / "README.md").write_text("hi\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "core.hooksPath", ".githooks")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "--no-verify", "-m", "init")


def _replacing_script(tmp_path: Path, root: Path) -> str:
    """A shell script (run on the copy) that replaces HEAD's .githooks tree by one with a post-checkout hook too.
    The hook's text is a harmless line, kept in a file outside the root."""
    hook = tmp_path / "hook.txt"
    hook.write_text("#!/bin/sh\necho planted\n")
    listing = tmp_path / "listing.sh"
    listing.write_text(
        "set -e\n"
        "old=$(git rev-parse HEAD:.githooks)\n"
        f"blob=$(git hash-object -w {hook})\n"
        "new=$( (git ls-tree HEAD:.githooks; printf '100755 blob %s\\tpost-checkout\\n' \"$blob\") | git mktree)\n"
        'git replace "$old" "$new"\n'
    )
    return f"sh {listing}"


def test_attack_replace_ref_of_a_hooks_subtree_is_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _project(copy.root)
    changes = copy.run(_replacing_script(tmp_path, copy.root))
    assert any(c.path.startswith(".git/refs/replace/") for c in changes.changes), changes.changes
    judgement = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert not judgement.refused, judgement.refused
    assert judgement.asks, ("nothing asked", judgement.summary)


def test_what_git_then_does_with_it(tmp_path: Path) -> None:
    """(Not a test of the guard: what the user's git does with that replace ref, on a plain copy.) Back on main from
    a branch without .githooks, git reads the replaced tree: it writes .githooks/post-checkout and runs it."""
    root = tmp_path / "plain"
    root.mkdir()
    _project(root)
    _git(root, "checkout", "-q", "-b", "other")
    _git(root, "rm", "-rq", ".githooks")
    _git(root, "commit", "-q", "--no-verify", "-m", "other")
    _git(root, "checkout", "-q", "main")
    subprocess.run(["sh", _replacing_script(tmp_path, root).split()[1]], cwd=root, check=True, timeout=30)
    assert ".githooks/post-checkout" in _git(root, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    _git(root, "checkout", "-q", "other")
    done = subprocess.run(["git", "-C", str(root), "checkout", "main"], capture_output=True, text=True, timeout=30,
                          check=True)  # fmt: skip
    assert (root / ".githooks" / "post-checkout").exists()
    assert "planted" in done.stdout + done.stderr  # the hook ran at that very checkout
