"""The write rule every writer uses, asked of a path in an allowed HOME (a fake one under the test's tmp dir)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for

POLICY = load_policy()


def home_write_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str) -> str | None:
    """Why a tool may not write ``path`` (relative to HOME, HOME the allowed root), or None."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    return protection_for(POLICY).write_rule([path, str(home / path)], None, [str(home)])
