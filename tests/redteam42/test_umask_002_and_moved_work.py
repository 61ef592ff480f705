"""Red team 42p: a user whose umask is 002 (user-private groups: the default of Debian, Ubuntu and Fedora users) got
every new directory refused as "writable by others" (a `git commit` then landed its index and refs without its
objects: a broken repository), and shell_exec could not start (the state directory's parents were made 0775).
Drafts moved by one call and overwritten by the next lost their "only copy" standing (the move's new names were
taken for the server's own output). And a PATH entry written with a literal ``~`` was no program directory."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.files.calls import CallRecords
from mcp_server_guard.paths import path_directories
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work
from support.redteam import FW, SX, audit_id_of, call, started

POLICY = load_policy()
ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


@pytest.fixture
def umask_002() -> Iterator[None]:
    old = os.umask(0o002)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_under_umask_002_new_directories_and_a_commit_are_everyday_work(
    tmp_path: Path, umask_002: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    copy = Copy(tmp_path)
    os.chmod(copy.root, 0o775)
    subprocess.run(["git", "init", "-q", str(copy.root)], check=True)
    script = "mkdir -p src/pkg && echo x > src/pkg/m.py && git add -A && git commit -qm one && git init -q sub"
    sets = [copy.run(script)]
    judged = judge(sets, protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert not judged.refused, judged.refused
    assert not judged.asks, judged.asks


def test_under_umask_002_the_servers_start_again_and_again_with_a_private_state_directory(
    tmp_path: Path, isolated_home: Path, umask_002: None
) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    state_home = isolated_home / "fresh-state"  # made by the server itself
    env = {"XDG_STATE_HOME": str(state_home)}
    for start in range(2):
        for server, tool, arguments in ((FW, "file_write", {"path": "a.txt", "content": "hi\n", "overwrite": True}),
                                        (SX, "shell_exec", {"command": "echo hi > b.txt"})):  # fmt: skip
            raw = started(server, root, tmp_path / f"s{start}{tool}", env=env)
            try:
                assert not call(raw, 1, tool, arguments).get("isError")
            finally:
                raw.close()
    assert (state_home / "mcp-guard").stat().st_mode & 0o777 == 0o700


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_attack_drafts_moved_then_overwritten_keep_their_only_copy_standing(tmp_path: Path) -> None:
    root, state = tmp_path / "proj", tmp_path / "state"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "notes").mkdir()
    for i in range(2):
        (root / f"draft{i}.md").write_text(f"uncommitted work {i}\n" * 100)
    raw = started(SX, root, state)
    try:
        call(raw, 1, "shell_exec", {"command": "mv draft0.md draft1.md notes/"})
        overwrite = call(raw, 2, "shell_exec", {"command": "for f in notes/draft*.md; do echo > $f; done"})
    finally:
        raw.close()
    record = CallRecords(state / "history" / "calls").read(audit_id_of(overwrite))
    assert record.get("only_copies") == [str(root / "notes" / f"draft{i}.md") for i in range(2)], record


def test_a_path_entry_written_with_a_literal_tilde_is_a_program_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"~/mytools{os.pathsep}/usr/bin")
    assert f"{tmp_path}/mytools" in path_directories(str(tmp_path))
