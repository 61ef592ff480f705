"""Red team 85 F1: an installer's ``.pth`` line and the module it imports, written by two calls, are asked about by
neither (``later._python_start``: the line is asked only where the SAME call wrote the module, ``_written``; the
module only where a ``.pth`` already imports it, ``_imported_at_start``).

Call 1 makes ``site-packages/_virtualenv.py`` (code) in a ``python -m venv`` environment that has no
``_virtualenv.pth``: no .pth imports it yet -> a package's file, unasked. Call 2 makes ``_virtualenv.pth`` holding
virtualenv's own line ``import _virtualenv``: an installer's line whose module this call did not write -> unasked.
Every start of that Python (``uv run``, ``pytest``, an editor's query) now runs call 1's code outside the box.
Either order written in ONE call is asked; the same two writes in the other order (line first) are asked at the
second call too. The payload only creates a marker file in the test's tmp dir.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mcp_server_guard.changes.transactions import Transactions
from support.settling import python_started, settled_call, venv_site

pytestmark = pytest.mark.anyio


async def test_an_installers_pth_line_and_its_module_written_by_two_calls_are_asked_about(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    site = venv_site(root)
    rel = site.relative_to(root)
    marker = tmp_path / "ran-at-python-start"
    module = f"open({str(marker)!r}, 'w').close()\n"
    time.sleep(0.02)
    first = (await settled_call(transactions, part, "000000000001", {f"{rel}/_virtualenv.py": module})).transaction
    time.sleep(0.02)
    second = (
        await settled_call(transactions, part, "000000000002", {f"{rel}/zz_env.pth": "import _virtualenv\n"})
    ).transaction
    # the user's next start of the project's Python, outside any box
    python_started(root)
    assert not marker.exists(), f"both landed unasked ({first}, {second}): the next Python start ran call 1's code"
