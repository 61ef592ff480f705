"""Red team 137 F1: the only copy of uncommitted work is laundered out of ``only_copies`` through a copy, then
evicted unasked; undo can no longer bring it back.

``effects._only_copies`` protects a call's pre-images from eviction when they are work git has no copy of — but
only for files the call *loses* or *rewrites*. Two routes skip it together:

1. ``cp -p draft.md keep.md && rm draft.md``: ``moves.moved_pairs`` takes the deletion for a move (same size,
   same bytes created elsewhere), so the deletion is neither asked nor an only copy; ``keep.md`` lands as content
   this server wrote (``Applier.landed``: no ``moved_from``, no overlay origin — it is a new file).
2. ``echo model > keep.md``: a rewrite of "the tool's own output, still as it landed it", so not an only copy
   either — though its pre-image is the user's draft, byte for byte.

Neither record is marked; the history's bound then evicts both under later unasked rewrites in ``build/``, and
the drafts are gone: ``mcp-guard undo`` of either call says it was evicted. Nobody was asked at any step (the
client answers no question). Control: the same drafts rewritten in place (``echo model > draft.md``) are marked and
never evicted unasked (the flood is asked, and undo gives them back).

Commands travel as data (rt137.json)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.copies import overlays_work
from support.redteam import SX, audit_id_of, call, mcp_guard, started

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")

COMMANDS: dict[str, str] = json.loads((Path(__file__).resolve().parent / "rt137.json").read_text())
WORK = "two weeks of uncommitted work\n" * 10_000  # ~300 KB a draft
ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def _repository(root: Path) -> None:
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "README").write_text("r\n")
    env = {**os.environ, **ENV}
    subprocess.run(["git", "add", "README"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "i"], cwd=root, check=True, env=env)
    for i in range(3):
        (root / f"draft{i}.md").write_text(WORK)


def _structured(result: dict[str, Any]) -> dict[str, Any]:
    return dict(result.get("structuredContent") or {})


def _attack(tmp_path: Path, steps: list[str]) -> tuple[Path, Path, list[dict[str, Any]]]:
    root, state = tmp_path / "proj", tmp_path / "state"
    _repository(root)
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
    return root, state, outcomes


def _undo_all(state: Path, outcomes: list[dict[str, Any]], count: int) -> list[str]:
    said = []
    for outcome in reversed(outcomes[:count]):
        if outcome.get("transaction") != "applied":
            continue
        done = mcp_guard("undo", str(outcome["auditId"]), "--history-dir", str(state / "history"),
                         "--audit-log", str(state / "audit.jsonl"))  # fmt: skip
        said.append(f"{done.returncode}: {done.stdout.strip()[:300]} {done.stderr.strip()[:300]}")
    return said


def _drafts_back(root: Path) -> bool:
    return all((root / f"draft{i}.md").exists() and (root / f"draft{i}.md").read_text() == WORK for i in range(3))


def _asked(state: Path) -> bool:
    return "changes_asked" in (state / "audit.jsonl").read_text()


def test_control_drafts_rewritten_in_place_are_never_evicted_unasked(tmp_path: Path) -> None:
    root, state, outcomes = _attack(tmp_path, ["control_rewrite_drafts", "flood_first"])
    assert outcomes[0].get("transaction") == "applied", outcomes[0]
    said = _undo_all(state, outcomes, 1)
    assert _drafts_back(root) or _asked(state), (said, [o.get("transaction") for o in outcomes])


def test_drafts_copied_away_removed_and_the_copies_rewritten_are_evicted_unasked(tmp_path: Path) -> None:
    root, state, outcomes = _attack(tmp_path, ["copy_then_remove", "rewrite_copies", "flood_first"])
    assert [o.get("transaction") for o in outcomes[:2]] == ["applied", "applied"], outcomes[:2]
    assert not any((root / f"draft{i}.md").exists() for i in range(3))
    said = _undo_all(state, outcomes, 2)  # newest first: the rewrite of the copies, then the copy-and-remove
    assert _drafts_back(root) or _asked(state), ("the drafts are gone, nobody asked", said,
                                                 [o.get("transaction") for o in outcomes])  # fmt: skip


def test_the_records_name_no_only_copy(tmp_path: Path) -> None:
    from mcp_server_guard.files.calls import CallRecords

    root, state = tmp_path / "proj", tmp_path / "state"
    _repository(root)
    raw = started(SX, root, state)
    try:
        ids = [audit_id_of(call(raw, 1 + n, "shell_exec", {"command": COMMANDS[key]}))
               for n, key in enumerate(["copy_then_remove", "rewrite_copies"])]  # fmt: skip
    finally:
        raw.close()
    records = CallRecords(state / "history" / "calls")
    marked = [records.read(i).get("only_copies", []) for i in ids]
    assert any(marked), ("the drafts' only copies are in these records, unmarked", marked)


def test_control_removing_the_copies_is_asked(tmp_path: Path) -> None:
    root, _state, outcomes = _attack(tmp_path, ["copy_then_remove", "remove_copies", "flood_first"])
    assert outcomes[1].get("transaction") != "applied" or _drafts_back(root), [o.get("transaction") for o in outcomes]


def test_drafts_gzipped_and_the_archives_rewritten_are_evicted_unasked(tmp_path: Path) -> None:
    # The same laundering through ``compressed.kept_beside``: `gzip` deletes the drafts as "kept beside", the
    # archives land as this server's output, and their rewrite is no only copy either.
    root, state, outcomes = _attack(tmp_path, ["gzip_drafts", "rewrite_gzipped", "flood_first"])
    assert [o.get("transaction") for o in outcomes[:2]] == ["applied", "applied"], outcomes[:2]
    said = _undo_all(state, outcomes, 2)
    assert _drafts_back(root) or _asked(state), ("the drafts are gone, nobody asked", said,
                                                 [o.get("transaction") for o in outcomes])  # fmt: skip


def test_control_directory_renamed_then_rewritten_is_marked(tmp_path: Path) -> None:
    root, state = tmp_path / "proj", tmp_path / "state"
    _repository(root)
    (root / "notes").mkdir()
    for i in range(3):
        (root / f"draft{i}.md").rename(root / "notes" / f"draft{i}.md")
    from mcp_server_guard.files.calls import CallRecords

    raw = started(SX, root, state)
    try:
        out = [_structured(call(raw, 1 + n, "shell_exec", {"command": COMMANDS[key]}))
               for n, key in enumerate(["move_dir", "rewrite_moved"])]  # fmt: skip
    finally:
        raw.close()
    records = CallRecords(state / "history" / "calls")
    marked = [records.read(str(o["auditId"])).get("only_copies", []) for o in out if o.get("transaction") == "applied"]
    assert any(marked), ([o.get("transaction") for o in out], marked)
