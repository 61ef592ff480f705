"""Red team 113 F1: a pip requirements file that says where its packages come from, spelt as pip reads it and
``hook_configs._requirements_sources`` does not.

Red team 101 C made a requirements file's ``-i``/``--index-url``/``--extra-index-url``/``-f``/``--find-links``/
``--trusted-host`` lines judged (asked on a copy, refused to file_write): the user's next ``pip install -r
requirements.txt`` takes every package from the index they name, and a package of the same name from there runs its
build (``setup.py``) outside the box. The judgement matches those option names whole at a line's start, over the raw
text. pip reads the file otherwise:

- its options are parsed by optparse, which takes any unique prefix of a long option: ``--index`` is
  ``--index-url``, ``--extra`` is ``--extra-index-url``, ``--find`` is ``--find-links``, ``--trusted`` is
  ``--trusted-host``;
- a line ending in a backslash is joined with the next before it is parsed (``--extra-\\`` + ``index-url …``);
- ``-r <file>`` / ``-c <file>`` include another file of any name (``deps.list``), whose option lines count as the
  including file's; neither the ``-r`` line nor the included file is judged.

Each lands unasked from shell_exec with a person who declines everything, and file_write writes it. Control: the
plain ``--index-url`` line, asked and refused. The texts travel as data (requirements_sources.json); the URLs name
a closed port, nothing is fetched."""

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
CASES: dict[str, dict[str, str]] = json.loads((HERE / "requirements_sources.json").read_text())
BEFORE = "requests\n"


def _pip() -> str:
    python = shutil.which("python3")
    if python is None or subprocess.run([python, "-c", "import pip"], capture_output=True, check=False).returncode:
        pytest.skip("no system python3 with pip")
    return python


@pytest.mark.parametrize("case", sorted(CASES))
def test_pip_takes_an_index_from_each_spelling(tmp_path: Path, case: str) -> None:
    """(The premise: pip's own parser of requirements files takes the closed port as an index or a link.)"""
    python = _pip()
    for name, text in CASES[case].items():
        (tmp_path / name).write_text(text)
    out = subprocess.run(
        [python, str(HERE / "pip_reads.txt"), str(tmp_path / "requirements.txt")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert any("127.0.0.1:9" in url for url in [*found["index_urls"], *found["find_links"]]), (case, found)


@pytest.mark.parametrize("case", sorted(CASES))
async def test_file_write_refuses_a_requirements_file_naming_an_index(workspace: Path, case: str) -> None:
    (workspace / "requirements.txt").write_text(BEFORE)
    written: list[str] = []
    async with serve("mcp-server-file-write", workspace) as client:
        for name, text in CASES[case].items():
            result = await client.call_tool("file_write", {"path": name, "content": text, "overwrite": True})
            if not result.is_error:
                written.append(name)
    assert set(written) != set(CASES[case]), (case, "every file written", written)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("case", sorted(CASES))
async def test_shell_exec_asks_before_a_requirements_file_naming_an_index(workspace: Path, case: str) -> None:
    (workspace / "requirements.txt").write_text(BEFORE)
    (workspace / "data").mkdir()
    copies = []
    for i, (name, text) in enumerate(CASES[case].items()):
        (workspace / "data" / f"{i}.dat").write_text(text)
        copies.append(f"cp data/{i}.dat {name}")
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, " && ".join(copies), cwd=str(workspace))
    files = CASES[case]
    landed = all((workspace / name).exists() and (workspace / name).read_text() == text for name, text in files.items())
    assert not landed or person.questions, (case, out.get("transaction"), out.get("changes"))
