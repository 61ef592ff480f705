"""Shared fixtures: a workspace with an outside sibling, a fake HOME, the protocol era; and each test's tier.

Tiers (markers, given to each test by what its own code uses: support/tiers.py): ``unit`` (the library in this
process), ``memory`` (a server in this process, driven by the SDK's in-memory client: ``support.memory``), ``stdio``
(the real console scripts over stdio, or the CLI as a process), ``box`` (commands run in the box: bubblewrap,
overlays, the differential harness). ``uv run pytest -m "unit or memory"`` is the fast loop; ``uv run pytest``
runs every tier.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_server_guard.changes.transactions import Transactions
from support import MODES
from support.settling import transactions_over
from support.tiers import TIERS, Tiers

_TIERS = Tiers()


def pytest_configure(config: pytest.Config) -> None:
    for tier in TIERS:
        config.addinivalue_line("markers", f"{tier}: a test of the {tier} tier (tests/conftest.py)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(_TIERS.of_item(item))


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


@pytest.fixture
def state_on_tmpfs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The state directory (so the history store) on another file system than the project: a tmpfs."""
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    state = Path(tempfile.mkdtemp(prefix="state-", dir="/dev/shm"))
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    try:
        yield state
    finally:
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture
def settled(tmp_path: Path) -> Iterator[tuple[Transactions, Path]]:
    """A server's transactions over ``tmp_path/root``, and the part of the area its copies live in (copies made by
    hand and settled as a call's end settles them: ``support.settling``)."""
    with transactions_over(tmp_path / "root", tmp_path / "state", tmp_path / "history") as made:
        yield made
