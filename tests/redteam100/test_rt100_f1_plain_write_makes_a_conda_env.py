"""Red team 100 F1: a plain-named write that makes a directory a Python environment (``conda-meta/``, a plain
directory name) lets a judgement made before it stand.

A command writes ``env/bin/activate_this.py`` in an existing ``env/bin/`` (no environment marker yet: an ordinary
project file, not asked). While that change set is judged, another agent's file_write writes
``env/conda-meta/history.txt`` (plain content by name, far from the judged paths: file_write accepts it). The
judgement stands (``changes.unrelated``) and the entry point lands in what is now an environment without the
question a judgement made after the write asks ("every activation ... runs it").

Answered: the names that make a directory an environment (``python_startup.SHAPE_NAMES``) are never plain, and a
change set holding an environment's start-up file is judged again for any write (``changes.unrelated``).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.changes.effects import judge as effects_judge
from mcp_server_guard.changes.transactions import Transactions
from support.settling import settle, untouched_copy
from support.two_servers import FW, ask, started

pytestmark = pytest.mark.anyio

ENTRY = "# an entry point: harmless here\n"


def _file_write(root: Path, state: Path, rel: str, content: str) -> dict[str, Any] | None:
    server = started(FW, root, state / "fw-state", state / "fw-history")
    return ask(server, "file_write", {"path": rel, "content": content, "createDirs": True}, 60)


async def test_control_an_entry_point_in_a_conda_env_is_not_applied_unasked(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    (root / "env" / "bin").mkdir(parents=True)
    (root / "env" / "conda-meta").mkdir()
    (root / "env" / "conda-meta" / "history.txt").write_text("made\n")
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "env" / "bin").mkdir(parents=True)
    (copy / "u0" / "env" / "bin" / "activate_this.py").write_text(ENTRY)
    assert await settle(transactions, copy.name) != "applied"
    assert not (root / "env" / "bin" / "activate_this.py").exists()


async def test_attack_a_plain_write_of_conda_meta_mid_judgement_lands_an_entry_point_unasked(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    (root / "env" / "bin").mkdir(parents=True)
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "env" / "bin").mkdir(parents=True)
    (copy / "u0" / "env" / "bin" / "activate_this.py").write_text(ENTRY)
    rounds: list[Any] = []

    def judging(*args: Any, **kwargs: Any) -> Any:
        judgement = effects_judge(*args, **kwargs)
        rounds.append(1)
        if len(rounds) == 1:  # judged; before the apply another agent writes through the real file_write
            done: list[dict[str, Any] | None] = []
            writer = threading.Thread(
                target=lambda: done.append(_file_write(root, tmp_path, "env/conda-meta/history.txt", "made\n"))
            )
            writer.start()
            writer.join(90)
            assert done and done[0] is not None and not done[0].get("isError"), done
        return judgement

    monkeypatch.setattr("mcp_server_guard.changes.effects.judge", judging)  # (looked up at each judgement)
    result = await settle(transactions, copy.name)
    assert (root / "env" / "conda-meta" / "history.txt").exists()  # the other agent's write landed
    # A judgement made after that write asks (see the control): nothing may land unasked.
    assert result != "applied" and not (root / "env" / "bin" / "activate_this.py").exists(), (result, rounds)
