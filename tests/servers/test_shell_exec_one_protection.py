"""shell_exec's start makes one Protection, not two (issue 44): the writer it opens for its history store (the
pre-images of what commands change) takes the server's own, made from the same policy, audit log and history
directory, with the approvals file besides when there is one. Before, the writer made a second one (~10 ms of the
first answer: the protected globs tokenized and compiled again, HOME's links looked up again).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_RUN = """
import sys
from mcp_server_guard import protected
from mcp_server_guard.changes import transactions
from mcp_server_guard.files import writing

made = []
real_init, real_writer = protected.Protection.__init__, writing.Writer.__init__
real_tx = transactions.Transactions.__init__

def init(self, *args, **kwargs):
    made.append(self)
    real_init(self, *args, **kwargs)
    print(f"protection made with {sorted(self._files)}", file=sys.stderr, flush=True)

def writer(self, jail, policy, protection, *args, **kwargs):
    print(f"writer {made.index(protection)}", file=sys.stderr, flush=True)
    return real_writer(self, jail, policy, protection, *args, **kwargs)

def tx(self, area, applier, protection, *args, **kwargs):
    print(f"transactions {made.index(protection)}", file=sys.stderr, flush=True)
    return real_tx(self, area, applier, protection, *args, **kwargs)

protected.Protection.__init__, writing.Writer.__init__, transactions.Transactions.__init__ = init, writer, tx
from mcp_server_shell_exec.cli import main
main(sys.argv[1:])
"""


def _start(workspace: Path, tmp_path: Path, *more: str) -> list[str]:
    argv = [sys.executable, "-c", textwrap.dedent(_RUN), "--launch-dir", str(workspace), *more]
    argv += ["--audit-log", str(tmp_path / "audit.jsonl"), "--sandbox", "required", "--transactions", "required"]
    run = subprocess.run(argv, cwd=workspace, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return [line for line in run.stderr.splitlines() if line.startswith(("protection", "writer", "transactions"))]


@pytest.mark.parametrize("approvals", [False, True], ids=["memory only", "approvals file"])
def test_the_writer_for_the_history_store_takes_the_servers_protection(
    approvals: bool, workspace: Path, tmp_path: Path
) -> None:
    more = ("--approvals-file", str(tmp_path / "approvals.json")) if approvals else ()
    lines = _start(workspace, tmp_path, *more)
    assert [line.split(" ", 1)[0] for line in lines] == ["protection", "writer", "transactions"], lines
    assert lines[1:] == ["writer 0", "transactions 0"]  # the one made at start, for both
    assert str(tmp_path / "audit.jsonl") in lines[0]
    assert (str(tmp_path / "approvals.json") in lines[0]) == approvals
