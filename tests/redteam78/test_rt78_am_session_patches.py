"""Red team 78: claim 2 — a rebase's state is judged by what ``--continue`` would write: the merge backend's todo
(``rebase-merge/git-rebase-todo``: its ``exec`` lines refused, the commits its picks name judged as checkouts). The
apply backend's state — ``git am`` and ``git rebase --apply`` keep the rest of the series as patch files in
``.git/rebase-apply/NNNN`` — is not judged at all: a series whose next patch adds a hook under ``core.hooksPath``
lands unasked, and the user's ``git am --skip``/``--continue`` (or ``git rebase --continue``) writes it, outside
the box."""

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


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *ID, *args], check=True, capture_output=True, text=True,
                          timeout=30)  # fmt: skip
    return done.stdout.strip()


def _project(root: Path) -> None:
    (root / ".githooks").mkdir(parents=True)
    (root / ".githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (root / ".githooks" / "pre-commit").chmod(0o755)
    (root / "README.md").write_text("one\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "core.hooksPath", ".githooks")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "--no-verify", "-m", "init")


def _series(tmp_path: Path) -> Path:
    """Two patches made elsewhere: the first conflicts with main (so ``git am`` stops there), the second adds
    .githooks/post-applypatch (a harmless line)."""
    other = tmp_path / "series-src"
    other.mkdir()
    _project(other)
    (other / "README.md").write_text("two\n")
    _git(other, "commit", "-q", "--no-verify", "-am", "readme")
    (other / ".githooks" / "post-applypatch").write_text("#!/bin/sh\necho planted\n")
    (other / ".githooks" / "post-applypatch").chmod(0o755)
    _git(other, "add", "-A")
    _git(other, "commit", "-q", "--no-verify", "-m", "hook")
    out = tmp_path / "series"
    _git(other, "format-patch", "-q", "-o", str(out), "HEAD~2")
    return out


def test_what_git_then_does_with_it(tmp_path: Path) -> None:
    """(Not a test of the guard: the user's ``git am --skip`` on a plain copy writes the hook and runs it.)"""
    series = _series(tmp_path)
    root = tmp_path / "plain"
    root.mkdir()
    _project(root)
    (root / "README.md").write_text("three\n")
    _git(root, "commit", "-q", "--no-verify", "-am", "conflicting")
    subprocess.run(["git", "-C", str(root), *ID, "am", *sorted(map(str, series.iterdir()))], capture_output=True,
                   timeout=30, check=False)  # fmt: skip
    done = subprocess.run(["git", "-C", str(root), *ID, "am", "--skip"], capture_output=True, text=True, timeout=30,
                          check=False)  # fmt: skip
    assert (root / ".githooks" / "post-applypatch").exists(), done
    assert "planted" in done.stdout + done.stderr, done


def test_attack_am_session_whose_next_patch_adds_a_hook_is_asked(tmp_path: Path) -> None:
    series = _series(tmp_path)
    copy = Copy(tmp_path / "c")
    _project(copy.root)
    (copy.root / "README.md").write_text("three\n")
    _git(copy.root, "commit", "-q", "--no-verify", "-am", "conflicting")
    script = tmp_path / "am.sh"
    script.write_text(
        f"git {' '.join(ID)} am {series}/*.patch || true\n"  # stops at the first patch (a conflict)
        "test -d .git/rebase-apply\n"
    )
    changes = copy.run(f"sh -e {script}")
    assert any("/rebase-apply/" in "/" + c.path for c in changes.changes), changes.changes
    judgement = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert not judgement.refused, judgement.refused
    assert judgement.asks, ("nothing asked about the am session's next patch", judgement.summary)
