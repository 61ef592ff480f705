"""The deletion questions look at what was lost, not at what stands at the path afterwards: a tree deleted and
made again is a tree deletion, and deleting a few files no repository keeps is asked. On real upper layers."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.changes.effects import Judgement, judge
from mcp_server_guard.files.history import HistoryStore
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()


def judged(tmp_path: Path, script: str, *, git: bool = False) -> Judgement:
    copy = Copy(tmp_path)
    (copy.root / "d" / "sub").mkdir(parents=True)
    for i in range(3):
        (copy.root / "d" / f"f{i}.txt").write_text(f"{i}\n")
    (copy.root / "d" / "sub" / "g.txt").write_text("g\n")
    (copy.root / "one.txt").write_text("one\n")
    if git:
        subprocess.run(["git", "init", "-q", str(copy.root)], check=True)
        subprocess.run(["git", "-C", str(copy.root), "add", "."], check=True)
    return judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])


def test_attack_tree_deleted_and_made_again_empty_is_asked_as_a_tree_deletion(tmp_path: Path) -> None:
    asks = judged(tmp_path, "rm -r d; mkdir d", git=True).asks
    assert "It deletes d/ (4 files)." in asks, asks


def test_attack_deleting_files_no_repository_keeps_is_asked_above_the_threshold(tmp_path: Path) -> None:
    asks = judged(tmp_path, "rm one.txt d/f0.txt d/f1.txt d/f2.txt").asks
    assert any(a.startswith("It deletes or empties 4 files no git repository has a copy of") for a in asks), asks


def test_deleting_a_file_or_two_outside_git_or_files_git_keeps_is_not_asked(tmp_path: Path) -> None:
    assert judged(tmp_path / "few", "rm one.txt d/f0.txt").asks == []
    assert judged(tmp_path / "kept", "rm one.txt d/f0.txt d/f1.txt d/f2.txt", git=True).asks == []


def _deepest(root: Path) -> tuple[list[str], int]:
    """The names in the deepest directory below ``root`` (one directory per level), and how deep it is in bytes."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    depth = 0
    try:
        while True:
            dirs = [n for n in os.listdir(fd) if stat.S_ISDIR(os.stat(n, dir_fd=fd, follow_symlinks=False).st_mode)]
            if not dirs:
                return sorted(os.listdir(fd)), depth
            nxt = os.open(dirs[0], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd, depth = nxt, depth + len(dirs[0]) + 1
    finally:
        os.close(fd)


def test_attack_refused_entries_beyond_path_max_never_land_with_their_tree(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    program = tmp_path / "deep.py"  # a shell's cd cannot go past PATH_MAX; descriptors can
    program.write_text(
        "import os\n"
        "fd = os.open('.', os.O_RDONLY)\n"
        "for name in ['deep'] + ['x' * 200] * 24:\n"
        "    os.mkdir(name, dir_fd=fd)\n"
        "    fd = os.open(name, os.O_RDONLY, dir_fd=fd)\n"
        "os.mkfifo('pipe', dir_fd=fd)\n"
        "for name, text in (('.envrc', 'echo hi'), ('fine.txt', 'ok')):\n"
        "    os.write(os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), text.encode())\n"
    )
    script = f"python3 {program}"
    changes = copy.run(script)
    judgement = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    refused = {path.rsplit("/", 1)[-1] for _root, path in judgement.refused}
    assert refused == {"pipe", ".envrc"}, judgement.refused
    Applier(HistoryStore(tmp_path / "history", 1 << 30)).apply(
        [changes], "a00000000001", copy.started, skip=frozenset(judgement.refused)
    )
    names, depth = _deepest(copy.root / "deep")
    assert depth > 4096 and names == ["fine.txt"], names


def test_a_directory_holding_a_symlink_moved_is_a_move_not_a_deletion(tmp_path: Path) -> None:
    # Red team 40j B: `mv d d2` of a directory holding a symlink paired only its files: the link was "deleted",
    # and the person was asked "It deletes d/" (a job's end was held, and the move never landed). A link deleted
    # where one with another target is made is still a deletion.
    copy = Copy(tmp_path / "a")
    (copy.root / "d").mkdir()
    (copy.root / "d" / "f.txt").write_text("f\n")
    (copy.root / "one.txt").write_text("one\n")
    os.symlink("../one.txt", copy.root / "d" / "s")
    moved = judge([copy.run("mv d d2")], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert not moved.asks and moved.summary == "move 2 files under d/ to d2/", (moved.asks, moved.summary)
    other = Copy(tmp_path / "b")
    (other.root / "d").mkdir()
    (other.root / "d" / "f.txt").write_text("f\n")
    (other.root / "one.txt").write_text("one\n")
    os.symlink("../one.txt", other.root / "d" / "s")
    retargeted = judge([other.run("mv d d2 && ln -sfn ../two.txt d2/s")], protection_for(POLICY), POLICY.effects,
                       [str(other.root)])  # fmt: skip
    assert "It deletes d/ (1 file)." in retargeted.asks, retargeted.asks


def test_a_file_re_moded_through_one_name_and_moved_through_another_is_summed_up_without_a_negative_count(
    tmp_path: Path,
) -> None:
    # Red team 40l C: "change the times or attributes of -1 files".
    copy = Copy(tmp_path)
    (copy.root / "d").mkdir()
    (copy.root / "d" / "f.txt").write_text("f\n")
    os.link(copy.root / "d" / "f.txt", copy.root / "g")
    judged = judge([copy.run("chmod 600 g; mv d d2")], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert "-1" not in judged.summary and "change the mode of" in judged.summary, judged.summary
