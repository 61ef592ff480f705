"""Red team 107 F3 (issue 42 item 1, after red team 106 F1): programs the user runs straight from a build directory
(``cargo run`` runs ``target/debug/app`` as it is when the sources did not change; ``npm start`` runs
``node dist/index.js``; ``next start`` loads ``.next/server``) made writable by others, with no question.

``judge_modes`` skips a group- or other-writable grant wherever ``in_scratch`` says the path is in a build or cache
directory; red team 106 F1 excepted compiled Python, ``__pycache__``, ``node_modules`` and ``vendor/bundle`` only.
Anyone on the machine may then put their code in ``target/debug/app`` or ``dist/index.js`` and the user's next run,
outside the box, executes it. The same grant on ``src/main.rs`` (the control) is asked.

The command lines travel as data (build_code_loosened.json). A person declines every question; a case fails when
the grant landed with no question."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.planted import loosened_by

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

LINES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "build_code_loosened.json").read_text())


def _project(root: Path) -> None:
    (root / "Cargo.toml").write_text('[package]\nname = "app"\nversion = "0.1.0"\n')
    (root / "src").mkdir()
    (root / "src" / "main.rs").write_text('fn main() { println!("hi"); }\n')
    debug = root / "target" / "debug"
    debug.mkdir(parents=True)
    (debug / "app").write_bytes(b"\x7fELF" + b"\0" * 60)
    (debug / "app").chmod(0o755)
    (root / "target" / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    (root / "dist").mkdir()
    (root / "dist" / "index.js").write_text("console.log('hi');\n")
    manifest = {"name": "app", "main": "dist/index.js", "scripts": {"start": "node dist/index.js"}}
    (root / "package.json").write_text(json.dumps(manifest) + "\n")
    (root / ".next" / "server").mkdir(parents=True)
    (root / ".next" / "server" / "app.js").write_text("module.exports = {};\n")


@pytest.mark.parametrize("case", sorted(LINES))
async def test_a_built_program_made_writable_by_others_is_asked(workspace: Path, case: str) -> None:
    _project(workspace)
    loosened, person, out = await loosened_by(workspace, LINES[case])
    assert not loosened or person.questions, (case, loosened, out.get("transaction"), out.get("changes"))
