"""Red team 100 F1b (the cause of F1, in a site-packages): the judgement of a plain path reads plain paths beside it.

A ``.pth`` of the environment imports ``foo``; ``foo.py`` and ``foo.pyc`` stand in its site-packages. Command A
deletes ``foo.py``: judged alone that is no question (``foo.pyc`` still stands in its place: ``later._in_site``).
While A is judged, another server's apply deletes ``foo.pyc`` (it says so: one plain path, far from A's). A's
judgement stands, and after both nothing of that name is in the site-packages: Python looks for ``foo`` on the
paths the ``.pth`` path lines add, where the project's code stands in for it (red team 86 F2) — the question a
judgement made after B's apply asks (the control) is never asked.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.changes.effects import judge as effects_judge
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.files.treelock import tree_lock
from support.settling import settle, untouched_copy

pytestmark = pytest.mark.anyio

SITE = "venv/lib/python3.12/site-packages"


def _environment(root: Path, *forms: str) -> Path:
    site = root / SITE
    site.mkdir(parents=True)
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "foo_hook.pth").write_text("import foo\n")
    for form in forms:
        (site / form).write_bytes(b"# foo\n")
    return site


def _deleting(part: Path, rel: str) -> Path:
    copy = untouched_copy(part, "c1")
    (copy / "u0" / rel).parent.mkdir(parents=True)
    os.mknod(copy / "u0" / rel, 0o600 | stat.S_IFCHR, os.makedev(0, 0))  # (an overlayfs whiteout: rm)
    return copy


async def test_control_deleting_the_last_form_of_a_module_a_pth_imports_is_asked(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    site = _environment(tmp_path / "root", "foo.py")
    copy = _deleting(part, f"{SITE}/foo.py")
    assert await settle(transactions, copy.name) != "applied"
    assert (site / "foo.py").exists()


async def test_attack_another_apply_removes_the_stand_in_while_a_deletion_is_judged(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    site = _environment(root, "foo.py", "foo.pyc")
    copy = _deleting(part, f"{SITE}/foo.py")
    rounds: list[int] = []

    def other_servers_apply() -> None:
        said = [str(site / "foo.pyc")]  # (what ``unrelated.declared`` says for that change set)
        with tree_lock([root.stat().st_dev], wait_s=2, wrote=lambda: said):
            (site / "foo.pyc").unlink()

    def judging(*args: Any, **kwargs: Any) -> Any:
        judgement = effects_judge(*args, **kwargs)
        rounds.append(1)
        if len(rounds) == 1:
            writer = threading.Thread(target=other_servers_apply)
            writer.start()
            writer.join(10)
        return judgement

    monkeypatch.setattr("mcp_server_guard.changes.effects.judge", judging)  # (looked up at each judgement)
    result = await settle(transactions, copy.name)
    assert not (site / "foo.pyc").exists()
    assert (site / "foo.py").exists(), (result, rounds)  # asked, as the control: not deleted unasked
