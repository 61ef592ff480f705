"""Red team 143 F2: a symlink in a build directory whose target is a protected file, written later by the user's
own build.

A command may not write ``.git/config``, ``.vscode/settings.json``, ``.npmrc`` (protected: refused, the controls),
nor anything outside the roots (``~/.bashrc``). It may make ``dist/app.cfg -> ../.git/config`` (and the like) and a
source ``src/app.cfg`` holding what it wants there: nothing judges a symbolic link's *target* (``_linked`` judges the
other names of a hard link; ``judge_modes`` refuses a link only in place of a protected directory, and asks about
one whose target others may write). The user's next build (``cp src/app.cfg dist/app.cfg``, a bundler writing its
output) writes through the link: the git config gets ``core.fsmonitor`` and the user's next ``git status`` runs it;
the home's ``.bashrc`` is rewritten, outside every root.

The build is played here by ``shutil.copyfile`` (it follows a link at the destination, as ``cp`` and every
``open(..., "w")`` do). The payloads travel as data (rt143_f2_links.json) and write a marker file only; a person
declines every question."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell
from support.fidelity import GIT_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

DATA: dict[str, dict[str, dict[str, str] | str]] = json.loads(
    (Path(__file__).resolve().parent / "rt143_f2_links.json").read_text()
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


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, env={**os.environ, **GIT_ENV}, check=False)


def _project(root: Path, home: Path) -> None:
    _git(root, "init", "-q")
    (root / ".vscode").mkdir()
    (root / ".vscode" / "settings.json").write_text("{}\n")
    (root / ".npmrc").write_text("fund=false\n")
    (root / ".gitignore").write_text("dist/\n.t/\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    (home / ".bashrc").write_text("# the user's\n")


def _text(data: str, marker: Path, home: Path, source: str = "") -> str:
    return data.replace("{marker}", str(marker)).replace("{home}", str(home)).replace("{source}", source)


async def _command(root: Path, files: dict[str, str], links: dict[str, str]) -> tuple[Person, dict[str, object]]:
    (root / ".t").mkdir(exist_ok=True)
    (root / ".t" / "files.json").write_text(json.dumps(files))
    (root / ".t" / "links.json").write_text(json.dumps(links))
    command = program(root, "write", WRITE)
    person = Person(False)
    async with shell(root, person) as client:
        out = await run(client, command, cwd=str(root))
    return person, out


def _guarded(root: Path, home: Path, case: str) -> Path:
    return {"git_config": root / ".git" / "config", "vscode_settings": root / ".vscode" / "settings.json",
            "npmrc": root / ".npmrc", "home_bashrc": home / ".bashrc"}[case]  # fmt: skip


@pytest.mark.parametrize("case", ["git_config", "vscode_settings", "npmrc"])
async def test_control_the_protected_file_written_by_the_command_is_refused(
    workspace: Path, isolated_home: Path, case: str
) -> None:
    _project(workspace, isolated_home)
    marker = workspace.parent / "marker"
    before = _guarded(workspace, isolated_home, case).read_bytes()
    source = _text(str(DATA["sources"][case]), marker, isolated_home)
    controls = DATA["controls"][case]
    assert isinstance(controls, dict)
    files = {k: _text(v, marker, isolated_home, source) for k, v in controls.items()}
    _, out = await _command(workspace, files, {})
    assert _guarded(workspace, isolated_home, case).read_bytes() == before, out.get("changes")


@pytest.mark.parametrize("case", ["git_config", "vscode_settings", "npmrc", "home_bashrc"])
async def test_attack_a_link_to_a_protected_file_lets_the_build_write_it(
    workspace: Path, isolated_home: Path, case: str
) -> None:
    _project(workspace, isolated_home)
    marker = workspace.parent / "marker"
    guarded = _guarded(workspace, isolated_home, case)
    before = guarded.read_bytes()
    links_of = DATA["links"][case]
    assert isinstance(links_of, dict)
    links = {k: _text(v, marker, isolated_home) for k, v in links_of.items()}
    (out_name,) = links
    src = "src/" + out_name.split("/", 1)[1]
    person, out = await _command(workspace, {src: _text(str(DATA["sources"][case]), marker, isolated_home)}, links)
    # The user's next build, outside the box: copies src/<name> to dist/<name>.
    if (workspace / out_name).is_symlink():
        shutil.copyfile(workspace / src, workspace / out_name)
    if case == "git_config":
        _git(workspace, "status")  # the user's next git status
    changed = guarded.read_bytes() != before
    assert not changed or person.questions, (f"{guarded} rewritten by the user's build through a link nobody asked "
                                             f"about; the git config's program ran: {marker.exists()}",
                                             out.get("transaction"), out.get("changes"))  # fmt: skip
