"""Red team 99: start-up files an interpreter's REPL runs from the current directory (the project's top), as
``.irbrc``, ``.pryrc``, ``.pdbrc``, ``.Rprofile`` (all protected at any depth) — but not these:

- ``.ghci``: GHCi (``ghci``, ``cabal repl``, ``stack ghci``) runs ``./.ghci`` first; ``:!cmd`` runs a shell command.
- ``.iex.exs``: IEx (``iex -S mix``) evaluates ``./.iex.exs`` (Elixir: ``System.cmd``).
- ``.octaverc``: Octave runs ``./.octaverc`` at start (``system(...)``).

The person declines every question: a file that lands was neither refused nor asked about. The controls (an
``.irbrc``, a package.json ``postinstall``) show the harness: they do not land.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing"),
]

TEXTS = {
    ".ghci": ":! echo rt99-planted\n",
    ".iex.exs": 'System.cmd("echo", ["rt99-planted"])\n',
    ".octaverc": 'system("echo rt99-planted");\n',
}
CONTROLS = {
    ".irbrc": 'system("echo rt99-planted")\n',
}


async def _writes(root: Path, name: str, text: str) -> tuple[bool, Person, dict[str, object]]:
    command = program(root, "edit", f"open({name!r}, 'w').write({text!r})\n")
    person = Person(answer=False)
    async with shell(root, person) as client:
        out = await run(client, command)
    return (root / name).exists(), person, out


@pytest.mark.parametrize("name", sorted(TEXTS))
async def test_rt99_a_repl_start_up_file_lands_unasked(workspace: Path, name: str) -> None:
    landed, person, out = await _writes(workspace, name, TEXTS[name])
    assert not landed, (
        f"{name} landed: the next REPL started in the project runs it; questions={person.questions} "
        f"transaction={out.get('transaction')}"
    )


@pytest.mark.parametrize("name", sorted(CONTROLS))
async def test_rt99_control_irbrc_does_not_land(workspace: Path, name: str) -> None:
    landed, _person, _out = await _writes(workspace, name, CONTROLS[name])
    assert not landed


async def test_rt99_control_package_json_postinstall_does_not_land(workspace: Path) -> None:
    (workspace / "package.json").write_text(json.dumps({"name": "app", "version": "1.0.0"}, indent=2) + "\n")
    code = (
        "import json\n"
        "p = json.load(open('package.json'))\n"
        "p['scripts'] = {'postinstall': 'echo rt99-planted'}\n"
        "open('package.json', 'w').write(json.dumps(p, indent=2) + '\\n')\n"
    )
    command = program(workspace, "edit", code)
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        await run(client, command)
    assert "rt99-planted" not in (workspace / "package.json").read_text()
    assert person.questions
