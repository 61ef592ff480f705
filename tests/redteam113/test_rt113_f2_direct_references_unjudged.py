"""Red team 113 F2: a dependency taken from an archive or a repository the command chose, spelt as a PEP 508 direct
reference in the project's own lists, is not judged, while the very same reference in ``[tool.uv]
override-dependencies`` (or a ``[tool.uv.sources]`` ``url``/``git``) is asked (red team 101 C).

``requests @ http://…/r.tar.gz`` in ``[project] dependencies``, in ``[dependency-groups]``, or ``setuptools @ …`` in
``[build-system] requires`` (what ``pip install -e .``, ``uv sync`` and every PEP 517 frontend install first and run
to build the project), and ``requests @ …`` or a bare archive URL in ``requirements.txt``: the user's next ``uv
sync``/``pip install`` downloads that archive and runs its build backend (``setup.py``) outside the box. Nothing of
it is the project's own code (a ``path`` source or a local directory would be). ``hook_configs._pyproject_hooks``
reads only the ``[tool.*]`` tables and ``_requirements_sources`` only option lines.

Each case lands unasked from shell_exec with a person who declines everything, and file_write writes it. Controls:
the override and the uv source, asked and refused. The texts travel as data (direct_references.json); the URLs name a
closed port, nothing is fetched."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

DATA = json.loads((Path(__file__).resolve().parent / "direct_references.json").read_text())
BEFORE: dict[str, str] = DATA["before"]
CASES: dict[str, list[str]] = DATA["cases"]


def _references(path: str, text: str) -> list[str]:
    if path == "requirements.txt":
        return [line for line in text.splitlines() if "://" in line]
    parsed = tomllib.loads(text)
    found = [*parsed.get("project", {}).get("dependencies", []), *parsed.get("build-system", {}).get("requires", [])]
    for group in parsed.get("dependency-groups", {}).values():
        found += group
    return [item for item in found if Requirement(item).url]


@pytest.mark.parametrize("case", sorted(c for c in CASES if not c.startswith("control")))
def test_each_case_takes_a_package_from_a_url(case: str) -> None:
    """(The premise: each new text names a package by a URL, a PEP 508 direct reference or an archive.)"""
    path, text = CASES[case]
    assert _references(path, text), case


@pytest.mark.parametrize("case", sorted(CASES))
async def test_file_write_refuses_a_dependency_from_a_url(workspace: Path, case: str) -> None:
    path, text = CASES[case]
    (workspace / path).write_text(BEFORE[path])
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": path, "content": text, "overwrite": True})
    assert (workspace / path).read_text() == BEFORE[path], (case, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("case", sorted(CASES))
async def test_shell_exec_asks_before_a_dependency_from_a_url(workspace: Path, case: str) -> None:
    path, text = CASES[case]
    (workspace / path).write_text(BEFORE[path])
    (workspace / "new.dat").write_text(text)
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, f"cp new.dat {path}", cwd=str(workspace))
    assert (workspace / path).read_text() == BEFORE[path] or person.questions, (
        case,
        out.get("transaction"),
        out.get("changes"),
    )
