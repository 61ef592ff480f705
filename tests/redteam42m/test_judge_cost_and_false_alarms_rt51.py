"""Red team 51 F4 and F5: what reading direnv/mise configs in every directory cost the judge (each directory read
up to 96 files of 64 KiB: writing one small file in each of four took minutes), and everyday edits it refused (a
mise task's script). Every such directory of one judgement now shares one budget of files and bytes, and only what
mise runs on entering the project (``_.source``, ``_.file``, ``[hooks]``) is read. Nothing here is harmful: the
scripts only say ``true``."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from mcp_server_guard import hook_runs
from mcp_server_guard.git_dirs import GitLookups, git_rule
from support.boxed import Person, program, run, shell
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "rt51_payloads.json").read_text())


def _first_commit(root: Path) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", "init")


def _crafted_tree(root: Path, packages: int) -> None:
    """A repository (no hooks) with ``packages`` sub-directories, each with an ``.envrc`` (``source_env`` of the same
    96 shared scripts, 64 KiB of plain shell each: 6 MiB in all, whatever ``packages`` is)."""
    lib = root / "lib"
    lib.mkdir()
    line = "x=1; echo \"$x\" a b c d e f g h i j k l m n o p q r s t u v w x y z ./a/b/c.sh 'q r s'\n"
    body = (line * 900)[:65000]
    for i in range(96):
        (lib / f"s{i}.sh").write_text(body)
    for p in range(packages):
        (root / f"pkg{p}").mkdir()
        (root / f"pkg{p}" / ".envrc").write_text("".join(f"source_env ../lib/s{i}.sh\n" for i in range(96)))
    (root / ".gitignore").write_text(".t/\n")
    git(root, "init", "-q")
    _first_commit(root)


def test_envrc_in_each_directory_is_read_with_one_budget_for_the_whole_judgement(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    packages = 4
    _crafted_tree(workspace, packages)
    read: list[int] = []
    text = hook_runs._text

    def counted(path: str) -> str:
        body = text(path)
        read.append(len(body))
        return body

    monkeypatch.setattr(hook_runs, "_text", counted)
    lookups = GitLookups()
    real = os.path.realpath(workspace)
    for p in range(packages):
        git_rule(f"{real}/pkg{p}/notes.txt", None, lookups)
    # The .envrc files themselves (read for what they run and for the PATH they set), plus one budget of what they
    # run for all four (the last file read may pass it).
    envrcs = sum(len((workspace / f"pkg{p}" / ".envrc").read_text()) for p in range(packages))
    assert sum(read) <= 2 * envrcs + hook_runs._RUN_BYTES_MAX + 65_536, sum(read)


async def test_editing_a_mise_task_script_is_everyday_work(workspace: Path) -> None:
    """F6 (false alarm). ``run_by_hooks`` now reads mise configs whole, as hook texts, for ``_.source``: every file
    a ``[tasks]`` entry names (``run = "./scripts/lint.sh"``, ``file = "scripts/build.sh"``) is protected like a
    git hook's program, though a mise task runs only when the user types ``mise run lint`` (as an npm script, whose
    files are not protected). Editing the project's own lint script is refused or asked."""
    (workspace / "mise.toml").write_text(DATA["mise_tasks"])
    (workspace / "scripts").mkdir()
    for name in ("lint.sh", "build.sh"):
        (workspace / "scripts" / name).write_text("#!/bin/sh\nexit 0\n")
    (workspace / ".gitignore").write_text(".t/\n")
    git(workspace, "init", "-q")
    _first_commit(workspace)
    code = "for n in ('lint.sh', 'build.sh'):\n    open('scripts/' + n, 'a').write('echo done\\n')\n"
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, program(workspace, "edit", code), cwd=str(workspace))
    landed = all("echo done" in (workspace / "scripts" / n).read_text() for n in ("lint.sh", "build.sh"))
    assert landed and not person.questions, f"questions={person.questions} changes={out.get('changes')}"
