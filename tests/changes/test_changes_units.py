"""The copy's pieces on their own: reading an upper layer, judging it, applying it, undoing it, recovering.

Upper layers here are real: a shell snippet runs on an overlay mounted in a private user and mount namespace
(``unshare -Urm``), as the box does for every command.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.apply import Applier, UndoConflict
from mcp_server_guard.changes.changeset import MAX_DEPTH, ChangeSet, TooDeep
from mcp_server_guard.changes.effects import judge
from mcp_server_guard.changes.recovery import recover
from mcp_server_guard.files.history import HistoryStore
from mcp_server_guard.files.trees import remove_tree
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work
from support.journals import write_sealed

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()


def actions(changes: ChangeSet) -> dict[str, str]:
    return {c.path: f"{c.action}:{c.kind}" for c in changes.changes}


@pytest.fixture
def copy(tmp_path: Path) -> Copy:
    made = Copy(tmp_path)
    (made.root / "keep.txt").write_text("keep\n")
    (made.root / "edit.txt").write_text("before\n")
    (made.root / "tree" / "sub").mkdir(parents=True)
    (made.root / "tree" / "sub" / "a.txt").write_text("a\n")
    (made.root / "tree" / "b.txt").write_text("b\n")
    return made


def history(tmp_path: Path) -> HistoryStore:
    return HistoryStore(tmp_path / "history", 1 << 30)


def test_the_upper_layer_reads_as_what_the_command_did(copy: Copy) -> None:
    changes = copy.run(
        "echo after > edit.txt; echo new > new.txt; rm -r tree; mkdir made; echo m > made/m.txt; "
        "chmod 600 keep.txt; ln -s keep.txt link; mkfifo pipe"
    )
    assert actions(changes) == {
        "edit.txt": "modify:file",
        "keep.txt": "meta:file",
        "link": "create:symlink",
        "made": "create:dir",
        "made/m.txt": "create:file",
        "new.txt": "create:file",
        "pipe": "create:fifo",
        "tree": "delete:dir",
        "tree/b.txt": "delete:file",
        "tree/sub": "delete:dir",
        "tree/sub/a.txt": "delete:file",
    }
    assert next(c for c in changes.changes if c.path == "made/m.txt").top == "made"


def test_a_copied_up_file_left_as_it_was_is_no_change(copy: Copy) -> None:
    changes = copy.run("python3 -c \"open('keep.txt', 'r+').close()\"; chmod 644 edit.txt")
    assert actions(changes) == {}


def test_replacing_a_directory_wholesale_lists_what_goes_and_what_comes(copy: Copy) -> None:
    changes = copy.run("rm -r tree; mkdir tree; echo n > tree/n.txt")
    assert actions(changes) == {
        "tree": "create:dir",
        "tree/b.txt": "delete:file",
        "tree/n.txt": "create:file",
        "tree/sub": "delete:dir",
        "tree/sub/a.txt": "delete:file",
    }
    assert next(c for c in changes.changes if c.path == "tree" and c.action == "create").opaque


def test_a_fifo_in_the_upper_layer_is_reported_and_never_opened(copy: Copy) -> None:
    # Opening a FIFO for reading would block the server for good: it is a change, nothing more.
    changes = copy.run("mkfifo edit2 && rm edit.txt && mkfifo edit.txt")
    assert actions(changes)["edit.txt"] == "modify:fifo" and actions(changes)["edit2"] == "create:fifo"


def test_scratch_directories_never_ask_and_everything_else_is_judged(copy: Copy) -> None:
    for i in range(30):
        (copy.root / "src" / f"f{i}.py").parent.mkdir(exist_ok=True)
        (copy.root / "src" / f"f{i}.py").write_text(f"x = {i}\n")
    (copy.root / "build").mkdir()
    for i in range(30):
        (copy.root / "build" / f"o{i}.o").write_text("o")
    roots = [str(copy.root)]
    protection = protection_for(POLICY)
    build = judge([copy.run("rm -rf build; mkdir -p node_modules/x && echo 1 > node_modules/x/i.js")], protection,
                  POLICY.effects, roots)  # fmt: skip
    assert build.asks == [] and build.refused == {}
    shutil.rmtree(copy.upper)
    copy.upper.mkdir()
    src = judge([copy.run("rm -r src")], protection, POLICY.effects, roots)
    assert any("deletes, replaces" in a for a in src.asks) and any("It deletes src/" in a for a in src.asks)
    assert src.summary == "delete 30 files under src/ (200 B)"


def test_moved_files_are_a_move_not_a_deletion(copy: Copy) -> None:
    for i in range(30):
        (copy.root / "tree" / f"m{i}.txt").write_text(f"{i}\n")
    judged = judge([copy.run("mv tree moved")], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert judged.asks == [] and judged.summary == "move 32 files under tree/ to moved/"


def test_emptying_a_file_and_a_new_executable_ask(copy: Copy) -> None:
    judged = judge(
        [copy.run(": > edit.txt; printf '\\177ELF' > tool && chmod +x tool")],
        protection_for(POLICY),
        POLICY.effects,
        [str(copy.root)],
    )
    assert any("empties edit.txt" in a for a in judged.asks) and any("executables: tool" in a for a in judged.asks)


def test_a_protected_path_is_refused_and_a_new_repos_config_loses_only_its_program_keys(copy: Copy) -> None:
    subprocess.run(["git", "init", "-q", str(copy.root)], check=True)
    judged = judge(
        [
            copy.run(
                "echo x > .git/hooks/pre-commit; git config core.pager less; echo '{}' > .mcp.json; "
                "git init -q sub; git -C sub config core.fsmonitor evil; git -C sub config user.name me; "
                "echo 'gitdir: /etc' > other.git && mkdir w && echo 'gitdir: /etc' > w/.git"
            )
        ],
        protection_for(POLICY),
        POLICY.effects,
        [str(copy.root)],
    )
    refused = {path for _, path in judged.refused}
    assert {".git/hooks/pre-commit", ".git/config", ".mcp.json", "w/.git"} <= refused
    assert "sub/.git/config" not in refused and "other.git" not in refused
    (rewritten,) = judged.rewritten.values()
    assert b"fsmonitor" not in rewritten and b'name = "me"' in rewritten
    assert judged.dropped_keys == {"sub/.git/config": ["core.fsmonitor"]}


def test_deleting_work_git_does_not_have_asks(copy: Copy) -> None:
    subprocess.run(["git", "init", "-q", str(copy.root)], check=True)
    subprocess.run(["git", "-C", str(copy.root), "add", "keep.txt", "edit.txt"], check=True)
    (copy.root / "edit.txt").write_text("changed, not added\n")
    judged = judge([copy.run("rm keep.txt edit.txt tree/b.txt")], protection_for(POLICY), POLICY.effects,
                   [str(copy.root)])  # fmt: skip
    (lost,) = [a for a in judged.asks if a.startswith("Git has no copy")]
    assert "edit.txt" in lost and "tree/b.txt" in lost and "keep.txt" not in lost


def test_applying_moves_a_new_tree_in_one_rename_and_keeps_every_pre_image(copy: Copy, tmp_path: Path) -> None:
    changes = copy.run(
        "mkdir -p big && for i in $(seq 200); do echo $i > big/$i; done; echo after > edit.txt; rm keep.txt"
    )
    inode = (copy.upper / "big").stat().st_ino
    store = history(tmp_path)
    outcome = Applier(store).apply([changes], "aaaaaaaaaaaa", copy.started)
    assert outcome.conflicts == []
    assert (copy.root / "big").stat().st_ino == inode  # the command's directory itself: no copy
    assert (copy.root / "edit.txt").read_text() == "after\n" and not (copy.root / "keep.txt").exists()
    manifest = store.calls.read("aaaaaaaaaaaa")
    assert {c["path"].rsplit("/", 1)[-1]: c["action"] for c in manifest["changes"] if c["action"] != "times"} == {
        "big": "create", "edit.txt": "modify", "keep.txt": "delete"
    }  # fmt: skip
    Applier(store).undo("aaaaaaaaaaaa", "bbbbbbbbbbbb", manifest["roots"])
    assert (copy.root / "keep.txt").read_text() == "keep\n" and (copy.root / "edit.txt").read_text() == "before\n"
    assert not (copy.root / "big").exists()


def test_a_path_changed_since_the_command_started_is_never_overwritten(copy: Copy, tmp_path: Path) -> None:
    changes = copy.run("echo ours > edit.txt; rm tree/b.txt; echo n > fresh.txt")
    (copy.root / "edit.txt").write_text("someone else's\n")  # after the command started
    (copy.root / "tree" / "b.txt").write_text("rewritten meanwhile\n")
    (copy.root / "fresh.txt").write_text("made meanwhile\n")
    outcome = Applier(history(tmp_path)).apply([changes], "cccccccccccc", copy.started)
    assert (copy.root / "edit.txt").read_text() == "someone else's\n"
    assert (copy.root / "edit.txt.mcp-guard-cccccccccccc").read_text() == "ours\n"
    assert (copy.root / "tree" / "b.txt").read_text() == "rewritten meanwhile\n"
    assert (copy.root / "fresh.txt.mcp-guard-cccccccccccc").read_text() == "n\n"
    assert len(outcome.conflicts) == 3


def test_undo_stops_before_changing_anything_when_a_path_changed_later(copy: Copy, tmp_path: Path) -> None:
    store = history(tmp_path)
    Applier(store).apply([copy.run("echo x > edit.txt; echo y > keep.txt")], "dddddddddddd", copy.started)
    (copy.root / "keep.txt").write_text("later\n")
    with pytest.raises(UndoConflict) as caught:
        Applier(store).undo("dddddddddddd", "eeeeeeeeeeee", [str(copy.root)])
    assert caught.value.paths == [str(copy.root / "keep.txt")]
    assert (copy.root / "edit.txt").read_text() == "x\n"  # nothing was undone


def test_an_apply_left_half_done_is_finished_by_recover(copy: Copy, tmp_path: Path) -> None:
    changes = copy.run("for i in 1 2 3 4; do echo new$i > f$i.txt; done; echo after > edit.txt")
    store = history(tmp_path)
    applier = Applier(store)
    applier.apply([changes], "ffffffffffff", copy.started)  # a first run: everything applied ...
    journal = store.directory / ".journal"
    assert not list(journal.glob("apply-*"))
    # ... now a plan that stopped after its first step: the journal names it all, one step is marked done.
    copy2 = Copy(tmp_path / "second")
    (copy2.root / "a.txt").write_text("a\n")
    changes2 = copy2.run("echo A > a.txt; echo b > b.txt; echo c > c.txt")
    plan_ops = []
    from mcp_server_guard.changes.plan import steps_for  # the plan the applier writes

    for op in steps_for(changes2, frozenset(), store):
        plan_ops.append(op.plan())
    plan = {"audit_id": "999999999999", "started_ns": copy2.started, "ops": plan_ops, "what": {}, "baseline": {}}
    first = plan_ops[0]
    os.rename(copy2.upper / str(first["path"]), copy2.root / str(first["path"]))  # that step happened before the crash
    write_sealed(store.directory, "999999999999", [plan])
    elsewhere = [str(tmp_path / "other")]
    assert recover(store, elsewhere, [str(copy2.upper)]) == 0  # another server's directories: left for it
    assert recover(store, [str(copy2.root)], elsewhere) == 0  # files taken from outside the copies: left
    assert (copy2.root / "c.txt").exists() is False
    assert recover(store, [str(copy2.root)], [str(copy2.upper)]) == 1
    assert (copy2.root / "a.txt").read_text() == "A\n" and (copy2.root / "b.txt").read_text() == "b\n"
    assert (copy2.root / "c.txt").read_text() == "c\n" and not list(journal.glob("apply-*"))
    assert stat.S_ISREG(os.lstat(store.directory / "calls" / "999999999999.json").st_mode)


def test_a_commondir_never_sends_git_to_a_config_nobody_judged(copy: Copy) -> None:
    subprocess.run(["git", "init", "-q", str(copy.root)], check=True)
    planted = copy.run(
        "mkdir -p stuff/objects stuff/refs/heads && "
        "printf '[core]\\n\\tfsmonitor = \"touch /m; false\"\\n' > stuff/config && echo ../stuff > .git/commondir"
    )
    judged = judge([planted], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    refused = {path for _, path in judged.refused}
    assert ".git/commondir" in refused
    assert "stuff/config" in refused or judged.dropped_keys["stuff/config"] == ["core.fsmonitor"]


def test_a_git_dir_with_a_symlinked_head_is_still_judged_as_a_git_dir(copy: Copy) -> None:
    planted = copy.run(
        "mkdir -p sub/.git/objects sub/.git/refs/heads sub/.git/hooks && ln -s refs/heads/main sub/.git/HEAD && "
        "printf '[core]\\n\\tfsmonitor = evil\\n' > sub/.git/config && echo x > sub/.git/hooks/pre-commit"
    )
    judged = judge([planted], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert "sub/.git/hooks/pre-commit" in {path for _, path in judged.refused}
    assert judged.dropped_keys == {"sub/.git/config": ["core.fsmonitor"]}  # a new repo's config: keys taken out


def test_moving_a_tree_into_a_build_directory_asks_as_deleting_it_would(copy: Copy) -> None:
    for i in range(30):
        (copy.root / "src" / f"f{i}.py").parent.mkdir(exist_ok=True)
        (copy.root / "src" / f"f{i}.py").write_text(f"x = {i}\n")
    judged = judge([copy.run("mkdir -p build && mv src build/src")], protection_for(POLICY), POLICY.effects,
                   [str(copy.root)])  # fmt: skip
    assert any("It deletes src/ (30 files)" in ask for ask in judged.asks)


def deep_tree(base: Path, levels: int) -> None:
    """``base/d/d/…/d/f`` ``levels`` directories deep, made one level at a time (past PATH_MAX, as a command can)."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
        os.chmod(fd, 0)  # the deepest directory left with no permission, as overlayfs leaves its work directory
    finally:
        os.close(fd)


def test_a_tree_thousands_of_levels_deep_is_removed_without_recursion(tmp_path: Path) -> None:
    (tmp_path / "top").mkdir()
    deep_tree(tmp_path / "top", 3000)
    (tmp_path / "top" / "link").symlink_to(tmp_path / "kept")
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "x").write_text("x")
    remove_tree(tmp_path / "top")
    assert not (tmp_path / "top").exists()
    assert (tmp_path / "kept" / "x").read_text() == "x"  # the link was removed, never followed


def test_a_change_set_deeper_than_the_bound_is_refused_as_too_deep(copy: Copy) -> None:
    (copy.root / "deep").mkdir()
    deep_tree(copy.root / "deep", MAX_DEPTH + 5)
    with pytest.raises(TooDeep):
        copy.run("find deep -name f -exec sh -c 'echo b >> \"$1\"' _ {} \\;")


def test_a_live_copy_takes_only_the_file_that_was_judged(copy: Copy, tmp_path: Path) -> None:
    changes = copy.run("ln -s keep.txt tool")  # judged: a symlink (mode 0777, no executable)
    assert actions(changes) == {"tool": "create:symlink"}
    (copy.upper / "tool").unlink()  # the job swaps it for an executable before the look copies it
    (copy.upper / "tool").write_text("#!/bin/sh\necho owned\n")
    (copy.upper / "tool").chmod(0o777)
    Applier(history(tmp_path)).apply([changes], "eeeeeeeeeeee", copy.started, live=True, baseline={})
    assert not (copy.root / "tool").exists() or (copy.root / "tool").is_symlink()


def test_a_fifo_or_socket_left_in_the_project_is_refused_and_deleting_one_is_not(copy: Copy) -> None:
    os.mkfifo(copy.root / "old-pipe")
    script = "mkfifo pipe && python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('sock')\" && rm old-pipe"
    judgement = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    root = str(copy.root)
    assert judgement.refused == {(root, "pipe"): "a FIFO", (root, "sock"): "a socket"}


def test_the_summary_names_directories_in_plain_english(tmp_path: Path) -> None:
    # "change 1,501 directorys" was what a person read.
    from mcp_server_guard.changes.effects import summary_line

    copy = Copy(tmp_path)
    line, _ = summary_line([copy.run("mkdir a b")])
    assert "change 2 directories" in line, line


def test_a_fifo_in_place_of_a_file_of_a_moved_tree_keeps_the_tree_whole(copy: Copy, tmp_path: Path) -> None:
    (copy.root / "d" / "sub").mkdir(parents=True)
    (copy.root / "d" / "f.txt").write_text("f\n")
    (copy.root / "d" / "sub" / "g.txt").write_text("g\n")
    changes = copy.run("mv d d2 && rm d2/f.txt && mkfifo d2/f.txt")
    judgement = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    root = str(copy.root)
    assert judgement.refused[(root, "d/f.txt")].startswith("it would be replaced by d2/f.txt (a FIFO)")
    assert judgement.refused[(root, "d2")].startswith("it holds d2/f.txt (a FIFO) in place of d/f.txt")
    assert "delete" not in judgement.summary and "move" not in judgement.summary, judgement.summary
    Applier(history(tmp_path)).apply([changes], "f1f0f1f0f1f0", copy.started, skip=frozenset(judgement.refused))
    assert (copy.root / "d" / "f.txt").read_text() == "f\n" and (copy.root / "d" / "sub" / "g.txt").exists()
    assert not (copy.root / "d2").exists()


def test_nothing_of_a_new_tree_that_may_not_land_is_counted(copy: Copy) -> None:
    (copy.root / "d").mkdir()
    (copy.root / "d" / "f.txt").write_text("f\n")
    changes = copy.run("rm -r d && mkdir d && printf 'x\\n' > d/x && mkfifo d/f.txt")
    judgement = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert (str(copy.root), "d/x") in judgement.refused
    assert "create" not in judgement.summary, judgement.summary


def test_a_step_that_did_nothing_is_told_from_one_that_went_beside_by_a_flag_the_journal_keeps() -> None:
    # The summary leaves out what a conflict kept from landing; it told those by their text ("not …"), and a
    # version put beside for a reason worded "not a file that can be copied" would have been left out too.
    from mcp_server_guard.changes.plan import Conflict

    beside = Conflict("/p/a", "not a file that can be copied: the command's version is beside it, as a.x")
    skipped = Conflict("/p/b", "not deleted: it changed meanwhile", skipped=True)
    assert not beside.skipped and skipped.skipped
    assert [Conflict.of(c.json()) for c in (beside, skipped)] == [beside, skipped]
    assert Conflict.of(["/p/c", "older journal line"]) == Conflict("/p/c", "older journal line")


def test_git_freshening_its_objects_is_not_counted_as_files_changed(copy: Copy) -> None:
    # Issue 45 item 2: in a copied checkout git's index is stale; `git add -A` hashes every file again and, finding
    # each object there, sets its time (freshening). Only times changed: no file deleted, overwritten or re-moded,
    # so not "more than max_files" — every such `git add -A` / `git commit -a` was asked about.
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "HOME": str(copy.root.parent), "PATH": os.environ["PATH"]}  # fmt: skip
    for i in range(40):
        (copy.root / "src" / f"f{i}.py").parent.mkdir(exist_ok=True)
        (copy.root / "src" / f"f{i}.py").write_text(f"x = {i}\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=copy.root, check=True, capture_output=True, env=env)
    old = 1_000_000_000
    for path in (copy.root / ".git" / "objects").rglob("*"):
        if path.is_file():
            os.utime(path, (old, old))  # as a copy of the project leaves them: older than now
    changes = copy.run("touch src/*.py && git add -A")  # a stale index: every file hashed again
    freshened = [c for c in changes.changes if c.action == "meta" and c.path.startswith(".git/objects/")]
    assert len(freshened) > POLICY.effects.max_files, actions(changes)
    judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert not any("It deletes, replaces or empties" in ask for ask in judged.asks), judged.asks
