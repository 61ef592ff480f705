"""Red team 96 F5 (claim A: "every state directory of any server of the user (copies, history, audit, approvals,
start-up records) is out of every server's commands' reach — read and write — whether it exists now or not, and
wherever it lies (inside another server's root ...)").

``registry._prune`` removes the entry of every registered state directory it finds gone — ``os.path.lexists``,
which answers False for a path that exists but that the starting server cannot look into (``EACCES``). A command
of server B whose root holds server A's state directory may ``chmod 000`` a directory above it: a mode change of a
directory in B's root, applied unasked (the state directory itself is not touched). The next server of the user
that starts while the registry holds 512 entries or more (one per session's state directory: the case
``_prune`` is for) then forgets A's state directory though it exists, with A's history, audit log and start-up
records in it. B's next command gives the directory its mode back, and A's state directory is as any other
directory of B's root: read (the pre-images of A's files, A's audit log) and rewritten (here A's audit log).

Safe behaviour: the registry never forgets a state directory it cannot see into (prune only on ENOENT, or never by
a look through a directory a command may change), and B's write into A's state directory is refused.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_server_guard import registry
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.what import What
from support.as_a_user import capable
from support.settling import untouched_copy

pytestmark = pytest.mark.anyio


async def _settle(transactions: Transactions, copy: Path, audit_id: str) -> str:
    roots = [r for r, _part in transactions.area.overlays()]
    done = await transactions.settle(
        copy.name, True, audit_id=audit_id, started_ns=time.time_ns(), roots=roots, ask=None, hold=False,
        shown="x", what=What(),
    )  # fmt: skip
    return f"{done.transaction}: {done.summary}; refused {done.refused}"


def _a_server_starts_as_the_user() -> str:
    """Another server of the user starts (it registers, pruning): run without CAP_DAC_OVERRIDE, as servers run."""
    script = Path(__file__).with_name("rt96_a_server_starts.py")
    command = [sys.executable, str(script)]
    if capable():
        if shutil.which("setpriv") is None:
            pytest.skip("root with CAP_DAC_OVERRIDE and no setpriv to drop it")
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


async def test_control_without_the_chmod_the_state_directory_stays_out_of_reach(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    await _chain(settled, tmp_path, lock_out=False)


async def test_a_command_cannot_make_the_registry_forget_an_existing_state_directory(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    await _chain(settled, tmp_path, lock_out=True)


async def _chain(settled: tuple[Transactions, Path], tmp_path: Path, *, lock_out: bool) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    sessions = root / "sessions"
    state_a = sessions / "a" / "mcp-guard"  # server A's state directory (a session's), inside B's root
    state_a.mkdir(parents=True)
    (state_a / "audit.jsonl").write_text('{"audit_id": "a1", "tool": "shell_exec"}\n')
    os.chmod(state_a / "audit.jsonl", 0o600)
    made = [tmp_path / "older" / f"s{i}" for i in range(520)]  # the other sessions' state directories
    for path in made:
        path.mkdir(parents=True)
    registration = registry.register([], [state_a, *made], writes=False)
    assert registration is not None
    registration.close()
    assert os.path.realpath(state_a) in registry.state_paths()
    # B's first command: chmod 000 sessions (a directory of its root; A's state directory itself untouched).
    first = untouched_copy(part, "c1")
    (first / "u0" / "sessions").mkdir()
    os.chmod(first / "u0" / "sessions", 0o000 if lock_out else 0o700)
    said_first = await _settle(transactions, first, "000000000001")
    # Another server of the user starts meanwhile (as the user: it cannot look into sessions/).
    _a_server_starts_as_the_user()
    forgotten = os.path.realpath(state_a) not in registry.state_paths()
    # B's next command: the mode back, then A's audit log rewritten (what a command may do in any directory of its).
    second = untouched_copy(part, "c2")
    (second / "u0" / "sessions").mkdir()
    os.chmod(second / "u0" / "sessions", 0o755)
    said_second = await _settle(transactions, second, "000000000002")
    third = untouched_copy(part, "c3")
    (third / "u0" / "sessions" / "a" / "mcp-guard").mkdir(parents=True)
    (third / "u0" / "sessions" / "a" / "mcp-guard" / "audit.jsonl").write_text("rewritten by B's command\n")
    said_third = await _settle(transactions, third, "000000000003")
    os.chmod(sessions, 0o755)  # (whatever the calls left: the check below reads it)
    assert (state_a / "audit.jsonl").read_text() != "rewritten by B's command\n", (
        f"B's command rewrote server A's audit log in A's existing state directory; the registry forgot it "
        f"({forgotten}) after B's chmod ({said_first}), then ({said_second}), ({said_third})"
    )
