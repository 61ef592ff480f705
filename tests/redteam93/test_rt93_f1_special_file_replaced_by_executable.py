"""Red team 93 F1 (issue 42, claim 1: every mode change is judged by what it grants): a socket or a FIFO replaced by
an executable file (or a file others may write) is judged against the special file's mode — the mirror of red team
92 F1/F3, whose fix looks only for a *link* in the real tree (``effects._was_link``; ``refusals.judge_modes``'s
``S_ISLNK``).

A Unix socket a program bound in the project (a dev server's, an editor's, ``.s.PGSQL.5432``) has the mode
``0777 & ~umask`` = 0755: its x bits read as "the path was executable already", so ``rm app.sock && printf
'#!/bin/sh ...' > app.sock && chmod 755 app.sock`` plants a new executable with no question (a new name with the same
content is asked). A FIFO made ``mkfifo -m 777`` hides ``chmod 666`` the same way.

Safe behaviour: a path whose kind changes is judged as made new (its old mode is no mode the new entry had)."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import Judgement, judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.boxed import Person, program, run, shell
from support.copies import Copy, overlays_work

POLICY = load_policy()


def _judged(tmp_path: Path, script: str) -> Judgement:
    copy = Copy(tmp_path)
    old = os.umask(0o022)
    try:
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(copy.root / "app.sock"))  # mode 0755, as any socket bound under umask 022
        s.close()
        os.mkfifo(copy.root / "pipe", 0o777)
        os.chmod(copy.root / "pipe", 0o777)
    finally:
        os.umask(old)
    changes = copy.run(script)
    return judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_control_a_new_executable_is_asked(tmp_path: Path) -> None:
    judged = _judged(tmp_path, "printf '#!/bin/sh\\necho hi\\n' > tool && chmod 755 tool")
    assert any("tool" in a for a in judged.asks), judged.asks


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_a_socket_replaced_by_an_executable_is_asked(tmp_path: Path) -> None:
    judged = _judged(tmp_path, "rm app.sock && printf '#!/bin/sh\\necho hi\\n' > app.sock && chmod 755 app.sock")
    assert any("app.sock" in a for a in judged.asks), (judged.asks, judged.summary)


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_a_fifo_replaced_by_an_executable_is_asked(tmp_path: Path) -> None:
    judged = _judged(tmp_path, "rm pipe && printf '#!/bin/sh\\necho hi\\n' > pipe && chmod 755 pipe")
    assert any("pipe" in a for a in judged.asks), (judged.asks, judged.summary)


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_the_server_asks_before_a_socket_becomes_an_executable(workspace: Path) -> None:
    old = os.umask(0o022)
    try:
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(workspace / "app.sock"))
        s.close()
    finally:
        os.umask(old)
    command = program(
        workspace,
        "plant",
        "os.unlink('app.sock')\nopen('app.sock', 'w').write('#!/bin/sh\\necho ran\\n')\nos.chmod('app.sock', 0o755)\n",
    )
    person = Person()
    async with shell(workspace, person) as client:
        out = await run(client, command, cwd=str(workspace))
    assert (workspace / "app.sock").is_file()  # it landed (the person says yes to everything)
    assert person.questions, f"a new executable applied unasked: {out.get('changes')}"


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_a_fifo_replaced_by_a_world_writable_file_is_asked(tmp_path: Path) -> None:
    judged = _judged(tmp_path, "rm pipe && printf 'x\\n' > pipe && chmod 666 pipe")
    assert any("writable by others" in a and "pipe" in a for a in judged.asks), (judged.asks, judged.summary)
