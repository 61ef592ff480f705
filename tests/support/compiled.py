"""The compiled-code cache (``serving.code_cache``) installed in a test's own process, for that test only."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from mcp_server_guard.serving import code_cache


def install_for_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """Empty and usable, on ``dataclasses`` and ``typing`` until the test ends (``monkeypatch`` takes it off)."""
    monkeypatch.setattr(code_cache, "_codes", {})
    monkeypatch.setattr(code_cache, "_new", False)
    monkeypatch.setattr(code_cache, "_usable", True)
    monkeypatch.setattr(dataclasses, "exec", code_cache._exec, raising=False)
    monkeypatch.setattr(typing, "compile", code_cache._compile, raising=False)
