"""The plan, the call's ``what`` and the journal are typed values now (issue 46 item 2); what they write is the JSON
the code before them wrote, byte for byte. The lines below were written by that code (an apply's journal: its plan,
a step done, a rollback and a step of it; four call records: a shell_exec call, a job's look, an undo, a held
change set applied): each is read back into the typed values and written out again, and must come out the same.
(The deleted name is UTF-8 here: a journal naming a path that is not UTF-8 was not read back before either —
``read_journal`` decodes its JSON as UTF-8 — which is no matter of this test's.)"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path

from mcp_server_guard.changes.journal import Journal, journal_key, read_journal
from mcp_server_guard.changes.plan import Applied, Plan
from mcp_server_guard.changes.summary import Counts
from mcp_server_guard.changes.what import What
from mcp_server_guard.files.calls import CallRecords

_CHANGE = (
    '{"path": "d/a.txt", "action": "modify", "kind": "file", "size": 5, "old_size": 3, "mode": 420, "old_mode": 384, '
    '"top": "d", "opaque": true, "origin": true, "mtime_ns": 11, "old_mtime_ns": 10, "xattrs": [["user.a", "0102"]], '
    '"old_xattrs": [["user.b", "7a7a"]], "link": "d/b.txt", "link_old": true, "stays": "c.txt", "moved_from": '
    '"m.txt", "gone": true, "inode": 77, "shown": true, "names": 2, "over": true}'
)
_DELETE = (
    '{"path": "gone é.txt", "action": "delete", "kind": "file", "size": 0, "old_size": 0, "mode": 0, "old_mode": '
    '0, "top": "", "opaque": false, "origin": false, "mtime_ns": 0, "old_mtime_ns": 0, "xattrs": [], "old_xattrs": '
    '[], "link": "", "link_old": false, "stays": "", "moved_from": "", "gone": false, "inode": 0, "shown": false, '
    '"names": 0, "over": false}'
)
_RECORD = (
    '{"path": "/p/d/a.txt", "action": "modify", "kind": "file", "before": "E1", "after": [1, 2, 3, 4], "tree": true, '
    '"old_mode": 384, "old_mtime_ns": 10, "sha256": "ab", "mode": 420, "mtime_ns": 11, "xattrs": [["user.a", "01"]], '
    '"old_xattrs": [["user.b", "02"]], "moved_from": "/p/m.txt", "link": "/p/d/b.txt", "group": [1, 2], "stays": '
    '"/p/c.txt"}'
)
_RESTORE = (
    '{"kind": "restore", "root": "/p", "path": "d/a.txt", "upper": "", "entry": "E1", "marked": [], "change": null, '
    f'"record": {_RECORD}, "time": null}}'
)
_PLAN = (
    '{"audit_id": "a0000000000a", "started_ns": 123, "ops": [{"kind": "place", "root": "/p", "path": "d/a.txt", '
    f'"upper": "/area/u0", "entry": "E2", "marked": ["d/x", "d/y"], "change": {_CHANGE}, "record": null, "time": '
    f'null}}, {_RESTORE}, {{"kind": "times", "root": "/p", "path": "d", "upper": "", "entry": "", "marked": [], '
    '"change": null, "record": null, "time": {"path": "d", "mtime_ns": 5, "ctime_ns": 6, "old_mtime_ns": 7}}, '
    '{"kind": "delete", "root": "/p", "path": "gone é.txt", "upper": "", "entry": "E3", "marked": [], "change": '
    f'{_DELETE}, "record": null, "time": null}}], "what": {{"tool": "shell_exec", "command": "echo é \\u0001 > a", '
    '"cwd": "/p/d", "summary": "1 created", "counts": {"created": 1, "modified": 2, "deleted": 3, "meta": 4, '
    '"moved": 5, "bytes": 6, "deleted_bytes": 7}, "only_copies": ["/p/z", "/p/a"], "carried": [["user.overlay.q", '
    '"0078"]]}, "baseline": {"/p/d/a.txt": 9}}'
)
_DONE = f'{{"done": 0, "applied": [{_RECORD}], "conflicts": [["/p/q", "not placed", true], ["/p/r", "beside"]]}}'
_ROLLBACK = (
    f'{{"rollback": {{"audit_id": "a0000000000a", "started_ns": 456, "ops": [{_RESTORE}], "what": {{"back": '
    '"a0000000000a"}, "baseline": {}}, "why": "no room"}'
)
_BACK = f'{{"back": 0, "applied": [{_RECORD}], "conflicts": []}}'

_TIME = '"time": "2026-12-04T08:39:55.537+00:00", "applied_ns": 1796373595537343919'
_RECORDS = [
    f'{{"audit_id": "a0000000000a", {_TIME}, "roots": ["/p"], "parts": ["p1"], "tool": "shell_exec", "command": '
    '"echo é \\u0001 > a", "cwd": "/p/d", "summary": "1 created", "counts": {"created": 1, "modified": 2, '
    '"deleted": 3, "meta": 4, "moved": 5, "bytes": 6, "deleted_bytes": 7}, "only_copies": ["/p/z", "/p/a"], '
    f'"carried": [["user.overlay.q", "0078"]], "changes": [{_RECORD}], "conflicts": [["/p/q", "not placed"]]}}',
    f'{{"audit_id": "a0000000000b", {_TIME}, "roots": ["/p"], "parts": ["p2"], "tool": "shell_exec", "command": '
    f'"make", "job": "j1", "look": true, "only_copies": ["/p/o"], "changes": [{_RECORD}], "conflicts": []}}',
    f'{{"audit_id": "a0000000000c", {_TIME}, "roots": ["/p"], "parts": ["p3"], "tool": "undo", "undoes": '
    f'"a0000000000a", "only_copies": ["/p/u"], "changes": [{_RECORD}], "conflicts": []}}',
    f'{{"audit_id": "a0000000000d", {_TIME}, "roots": ["/p"], "parts": ["p4"], "tool": "shell_exec", "command": '
    '"x", "held": "h1", "for_call": "a0000000000b", "summary": "s", "counts": {"created": 0, "modified": 0, '
    '"deleted": 0, "meta": 0, "moved": 0, "bytes": 0, "deleted_bytes": 0}, "changes": '
    f'[{_RECORD}], "conflicts": []}}',
]


def _sealed(name: str, key: bytes, payloads: list[str]) -> bytes:
    """A journal's bytes as a server seals them (``changes.journal``), names not UTF-8 kept as their bytes."""
    last, out = name.encode(), b""
    for text in payloads:
        payload = text.encode("utf-8", "surrogateescape")
        last = hmac.new(key, last + b"\n" + payload, hashlib.sha256).hexdigest().encode()
        out += payload + b"\t" + last + b"\n"
    return out


def test_a_journal_written_before_the_typed_plan_reads_back_typed_and_is_written_the_same(tmp_path: Path) -> None:
    history = tmp_path / "history"
    key = journal_key(history)
    name = "apply-a0000000000a.json"
    old = _sealed(name, key, [_PLAN, _DONE, _ROLLBACK, _BACK])
    replay = read_journal(old.decode("utf-8", "surrogateescape").splitlines(), key, tmp_path / name)
    assert not replay.untrusted and replay.plan is not None and replay.back is not None
    plan = replay.plan
    assert plan.what == What(
        tool="shell_exec", command="echo é \x01 > a", cwd="/p/d", summary="1 created",
        counts=Counts(created=1, modified=2, deleted=3, meta=4, moved=5, bytes=6, deleted_bytes=7),
        only_copies=("/p/z", "/p/a"), carried=(("user.overlay.q", b"\x00x"),),
    )  # fmt: skip
    place, restore, times, delete = plan.ops
    assert place.change is not None and place.change.xattrs == (("user.a", b"\x01\x02"),) and place.change.over
    assert restore.record is not None and restore.record.group == (1, 2) and restore.record.after == (1, 2, 3, 4)
    assert times.time is not None and times.time.old_mtime_ns == 7
    assert delete.path == "gone é.txt" and replay.baseline == {"/p/d/a.txt": 9}
    assert replay.back.what == What(back="a0000000000a") and replay.why == "no room"
    assert Plan.of(json.loads(json.dumps(plan.json(replay.baseline)))) == (plan, replay.baseline)
    # Written again from the typed values, by the journal itself: the same bytes, seals and all.
    again = tmp_path / "again"
    journal = Journal.create(again, plan, replay.baseline, key)
    journal.done(0, *replay.done[0])
    journal.rollback(replay.back, replay.why)
    journal.done(0, *replay.back_done[0], back=True)
    os.close(journal.fd)
    assert (again / name).read_bytes() == old


def test_call_records_written_before_the_typed_what_read_back_and_are_written_the_same(tmp_path: Path) -> None:
    calls = CallRecords(tmp_path / "calls")
    for old in _RECORDS:
        data = json.loads(old)
        what = What.of(data)
        changes = [Applied.of(change) for change in data["changes"]]
        manifest = calls.record(data["audit_id"], data["roots"], [a.record() for a in changes],
                                conflicts=data["conflicts"], what={"parts": data["parts"], **what.json()})  # fmt: skip
        written = (calls.directory / f"{data['audit_id']}.json").read_bytes()
        now = f'"time": "{manifest["time"]}", "applied_ns": {manifest["applied_ns"]}'
        unsealed, _, seal = written.rpartition(b', "seal": ')  # (sealed since: the seal last, over the rest)
        assert unsealed + b"}" == old.replace(_TIME, now).encode() and seal.endswith(b'"}'), data["audit_id"]
    assert What.of(json.loads(_RECORDS[2])) == What(tool="undo", undoes="a0000000000a", only_copies=("/p/u",))
    assert What.of(json.loads(_RECORDS[1])).look and What.of(json.loads(_RECORDS[3])).for_call == "a0000000000b"


def test_a_sealed_step_line_with_an_empty_conflict_is_no_journal_line_not_a_crash(tmp_path: Path) -> None:
    """A step line that names a conflict with no path (``[]``) is not one of ours: the journal is left alone, said
    untrusted, and reading it raises nothing (an IndexError used to escape ``read_journal`` and its recovery)."""
    history = tmp_path / "history"
    key = journal_key(history)
    name = "apply-a0000000000b.json"
    broken = '{"done": 0, "applied": [], "conflicts": [[]]}'
    lines = _sealed(name, key, [_PLAN, broken]).decode("utf-8", "surrogateescape").splitlines()
    replay = read_journal(lines, key, tmp_path / name)
    assert replay.plan is None and "not a journal line" in replay.untrusted
