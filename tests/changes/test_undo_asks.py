"""An undo puts back what a command's write of it would be asked about now only with the person's yes (red team 84
O1: ``undo_judged`` looked only at refusals).

Call 1 takes the ``lint-staged`` key out of a package.json (nothing to ask: it runs less). The user then sets up
husky, whose pre-commit hook runs lint-staged. An undo of call 1 puts the key back: the user's next commit runs its
commands, outside the box — what a command writing that key now is asked about. The undo stops with the question
(``UndoAsks``; ``mcp-guard undo``: exit 2, ``UNDO_ASKS``) and changes nothing; ``--yes`` puts it back.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.undo_judged import Judged, UndoAsks
from mcp_server_guard.protected import protection_for
from support import console_script
from support.settling import POLICY, applied_call

pytestmark = pytest.mark.anyio
CALL = "000000000001"
WITH_KEY = json.dumps({"name": "p", "lint-staged": {"*.js": "echo staged"}}, indent=2) + "\n"
WITHOUT_KEY = json.dumps({"name": "p"}, indent=2) + "\n"


async def _key_taken_out_then_hooks_set_up(transactions: Transactions, part: Path, root: Path) -> None:
    root.mkdir(exist_ok=True)
    (root / "package.json").write_text(WITH_KEY)
    await applied_call(transactions, part, CALL, {"package.json": WITHOUT_KEY})
    (root / ".husky").mkdir()
    (root / ".husky" / "pre-commit").write_text("npx lint-staged\n")  # the user's own set-up, after the call


async def test_an_undo_putting_back_a_hook_key_the_users_hooks_now_run_asks_first(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    await _key_taken_out_then_hooks_set_up(transactions, part, root)
    roots = [str(root)]
    judged = Judged(transactions.applier.history, protection_for(POLICY), POLICY.effects, roots)
    with pytest.raises(UndoAsks, match=r"package\.json"):
        transactions.applier.undo(CALL, "0000000000aa", roots, judged=judged)
    assert (root / "package.json").read_text() == WITHOUT_KEY  # nothing was undone
    yes = Judged(transactions.applier.history, protection_for(POLICY), POLICY.effects, roots, yes=True)
    transactions.applier.undo(CALL, "0000000000ab", roots, judged=yes)
    assert (root / "package.json").read_text() == WITH_KEY


async def test_mcp_guard_undo_shows_the_question_and_puts_it_back_with_yes(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    await _key_taken_out_then_hooks_set_up(transactions, part, root)
    undo = [console_script("mcp-guard"), "undo", "--history-dir", str(transactions.applier.history.directory)]
    asked = subprocess.run([*undo, CALL], capture_output=True, text=True, timeout=120, check=False)
    assert asked.returncode == 2 and "UNDO_ASKS" in asked.stderr and "--yes" in asked.stderr, asked.stderr
    assert "package.json" in asked.stderr
    assert (root / "package.json").read_text() == WITHOUT_KEY
    undone = subprocess.run([*undo, "--yes", CALL], capture_output=True, text=True, timeout=120, check=False)
    assert undone.returncode == 0, undone.stderr
    assert (root / "package.json").read_text() == WITH_KEY


async def test_an_undo_of_an_install_asks_nothing_when_the_hook_keys_stay_as_they_are(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    (root / "package.json").write_text(WITH_KEY)
    installed = json.dumps({**json.loads(WITH_KEY), "dependencies": {"left-pad": "1.3.0"}}, indent=2) + "\n"
    await applied_call(transactions, part, CALL, {"package.json": installed})
    roots = [str(root)]
    judged = Judged(transactions.applier.history, protection_for(POLICY), POLICY.effects, roots)
    transactions.applier.undo(CALL, "0000000000aa", roots, judged=judged)  # the same lint-staged key: no question
    assert (root / "package.json").read_text() == WITH_KEY
