"""Unit tests of the write guards: protected-path matching, executable detection, history store, restore."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.errors import GuardError
from mcp_server_guard.files.history import HistoryError, HistoryStore
from mcp_server_guard.files.history_entries import NoRoom
from mcp_server_guard.files.kept import disk_usage
from mcp_server_guard.files.write_checks import check_executable_content
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import Protection
from support import console_script

POLICY = load_policy().file_write


@pytest.mark.parametrize(
    ("path", "protected"),
    [
        (".git/hooks/pre-commit", True),
        ("deep/repo/.git/hooks/x/y", True),
        (".git/config", True),
        (".git/configs", False),
        ("src/.bashrc", True),
        ("bashrc.txt", False),
        ("/home/u/.vscode/mcp.json", True),
        (".vscode/settings.json", True),
        ("src/vscode/settings.json", False),
        ("notes/.MCP.JSON", True),
        (".ssh/authorized_keys", True),
        ("docs/git/hooks.md", False),
    ],
)
def test_protected_path_patterns(path: str, protected: bool) -> None:
    matcher = Protection(load_policy().paths.protected)
    assert (matcher.write_rule([path], None, ()) is not None) is protected


def test_protected_files_match_by_path_and_by_inode(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    audit.write_text("", encoding="utf-8")
    os.link(audit, tmp_path / "hardlink")
    matcher = Protection([], files=[audit], dirs=[tmp_path / "hist"])
    assert matcher.write_rule([str(audit)], None, ())
    assert matcher.write_rule([str(tmp_path / "hist" / "x.data")], None, ())
    assert matcher.write_rule(["elsewhere"], os.stat(tmp_path / "hardlink"), ())
    assert matcher.write_rule([str(tmp_path / "other")], os.stat(tmp_path), ()) is None


@pytest.mark.parametrize(
    ("name", "content", "code"),
    [
        ("a.SH", b"echo", "EXECUTABLE_EXTENSION"),
        ("lib.so", b"", "EXECUTABLE_EXTENSION"),
        ("x", b"#!/bin/sh\n", "EXECUTABLE_CONTENT"),
        ("x", b"#! /usr/bin/env bash\n", "EXECUTABLE_CONTENT"),
        ("x", b"#!/usr/bin/env FOO=1 zsh\n", "EXECUTABLE_CONTENT"),
        (
            "x",
            b"\x7fELF\x02\x01\x01\x00" + bytes(8) + b"\x02\x00\x3e\x00\x01\x00\x00\x00" + bytes(100),
            "EXECUTABLE_CONTENT",
        ),
        ("x", b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00" + bytes(48), "EXECUTABLE_CONTENT"),
    ],
)
def test_executable_content_is_detected(name: str, content: bytes, code: str) -> None:
    with pytest.raises(GuardError) as info:
        check_executable_content(name, content, POLICY)
    assert info.value.code == code


@pytest.mark.parametrize(
    ("name", "content"),
    [("main.py", b"#!/usr/bin/env python3\nprint(1)\n"), ("README.md", b"# sh\n"), ("data.json", b'{"a": 1}')],
)
def test_ordinary_files_pass_the_executable_check(name: str, content: bytes) -> None:
    check_executable_content(name, content, POLICY)


def _save(store: HistoryStore, tmp_path: Path, body: bytes, name: str = "f.txt") -> str:
    src = tmp_path / "src"
    src.write_bytes(body)
    fd = os.open(src, os.O_RDONLY)
    try:
        return store.save(fd, str(tmp_path / name), 0o644).id
    finally:
        os.close(fd)


def _on_disk(directory: Path, entry_id: str) -> int:
    return sum(disk_usage((directory / f"{entry_id}{suffix}").stat()) for suffix in (".data", ".json"))


def test_history_evicts_oldest_first_and_refuses_what_cannot_fit_alone(tmp_path: Path) -> None:
    probe = HistoryStore(tmp_path / "probe", max_bytes=1 << 20)
    one = _on_disk(probe.directory, _save(probe, tmp_path, b"A" * 100))  # what an entry costs on this disk
    store = HistoryStore(tmp_path / "hist", max_bytes=one * 2 + one // 2)
    ids = [_save(store, tmp_path, bytes([65 + i]) * 100) for i in range(4)]
    kept = [e.id for e in store.entries()]
    assert kept == ids[-2:]
    entry, data = store.get(ids[-1])
    assert data.read_bytes() == b"D" * 100 and entry.size == 100 and entry.path == str(tmp_path / "f.txt")
    with pytest.raises(NoRoom, match="history_max_bytes"):
        _save(store, tmp_path, b"z" * (one * 4))  # over the bound alone: refused, nothing evicted for it
    assert [e.id for e in store.entries()] == ids[-2:]


def test_history_counts_metadata_and_bounds_the_number_of_entries(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "hist", max_bytes=1 << 30, max_entries=3)
    ids = [_save(store, tmp_path, b"") for _ in range(7)]  # empty contents still cost their metadata
    kept = [e.id for e in store.entries()]
    assert 1 <= len(kept) <= 3 and kept == ids[-len(kept) :]  # the newest, within the bound
    assert sorted(p.name for p in store.directory.iterdir() if p.suffix in (".data", ".json")) == sorted(
        f"{i}{s}" for i in kept for s in (".data", ".json")
    )
    with pytest.raises(HistoryError):
        store.get("../../etc/passwd")


def test_history_restore_goes_through_the_same_guards(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    hist = tmp_path / "hist"
    store = HistoryStore(hist, 1 << 20)
    inside = _save(store, tmp_path, b"old inside\n", name="proj/doc.txt")
    outside = _save(store, tmp_path, b"old outside\n", name="elsewhere.txt")
    (proj / "doc.txt").write_text("new\n", encoding="utf-8")
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    base = [console_script("mcp-guard"), "history", "restore"]
    common = ["--history-dir", str(hist), "--audit-log", str(tmp_path / "audit.jsonl")]
    ok = subprocess.run([*base, inside, *common], cwd=proj, capture_output=True, text=True, timeout=30, env=env)
    assert ok.returncode == 0, ok.stderr
    assert (proj / "doc.txt").read_text(encoding="utf-8") == "old inside\n"
    assert "saved as" in ok.stdout  # the content it replaced went to the history too
    allowed = ["--allow-path", str(proj)]  # the directories it may write in, said: the entry lies outside them
    refused = subprocess.run([*base, outside, *common, *allowed], cwd=proj, capture_output=True, text=True,
                             timeout=30, env=env)  # fmt: skip
    assert refused.returncode == 2 and "PATH_OUTSIDE_JAIL" in refused.stderr
    assert not (tmp_path / "elsewhere.txt").exists() or (tmp_path / "elsewhere.txt").read_bytes() != b"old outside\n"


def test_history_restore_works_from_any_directory(tmp_path: Path) -> None:
    """Like undo: the entry goes back to its recorded path, within the directories its call was allowed (or its own
    directory), whatever directory the person runs the command from (issue 43: from HOME it once looked in another
    store, from elsewhere it refused the path as outside the jail)."""
    proj = tmp_path / "proj"
    proj.mkdir()
    hist = tmp_path / "hist"
    entry = _save(HistoryStore(hist, 1 << 20), tmp_path, b"old\n", name="proj/doc.txt")
    (proj / "doc.txt").write_text("new\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run(
        [console_script("mcp-guard"), "history", "restore", entry, "--history-dir", str(hist),
         "--audit-log", str(tmp_path / "audit.jsonl")],
        cwd=elsewhere, capture_output=True, text=True, timeout=30, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (proj / "doc.txt").read_text(encoding="utf-8") == "old\n"
