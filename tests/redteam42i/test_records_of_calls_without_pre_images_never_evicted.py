"""Issue 42, red team i, claim 7: "the history's call records are inside history_max_bytes". Eviction went by the
entries on disk, grouped by the calls that kept them; a call that kept no entry (it only created files) was in no
group, so its record counted in the bytes bound and never went: six calls that each made 3,000 files and 40
file_write creations left 6.3 MiB under a 1 MiB bound, growing with every such call."""

from __future__ import annotations

from pathlib import Path

from mcp_server_guard.files.calls import call_groups
from mcp_server_guard.files.history import HistoryStore


def _changes(n: int) -> list[dict[str, object]]:
    return [{"path": f"gen/n{i:05d}_" + "x" * 100, "action": "create", "before": ""} for i in range(n)]


def test_records_of_create_only_calls_are_evicted_to_keep_the_bound(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history", max_bytes=400_000)
    ids = [f"{n:012x}" for n in range(1, 9)]
    for audit_id in ids:
        store.calls.record(audit_id, [str(tmp_path)], _changes(1000), durable=False)
    store.sweep()
    used, _entries = store.usage()
    assert used <= store.max_bytes, used
    kept = {r["audit_id"] for r in store.calls.all()}
    assert ids[-1] in kept and ids[0] not in kept  # the oldest went first, the newest stays


def test_a_call_without_entries_is_a_group_of_its_own_in_time_order() -> None:
    owner = {"20260101T000000000000Z-aaaaaa": "000000000001"}
    records = [
        {"audit_id": "000000000001", "time": "2026-01-01T00:00:00.000+00:00", "changes": []},
        {"audit_id": "000000000002", "time": "2025-12-31T23:00:00.000+00:00", "changes": []},
        {"audit_id": "000000000003", "time": "2026-01-02T00:00:00.000+00:00", "changes": []},
    ]
    groups = call_groups(owner, records)
    assert groups == [
        (["000000000002"], []),
        (["000000000001"], ["20260101T000000000000Z-aaaaaa"]),
        (["000000000003"], []),
    ]
