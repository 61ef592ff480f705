"""Red team 101 A: a call record is sealed with whatever key ``registry.sealing_key`` gave when it was written. When
that key is not the one a later server or `mcp-guard undo` gets, every earlier record stops checking. That happens
when the first record was sealed with the fallback key (``history/.key``: the registry could not be made, e.g. it
was not private) and the registry works later. It also happens when the registry was removed and a new
``journal.key`` was made, or when the records were written before b3bb817 (not sealed at all).

Such a record is no longer read, so its ``only_copies`` stop protecting the pre-images it kept: eviction takes the
only copy of the user's uncommitted draft without asking (file_write's HISTORY_FULL refusal never comes), and the
call cannot be undone. Data is lost and no question is asked. Compare
tests/redteam42/test_only_copies_are_never_evicted_unasked.py, which passes when the key stays the same.

Answered: a record that does not check is kept, counted and guarded like any other; `mcp-guard undo` asks before
playing it backwards (UNDO_ASKS: --yes), and `mcp-guard history` says so (``CallRecords.unsealed``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.redteam import FW, audit_id_of, call, mcp_guard, started

WORK = "two weeks of uncommitted work\n" * 10_000  # ~300 KB a draft
ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def _repository(root: Path) -> None:
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
    (root / "README").write_text("r\n")
    env = {**os.environ, **ENV}
    subprocess.run(["git", "add", "README"], cwd=root, check=True, env=env, timeout=30)
    subprocess.run(["git", "commit", "-qm", "i"], cwd=root, check=True, env=env, timeout=30)
    (root / "draft0.md").write_text(WORK)
    for i in range(8):
        (root / f"notes{i}.md").write_text(WORK)


def _flood(root: Path, state: Path, policy: Path, registry: Path) -> dict[str, Any]:
    """Overwrite the notes one by one (each keeps ~300 KB of only copy) until file_write refuses; the refusal."""
    raw = started(FW, root, state, "--policy", str(policy), env={"MCP_GUARD_RUNTIME_DIR": str(registry)})
    try:
        for i in range(8):
            result = call(raw, 2 + i, "file_write", {"path": f"notes{i}.md", "content": "y", "overwrite": True})
            if result.get("isError"):
                return result
    finally:
        raw.close()
    return {}


@pytest.mark.parametrize("change", ["none (control)", "fallback key, then the registry", "registry made anew"])
def test_attack_a_changed_sealing_key_lets_eviction_take_the_only_copy_of_a_draft_unasked(
    tmp_path: Path, change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, state = tmp_path / "proj", tmp_path / "state"
    _repository(root)
    policy = tmp_path / "policy.toml"
    policy.write_text("[file_write]\nhistory_max_bytes = 1048576\n")
    registry = tmp_path / "registry"
    first_registry = registry
    if change.startswith("fallback"):
        # A registry directory that is not private (made 0755 by hand, or by a tool): not usable, so the servers
        # seal with history/.key and say so once in their log.
        first_registry = tmp_path / "shared-registry"
        first_registry.mkdir(mode=0o755)
        os.chmod(first_registry, 0o755)
    raw = started(FW, root, state, "--policy", str(policy), env={"MCP_GUARD_RUNTIME_DIR": str(first_registry)})
    try:
        first = call(raw, 1, "file_write", {"path": "draft0.md", "content": "x", "overwrite": True})
    finally:
        raw.close()
    assert not first.get("isError"), first
    if change == "registry made anew":
        shutil.rmtree(registry)  # the user clears the servers' registry (stale entries); a new journal.key follows
    refusal = _flood(root, state, policy, registry)
    monkeypatch.setenv("MCP_GUARD_RUNTIME_DIR", str(registry))  # (`mcp-guard undo` finds the registry there)
    undo = mcp_guard("undo", audit_id_of(first), "--history-dir", str(state / "history"),
                     "--audit-log", str(state / "audit.jsonl"), "--yes")  # fmt: skip
    # What must hold whatever key sealed the record: the draft's only copy is never pushed out unasked, and the
    # call that overwrote it can still be undone.
    assert "HISTORY_FULL" in str(refusal) and "only copy of earlier work" in str(refusal), (change, refusal)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert (root / "draft0.md").read_text() == WORK


def test_attack_a_call_sealed_while_the_registry_was_unusable_cannot_be_undone_once_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No eviction here: the record alone stops checking. The server's log said once that it sealed with
    # history/.key; nothing says that the calls sealed so are lost to `mcp-guard undo` once the registry works.
    root, state = tmp_path / "proj", tmp_path / "state"
    _repository(root)
    shared = tmp_path / "shared-registry"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    raw = started(FW, root, state, env={"MCP_GUARD_RUNTIME_DIR": str(shared)})
    try:
        first = call(raw, 1, "file_write", {"path": "draft0.md", "content": "x", "overwrite": True})
    finally:
        raw.close()
    assert not first.get("isError"), first
    os.chmod(shared, 0o700)  # the user fixes the registry's mode (or the next server makes it right)
    monkeypatch.setenv("MCP_GUARD_RUNTIME_DIR", str(shared))
    undo = mcp_guard("undo", audit_id_of(first), "--history-dir", str(state / "history"),
                     "--audit-log", str(state / "audit.jsonl"), "--yes")  # fmt: skip
    assert undo.returncode == 0, undo.stdout + undo.stderr  # (asked first: UNDO_ASKS, --yes)
    assert (root / "draft0.md").read_text() == WORK


def test_attack_a_call_of_a_server_given_mcp_guard_runtime_dir_cannot_be_undone_from_a_shell_without_it(
    tmp_path: Path,
) -> None:
    # docs/configuration.md: the registry is $MCP_GUARD_RUNTIME_DIR, else ~/.local/state/mcp-guard-servers. A
    # client config that sets it for the servers, and a terminal that does not: each finds (makes) its own
    # journal.key, and every call record is "not sealed by this user's servers" for `mcp-guard undo`.
    root, state = tmp_path / "proj", tmp_path / "state"
    _repository(root)
    raw = started(FW, root, state, env={"MCP_GUARD_RUNTIME_DIR": str(tmp_path / "client-registry")})
    try:
        first = call(raw, 1, "file_write", {"path": "draft0.md", "content": "x", "overwrite": True})
    finally:
        raw.close()
    assert not first.get("isError"), first
    undo = mcp_guard(
        "undo",
        audit_id_of(first),
        "--history-dir",
        str(state / "history"),
        "--audit-log",
        str(state / "audit.jsonl"),
        "--yes",
    )  # fmt: skip  (the conftest's registry)
    assert undo.returncode == 0, undo.stdout + undo.stderr  # (asked first: UNDO_ASKS, --yes)
    assert (root / "draft0.md").read_text() == WORK
