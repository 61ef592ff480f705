"""Red team 150 F1: a link outside the roots to one of the user's own programs, or to a name not there yet in one of
the user's own directories, lands unasked; the user's next build writes through it, outside every root.

``refusals._judge_link_end`` asks about a link whose end lies outside the roots "where the user's own files lie"
(``link_ends.open_to_others``: ``probe == end`` and the user's, not a program) and refuses one whose end is protected
(``protection.write_rule``). Three gaps:

* an end that is an **executable regular file** is exempt from both (``not _program(end) and write_rule``;
  ``open_to_others`` returns None for ``program``): meant for a venv's ``python`` from uv or pyenv, "run, not
  written" — but a build writing ``dist/tool`` writes it all the same. So ``dist/tool -> ~/.local/bin/tool`` (a
  pipx/uv shim; ``.local/bin/**`` is protected) and ``dist/pre-commit -> <another repo>/.git/hooks/pre-commit`` land
  unasked, and the user's build replaces a program the user runs (the other repo's next commit runs the hook);
* an end that is **missing** in a directory of the user's (``~/.lein/profiles.clj``, ``<outside>/notes-new.txt``):
  ``open_to_others`` walks up to the first existing parent, finds it the user's and not ``probe == end``, says None;
  ``os.path.isdir`` is False: landed unasked, and the build creates the file outside the roots (where nothing is
  judged, nothing is kept for undo).

* (a server run as root) an **existing** file of root's own outside the roots: ``open_to_others`` asks only
  ``st_uid == geteuid() != 0``, and trusts every uid-0 entry as "the system's"; root's home is its user's home.

The build is played by ``shutil.copyfile`` (it follows a link at the destination, as ``cp`` does), as in red team
143 F2. Controls (the differential): the same protected directory's *text* file (``~/.local/bin/tool.txt``, 0644),
the other repository's ``.git/config`` and a missing ``~/.local/bin/tool-new`` are refused; only the x bit or the
missing name differs. The links travel as data
(rt150_f1_links.json); a person declines every question.

Answered by class (``link_ends.open_to_others``, ``refusals._interpreter_link``): a link ending outside the roots
where the user may write — the file, or the directory a missing name would be made in — is asked; a protected end
is refused whatever its mode; the one exemption is a Python environment's interpreter link ending at an
interpreter."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

DATA: dict[str, object] = json.loads((Path(__file__).resolve().parent / "rt150_f1_links.json").read_text())

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


def _fill(text: str, home: Path, outside: Path, marker: Path) -> str:
    return text.replace("{home}", str(home)).replace("{outside}", str(outside)).replace("{marker}", str(marker))


def _user_files(home: Path, outside: Path) -> None:
    """The user's own programs outside the roots: a pipx shim and another repository's hook."""
    tool = home / ".local" / "bin" / "tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho the user's tool\n")
    tool.chmod(0o755)
    repo = outside / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    text = home / ".local" / "bin" / "tool.txt"
    text.write_text("the user's notes\n")
    text.chmod(0o644)
    (home / ".lein").mkdir()


async def _case(workspace: Path, home: Path, kind: str, case: str) -> tuple[Person, dict[str, object], Path, bytes]:
    outside = workspace.parent / "outside"
    marker = workspace.parent / "marker"
    _user_files(home, outside)
    group = DATA[kind]
    assert isinstance(group, dict)
    links = {k: _fill(v, home, outside, marker) for k, v in group[case].items()}
    ((name, target),) = links.items()
    end = Path(target)
    before = end.read_bytes() if end.exists() else b""
    src = "src/" + name.split("/", 1)[1]
    (workspace / ".t").mkdir(exist_ok=True)
    (workspace / ".t" / "files.json").write_text(json.dumps({src: _fill(str(DATA["source"]), home, outside, marker)}))
    (workspace / ".t" / "links.json").write_text(json.dumps(links))
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, program(workspace, "write", WRITE), cwd=str(workspace))
    # The user's next build, outside the box: copies src/<name> to dist/<name> (following a link there, as cp does).
    if (workspace / name).is_symlink():
        shutil.copyfile(workspace / src, workspace / name)
    return person, out, end, before


def _written(end: Path, before: bytes) -> bool:
    return end.exists() and end.read_bytes() != before


@pytest.mark.parametrize("case", ["protected_text_file", "other_repo_config", "missing_protected_file"])
async def test_control_link_to_a_protected_name_outside_the_roots_is_refused(
    workspace: Path, isolated_home: Path, case: str
) -> None:
    person, out, end, before = await _case(workspace, isolated_home, "control", case)
    assert not _written(end, before), (person.questions, out.get("transaction"), out.get("changes"))


def _landed(person: Person, out: dict[str, object], end: Path, before: bytes) -> None:
    written = _written(end, before)
    assert not written or person.questions, (
        f"{end} (outside every root) written by the user's build through a link nobody asked about; "
        f"executable: {os.access(end, os.X_OK)}",
        out.get("transaction"),
        out.get("changes"),
    )


@pytest.mark.parametrize("case", ["home_local_bin_program", "other_repo_hook"])
async def test_attack_link_to_a_program_outside_the_roots_lets_the_build_replace_it(
    workspace: Path, isolated_home: Path, case: str
) -> None:
    _landed(*await _case(workspace, isolated_home, "attack", case))


@pytest.mark.parametrize("case", ["missing_file_in_own_dir", "missing_lein_profile"])
async def test_attack_link_to_a_missing_name_in_a_users_directory_lets_the_build_create_it(
    workspace: Path, isolated_home: Path, case: str
) -> None:
    _landed(*await _case(workspace, isolated_home, "attack", case))


async def test_attack_link_to_an_existing_file_of_the_user_outside_the_roots(
    workspace: Path, isolated_home: Path
) -> None:
    """Asked for a user, and for root (a server run as root: this machine's tests, a container), whose own files
    were trusted as "the system's" (F3): what the user may write is the user's."""
    _landed(*await _case(workspace, isolated_home, "attack", "existing_own_text_file"))
