"""Red team 87: an installer's ``.pth`` line importing a PACKAGE an earlier call landed is not asked about.

Red team 85 F1's fix asks about a new installer line (``import _virtualenv``) whose module a tool landed
(``later._landed``: a landed path starting ``<site>/_virtualenv.`` or ``<site>/_virtualenv/``). A new package
directory is placed whole: the record names ``<site>/_virtualenv`` only (``placing._placed``, ``tree=True``), which
``planted.kept`` logs as ``<site>/_virtualenv`` (no slash) -- matching neither start -- and ``Applier.landed`` keeps
files only. So call 1's ``site-packages/_virtualenv/__init__.py`` (a package's file, unasked) and call 2's
``zz_env.pth`` (``import _virtualenv``, an installer's line, unasked) make every start of that Python run call 1's
code outside the box. The payload only creates a marker file in the test's tmp dir.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mcp_server_guard.changes.transactions import Transactions
from support.settling import python_started, settled_call, venv_site

pytestmark = pytest.mark.anyio


async def test_an_installers_pth_line_importing_a_package_an_earlier_call_landed_is_asked_about(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    site = venv_site(root)
    rel = site.relative_to(root)
    marker = tmp_path / "ran-at-python-start"
    module = f"open({str(marker)!r}, 'w').close()\n"
    time.sleep(0.02)
    first = (
        await settled_call(transactions, part, "000000000001", {f"{rel}/_virtualenv/__init__.py": module})
    ).transaction
    time.sleep(0.02)
    second = (
        await settled_call(transactions, part, "000000000002", {f"{rel}/zz_env.pth": "import _virtualenv\n"})
    ).transaction
    # the user's next start of the project's Python, outside any box
    python_started(root)
    assert not marker.exists(), f"both landed unasked ({first}, {second}): the next Python start ran call 1's code"


async def test_control_a_module_file_landed_earlier_is_asked_about(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    site = venv_site(root)
    rel = site.relative_to(root)
    time.sleep(0.02)
    await settled_call(transactions, part, "000000000001", {f"{rel}/_virtualenv.py": "pass\n"})
    time.sleep(0.02)
    second = (
        await settled_call(transactions, part, "000000000002", {f"{rel}/zz_env.pth": "import _virtualenv\n"})
    ).transaction
    assert second != "applied", second
