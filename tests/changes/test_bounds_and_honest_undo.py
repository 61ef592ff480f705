"""Bounds that refuse instead of evicting, change sets refused whole, and an undo that says success only when every
path is back: the history store and the applier at library level, on real upper layers (``support.copies``)."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes import names as names_module
from mcp_server_guard.changes.apply import Applier, NotApplied
from mcp_server_guard.changes.changeset import ChangeSet
from mcp_server_guard.changes.plan import Applied, Op, Plan
from mcp_server_guard.changes.what import What
from mcp_server_guard.files.history import HistoryError, HistoryStore
from support import console_script
from support.copies import Copy, overlays_work
from support.fidelity import differences, snapshot

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


def project(base: Path, files: int = 4) -> Copy:
    copy = Copy(base)
    for i in range(files):
        (copy.root / f"f{i}.txt").write_text(f"old {i}\n")
    return copy


def ran(copy: Copy, code: str) -> ChangeSet:
    """The change set of a Python program run on the copy (written beside the root: never a path in it)."""
    program = copy.root.parent / "program.py"
    program.write_text(code)
    return copy.run(f"python3 {program}")


def test_an_apply_whose_previous_contents_exceed_the_history_bound_changes_nothing(tmp_path: Path) -> None:
    copy = project(tmp_path / "p")
    before = snapshot(copy.root)
    changes = copy.run("for f in f*.txt; do echo new >> $f; done")
    store = HistoryStore(tmp_path / "history", 1 << 30, max_entries=3)
    with pytest.raises(NotApplied, match="history_max_entries"):
        Applier(store).apply([changes], "a00000000001", copy.started)
    assert differences(before, snapshot(copy.root)) == []
    assert store.calls.all() == [] and store.entries() == []
    assert not list((store.directory / ".journal").glob("apply-*"))


def test_a_call_of_new_files_named_in_bytes_that_are_not_utf8_cannot_pass_the_history_bound(tmp_path: Path) -> None:
    # Each such byte of a name takes six in the call's record (\udcXX): reckoned so beforehand, the record of 300
    # new files named with 250 of them (450 KB written) does not fit 256 KiB, and nothing lands.
    copy = project(tmp_path / "p", files=0)
    changes = ran(
        copy, "import os\nfor i in range(300):\n    open(os.fsencode(str(i)) + b'\\xff' * 240, 'w').close()\n"
    )
    store = HistoryStore(tmp_path / "history", 256 << 10)
    with pytest.raises(NotApplied, match="history"):
        Applier(store).apply([changes], "a0000000000f", copy.started)
    assert sorted(os.listdir(copy.root)) == [] and store.calls.all() == []


def test_a_calls_record_is_reckoned_with_its_command_text_and_attributes_before_anything_lands(tmp_path: Path) -> None:
    # Red team 42k: a long command (each control character six bytes in the record) and large attribute values (hex)
    # went into the record unreckoned, and the history ended over its bound.
    copy = project(tmp_path / "p")
    before = snapshot(copy.root)
    changes = copy.run("echo made > made.txt")
    store = HistoryStore(tmp_path / "history", 128 << 10)
    with pytest.raises(NotApplied, match="history"):
        Applier(store).apply([changes], "a0000000000e", copy.started, what=What(command="echo made \x01" * 12_000))
    attributes = project(tmp_path / "q")
    changed = ran(attributes, "import os\nfor i in range(4):\n    os.setxattr(f'f{i}.txt', 'user.big', b'x' * 3900)\n")
    small = HistoryStore(tmp_path / "history2", 24 << 10)
    with pytest.raises(NotApplied, match="history"):
        Applier(small).apply([changed], "a0000000000d", attributes.started)
    assert differences(before, snapshot(copy.root)) == [] and store.calls.all() == [] and small.calls.all() == []


def test_a_deleted_tree_whose_files_have_other_names_is_reckoned_with_the_list_its_entry_keeps(tmp_path: Path) -> None:
    # Red team 42l: a tree kept whole lists each of its files with another name (to make them one again on undo);
    # 300 names of 250 bytes not UTF-8 made a 450 KB entry nobody had reckoned, past a 256 KiB bound.
    copy = project(tmp_path / "p", files=0)
    for sub in ("t", "k"):
        (copy.root / sub).mkdir()
    for i in range(300):
        name = os.fsencode(str(i)) + b"\xff" * 240
        open(os.path.join(os.fsencode(copy.root / "t"), name), "w").close()
        os.link(os.path.join(os.fsencode(copy.root / "t"), name), os.path.join(os.fsencode(copy.root / "k"), name))
    changes = copy.run("rm -rf t")
    store = HistoryStore(tmp_path / "history", 256 << 10)
    with pytest.raises(NotApplied, match="history"):
        Applier(store).apply([changes], "a0000000000c", copy.started)
    assert len(os.listdir(copy.root / "t")) == 300 and store.calls.all() == []


def test_eviction_takes_whole_calls_oldest_first_and_never_the_call_that_made_room(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history", 1 << 30, max_entries=6)
    copies = {}
    for n, files in ((1, 2), (2, 2), (3, 3)):
        copy = copies[n] = project(tmp_path / f"p{n}", files)
        Applier(store).apply([copy.run("for f in f*.txt; do echo new >> $f; done")], f"a0000000000{n}", copy.started)
    assert [e["audit_id"] for e in store.calls.evicted()] == ["a00000000001"]
    assert sorted({e.audit_id for e in store.entries()}) == ["a00000000002", "a00000000003"]
    with pytest.raises(HistoryError, match="evicted"):
        Applier(store).undo("a00000000001", "b00000000001", [str(copies[1].root)])
    for n in (2, 3):
        Applier(store).undo(f"a0000000000{n}", f"b0000000000{n}", [str(copies[n].root)])
        assert {p.read_text() for p in copies[n].root.iterdir()} == {f"old {i}\n" for i in range(2 if n == 2 else 3)}
    listed = subprocess.run([console_script("mcp-guard"), "history", "--history-dir", str(store.directory)],
                            capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    assert "a00000000001" in listed.stdout and "evicted" in listed.stdout, listed.stdout


def test_a_change_set_over_the_listing_limit_is_refused_whole_and_new_trees_count_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(names_module, "MAX_ENTRIES", 5)
    fits = project(tmp_path / "fits", 0)
    assert not fits.run("mkdir d && touch d/1 d/2 d/3 d/4").incomplete  # five paths, each counted once
    copy = project(tmp_path / "over")
    before = snapshot(copy.root)
    changes = copy.run("mkdir d && touch d/1 d/2 d/3 && for f in f*.txt; do echo new >> $f; done")
    assert changes.incomplete
    store = HistoryStore(tmp_path / "history", 1 << 30)
    with pytest.raises(NotApplied, match="more than"):
        Applier(store).apply([changes], "a00000000001", copy.started)
    assert differences(before, snapshot(copy.root)) == [] and store.calls.all() == []


def test_an_undo_whose_step_fails_for_want_of_space_puts_everything_back_and_can_be_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = project(tmp_path / "p")
    before = snapshot(copy.root)
    store = HistoryStore(tmp_path / "history", 1 << 30)
    changes = copy.run("for f in f*.txt; do echo new >> $f; done; rm f3.txt; echo n > made.txt")
    Applier(store).apply([changes], "a00000000001", copy.started)
    after = snapshot(copy.root)
    real_take = HistoryStore.take
    taken = []

    def take_on_a_full_disk(self: HistoryStore, *args: object, **kwargs: object) -> object:
        taken.append(args)
        if len(taken) == 3:  # the third pre-image no longer fits the project's disk
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_take(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(HistoryStore, "take", take_on_a_full_disk)
    with pytest.raises(NotApplied) as failed:
        Applier(store).undo("a00000000001", "b00000000001", [str(copy.root)])
    assert "No space left" in failed.value.why and failed.value.left == []
    assert differences(after, snapshot(copy.root)) == []  # what the undo had done is put back
    assert not [p for p in copy.root.iterdir() if p.name.startswith(".mcp-guard-")]
    assert "undone_by" not in store.calls.read("a00000000001")
    monkeypatch.setattr(HistoryStore, "take", real_take)
    Applier(store).undo("a00000000001", "b00000000002", [str(copy.root)])
    assert differences(before, snapshot(copy.root)) == []
    assert store.calls.read("a00000000001")["undone_by"] == "b00000000002"
    Applier(store).undo("b00000000002", "b00000000003", [str(copy.root)])  # the redo
    assert differences(after, snapshot(copy.root)) == []
    assert "undone_by" not in store.calls.read("a00000000001")


def test_an_undo_whose_previous_version_is_damaged_is_refused_before_any_change(tmp_path: Path) -> None:
    copy = project(tmp_path / "p")
    store = HistoryStore(tmp_path / "history", 1 << 30)
    Applier(store).apply([copy.run("for f in f*.txt; do echo new >> $f; done")], "a00000000001", copy.started)
    after = snapshot(copy.root)
    victim = store.calls.read("a00000000001")["changes"][1]["before"]
    (store.directory / f"{victim}.json").write_text("")  # a metadata file left empty
    with pytest.raises(HistoryError, match="HISTORY_BROKEN"):
        Applier(store).undo("a00000000001", "b00000000001", [str(copy.root)])
    assert differences(after, snapshot(copy.root)) == []
    assert "undone_by" not in store.calls.read("a00000000001")


def test_a_big_undo_never_evicts_what_it_restores(tmp_path: Path) -> None:
    copy = project(tmp_path / "p", 6)
    before = snapshot(copy.root)
    store = HistoryStore(tmp_path / "history", 1 << 30, max_entries=7)
    Applier(store).apply([copy.run("for f in f*.txt; do echo new >> $f; done")], "a00000000001", copy.started)
    # The undo keeps the six new contents (the store goes to twelve entries, over its bound of seven) while it
    # puts the six old ones back: the old ones are never evicted for it; the call it made room with goes.
    Applier(store).undo("a00000000001", "b00000000001", [str(copy.root)])
    assert differences(before, snapshot(copy.root)) == []
    assert len(os.listdir(copy.root)) == 6


def test_a_long_run_under_the_tree_lock_lets_another_writer_in_within_its_bound(tmp_path: Path) -> None:
    import threading
    import time

    from mcp_server_guard.files.treelock import breathe, tree_lock

    device = [os.stat(tmp_path).st_dev]
    entered = threading.Event()
    waited: list[float] = []

    def other_server() -> None:
        entered.wait(10)
        started = time.monotonic()
        with tree_lock(device, wait_s=5):  # another writer's bound: it must get in well within it
            waited.append(time.monotonic() - started)

    other = threading.Thread(target=other_server)
    other.start()
    with tree_lock(device):
        entered.set()
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:  # a 3 s run, step after step
            breathe(every_s=0.2)
            time.sleep(0.01)
    other.join(10)
    assert waited and waited[0] < 1.5, waited


def test_an_undos_own_record_is_reckoned_before_it_starts(tmp_path: Path) -> None:
    # Review of 42: what an undo keeps was reckoned against the history's bound, its own record (a line per step,
    # each naming its path) was not: an undo of many new files with long names could leave the history over it.
    copy = project(tmp_path / "p", files=0)
    changes = ran(copy, "for i in range(200):\n    open(f'{i:03}' + 'n' * 200, 'w').close()\n")
    store = HistoryStore(tmp_path / "history", 1 << 30)
    Applier(store).apply([changes], "a00000000011", copy.started)
    after = snapshot(copy.root)
    # Room for what the undo keeps (200 empty files: their entries' disk), not for its record (~140 KB).
    tight = HistoryStore(store.directory, 200 * 3 * 4096 + 10_000)
    with pytest.raises(NotApplied, match="history_max_bytes"):
        Applier(tight).undo("a00000000011", "b00000000011", [str(copy.root)])
    assert differences(after, snapshot(copy.root)) == [] and "undone_by" not in store.calls.read("a00000000011")


def test_attack_a_big_new_tree_racing_a_directory_made_meanwhile_goes_beside_it_whole(tmp_path: Path) -> None:
    # Review of 42: a new directory that finds one of the same name made meanwhile is merged entry by entry, a
    # record line each, while the call's record was reckoned with one line for the whole tree. Past MERGE_ENTRIES
    # entries it now goes beside what is there, whole (one line); a small one still merges (each line reckoned).
    copy = project(tmp_path / "p", files=0)
    changes = ran(copy, "import os\nfor d, n in (('big', 300), ('small', 3)):\n    os.mkdir(d)\n"
                        "    for i in range(n):\n        open(f'{d}/{i}', 'w').close()\n")  # fmt: skip
    for name in ("big", "small"):
        (copy.root / name).mkdir()  # someone else made them meanwhile
        (copy.root / name / "theirs").write_text("theirs\n")
    store = HistoryStore(tmp_path / "history", 1 << 30)
    outcome = Applier(store).apply([changes], "a00000000012", copy.started)
    beside = [p.name for p in copy.root.iterdir() if p.name.startswith("big.mcp-guard-")]
    assert len(beside) == 1 and len(os.listdir(copy.root / beside[0])) == 300
    assert sorted(os.listdir(copy.root / "big")) == ["theirs"]
    assert sorted(os.listdir(copy.root / "small")) == ["0", "1", "2", "theirs"]
    assert [c.path for c in outcome.conflicts] == [str(copy.root / "big")]


def test_attack_an_eviction_during_an_undo_cannot_take_what_the_undo_puts_back(tmp_path: Path) -> None:
    # Found with the server's bounds kept by `mcp-guard undo`: eviction spares what unfinished runs' journals name,
    # but read each journal's first line as JSON, and a sealed line is the plan, a tab and its seal — no journal
    # was understood. An undo whose own keep took the store over history_max_entries evicted the very pre-image it
    # was about to put back, and failed ("no history entry").
    from mcp_server_guard.changes.journal import JOURNALS, Journal, journal_key
    from mcp_server_guard.files.calls import needed_by_journals

    history = tmp_path / "history"
    history.mkdir()
    op = Op("swap", "/p", "a", entry="E-kept", record=Applied("/p/a", "modify", "file", before="E-put-back"))
    journal = Journal.create(history / JOURNALS, Plan("b00000000021", 1, (op,)), {}, journal_key(history))
    os.close(journal.fd)
    assert {"E-kept", "E-put-back"} <= needed_by_journals(history / JOURNALS)
    # End to end: two calls' pre-images in a store of one entry; the older call's undo keeps one more.
    copy = project(tmp_path / "p", files=2)
    store = HistoryStore(tmp_path / "h2", 1 << 30)
    first = copy.run("echo new >> f0.txt")
    Applier(store).apply([first], "a00000000021", copy.started)
    before_second = snapshot(copy.root)
    second = copy.run("echo new >> f1.txt")
    Applier(store).apply([second], "a00000000022", copy.started)
    tight = HistoryStore(store.directory, 1 << 30, max_entries=2)
    Applier(tight).undo("a00000000022", "b00000000022", [str(copy.root)])
    assert differences(before_second, snapshot(copy.root)) == []
