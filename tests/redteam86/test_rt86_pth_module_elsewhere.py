"""Red team 86 F2: an installer's ``.pth`` import line (``import _virtualenv``) is trusted unless the module it imports
was written into THAT site-packages (``later._written`` / ``later._landed`` look only at ``<site>/<module>.*``). But
``site`` finds the module anywhere on ``sys.path``, and a ``.pth`` path line -- which is never asked (pip install -e
writes them) -- puts any directory of the project there, before the import line runs.

One call writes ``tools/_virtualenv.py`` (project code: unasked) and ``site-packages/zz_env.pth`` holding a path line
``../../../../tools`` and then virtualenv's own line ``import _virtualenv``. Nothing is asked; the user's next start of
``.venv/bin/python`` runs the module, outside the box. (The same two lines with the module written into
site-packages are asked: control.) The payload only creates a marker file in the test's tmp dir.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mcp_server_guard.changes.transactions import Transactions
from support.settling import python_started, settled_call, venv_site

pytestmark = pytest.mark.anyio


async def test_control_the_module_in_site_packages_is_asked(settled: tuple[Transactions, Path], tmp_path: Path) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    site = venv_site(root)
    rel = site.relative_to(root)
    marker = tmp_path / "ran-at-python-start"
    time.sleep(0.02)
    done = await settled_call(transactions, part, "000000000001", {
        f"{rel}/_virtualenv.py": f"open({str(marker)!r}, 'w').close()\n",
        f"{rel}/zz_env.pth": "import _virtualenv\n",
    })  # fmt: skip
    assert done.transaction != "applied", done


async def test_a_pth_path_line_and_an_installers_import_line_never_run_project_code_unasked(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    site = venv_site(root)
    rel = site.relative_to(root)
    up = "/".join(".." for _ in rel.parts)  # from site-packages to the project root
    marker = tmp_path / "ran-at-python-start"
    time.sleep(0.02)
    done = await settled_call(transactions, part, "000000000001", {
        "tools/_virtualenv.py": f"open({str(marker)!r}, 'w').close()\n",
        f"{rel}/zz_env.pth": f"{up}/tools\nimport _virtualenv\n",
    })  # fmt: skip
    python_started(root)  # the user's next start of the project's Python, outside any box
    assert not marker.exists(), f"landed unasked ({done.transaction}): the next Python start ran the project's module"
