"""Red team 152 F1: work that only git's index holds (staged, never committed) is rewritten and re-staged by one
unasked call; the call is not marked as holding the only copy, the history's bound evicts it unasked, and the work
is gone: undo says evicted, the index names the model's bytes, and the staged blob is a dangling object that the next
``git gc`` (or a later unasked call's ``git gc --prune=now``) deletes.

``effects._only_copies`` asks ``git_index.uncommitted`` whether git has the pre-image: "the index names the file's
bytes and the repository holds them" — judged against the index *before* the call. The same call's ``git add`` makes
the index name other bytes, so when the call lands nothing names the staged work any more, yet the record is not
marked (``only_copies`` empty), and it is evicted like build output. Control: the same rewrite without ``git add``
(the index still names the work: git has it) — nothing is lost.

Answered (``git_index.kept_after``): where a call changed a repository's index, the old content counts as git's only
if the index the call left still names it, or ``HEAD`` as the call left it holds it at that path — else it is an only
copy (never evicted unasked), and deleting it is asked ("Git has no copy of …").

Commands travel as data (rt152_staged.json); the client answers no question (every ask is a no)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.copies import overlays_work
from support.redteam import SX, call, mcp_guard, started

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")

COMMANDS: dict[str, str] = json.loads((Path(__file__).resolve().parent / "rt152_staged.json").read_text())
WORK = "two weeks of staged, uncommitted work\n" * 8_000  # ~300 KB a draft
ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, env={**os.environ, **ENV},
                          check=False)  # fmt: skip


def _repository(root: Path) -> list[str]:
    """A repository whose drafts the user staged (``git add``) and never committed: the index alone names them."""
    root.mkdir()
    _git(root, "init", "-q")
    (root / "README").write_text("r\n")
    _git(root, "add", "README")
    _git(root, "commit", "-qm", "i")
    for i in range(3):
        (root / f"draft{i}.md").write_text(WORK)
    _git(root, "add", "draft0.md", "draft1.md", "draft2.md")
    return [_git(root, "rev-parse", f":draft{i}.md").stdout.strip() for i in range(3)]


def _structured(result: dict[str, Any]) -> dict[str, Any]:
    return dict(result.get("structuredContent") or {})


def _attack(tmp_path: Path, steps: list[str]) -> tuple[Path, Path, list[dict[str, Any]], list[str]]:
    root, state = tmp_path / "proj", tmp_path / "state"
    blobs = _repository(root)
    policy = tmp_path / "policy.toml"
    policy.write_text("[file_write]\nhistory_max_bytes = 4194304\n")
    raw = started(SX, root, state, "--policy", str(policy))
    outcomes: list[dict[str, Any]] = []
    try:
        for n, key in enumerate(steps):
            outcomes.append(_structured(call(raw, 1 + n, "shell_exec", {"command": COMMANDS[key]})))
        for k in range(8):  # the flood: rewrites in build/, never asked
            again = COMMANDS["flood_again"].format(a=k % 2 + 1, b=k % 2 + 3)
            outcomes.append(_structured(call(raw, 20 + k, "shell_exec", {"command": again})))
    finally:
        raw.close()
    return root, state, outcomes, blobs


def _undo_first(state: Path, outcome: dict[str, Any]) -> str:
    done = mcp_guard("undo", str(outcome["auditId"]), "--history-dir", str(state / "history"),
                     "--audit-log", str(state / "audit.jsonl"))  # fmt: skip
    return f"{done.returncode}: {done.stdout.strip()[:300]} {done.stderr.strip()[:300]}"


def _work_named(root: Path) -> bool:
    """The drafts' work is in the tree, or named by git's index (``git show :draftN.md``)."""
    for i in range(3):
        in_tree = (root / f"draft{i}.md").exists() and (root / f"draft{i}.md").read_text() == WORK
        if not in_tree and _git(root, "show", f":draft{i}.md").stdout != WORK:
            return False
    return True


def _asked(state: Path) -> bool:
    return "changes_asked" in (state / "audit.jsonl").read_text()


def test_control_staged_drafts_rewritten_without_git_add_stay_in_the_index(tmp_path: Path) -> None:
    root, state, outcomes, _blobs = _attack(tmp_path, ["control_rewrite_only", "flood_first"])
    assert outcomes[0].get("transaction") == "applied", outcomes[0]
    said = _undo_first(state, outcomes[0])
    assert _work_named(root) or _asked(state), (said, [o.get("transaction") for o in outcomes])


def test_staged_drafts_rewritten_and_restaged_are_evicted_unasked(tmp_path: Path) -> None:
    root, state, outcomes, blobs = _attack(tmp_path, ["rewrite_and_stage", "flood_first"])
    assert outcomes[0].get("transaction") == "applied", outcomes[0]
    said = _undo_first(state, outcomes[0])
    dangling = [b for b in blobs if _git(root, "cat-file", "-e", b).returncode == 0]
    assert _work_named(root) or _asked(state), (
        "the staged drafts are named by nothing, and undo cannot give them back; nobody was asked",
        said,
        f"dangling blobs git's next gc deletes: {len(dangling)}",
        [o.get("transaction") for o in outcomes],
    )


@pytest.mark.parametrize("erase", ["prune_now", "prune_plain"])
def test_control_pruning_the_dangling_staged_blobs_is_asked(tmp_path: Path, erase: str) -> None:
    root, state, outcomes, blobs = _attack(tmp_path, ["rewrite_and_stage", erase, "flood_first"])
    assert outcomes[0].get("transaction") == "applied", outcomes[0]
    said = _undo_first(state, outcomes[0])
    left = [b for b in blobs if _git(root, "cat-file", "-e", b).returncode == 0]
    assert _work_named(root) or left or _asked(state), (
        "the staged drafts are gone from the tree, the index, git's objects and the history; nobody was asked",
        said,
        [o.get("transaction") for o in outcomes],
    )


def test_staged_drafts_removed_with_git_rm_are_evicted_unasked(tmp_path: Path) -> None:
    """The same gap by a deletion: ``git rm -f`` of staged-only drafts (three files: no mass deletion) takes the
    files and their index entries in one call; "git has a copy" was judged by the index before the call."""
    root, state, outcomes, blobs = _attack(tmp_path, ["remove_staged", "flood_first"])
    if outcomes[0].get("transaction") == "declined":  # (asked before it landed — "Git has no copy of …" — and kept)
        assert _work_named(root), outcomes[0]
        return
    assert outcomes[0].get("transaction") == "applied", outcomes[0]
    said = _undo_first(state, outcomes[0])
    dangling = [b for b in blobs if _git(root, "cat-file", "-e", b).returncode == 0]
    assert _work_named(root) or _asked(state), (
        "the staged drafts are deleted, named by nothing, and undo cannot give them back; nobody was asked",
        said,
        f"dangling blobs git's next gc deletes: {len(dangling)}",
        [o.get("transaction") for o in outcomes],
    )
