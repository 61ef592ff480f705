"""Red team 120 F3: a requirements line naming an sdist by its path with the ``.tar.lzma`` extension is not judged
(red team 119 F2's answer lists pip's archive extensions but one).

``package_sources.ARCHIVE`` knows ``.tgz .tar .tar.gz .tar.bz2 .tbz .tbz2 .tar.xz .txz .tar.zst .tar.lz .tlz .zip
.whl .gem .crate``; pip's ``ARCHIVE_EXTENSIONS`` also has ``.tar.lzma`` (``XZ_EXTENSIONS``), so pip takes
``vendor/evil-1.0.tar.lzma`` for a local archive and builds it. Checked by hand (scratch/verify_pip_lzma.py in the
notes, pip 23.2.1, offline): ``pip install -r requirements.txt`` unpacked the sdist and ran its in-tree build
backend (a marker written) — code inside an archive, never judged, runs at the user's next install.

Control that passes: the same line with ``.tar.xz`` is refused by file_write and asked by shell_exec. Texts travel
as data (requirements_lzma.json).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

CASES: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parent / "requirements_lzma.json").read_text(encoding="utf-8")
)["cases"]


def _set_up(workspace: Path, case: dict[str, Any]) -> Path:
    path = workspace / str(case["path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(case["before"]), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(CASES))
async def test_file_write_refuses_an_sdist_by_path(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": case["path"], "content": case["after"],
                                                       "overwrite": True})  # fmt: skip
    assert path.read_text(encoding="utf-8") == case["before"], (name, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("name", sorted(CASES))
async def test_shell_exec_asks_before_an_sdist_by_path(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    (workspace / "new.dat").write_text(str(case["after"]), encoding="utf-8")
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, f"cp new.dat {case['path']}", cwd=str(workspace))
    assert person.questions and path.read_text(encoding="utf-8") == case["before"], (name, out.get("changes"))
