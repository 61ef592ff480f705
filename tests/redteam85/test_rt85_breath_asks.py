"""Red team 85 F2: the breath re-check (``Transactions._rechecked.stale``) compares only refusals and rewrites;
what the steps left would now be ASKED about lands unasked.

Call A's apply writes ``z/f*.txt`` and ``site-packages/_virtualenv.py`` (code) in an existing environment; judged
when no ``.pth`` imports ``_virtualenv``: a package's file, unasked. A breathes after its first steps; server B (its
own judgement: virtualenv's installer line ``import _virtualenv`` in an existing site-packages, module not written
by B: unasked) lands ``zz_env.pth``. Judged now, A's module would be asked ("a .pth file of ... imports it at every
start"); the re-check finds nothing REFUSED, so it lands, and every start of that Python runs it outside the box.
(B's write after A's apply would not help: B's write is unasked only because the module is not there yet; A's write
after B's is asked. Only the gap gets both in unasked.) The payload only creates a marker in the test's tmp dir.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mcp_server_guard.changes import apply as apply_module
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.what import What
from mcp_server_guard.files import treelock
from mcp_server_guard.files.treelock import tree_lock
from support.settling import breath_letting_in, python_started, untouched_copy, venv_site

pytestmark = pytest.mark.anyio


async def test_a_step_left_that_is_asked_about_after_a_breath_does_not_land_unasked(
    settled: tuple[Transactions, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    site = venv_site(root)
    rel = site.relative_to(root)
    marker = tmp_path / "ran-at-python-start"
    module = site / "_virtualenv.py"
    time.sleep(0.02)
    started = time.time_ns()
    copy = untouched_copy(part, "c1")
    files = {f"{rel}/A{i}.txt": "new\n" for i in range(6)}  # (steps before the module's)
    files[f"{rel}/_virtualenv.py"] = f"open({str(marker)!r}, 'w').close()\n"
    for path, content in files.items():
        (copy / "u0" / path).parent.mkdir(parents=True, exist_ok=True)
        (copy / "u0" / path).write_text(content)
    seen: list[str] = []
    real_breathe = treelock.breathe

    def b_writes_the_line() -> None:  # server B's write, judged unasked on its own, under the tree lock
        with tree_lock([root.stat().st_dev], wait_s=5):
            (site / "zz_env.pth").write_text("import _virtualenv\n")

    def breathing(every_s: float = treelock.BREATHE_S) -> bool:
        if seen or module.exists():
            return real_breathe(every_s)
        seen.append("gap before the module lands")
        return breath_letting_in(b_writes_the_line, real_breathe)

    monkeypatch.setattr(apply_module, "breathe", breathing)
    roots = [str(root)]
    done = await transactions.settle(
        copy.name, True, audit_id="000000000001", started_ns=started, roots=roots, ask=None, hold=False, shown="x",
        what=What(),
    )  # fmt: skip
    print("A:", done.transaction, done.reason, done.asked)
    assert seen, "no breath came before the module step"
    python_started(root)
    assert not marker.exists(), f"A's step left, asked about now, landed unasked ({done.transaction})"
