"""Red team 42q M and 42p D (promise 3): the registry of the user's servers lived in ``/tmp/mcp-guard-<uid>``,
which another local user could make first (the servers then carried on without it: every other server's state in
sight), and which a reboot emptied (the state of a server not started again since was then in every other
server's sight). It lives in the account's own home now, the same for every server of the user."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from mcp_server_guard import registry


def test_the_registry_lies_in_the_accounts_home_whatever_home_a_server_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(registry.ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "one"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    first = registry.directory()
    monkeypatch.setenv("HOME", str(tmp_path / "two"))
    assert registry.directory() == first
    assert first == Path(pwd.getpwuid(os.getuid()).pw_dir) / ".local" / "state" / "mcp-guard-servers"
    assert not str(first).startswith("/tmp/")


def test_entries_of_state_directories_that_are_gone_are_removed_so_the_rest_stay_within_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Red team 48 (noted): servers run with a state directory per session left an entry each; past the bound of
    entries read, the state of the user's other servers was no longer hidden."""
    where = tmp_path / "registry"
    monkeypatch.setenv(registry.ENV, str(where))
    assert registry._private(where, make=True)
    kept, gone = tmp_path / "kept-state", tmp_path / "gone"
    kept.mkdir()
    for n in range(registry._PRUNE_AT):
        registry._add_state(where, [gone / f"session-{n}"])
    registry._add_state(where, [kept])
    assert len(registry.state_paths()) == registry._PRUNE_AT + 1
    own = tmp_path / "own-state"
    own.mkdir()
    registration = registry.register([str(tmp_path / "root")], [own])
    assert registration is not None
    try:
        assert set(registry.state_paths()) == {str(kept), str(own)}
    finally:
        registration.close()


def test_below_the_pruning_mark_no_entry_is_looked_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = tmp_path / "registry"
    monkeypatch.setenv(registry.ENV, str(where))
    assert registry._private(where, make=True)
    registry._add_state(where, [tmp_path / "gone"])
    registration = registry.register([str(tmp_path / "root")], [])
    assert registration is not None
    try:
        assert registry.state_paths() == (str(tmp_path / "gone"),)  # kept: a start costs nothing more
    finally:
        registration.close()
