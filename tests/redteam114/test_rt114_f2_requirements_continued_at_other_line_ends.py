"""Red team 114 F2: red team 113 F1's answer joins a requirements file's continued lines only where a backslash
ends a line before LF (``re.sub(r"\\\\\\r?\\n", "", …)``), then splits with ``str.splitlines``. pip splits first
(``content.splitlines()``: CR alone, form feed, U+2028 … end lines too) and joins every line that ends in a
backslash with the next (``req_file.join_lines``). So ``--extra-in\\`` + CR + ``dex-url=http://…`` is, to pip,
``--extra-index-url=http://…`` (its own parser takes the index: first test), while the judge sees a line
``--extra-in\\`` (no option pip has) and a line ``dex-url=http://…`` (no option; no url after a space or ``@``):
nothing found. The user's next ``pip install -r requirements.txt`` takes packages from the model's index and runs a
source distribution's build outside the box.

Each spelling lands unasked from shell_exec (a person who declines everything) and file_write writes it. Control:
the same continuation before LF, asked and refused. The texts travel as data (requirements_line_ends.json); the URL
names a closed port, nothing is fetched. pip's parser is red team 113's (tests/redteam113/pip_reads.txt)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

HERE = Path(__file__).resolve().parent
CASES: dict[str, str] = json.loads((HERE / "requirements_line_ends.json").read_text())
BEFORE = b"requests\n"


def _pip() -> str:
    python = shutil.which("python3")
    if python is None or subprocess.run([python, "-c", "import pip"], capture_output=True, check=False).returncode:
        pytest.skip("no system python3 with pip")
    return python


@pytest.mark.parametrize("case", sorted(CASES))
def test_pip_takes_the_index_from_each_spelling(tmp_path: Path, case: str) -> None:
    (tmp_path / "requirements.txt").write_bytes(CASES[case].encode())
    out = subprocess.run(
        [_pip(), str(HERE.parent / "redteam113" / "pip_reads.txt"), str(tmp_path / "requirements.txt")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert any("127.0.0.1:9" in url for url in found["index_urls"]), (case, found)


@pytest.mark.parametrize("case", sorted(CASES))
async def test_file_write_refuses_a_requirements_file_naming_an_index(workspace: Path, case: str) -> None:
    (workspace / "requirements.txt").write_bytes(BEFORE)
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool(
            "file_write", {"path": "requirements.txt", "content": CASES[case], "overwrite": True}
        )
    assert (workspace / "requirements.txt").read_bytes() == BEFORE, (case, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("case", sorted(CASES))
async def test_shell_exec_asks_before_a_requirements_file_naming_an_index(workspace: Path, case: str) -> None:
    (workspace / "requirements.txt").write_bytes(BEFORE)
    (workspace / "new.dat").write_bytes(CASES[case].encode())
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, "cp new.dat requirements.txt", cwd=str(workspace))
    landed = (workspace / "requirements.txt").read_bytes() == CASES[case].encode()
    assert not landed or person.questions, (case, out.get("transaction"), out.get("changes"))
