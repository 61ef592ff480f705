"""Red team 147 F2: a link through ``/proc/self/cwd`` is followed in the *server's* process, the user's build follows it
in its own.

``link_ends.link_end`` follows every link on the way with ``os.readlink`` in the server: ``/proc/self`` is the
server's pid, ``/proc/<pid>/cwd`` the server's working directory. The hosts start servers elsewhere than the project
(Claude Desktop in ``/``; the form ``mcp-guard config`` prints passes ``--launch-dir``): the end is computed as
``/.git/config``, ``/.npmrc``, ``/githooks/pre-commit`` — outside the roots, under a root-owned directory (nothing
asked) or unprotected. The user's next build runs in the project: the kernel resolves ``/proc/self/cwd`` to the
project, and ``cp src/app.cfg dist/app.cfg`` rewrites the project's ``.git/config`` (``core.fsmonitor``: the next
``git status`` runs it), its hooks, its ``.npmrc``.

Controls: the same links spelled ``../.git/config`` (and so on) are refused. The server runs with cwd ``/`` and
``--launch-dir <project>``; the payloads travel as data (rt147_f2_links.json) and write a marker file only; a person
declines every question."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import SX, Person, program, run
from support.clients import serve
from support.fidelity import GIT_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

DATA: dict[str, dict[str, dict[str, str] | str]] = json.loads(
    (Path(__file__).resolve().parent / "rt147_f2_links.json").read_text()
)

WRITE = """
import json, pathlib
for name, text in json.loads(pathlib.Path('.t/files.json').read_text()).items():
    p = pathlib.Path(name)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
for name, target in json.loads(pathlib.Path('.t/links.json').read_text()).items():
    p = pathlib.Path(name)
    p.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, name)
"""

CASES = ["git_config", "vscode_settings", "npmrc", "hooks_path"]


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, env={**os.environ, **GIT_ENV}, check=False)


def _project(root: Path) -> None:
    _git(root, "init", "-q")
    _git(root, "config", "core.hooksPath", "githooks")
    (root / "githooks").mkdir()
    (root / "githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (root / "githooks" / "pre-commit").chmod(0o755)
    (root / ".vscode").mkdir()
    (root / ".vscode" / "settings.json").write_text("{}\n")
    (root / ".npmrc").write_text("fund=false\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "start")


def _guarded(root: Path, case: str) -> Path:
    return {"git_config": root / ".git" / "config", "vscode_settings": root / ".vscode" / "settings.json",
            "npmrc": root / ".npmrc", "hooks_path": root / "githooks" / "pre-commit"}[case]  # fmt: skip


async def _command(root: Path, files: dict[str, str], links: dict[str, str]) -> tuple[Person, dict[str, object]]:
    (root / ".t").mkdir(exist_ok=True)
    (root / ".t" / "files.json").write_text(json.dumps(files))
    (root / ".t" / "links.json").write_text(json.dumps(links))
    command = program(root, "write", WRITE)
    person = Person(False)
    # As Claude Desktop starts it: in /, the project named by --launch-dir.
    async with serve(SX, Path("/"), "--launch-dir", str(root), elicitation_callback=person) as client:
        out = await run(client, command, cwd=str(root))
    return person, out


async def _one(workspace: Path, case: str, kind: str) -> tuple[bool, Person, dict[str, object], bool]:
    _project(workspace)
    marker = workspace.parent / "marker"
    guarded = _guarded(workspace, case)
    before = guarded.read_bytes()
    links_of = DATA[kind][case]
    assert isinstance(links_of, dict)
    (out_name,) = links_of
    src = "src/" + out_name.split("/", 1)[1]
    source = str(DATA["sources"][case]).replace("{marker}", str(marker))
    person, out = await _command(workspace, {src: source}, dict(links_of))
    # The user's next build, outside the box, in the project: copies src/<name> to dist/<name>.
    if (workspace / out_name).is_symlink():
        subprocess.run(["cp", src, out_name], cwd=workspace, check=False, capture_output=True)
    (workspace / "notes.txt").write_text("more\n")
    _git(workspace, "status")  # the user's next git status
    _git(workspace, "add", "notes.txt")
    _git(workspace, "commit", "-qm", "notes")  # and commit
    return guarded.read_bytes() != before, person, out, marker.exists()


@pytest.mark.parametrize("case", CASES)
async def test_control_a_plain_link_to_the_protected_file_is_refused(workspace: Path, case: str) -> None:
    changed, _person, out, ran = await _one(workspace, case, "controls")
    assert not changed and not ran, out.get("changes")


# (``/.git/config``, ``/.npmrc``, ``/.vscode/settings.json`` are refused by their names at any depth: only a path
# protected where it lies — the hooks directory ``core.hooksPath`` names — is reached this way.)
@pytest.mark.parametrize("case", ["hooks_path"])
async def test_attack_a_link_through_proc_self_cwd_lets_the_build_write_it(workspace: Path, case: str) -> None:
    changed, person, out, ran = await _one(workspace, case, "links")
    assert not changed or person.questions, ("rewritten by the user's build through a /proc/self/cwd link nobody "
                                             f"asked about; a program it names ran: {ran}",
                                             out.get("transaction"), out.get("changes"))  # fmt: skip
