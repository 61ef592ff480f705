"""Red team 88: a ``.pth`` line the judge splits in two at a form feed, which Python 3.11 runs as ONE line.

``python_startup._lines`` splits a .pth file with ``str.splitlines`` (red team 6's fix, for Python 3.13, whose
``site.addpackage`` splits that way), which also splits at ``\\x0b``, ``\\x0c``, ``\\x1c``-``\\x1e``, ``\\x85``,
``\\u2028``, ``\\u2029``. Python 3.11 and 3.12 (this project's own interpreter) read a .pth file through
``io.TextIOWrapper``: universal newlines, ``\\n``/``\\r`` only. A form feed is whitespace to Python's tokenizer.

So ``import _virtualenv\\x0c;<code>`` is, to the judge, virtualenv's own installer line followed by a path line
(``;<code>``: never asked), and to Python 3.11 one ``import`` line that ``exec`` runs whole. In an environment uv
or virtualenv made (``_virtualenv.py`` in site-packages, not written by this call) nothing is asked, and the user's
next start of ``.venv/bin/python`` runs ``<code>`` outside the box. The payload only creates a marker file in the
test's tmp dir.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from mcp_server_guard.changes.transactions import Transactions
from support.settling import python_started, settled_call, venv_site

pytestmark = pytest.mark.anyio


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="3.13's site splits .pth files with splitlines too")
async def test_a_pth_import_line_joined_by_a_form_feed_is_asked(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    site = venv_site(root)
    (site / "_virtualenv.py").write_text("x = 1\n")  # as uv venv / virtualenv leave it
    (site / "_virtualenv.pth").write_text("import _virtualenv\n")
    rel = site.relative_to(root)
    marker = tmp_path / "ran-at-python-start"
    time.sleep(0.02)
    line = f"import _virtualenv\x0c;open({str(marker)!r}, 'w').close()\n"
    done = await settled_call(transactions, part, "000000000001", {f"{rel}/zz_env.pth": line})
    # the user's next start of the project's Python, outside any box
    python_started(root)
    assert not marker.exists(), f"landed unasked ({done.transaction}): the next Python start ran the line's code"


async def test_control_the_same_code_on_its_own_import_line_is_asked(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    site = venv_site(root)
    (site / "_virtualenv.py").write_text("x = 1\n")
    (site / "_virtualenv.pth").write_text("import _virtualenv\n")
    rel = site.relative_to(root)
    time.sleep(0.02)
    line = "import _virtualenv;open('x', 'w').close()\n"
    done = await settled_call(transactions, part, "000000000001", {f"{rel}/zz_env.pth": line})
    assert done.transaction != "applied", done
