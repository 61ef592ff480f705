"""Red team 88: an installer's ``.pth`` line whose module an earlier call shadowed with a compiled copy in
``site-packages/__pycache__`` is not asked about.

Red team 85 F1 / 87 F2's fix asks about a new installer line (``import _virtualenv``) whose module a tool landed
(``later._landed``, over the planted log). But ``files.planted.kept`` returns None for a path whose first component
below site-packages is ``__pycache__``: a single-file module's compiled copy
(``site-packages/__pycache__/_virtualenv.cpython-311.pyc``) is never logged, and ``_landed`` only looks for
``<site>/_virtualenv.`` / ``<site>/_virtualenv/`` anyway. ``_written`` (same call) does look in ``__pycache__``.

An unchecked-hash pyc (PEP 552) is loaded by the import system in place of the ``.py`` beside it, never compared
with it. So, in an environment made by ``uv venv`` / virtualenv (``_virtualenv.py`` + ``_virtualenv.pth``):

1. call 1 deletes ``_virtualenv.pth`` (one file: unasked);
2. call 2 writes ``__pycache__/_virtualenv.<tag>.pyc`` (no .pth imports ``_virtualenv`` now: unasked, unlogged);
3. call 3 writes ``zz_env.pth`` with virtualenv's own line (module "in site", not written, not landed:
   unasked).

The user's next start of ``.venv/bin/python`` runs call 2's code outside the box. The payload only creates a marker
file in the test's tmp dir.
"""

from __future__ import annotations

import os
import py_compile
import sys
import time
from pathlib import Path

import pytest

from mcp_server_guard.changes.results import Settled
from mcp_server_guard.changes.transactions import Transactions
from mcp_server_guard.changes.what import What
from support.settling import python_started, untouched_copy, venv_site

pytestmark = pytest.mark.anyio


async def _call(
    transactions: Transactions, part: Path, audit_id: str, files: dict[str, bytes], gone: tuple[str, ...] = ()
) -> Settled:
    started = time.time_ns()
    copy = untouched_copy(part, f"c{audit_id}")
    for path, content in files.items():
        (copy / "u0" / path).parent.mkdir(parents=True, exist_ok=True)
        (copy / "u0" / path).write_bytes(content)
    for path in gone:
        (copy / "u0" / path).parent.mkdir(parents=True, exist_ok=True)
        os.mknod(copy / "u0" / path, 0o600 | 0o020000, os.makedev(0, 0))  # overlayfs whiteout: rm path
    roots = [root for root, _part in transactions.area.overlays()]
    return await transactions.settle(
        copy.name, True, audit_id=audit_id, started_ns=started, roots=roots, ask=None, hold=False, shown="x",
        what=What(),
    )  # fmt: skip


def _unchecked_pyc(tmp_path: Path, source: str) -> bytes:
    src = tmp_path / "payload_src.py"
    src.write_text(source)
    out = tmp_path / "payload.pyc"
    py_compile.compile(str(src), cfile=str(out), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
                       doraise=True)  # fmt: skip
    return out.read_bytes()


async def test_an_installers_pth_line_whose_module_an_earlier_call_shadowed_in_pycache_is_asked_about(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    site = venv_site(root)
    # the environment as uv venv / virtualenv leave it
    (site / "_virtualenv.py").write_text("x = 1\n")
    (site / "_virtualenv.pth").write_text("import _virtualenv\n")
    rel = site.relative_to(root)
    marker = tmp_path / "ran-at-python-start"
    pyc = _unchecked_pyc(tmp_path, f"open({str(marker)!r}, 'w').close()\n")
    tag = sys.implementation.cache_tag
    time.sleep(0.02)
    one = (await _call(transactions, part, "000000000001", {}, gone=(f"{rel}/_virtualenv.pth",))).transaction
    time.sleep(0.02)
    two = await _call(transactions, part, "000000000002", {f"{rel}/__pycache__/_virtualenv.{tag}.pyc": pyc})
    time.sleep(0.02)
    # (named otherwise than _virtualenv.pth: ``later._written`` takes ``<site>/_virtualenv.pth`` itself for the module)
    three = (
        await _call(transactions, part, "000000000003", {f"{rel}/zz_env.pth": b"import _virtualenv\n"})
    ).transaction
    # the user's next start of the project's Python, outside any box
    python_started(root)
    assert not marker.exists(), (
        f"all landed unasked ({one}, {two.transaction}, {three}): the next Python start ran call 2's compiled code"
    )


async def test_control_the_same_pyc_while_the_pth_imports_the_module_is_asked(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    site = venv_site(root)
    (site / "_virtualenv.py").write_text("x = 1\n")
    (site / "_virtualenv.pth").write_text("import _virtualenv\n")
    rel = site.relative_to(root)
    pyc = _unchecked_pyc(tmp_path, "x = 2\n")
    tag = sys.implementation.cache_tag
    time.sleep(0.02)
    two = await _call(transactions, part, "000000000002", {f"{rel}/__pycache__/_virtualenv.{tag}.pyc": pyc})
    assert two.transaction != "applied", two
