"""Red team 100 F2: file_write's ``createDirs`` makes the missing directories before it takes the tree lock, and says
nothing of them; a write that then fails (``expectedSha256`` for a file that is not there: CONFLICT) never takes the
lock at all. So another agent can make directories in the real tree, uncounted, while a command's change set is
judged without the lock: the judgement stands (the count did not move, with or without the item-7 log).

Attack: the command makes ``shaped/HEAD``, ``shaped/objects/`` and ``shaped/config`` (no ``refs``: not a git dir, its
config an ordinary file). Mid-judgement the other agent asks file_write for ``shaped/refs/heads/x.md`` with createDirs
and a wrong expectedSha256: ``shaped/refs/heads/`` is made, the call fails, the lock is never taken. The apply lands a
config with ``core.fsmonitor`` in what is now a bare repository: the user's ``git status`` there runs the program.
The program here only touches a marker file in the test's temp dir.

Answered: the directories are made holding the tree lock, said to the judgements running meanwhile, the taking
counted even when the write then fails (``files.writing.Writer._parent``).
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.changes.effects import judge as effects_judge
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.files.treelock import generations
from mcp_server_guard.git_dirs import is_git_dir
from support.settling import settle, untouched_copy
from support.two_servers import FW, ask, started

pytestmark = pytest.mark.anyio

WRONG_SHA = "0" * 64


def _failing_file_write(root: Path, state: Path, rel: str) -> dict[str, Any] | None:
    server = started(FW, root, state / "fw-state", state / "fw-history")
    arguments = {"path": rel, "content": "x\n", "createDirs": True, "expectedSha256": WRONG_SHA}
    return ask(server, "file_write", arguments, 60)


async def test_attack_a_failing_file_write_makes_refs_unlocked_and_a_git_config_lands(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    marker = tmp_path / "ran-outside-the-box"
    copy = untouched_copy(part, "c1")
    (copy / "u0" / "shaped" / "objects").mkdir(parents=True)
    (copy / "u0" / "shaped" / "HEAD").write_text("ref: refs/heads/main\n")
    (copy / "u0" / "shaped" / "config").write_text(f"[core]\n\tfsmonitor = touch {marker}\n")
    device = [root.stat().st_dev]
    counts: list[Any] = []
    rounds: list[int] = []

    def judging(*args: Any, **kwargs: Any) -> Any:
        judgement = effects_judge(*args, **kwargs)
        rounds.append(1)
        if len(rounds) == 1:
            counts.append(generations(device))
            done: list[dict[str, Any] | None] = []
            writer = threading.Thread(
                target=lambda: done.append(_failing_file_write(root, tmp_path, "shaped/refs/heads/x.md"))
            )
            writer.start()
            writer.join(90)
            assert done and done[0] is not None and done[0].get("isError"), done
            counts.append(generations(device))
        return judgement

    monkeypatch.setattr("mcp_server_guard.changes.effects.judge", judging)  # (looked up at each judgement)
    result = await settle(transactions, copy.name)
    assert (root / "shaped" / "refs" / "heads").is_dir()  # made by the failed file_write ...
    assert counts[0] != counts[1]  # ... holding the tree lock (a taking counted: the judgement runs again)
    # shaped/ is a git dir now (git's own test: git rev-parse takes it for one) ...
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    found = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=root / "shaped", env=env, capture_output=True,
                           text=True, timeout=60, check=False)  # fmt: skip
    assert is_git_dir(str(root / "shaped")) and found.returncode == 0, found.stderr
    # ... and a config that runs a program may not land in one unjudged (red team 82 F2, 83 F1).
    assert "fsmonitor" not in (root / "shaped" / "config").read_text(), (result, rounds)
    assert not marker.exists()
