"""A huge judgement is not judged again for every write of another agent that cannot matter to it (issue 42 item 7):
the tree lock's log says what each writer wrote, and only plain content far from the judged paths is let pass."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.changes.effects import judge as effects_judge
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.unrelated import DECLARED_MAX, declared, plain, unrelated_to
from mcp_server_guard.files import treelock
from mcp_server_guard.files.treelock import generations, tree_lock
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.settling import settle, untouched_copy

pytestmark = pytest.mark.anyio
POLICY = load_policy(None)


def _device(path: Path) -> list[int]:
    return [path.stat().st_dev]


def _lock_file(device: int) -> Path:
    from mcp_server_guard import registry

    return registry.directory() / "locks" / f"{device}.lock"


# -- the tree lock's log ------------------------------------------------------------------------------------------


def test_a_judgement_stands_when_every_writer_since_said_it_wrote_what_cannot_matter(tmp_path: Path) -> None:
    device = _device(tmp_path)
    seen = generations(device)
    for name in ("a.md", "b.md"):
        written = [str(tmp_path / name)]
        with tree_lock(device, wrote=written.copy):
            pass
    heard: list[frozenset[str]] = []

    def unrelated(written: frozenset[str]) -> bool:
        heard.append(written)
        return True

    with tree_lock(device, since=seen, unrelated=unrelated) as changed:
        assert not changed
    assert heard == [frozenset({str(tmp_path / "a.md"), str(tmp_path / "b.md")})]


def test_a_judgement_is_stale_when_what_was_written_since_may_matter(tmp_path: Path) -> None:
    device = _device(tmp_path)
    seen = generations(device)
    with tree_lock(device, wrote=lambda: [str(tmp_path / "HEAD")]):
        pass
    with tree_lock(device, since=seen, unrelated=lambda written: False) as changed:
        assert changed


def test_a_writer_that_says_nothing_makes_every_judgement_begun_before_it_stale(tmp_path: Path) -> None:
    device = _device(tmp_path)
    seen = generations(device)
    with tree_lock(device, wrote=lambda: [str(tmp_path / "a.md")]):
        pass
    with tree_lock(device):  # (an undo, a recovery: they do not say)
        pass
    with tree_lock(device, since=seen, unrelated=lambda written: True) as changed:
        assert changed


def test_a_writer_rewriting_its_notes_more_often_than_the_log_keeps_leaves_a_judgement_standing(tmp_path: Path) -> None:
    # Red team 100 F5: a long judgement outlasts many takings; older runs of takings are merged, not forgotten.
    device = _device(tmp_path)
    seen = generations(device)
    for _ in range(treelock.LOG_KEEP * 4):
        with tree_lock(device, wrote=lambda: [str(tmp_path / "notes.md")]):
            pass
    with tree_lock(device, since=seen, unrelated=lambda written: written == {str(tmp_path / "notes.md")}) as changed:
        assert not changed


def test_a_writer_that_said_nothing_before_a_judgement_began_does_not_make_it_stale_later(tmp_path: Path) -> None:
    # A run of "anything" is forgotten when the log is full, never merged with the runs after it.
    device = _device(tmp_path)
    with tree_lock(device):  # (an undo, long before)
        pass
    seen = generations(device)
    for _ in range(treelock.LOG_KEEP * 3):
        with tree_lock(device, wrote=lambda: [str(tmp_path / "notes.md")]):
            pass
    with tree_lock(device, since=seen, unrelated=lambda written: written == {str(tmp_path / "notes.md")}) as changed:
        assert not changed


def test_more_paths_than_merged_runs_keep_make_a_judgement_stale(tmp_path: Path) -> None:
    device = _device(tmp_path)
    seen = generations(device)
    for index in range(treelock.LOG_TOTAL + 1):
        said = [str(tmp_path / f"n{index}.md")]
        with tree_lock(device, wrote=said.copy):
            pass
    with tree_lock(device, since=seen, unrelated=lambda written: True) as changed:
        assert changed


def test_a_log_that_does_not_read_makes_a_judgement_stale(tmp_path: Path) -> None:
    device = _device(tmp_path)
    seen = generations(device)
    with tree_lock(device, wrote=lambda: [str(tmp_path / "a.md")]):
        pass
    lock = _lock_file(device[0])
    with open(lock, "r+b") as handle:  # (a write the disk refused half way)
        handle.seek(8)
        handle.write(b'[[1, 2, 3, ["/x"]')
    with tree_lock(device, since=seen, unrelated=lambda written: True) as changed:
        assert changed


@pytest.mark.parametrize("where", ["before", "after", "alone"])
def test_a_writer_counted_by_its_time_alone_makes_a_judgement_stale(tmp_path: Path, where: str) -> None:
    # A full disk refuses the count's bytes: such a taking moves only the lock file's time, and logs nothing.
    device = _device(tmp_path)
    lock = _lock_file(device[0])
    seen = generations(device)

    def by_time_alone() -> None:
        later = os.stat(lock).st_mtime_ns + 1
        os.utime(lock, ns=(later, later))

    if where == "before":
        by_time_alone()
    if where != "alone":
        with tree_lock(device, wrote=lambda: [str(tmp_path / "a.md")]):
            pass
    if where != "before":
        by_time_alone()
    with tree_lock(device, since=seen, unrelated=lambda written: True) as changed:
        assert changed


def test_a_write_too_large_to_say_is_anything(tmp_path: Path) -> None:
    device = _device(tmp_path)
    seen = generations(device)
    many = [str(tmp_path / f"f{i}.md") for i in range(treelock.LOG_PATHS + 1)]
    with tree_lock(device, wrote=lambda: many):
        pass
    with tree_lock(device, since=seen, unrelated=lambda written: True) as changed:
        assert changed


# -- what cannot matter -------------------------------------------------------------------------------------------


def _set(root: Path, *changes: Change, incomplete: bool = False) -> ChangeSet:
    return ChangeSet(str(root), str(root / "upper"), changes, incomplete=incomplete)


def _built(root: Path) -> ChangeSet:
    return _set(root, Change("build", "create", "dir"), Change("build/a.o", "create", "file", top="build"))


def test_another_agents_notes_file_cannot_matter_to_a_builds_judgement(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    unrelated = unrelated_to([_built(root)], protection_for(POLICY), [str(root)])
    assert unrelated is not None
    assert unrelated(frozenset({str(root / "notes.md"), str(root / "src" / "app.py")}))


@pytest.mark.parametrize(
    "written",
    [
        "build",  # a judged path
        "build/b.o",  # below a judged directory
        "HEAD",  # what a git dir is made of, beside a judged directory
        "src/objects/a.md",  # a plain name that makes src/ a git dir with the next one
        ".envrc",  # a dot file: a config
        ".github/notes.md",
        "package.json",  # a manifest: no content suffix
        "Makefile",
        "CACHEDIR.TAG",  # what makes a directory a cache
        "notes.md/../HEAD",  # not a real path as said
        "relative.md",
    ],
)
def test_a_write_that_may_matter_makes_a_builds_judgement_stale(tmp_path: Path, written: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    unrelated = unrelated_to([_built(root)], protection_for(POLICY), [str(root)])
    assert unrelated is not None
    path = written if written == "relative.md" else f"{root}/{written}"
    assert not unrelated(frozenset({path}))


def test_attack_a_plain_file_inside_a_bare_git_dir_makes_a_judgement_stale(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "repo" / "objects").mkdir(parents=True)
    (root / "repo" / "refs").mkdir()
    unrelated = unrelated_to([_built(root)], protection_for(POLICY), [str(root)])
    assert unrelated is not None
    assert not unrelated(frozenset({str(root / "repo" / "description.md")}))


def test_attack_a_plain_file_a_git_config_includes_makes_a_judgement_stale(tmp_path: Path) -> None:
    # Threat: notes.md is included by the repository's config; another writer puts core.fsmonitor in it while a
    # change set is judged against the config as it was.
    root = tmp_path / "root"
    (root / ".git" / "objects").mkdir(parents=True)
    (root / ".git" / "refs").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".git" / "config").write_text("[include]\n\tpath = ../notes.md\n")
    unrelated = unrelated_to([_built(root)], protection_for(POLICY), [str(root)])
    assert unrelated is not None
    assert not unrelated(frozenset({str(root / "notes.md")}))
    assert unrelated(frozenset({str(root / "other.md")}))


@pytest.mark.parametrize(
    "change",
    [
        Change("build/.env", "create", "file"),  # a dot file: its judgement may read what it names
        Change("build/settings.json", "create", "file"),
        Change("build/link.md", "create", "symlink"),
        Change("build/hooks/a.md", "create", "file"),
    ],
)
def test_a_change_set_with_more_than_plain_content_is_stale_for_any_write(tmp_path: Path, change: Change) -> None:
    root = tmp_path / "root"
    assert unrelated_to([_set(root, change)], protection_for(POLICY), [str(root)]) is None


def test_a_cut_change_set_is_stale_for_any_write_and_says_it_may_write_anything(tmp_path: Path) -> None:
    cut = _set(tmp_path, Change("a.md", "create", "file"), incomplete=True)
    assert unrelated_to([cut], protection_for(POLICY), [str(tmp_path)]) is None
    assert declared([cut]) is None
    many = _set(tmp_path, *(Change(f"f{i}.md", "create", "file") for i in range(DECLARED_MAX + 1)))
    assert declared([many]) is None
    assert declared([_built(tmp_path)]) == [str(tmp_path / "build"), str(tmp_path / "build/a.o")]


def test_plain_names_are_content_with_no_dot_and_no_git_part() -> None:
    assert plain(["src", "app.py"]) and plain(["build"], directory=True)
    assert not plain(["src", "Refs", "a.md"]) and not plain([".venv", "a.py"]) and not plain(["tool"])
    assert not plain(["a.pth"]) and not plain([".md"]) and not plain([])


# -- through a call's settling ------------------------------------------------------------------------------------


async def test_a_judgement_stands_while_another_agent_keeps_writing_its_notes(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 42 item 7: before, every write made the judgement run again, and after three rounds it ran under the
    # tree lock, where the other agent's file_write waited for it (FILE_BUSY past 10 s for a huge one).
    transactions, part = settled
    root = tmp_path / "root"
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "build").mkdir()
    (copy / "u0" / "build" / "a.o").write_bytes(b"\x7fELF")
    real = effects_judge
    rounds: list[int] = []

    def other_agent() -> None:
        with tree_lock(_device(root), wait_s=2, wrote=lambda: [str(root / "notes.md")]):
            (root / "notes.md").write_text(f"{len(rounds)}\n")

    def judging(*args: Any, **kwargs: Any) -> Any:
        rounds.append(1)
        writer = threading.Thread(target=other_agent)
        writer.start()
        writer.join(10)
        return real(*args, **kwargs)

    monkeypatch.setattr("mcp_server_guard.changes.effects.judge", judging)  # (looked up at each judgement)
    assert await settle(transactions, copy.name) == "applied"
    assert len(rounds) == 1  # judged once: the notes cannot matter to it
    assert (root / "build" / "a.o").read_bytes() == b"\x7fELF" and (root / "notes.md").read_text() == "1\n"


async def test_attack_a_writer_that_says_it_made_a_git_dir_still_makes_a_plain_judgement_stale(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Red team 82 F2 with a writer that says what it wrote: the names a git dir is made of are never "unrelated",
    # even beside a change set of plain content.
    transactions, part = settled
    root = tmp_path / "root"
    (root / "shaped").mkdir()
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "shaped").mkdir()
    (copy / "u0" / "shaped" / "notes.md").write_text("plain\n")
    real = effects_judge
    rounds: list[int] = []
    made = [str(root / "shaped" / name) for name in ("objects", "refs", "HEAD")]

    def other_server() -> None:
        with tree_lock(_device(root), wait_s=2, wrote=lambda: made):
            (root / "shaped" / "objects").mkdir()
            (root / "shaped" / "refs").mkdir()
            (root / "shaped" / "HEAD").write_text("ref: refs/heads/main\n")

    def judging(*args: Any, **kwargs: Any) -> Any:
        rounds.append(1)
        if len(rounds) == 1:
            writer = threading.Thread(target=other_server)
            writer.start()
            writer.join(10)
        return real(*args, **kwargs)

    monkeypatch.setattr("mcp_server_guard.changes.effects.judge", judging)  # (looked up at each judgement)
    await settle(transactions, copy.name)
    assert len(rounds) == 2  # judged again, in a git dir now
