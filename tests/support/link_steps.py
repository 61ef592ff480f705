"""Red-team link cases (141–147): shell_exec calls that each make the directories and links a JSON step names (the
person declines every question), and the links of a tree that really lead into given places."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from support.boxed import Person, program, run, shell

STEP = """
import json, pathlib
step = json.loads(pathlib.Path('.t/step.json').read_text())
for name in step.get('rmdirs', []):
    os.rmdir(name)
for name in step.get('dirs', []):
    os.makedirs(name, exist_ok=True)
for name, target in step.get('links', {}).items():
    p = pathlib.Path(name)
    p.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, name)
"""


def shared(workspace: Path) -> Path:
    """A directory beside the project that anyone may write (sticky, as /tmp)."""
    place = workspace.parent / "shared"
    place.mkdir(exist_ok=True)
    place.chmod(0o1777)
    return place


def escaping(root: Path, places: Sequence[Path]) -> list[str]:
    """The links under ``root`` (but ``.t``) that really lead into one of ``places``."""
    found = []
    for path in root.rglob("*"):
        if not path.is_symlink() or ".t" in path.parts:
            continue
        real = Path(os.path.realpath(path))
        if any(real.is_relative_to(place) for place in places):
            found.append(f"{path.relative_to(root)} -> {os.readlink(path)} (really {real})")
    return sorted(found)


async def link_steps(
    workspace: Path, steps: Sequence[object], fill: Mapping[str, str], *args: str
) -> tuple[Person, list[dict[str, object]]]:
    """One shell_exec call per step (its ``{NAME}`` placeholders filled), in one server started with ``args``."""
    person = Person(False)
    command = program(workspace, "step", STEP)
    outs: list[dict[str, object]] = []
    async with shell(workspace, person, *args) as client:
        for step in steps:
            text = json.dumps(step)
            for name, value in fill.items():
                text = text.replace(name, value)
            (workspace / ".t" / "step.json").write_text(text)
            outs.append(await run(client, command, cwd=str(workspace)))
    return person, outs
