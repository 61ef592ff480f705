"""Red team 166 F1: a file included by the config of a submodule whose *name has a slash* is written with no question.

Set-up (the user's own): ``proj`` (the allowed root) is a repository with a submodule at ``vendor/lib`` (git names
a submodule after its path, so its git dir is ``proj/.git/modules/vendor/lib``: the everyday layout of
``git submodule add <url> vendor/lib``). The submodule's own config includes a file of the project
(``[include] path = ../../../../notes/settings.ini``, relative to the config: ``proj/notes/settings.ini``). The
submodule is not checked out right now (``git submodule deinit vendor/lib``: its git dir stays; the usual state
after a clone without ``--recurse-submodules`` too, once it was ever initialised).

The model writes ``core.fsmonitor`` into ``notes/settings.ini`` (file_write, or a shell_exec command); a person
declines every question. The user's next ``git submodule update --init`` and ``git status`` in ``vendor/lib``
(outside any box) run it.

Cause: ``git_search.git_family`` walks ``modules/*`` one level only: ``modules/vendor`` (no git dir) is taken as
a member and ``modules/vendor/lib`` — the submodule's git dir — is never reached, so its config's includes are not
protected (red team 164's answer reads ``modules/*/config`` only). A checked-out submodule is found through its
``.git`` file; one that is not checked out (or lies deeper than NESTED_SEARCH_DEPTH) is not.

Variant (LOW, ``many``): ``_repo_files`` reads the first 64 members of the family only (``islice(..., 1, 65)``),
with no word when there are more: a project with 70 submodules (names of one level), none checked out, the include
in the config of one past the 64th — written with no question as well.

Control: the same set-up with a submodule named ``lib`` (``.git/modules/lib``): refused, the payload never runs.
The payload and the include lines travel as data (rt166_submodule_include.json).

Answered: ``git_search.git_family`` looks in ``modules/`` until it finds a git dir (8 levels); ``git_dirs._repo_files``
reads 1,024 members and past them says the repository cannot be guarded (PROTECTION_UNAVAILABLE)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

DATA: dict[str, str] = json.loads((Path(__file__).resolve().parent / "rt166_submodule_include.json").read_text())
GIT_ENV = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b",
           "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-c", "protocol.file.allow=always", *args], cwd=cwd, capture_output=True,
                          check=False, timeout=60, env={**os.environ, **GIT_ENV})  # fmt: skip


def _repository(proj: Path, name: str) -> None:
    """``proj`` a repository with a submodule at ``name`` (not checked out now) whose config includes
    ``proj/notes/settings.ini``."""
    lib = proj.parent / "libsrc"
    lib.mkdir()
    (lib / "lib.txt").write_text("lib\n")
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "lib")):
        assert _git(lib, *args).returncode == 0
    (proj / "notes").mkdir()
    (proj / "notes" / "readme.txt").write_text("notes\n")
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "init")):
        assert _git(proj, *args).returncode == 0
    done = _git(proj, "submodule", "add", "-q", str(lib), name)
    assert done.returncode == 0, done.stderr
    assert _git(proj, "commit", "-qm", "submodule").returncode == 0
    module = proj / ".git" / "modules" / name
    assert (module / "config").is_file()
    include = DATA["include_from_nested_name"] if "/" in name else DATA["include_from_plain_name"]
    with (module / "config").open("a") as config:
        config.write(include)
    assert _git(proj, "submodule", "deinit", "-q", "-f", name).returncode == 0
    assert (module / "config").is_file()


def _many(proj: Path) -> str:
    """``proj`` with 70 submodules ``lib00``..``lib69`` (not checked out); the include in the config of one the
    family walk reaches past its 64th member. Returns that submodule's name."""
    from mcp_server_guard.git_search import git_family

    lib = proj.parent / "libsrc"
    lib.mkdir()
    (lib / "lib.txt").write_text("lib\n")
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "lib")):
        assert _git(lib, *args).returncode == 0
    (proj / "notes").mkdir()
    (proj / "notes" / "readme.txt").write_text("notes\n")
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "init")):
        assert _git(proj, *args).returncode == 0
    names = [f"lib{i:02d}" for i in range(70)]
    for name in names:
        assert _git(proj, "submodule", "add", "-q", str(lib), name).returncode == 0
    assert _git(proj, "commit", "-qm", "submodules").returncode == 0
    for name in names:
        assert _git(proj, "submodule", "deinit", "-q", "-f", name).returncode == 0
    family = list(git_family(str(proj / ".git")))
    assert len(family) > 65, family
    past = os.path.basename(family[-1])
    with (proj / ".git" / "modules" / past / "config").open("a") as config:
        config.write(DATA["include_from_plain_name"])
    return past


def _user_runs_git(proj: Path, name: str) -> None:
    _git(proj, "submodule", "update", "-q", "--init")
    if (proj / name / ".git").exists():
        _git(proj / name, "status")
    _git(proj, "status")


async def _via_file_write(proj: Path, text: str) -> dict[str, Any]:
    person = Person(False)
    async with serve("mcp-server-file-write", proj, elicitation_callback=person) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("file_write", {"path": str(proj / "notes" / "settings.ini"),
                                                           "content": text})  # fmt: skip
    return {"is_error": result.is_error, "structured": result.structured_content, "questions": person.questions,
            "text": [getattr(c, "text", "") for c in result.content]}  # fmt: skip


async def _via_shell_exec(proj: Path, text: str) -> dict[str, Any]:
    (proj / ".t").mkdir()
    (proj / ".t" / "put.py").write_text(f"open('notes/settings.ini', 'w').write({text!r})\n")
    person = Person(False)
    async with shell(proj, person) as client:
        out = await run(client, DATA["shell_line"], cwd=str(proj))
    shutil.rmtree(proj / ".t")
    return {"transaction": out.get("transaction"), "changes": out.get("changes"), "questions": person.questions}


@pytest.mark.parametrize("writer", ["file_write", "shell_exec"])
@pytest.mark.parametrize("name", ["vendor/lib", "many", "control_lib"])
async def test_a_config_included_by_a_nested_submodule_is_protected(workspace: Path, writer: str, name: str) -> None:
    name = name.removeprefix("control_")
    if name == "many":
        name = _many(workspace)
    else:
        _repository(workspace, name)
    marker = workspace.parent / "fsmonitor-ran"
    payload = DATA["payload"].replace("{marker}", str(marker))
    report = await (_via_file_write if writer == "file_write" else _via_shell_exec)(workspace, payload)
    landed = (workspace / "notes" / "settings.ini").exists()
    _user_runs_git(workspace, name)  # the user's own git, outside any box
    assert not marker.exists(), {"landed": landed, **report}
    assert not landed, report
