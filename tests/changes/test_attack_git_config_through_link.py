"""Git's config rewritten with keys that run programs, through a second name.

Call 1: ``ln .git/config cfgcopy`` — the ``link`` step lands it; only ``cfgcopy`` is judged (an ordinary create).
Call 2: append ``[core] fsmonitor = ...`` to ``cfgcopy``. The copy-up of a file with two names carries no
``origin``, so ``upper._Reader.links`` wants the rewrite on every name (names_elsewhere walks the root and adds a
synthetic ``modify`` of ``.git/config`` with ``link=cfgcopy``). The judgement reads that change's new content
from the UPPER layer (``Trees.read``: the path is in ``by_path``), where ``.git/config`` does not exist: None,
which ``unsafe_git_entries`` reads as "no file, no unsafe keys" — equal to the real config's — ALLOWED. The
``link`` step then makes ``.git/config`` a name of the new ``cfgcopy``: git runs ``core.fsmonitor`` on the user's
next ``git status``, outside any box.

The payload is harmless (``echo``) and is never run here: the test only reads the config.

FAILS when the attack succeeds."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

PAYLOAD = "[core]\n\tfsmonitor = echo redteam-fsmonitor-would-run-here\n"


async def test_git_config_never_gains_a_program_through_a_second_name(workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    config = workspace / ".git" / "config"
    (workspace / ".t").mkdir()
    (workspace / ".t" / "payload").write_text(PAYLOAD)  # data only
    first = program(
        workspace,
        "ln",
        """
os.link(".git/config", "cfgcopy")
""",
    )
    second = program(
        workspace,
        "append",
        """
with open("cfgcopy", "a") as out:
    out.write(open(".t/payload").read())
""",
    )
    person = Person()
    async with shell(workspace, person) as client:
        one = await run(client, first)
        two = await run(client, second)
    text = config.read_text()
    assert "fsmonitor" not in text, (
        f".git/config now runs a program:\n{text}\ncall 1: {one['changes']}\ncall 2: {two['changes']}\n"
        f"questions: {person.questions}"
    )


async def test_git_config_gets_no_program_when_the_second_name_is_pre_existing(workspace: Path) -> None:
    """The same with the second name made by the user (a backup made with ``ln``, ``cp -l``, a dotfiles tool)."""
    import os

    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    config = workspace / ".git" / "config"
    os.link(config, workspace / "config.backup")
    (workspace / ".t").mkdir()
    (workspace / ".t" / "payload").write_text(PAYLOAD)
    code = program(
        workspace,
        "append",
        """
with open("config.backup", "a") as out:
    out.write(open(".t/payload").read())
""",
    )
    async with shell(workspace) as client:
        out = await run(client, code)
    assert "fsmonitor" not in config.read_text(), f".git/config now runs a program; the call said {out['changes']}"
