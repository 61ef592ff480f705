"""Red team 42n (promise 4, what was lost): uncommitted drafts overwritten by one call (a rewrite, kept in the history:
nothing to ask), then later calls flooding the history with unasked rewrites in a build directory until the first
call was evicted — the drafts' only copy gone, nobody asked at any step. Now a call's record names the files whose
previous content git has no copy of (``only_copies``); eviction takes every other call first, and an apply (or a
file_write) that would still push such a copy out asks first (file_write, which cannot ask, refuses)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.files.calls import CallRecords, victims
from mcp_server_guard.files.history import HistoryStore
from support.copies import overlays_work
from support.redteam import FW, SX, audit_id_of, call, mcp_guard, started

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


def test_eviction_takes_every_call_without_an_only_copy_before_one_with() -> None:
    groups = [(["a"], ["e1"]), (["b"], ["e2"]), (["c"], ["e3"]), (["d"], ["e4"])]
    chosen = victims(groups, {"a": ["/p/draft.md"]}, (2, 0), lambda calls, ids: False, lambda calls, ids: 1)
    assert chosen == [(["b"], ["e2"]), (["c"], ["e3"])]  # the oldest, a, holds the only copy: it goes last
    chosen = victims(groups, {"a": ["/p/draft.md"]}, (4, 0), lambda calls, ids: False, lambda calls, ids: 1)
    assert chosen[-1] == (["a"], ["e1"])


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_attack_a_flood_of_build_rewrites_never_evicts_the_drafts_a_call_overwrote_unasked(tmp_path: Path) -> None:
    root, state = tmp_path / "proj", tmp_path / "state"
    _repository(root)
    policy = tmp_path / "policy.toml"
    policy.write_text("[file_write]\nhistory_max_bytes = 4194304\n")
    raw = started(SX, root, state, "--policy", str(policy))
    try:
        first = call(raw, 1, "shell_exec", {"command": "for f in draft*.md; do echo > $f; done"})
        assert _structured(first).get("transaction") == "applied", first
        records = CallRecords(state / "history" / "calls")
        assert records.read(audit_id_of(first))["only_copies"] == [str(root / f"draft{i}.md") for i in range(3)]
        # The flood: rewrites in build/ (never asked) that fill the history many times over. Every other call
        # goes before the drafts' copies do: none of it needs a question.
        flood = "mkdir -p build && for i in 1 2 3 4; do head -c 900000 /dev/urandom > build/o$i; done"
        outcomes = [_structured(call(raw, 2, "shell_exec", {"command": flood}))]
        for k in range(6):
            again = f"for i in {k % 2 + 1} {k % 2 + 3}; do head -c 900000 /dev/urandom > build/o$i; done"
            outcomes.append(_structured(call(raw, 3 + k, "shell_exec", {"command": again})))
        assert [o.get("transaction") for o in outcomes] == ["applied"] * 7, outcomes
        # A call whose previous versions fit the history only without the drafts' copies: asked (this client
        # cannot answer, so nothing of it lands).
        whole = "for i in 1 2 3 4; do head -c 900000 /dev/urandom > build/o$i; done"
        asked = _structured(call(raw, 20, "shell_exec", {"command": whole}))
    finally:
        raw.close()
    assert asked.get("transaction") != "applied", asked
    assert asked.get("policyDecision") == "ask-unavailable", asked
    question = next(line for line in (state / "audit.jsonl").read_text().splitlines() if asked["auditId"] in line
                    and "changes_asked" in line)  # fmt: skip
    assert "only copy of earlier work" in question and "draft0.md" in question, question
    undo = mcp_guard("undo", audit_id_of(first), "--history-dir", str(state / "history"),
                     "--audit-log", str(state / "audit.jsonl"))  # fmt: skip
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert all((root / f"draft{i}.md").read_text() == WORK for i in range(3))


def test_attack_file_write_refuses_to_push_out_the_only_copy_of_a_draft_it_overwrote(tmp_path: Path) -> None:
    root, state = tmp_path / "proj", tmp_path / "state"
    _repository(root)
    policy = tmp_path / "policy.toml"
    policy.write_text("[file_write]\nhistory_max_bytes = 1048576\n")
    for i in range(8):
        (root / f"notes{i}.md").write_text(WORK)  # more uncommitted work, ~300 KB a file
    raw = started(FW, root, state, "--policy", str(policy))
    try:
        first = call(raw, 1, "file_write", {"path": "draft0.md", "content": "x", "overwrite": True})
        assert not first.get("isError"), first
        refusal: dict[str, Any] = {}
        for i in range(8):  # each overwrite keeps ~300 KB of someone's only copy: the store fills within a few
            result = call(raw, 2 + i, "file_write", {"path": f"notes{i}.md", "content": "y", "overwrite": True})
            if result.get("isError"):
                refusal = result
                break
    finally:
        raw.close()
    assert "HISTORY_FULL" in str(refusal) and "only copy of earlier work" in str(refusal), refusal
    undo = mcp_guard("undo", audit_id_of(first), "--history-dir", str(state / "history"),
                     "--audit-log", str(state / "audit.jsonl"))  # fmt: skip
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert (root / "draft0.md").read_text() == WORK


def test_rewriting_the_tools_own_output_keeps_no_only_copy(tmp_path: Path) -> None:
    # A model rewriting one file over and over: only the first overwrite replaces the user's work; each later one
    # replaces the writer's own output, which may go from the history as every other call's does.
    root, state = tmp_path / "proj", tmp_path / "state"
    _repository(root)
    raw = started(FW, root, state)
    try:
        ids = [audit_id_of(call(raw, 1 + i, "file_write", {"path": "draft1.md", "content": f"v{i}", "overwrite": True}))
               for i in range(3)]  # fmt: skip
    finally:
        raw.close()
    records = CallRecords(state / "history" / "calls")
    assert [records.read(i).get("only_copies", []) for i in ids] == [[str(root / "draft1.md")], [], []]


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_a_command_rewriting_what_an_earlier_call_landed_keeps_no_only_copy(tmp_path: Path) -> None:
    root, state = tmp_path / "proj", tmp_path / "state"
    _repository(root)
    raw = started(SX, root, state)
    try:
        ids = [audit_id_of(call(raw, 1 + i, "shell_exec", {"command": f"echo v{i} > draft2.md"})) for i in range(3)]
    finally:
        raw.close()
    records = CallRecords(state / "history" / "calls")
    assert [records.read(i).get("only_copies", []) for i in ids] == [[str(root / "draft2.md")], [], []]


def test_attack_a_tree_kept_whole_counts_its_bytes_not_its_number_of_paths(tmp_path: Path) -> None:
    # Red team 42o B: a directory kept whole was measured by its path count (the pair was unpacked the wrong way
    # round): a 3 MB tree counted a few bytes, and history_max_bytes never evicted it (18 MB in a 4 MiB store).
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "blob").write_bytes(b"x" * 3_000_000)
    store = HistoryStore(tmp_path / "history", 1 << 30)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        entry = store.keep(fd, "build", str(tmp_path / "build"), "a" * 12, move=True, tree=(2, 3_000_000))
    finally:
        os.close(fd)
    assert (entry.size, entry.files) == (3_000_000, 2)
    assert store.usage()[0] >= 3_000_000


def _kept_call(store: HistoryStore, tmp_path: Path, call_id: str, size: int, only: bool) -> str:
    source = tmp_path / f"{call_id}.txt"
    source.write_bytes(b"w" * size)
    fd = os.open(source, os.O_RDONLY)
    try:
        entry = store.save(fd, str(source), 0o644, audit_id=call_id)
    finally:
        os.close(fd)
    change = {"path": str(source), "action": "modify", "kind": "file", "before": entry.id, "after": [], "tree": False}
    what: dict[str, Any] = {"only_copies": [str(source)]} if only else {}
    store.calls.record(call_id, [str(tmp_path)], [change], what=what)
    return entry.id


def test_attack_a_server_with_a_smaller_bound_never_evicts_an_only_copy_at_its_start(tmp_path: Path) -> None:
    # Red team 42o A2: another server sharing the history with a smaller bound (or `mcp-guard history prune`)
    # brought the store within its bound at start-up and took the only copies with it; nobody is asked there, so
    # they stay (the bound waits for a person's yes at an apply).
    big = HistoryStore(tmp_path / "history", 8 << 20)
    precious = _kept_call(big, tmp_path, "a" * 12, 1 << 20, only=True)
    plain = _kept_call(big, tmp_path, "b" * 12, 1 << 20, only=False)
    _kept_call(big, tmp_path, "c" * 12, 1 << 20, only=False)
    small = HistoryStore(tmp_path / "history", 1 << 20)
    small.sweep()
    left = {entry.id for entry in small.entries()}
    assert precious in left and plain not in left, left


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_attack_a_forced_undo_keeps_the_edits_it_overrode_as_only_copies(tmp_path: Path) -> None:
    # Red team 42o A1: `mcp-guard undo --force` over a person's later edits keeps those edits in the history only;
    # the undo's record did not say so, and later rewrites in build/ pushed them out unasked.
    root, state = tmp_path / "proj", tmp_path / "state"
    _repository(root)
    raw = started(SX, root, state)
    try:
        first = call(raw, 1, "shell_exec", {"command": "echo model > draft1.md"})
    finally:
        raw.close()
    (root / "draft1.md").write_text("the person's edit after the call\n")
    undo = mcp_guard("undo", audit_id_of(first), "--force", "--history-dir", str(state / "history"),
                     "--audit-log", str(state / "audit.jsonl"))  # fmt: skip
    assert undo.returncode == 0, undo.stdout + undo.stderr
    records = CallRecords(state / "history" / "calls")
    undone = records.read(audit_id_of(first))["undone_by"]
    assert records.read(undone)["only_copies"] == [str(root / "draft1.md")]
