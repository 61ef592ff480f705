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
