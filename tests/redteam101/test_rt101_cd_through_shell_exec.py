"""Red team 101 C and D through the real shell_exec server, in the box: a command writes, through a program kept in
the project (the payload is data), a setting that makes the user's tools run something later. The person declines
every question, so a setting that lands was never asked about.

- C: ``[tool.uv.sources]`` git (an existing dependency from a repository the command chose: ``uv sync`` builds it)
  and ``[[tool.poetry.source]]`` (Poetry's index). The control, ``[tool.uv] index-url``, is asked.
- D: the flox environment an ``.envrc`` activates with ``eval "$(flox activate -d tools)"``: its
  ``[hook] on-activate`` runs at every cd. The control, ``use flox -d tools``, is asked.

The payload only echoes, and the URLs point at a closed port; nothing here runs it."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing"),
]

MARK = "rt101-planted"
PYPROJECT = '[project]\nname = "app"\nversion = "0.1"\ndependencies = ["requests"]\n'


def _appended(name: str, text: str) -> Callable[[Path], tuple[str, str]]:
    def made(root: Path) -> tuple[str, str]:
        (root / "pyproject.toml").write_text(PYPROJECT)
        code = f"t = open({name!r}).read()\nt += {text!r}\nopen({name!r}, 'w').write(t)\n"
        return program(root, "edit", code), name

    return made


def _flox(envrc: str) -> Callable[[Path], tuple[str, str]]:
    def made(root: Path) -> tuple[str, str]:
        (root / ".envrc").write_text(envrc)
        (root / "tools" / ".flox" / "env").mkdir(parents=True)
        manifest = "tools/.flox/env/manifest.toml"
        (root / manifest).write_text('version = 1\n\n[install]\nhello.pkg-path = "hello"\n')
        code = f"t = open({manifest!r}).read()\nt += '\\n[hook]\\non-activate = \"echo {MARK}\"\\n'\n"
        code += f"open({manifest!r}, 'w').write(t)\n"
        return program(root, "edit", code), manifest

    return made


CASES: dict[str, Callable[[Path], tuple[str, str]]] = {
    "control uv index-url": _appended("pyproject.toml", f'\n[tool.uv]\nindex-url = "http://127.0.0.1:9/{MARK}"\n'),
    "uv sources git": _appended("pyproject.toml", f'\n[tool.uv.sources]\nrequests = {{ git = "http://127.0.0.1:9/{MARK}.git" }}\n'),  # noqa: E501
    "poetry source": _appended("pyproject.toml", f'\n[[tool.poetry.source]]\nname = "m"\nurl = "http://127.0.0.1:9/{MARK}"\npriority = "primary"\n'),  # noqa: E501
    "control use flox -d": _flox("use flox -d tools\n"),
    "flox activate -d": _flox('eval "$(flox activate -d tools)"\n'),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
async def test_attack_a_run_later_setting_lands_unasked_through_shell_exec(workspace: Path, case: str) -> None:
    command, name = CASES[case](workspace)
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, command)
    landed = (workspace / name).read_text() if (workspace / name).exists() else ""
    assert MARK not in landed, (
        f"{name} now makes a tool run or fetch something later, and nobody was asked: questions={person.questions} "
        f"transaction={out.get('transaction')}"
    )
