"""Red team 75: a running job's look applies its changes so far; the disk fills right after the run gave its reserve
back, so the call's record cannot be written. The run says its journal is kept for the next start, and the server
goes on. The job's next look applies under the same audit id: a new journal of the same name is renamed over the kept
one, and the first look's steps (deletions, their pre-images kept in the history) are then in no journal and in no
record: the job's undo does not bring those files back.

The shapes' lines are plain file operations on a temporary copy (data, never harmful)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard import faults
from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes.apply import Applier, NotApplied
from mcp_server_guard.changes.recovery import recover
from mcp_server_guard.files.history import HistoryError, HistoryStore
from support.copies import Copy, overlays_work
from support.small_disk import fill, small_disk

pytestmark = pytest.mark.skipif(not overlays_work() or os.getuid() != 0, reason="needs root and overlays")

OLD_NS = 1_000_000_000 * 10**9
AUDIT = "00000000000b"


def populate(root: Path) -> None:
    for i in range(4):
        (root / f"old{i}.txt").write_text(f"old {i}\n" * 50)
    for name in os.listdir(root):
        os.utime(root / name, ns=(OLD_NS, OLD_NS))
    os.utime(root, ns=(OLD_NS, OLD_NS))


def more(copy: Copy, script: str) -> None:
    """The job goes on in the same upper layer (a second command on the same overlay)."""
    mount = (
        f"mount -t overlay overlay -o lowerdir={copy.root},upperdir={copy.upper},workdir={copy.work},userxattr "
        f"{copy.root} && cd {copy.root} && {script}"
    )
    done = subprocess.run(["unshare", "-Urm", "sh", "-ec", mount], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_later_look_of_the_job_keeps_the_first_looks_kept_journal_or_record() -> None:
    with small_disk() as disk:
        base = disk / "job"
        copy = Copy(base)
        populate(copy.root)
        copy.run("rm old1.txt old2.txt; echo a > new1.txt")
        store = HistoryStore(base / "history", 1 << 30)
        applier = Applier(store)
        baseline: dict[str, int] = {}

        def point(label: str) -> None:
            if label == "record":
                fill(disk)  # another program takes the room the run just gave back

        old = faults.point
        faults.point = point
        try:
            with pytest.raises(NotApplied) as first:
                applier.apply([copy.read()], AUDIT, copy.started, live=True, baseline=baseline)
        finally:
            faults.point = old
        (disk / "hog").unlink()
        assert first.value.kept, first.value.why
        assert applier.unfinished(AUDIT)
        gone_after_first = sorted(n for n in ("old1.txt", "old2.txt") if not (copy.root / n).exists())

        # The job's next look (the server is still running; room again).
        more(copy, "echo b > new2.txt")
        problems: list[str] = []
        try:
            applier.apply([copy.read()], AUDIT, copy.started, live=True, baseline=baseline)
        except NotApplied as exc:
            if not exc.kept:  # (refused while the first look's journal is kept: said, and honest)
                problems.append(f"second look not applied: {exc.why}")
        store.close()

        # The next start finishes whatever journal is left; then the job's one undo.
        store = HistoryStore(base / "history", 1 << 30)
        recover(store, [str(copy.root)], [str(base / "upper")])
        record = store.calls.read(AUDIT) if (base / "history" / "calls" / f"{AUDIT}.json").exists() else {}
        recorded = {str(c["path"]).rsplit("/", 1)[-1] for c in record.get("changes", [])}
        for name in gone_after_first:
            if name not in recorded:
                problems.append(f"{name} was deleted by the first look, and no record names it (its pre-image "
                                f"is in no record)")  # fmt: skip
        try:
            Applier(store).undo(AUDIT, new_audit_id(), [str(copy.root)], force=True)
        except (NotApplied, HistoryError) as exc:
            problems.append(f"the job's undo fails: {exc}")
        for name in gone_after_first:
            if not (copy.root / name).exists():
                problems.append(f"{name}: not back after the job's undo")
        kept = [m.name for m in (base / "history").glob("*.json") if "old1.txt" in m.read_text(errors="replace")]
        if problems:
            problems.append(f"(the history still holds {len(kept)} entry metadata naming old1.txt: {kept})")
        store.close()
    assert gone_after_first, "the first look deleted nothing (the test did not reach its point)"
    assert not problems, "\n".join(problems)
