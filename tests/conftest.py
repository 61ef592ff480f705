"""Shared fixtures: a workspace with an outside sibling, a fake HOME, the protocol era."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support import MODES


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(autouse=True)
def _no_real_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs with HOME and XDG_STATE_HOME in a temp dir of its own (beside tmp_path, so tmp_path stays
    empty): a test that starts a server or the CLI without asking for a home never writes to the real state dir."""
    home = tmp_path_factory.mktemp("home")
    (home / ".local" / "state").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("MCP_GUARD_RUNTIME_DIR", str(home / ".servers"))  # the servers' registry, of this test only


@pytest.fixture
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME and XDG_STATE_HOME inside tmp_path, so nothing a server writes by default leaves it."""
    home = tmp_path / "home"
    (home / ".local" / "state").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    return home


@pytest.fixture
def workspace(tmp_path: Path, isolated_home: Path) -> Iterator[Path]:
    """tmp/proj is the launch directory; tmp/proj-evil and tmp/outside hold what must stay unreachable."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "hello.txt").write_text("hello\nworld\n", encoding="utf-8")
    (proj / "sub").mkdir()
    (proj / "sub" / "inner.txt").write_text("inner\n", encoding="utf-8")
    evil = tmp_path / "proj-evil"
    evil.mkdir()
    (evil / "secret.txt").write_text("SECRET-SIBLING\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET-OUTSIDE\n", encoding="utf-8")
    yield proj
