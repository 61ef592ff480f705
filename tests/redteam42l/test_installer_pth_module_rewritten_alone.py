"""Red team 8, L: the module an installer's ``.pth`` line imports, rewritten alone in an existing environment.

setuptools' ``distutils-precedence.pth`` (in every ``python -m venv`` of Python < 3.12 and wherever setuptools is
installed) imports ``_distutils_hack``; virtualenv's ``_virtualenv.pth`` imports ``_virtualenv``; an editable
install's line imports ``__editable___*_finder``. Every start of that Python runs the module. ``later.runs_later``
judges only changes of a start-up module, a ``.pth`` or a venv entry point; the installer's module is looked at only
when the same call rewrote its ``.pth`` line (``_written``). A command that rewrites ``_distutils_hack/__init__.py``
alone (or ``_virtualenv.py``, or the editable finder) is not asked about, and the user's next ``.venv/bin/python`` /
``uv run`` / ``pytest`` runs it. The payload writes a marker in the test's tmp dir.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.planted import landed, plant, py_payload

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_attack_distutils_hack_rewritten_alone(workspace: Path, tmp_path: Path) -> None:
    # python -m venv (ensurepip: pip and setuptools, offline) — setuptools' distutils-precedence.pth imports
    # _distutils_hack at every start
    base = Path(sys.base_prefix) / "bin" / "python3"
    subprocess.run([str(base), "-m", "venv", str(workspace / ".venv")], check=True, capture_output=True, timeout=120)
    site = next((workspace / ".venv" / "lib").glob("python3*/site-packages"))
    if not (site / "distutils-precedence.pth").exists():
        pytest.skip("this Python's setuptools writes no distutils-precedence.pth")
    module = site / "_distutils_hack" / "__init__.py"
    marker = tmp_path / "MARKER-python-started"
    rel = str(module.relative_to(workspace))
    person, out = await plant(workspace, {rel: module.read_text() + "\n" + py_payload(marker)})
    # the user's next start of the project's Python (uv run, pytest, an editor's query), outside the box
    subprocess.run([str(workspace / ".venv" / "bin" / "python"), "-c", "pass"], capture_output=True, timeout=30)
    assert not marker.exists(), (
        f"the next start of .venv's Python ran what the command wrote to {rel} (imported by "
        f"distutils-precedence.pth): questions={person.questions} transaction={out.get('transaction')} "
        f"landed={landed(out)}"
    )


async def test_attack_file_write_distutils_hack(workspace: Path, tmp_path: Path) -> None:
    from support import serve

    base = Path(sys.base_prefix) / "bin" / "python3"
    subprocess.run([str(base), "-m", "venv", str(workspace / ".venv")], check=True, capture_output=True, timeout=120)
    site = next((workspace / ".venv" / "lib").glob("python3*/site-packages"))
    if not (site / "distutils-precedence.pth").exists():
        pytest.skip("this Python's setuptools writes no distutils-precedence.pth")
    module = site / "_distutils_hack" / "__init__.py"
    marker = tmp_path / "MARKER-python-started"
    rel = str(module.relative_to(workspace))
    content = module.read_text() + "\n" + py_payload(marker)
    async with serve("mcp-server-file-write", workspace, "--history-dir", str(tmp_path / "history")) as client:
        result = await client.call_tool("file_write", {"path": rel, "content": content, "overwrite": True})
    subprocess.run([str(workspace / ".venv" / "bin" / "python"), "-c", "pass"], capture_output=True, timeout=30)
    assert result.is_error and not marker.exists(), f"file_write wrote {rel} and the next start ran it: {result}"
