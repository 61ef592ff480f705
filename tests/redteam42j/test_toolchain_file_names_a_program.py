"""Red team 5b: a rust-toolchain file that names a local toolchain directory lands with no question.

rustup reads ``rust-toolchain.toml`` (or ``rust-toolchain``) walking up from the current directory; ``[toolchain]
path = "..."`` makes every ``cargo``/``rustc`` the user — or rust-analyzer, which an editor starts on opening the
project and which runs ``cargo metadata`` at once — runs the ``bin/cargo`` of that directory (rustup book,
"Overrides: toolchain file", ``path``). A command that writes the file and the program (in ``tools/``, where a new
executable is not asked about) has it run outside the box on the next editor open. ``.cargo/config.toml`` is
protected for the same reason (``build.rustc-wrapper``); the toolchain file is not. rustup is not installed here: the
test shows the change lands with no question (the person declines everything); the payload is inert data.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

FILES = {
    "rust-toolchain.toml": '[toolchain]\npath = "tools/tc"\n',
    "tools/tc/bin/cargo": "#!/usr/bin/env python3\nopen('MARKER', 'w').write('ran')\n",
}


@pytest.mark.parametrize("name", ["rust-toolchain.toml", "rust-toolchain"])
async def test_attack_toolchain_file_naming_a_program_directory(workspace: Path, name: str) -> None:
    (workspace / "Cargo.toml").write_text('[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n')
    code = (
        f"files = {FILES!r}\n"
        f"files[{name!r}] = files.pop('rust-toolchain.toml')\n"
        "for path, text in files.items():\n"
        "    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)\n"
        "    open(path, 'w').write(text)\n"
        "os.chmod('tools/tc/bin/cargo', 0o755)\n"
    )
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, program(workspace, "plant", code))
    landed = (workspace / name).exists() and (workspace / "tools/tc/bin/cargo").exists()
    assert not landed or person.questions, (
        f"a toolchain file naming tools/tc landed unasked: transaction={out.get('transaction')} "
        f"summary={(out.get('changes') or {}).get('summary')}"
    )
