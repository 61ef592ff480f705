"""Red team 116 F3: red teams 113 F1 and 114 F2 made the judgement read a requirements file "as pip reads it" — but
only its lines: the bytes are decoded as UTF-8 (``errors="replace"``). pip decodes them otherwise
(``pip._internal.utils.encoding.auto_decode``): a file that starts with a UTF-16 or UTF-32 BOM is read in that
encoding, and one whose first or second line is a PEP 263 coding comment (``# -*- coding: utf-7 -*-``) in the
encoding it names. So ``--index-url http://…`` written in UTF-16 (every other byte a NUL to a UTF-8 reader), or in
UTF-7 (``+AC0ALQ-index-url http+ADo-//…``: plain ASCII), is no option and no url to the judgement, and to pip the
index every package of the file (and of ``pip install -r``) comes from: their builds run at the next install,
outside the box (as in red team 113 F1). uv's reader takes the UTF-16 file too.

Each lands unasked from shell_exec with a person who declines everything; file_write (UTF-8 text only) writes the
UTF-7 one. Control: the same option in UTF-8 is asked and refused. That pip reads the index from each file is
shown with pip's own parser (``pip_reads.py``, skipped where no Python with pip is at hand). Texts travel as data
(requirements_encodings.json); the URL names a closed port."""

from __future__ import annotations

import codecs
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

HERE = Path(__file__).resolve().parent
DATA: dict[str, str] = json.loads((HERE / "requirements_encodings.json").read_text())


def _bytes(spelling: str) -> bytes:
    if spelling == "utf16":
        return codecs.BOM_UTF16_LE + DATA["utf16"].encode("utf-16-le")
    return DATA[spelling].encode("ascii")


def _python_with_pip() -> str | None:
    for name in ("python3", "python"):
        found = shutil.which(name)
        if found and subprocess.run([found, "-m", "pip", "--version"], capture_output=True, timeout=60).returncode == 0:
            return found
    return None


@pytest.mark.parametrize("spelling", ["control", "utf16", "utf7"])
def test_pip_reads_the_index_from_each_spelling(tmp_path: Path, spelling: str) -> None:
    python = _python_with_pip()
    if python is None:
        pytest.skip("no Python with pip")
    (tmp_path / "requirements.txt").write_bytes(_bytes(spelling))
    done = subprocess.run([python, str(HERE / "pip_reads.py"), str(tmp_path / "requirements.txt")],
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    assert json.loads(done.stdout)["index_url"] == DATA["index"]


def _unchanged(workspace: Path) -> bool:
    return (workspace / DATA["path"]).read_bytes() == DATA["before"].encode()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("spelling", ["control", "utf16", "utf7"])
async def test_shell_exec_asks_before_a_changed_index(workspace: Path, spelling: str) -> None:
    (workspace / DATA["path"]).write_text(DATA["before"])
    (workspace / "new.dat").write_bytes(_bytes(spelling))
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, f"cp new.dat {DATA['path']}", cwd=str(workspace))
    assert _unchanged(workspace) or person.questions, (spelling, out.get("transaction"), out.get("changes"))


@pytest.mark.parametrize("spelling", ["control", "utf7"])
async def test_file_write_refuses_a_changed_index(workspace: Path, spelling: str) -> None:
    (workspace / DATA["path"]).write_text(DATA["before"])
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": DATA["path"], "content": DATA[spelling],
                                                       "overwrite": True})  # fmt: skip
    assert _unchanged(workspace), (spelling, result.content)
