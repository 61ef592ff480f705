"""Red team 88: an editable finder's ``.pth`` line naming a DOTTED module runs a package the same call wrote, unasked.

``python_startup._INSTALLERS`` takes setuptools' editable line as ``import (__editable___[\\w.]+_finder);
\\1.install(...)`` -- dots allowed in the name. ``later._python_start`` then asks only when the module is away from
the site-packages (``_in_site``: by its TOP name, ``__editable___a``), or written (``_written``) / landed
(``_landed``) by its WHOLE dotted name (``<site>/__editable___a.b_finder.`` / ``…/__editable___a.b_finder/``), which
no file path ever matches: Python imports ``__editable___a.b_finder`` from ``<site>/__editable___a/b_finder.py``,
running ``<site>/__editable___a/__init__.py`` first.

One call writes ``site-packages/__editable___a/__init__.py`` (the payload), ``…/b_finder.py`` and ``zz_env.pth``
with ``import __editable___a.b_finder; __editable___a.b_finder.install()``. Nothing is asked; the user's next start
of ``.venv/bin/python`` runs it, outside the box. The same line with an undotted finder written in the same call is
asked (control). The payload only creates a marker file in the test's tmp dir.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mcp_server_guard.changes.transactions import Transactions
from support.settling import python_started, settled_call, venv_site

pytestmark = pytest.mark.anyio


async def test_an_editable_finder_line_naming_a_dotted_module_the_call_wrote_is_asked(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    site = venv_site(root)
    rel = site.relative_to(root)
    marker = tmp_path / "ran-at-python-start"
    time.sleep(0.02)
    done = await settled_call(transactions, part, "000000000001", {
        f"{rel}/__editable___a/__init__.py": f"open({str(marker)!r}, 'w').close()\n",
        f"{rel}/__editable___a/b_finder.py": "def install(*a):\n    pass\n",
        f"{rel}/zz_env.pth": "import __editable___a.b_finder; __editable___a.b_finder.install()\n",
    })  # fmt: skip
    # the user's next start of the project's Python, outside any box
    python_started(root)
    assert not marker.exists(), f"landed unasked ({done.transaction}): the next Python start ran the call's package"


async def test_control_an_undotted_finder_written_by_the_same_call_is_asked(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    site = venv_site(root)
    rel = site.relative_to(root)
    time.sleep(0.02)
    done = await settled_call(transactions, part, "000000000001", {
        f"{rel}/__editable___a_finder.py": "def install(*a):\n    pass\n",
        f"{rel}/zz_env.pth": "import __editable___a_finder; __editable___a_finder.install()\n",
    })  # fmt: skip
    assert done.transaction != "applied", done
