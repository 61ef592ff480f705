"""Where the key that seals the apply journals lives (red team 95 F1): in the registry of the user's servers, which
no tool or command of any server may write, not beside the journals in a state directory a command could make while
it is gone."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from mcp_server_guard import registry
from mcp_server_guard.changes.journal import KEY, journal_key


def test_the_journal_key_is_kept_in_the_servers_registry_not_in_the_history_store(tmp_path: Path) -> None:
    history = tmp_path / "state" / "history"
    key = journal_key(history)
    assert len(key) == 32
    assert (registry.directory() / "journal.key").read_bytes() == key
    assert not (history / KEY).exists()
    assert journal_key(tmp_path / "another" / "history") == key  # one key for every history store of the user


def test_a_key_planted_in_a_history_store_is_not_the_journal_key(tmp_path: Path) -> None:
    history = tmp_path / "state" / "history"
    history.mkdir(parents=True, mode=0o700)
    planted = bytes(range(32))
    (history / KEY).write_bytes(planted)
    os.chmod(history / KEY, 0o600)
    assert journal_key(history) != planted


class _Said(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_without_a_usable_registry_the_key_is_kept_in_the_history_store_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = tmp_path / "not-a-directory"
    taken.write_text("")  # the registry's place holds a file: it cannot be made
    monkeypatch.setenv(registry.ENV, str(taken))
    history = tmp_path / "state" / "history"
    said = _Said()
    logger = logging.getLogger("mcp_server_guard")
    logger.addHandler(said)
    try:
        key = journal_key(history)
    finally:
        logger.removeHandler(said)
    assert (history / KEY).read_bytes() == key
    assert any("cannot be made" in line for line in said.lines), said.lines
