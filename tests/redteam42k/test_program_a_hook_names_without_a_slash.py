"""Red team 6: a file a git hook's text names is protected only when the word has a ``/`` (``git_dirs._run_by_hooks``:
``words = [w for w in _program_words(line) if "/" in w ...]``). The everyday hook lines ``python3 check.py``,
``sh precommit.sh``, ``node lint.js`` (a file at the work tree's top, where git runs hooks) and ``make lint`` (the
Makefile the hook's ``make`` reads) name files with no slash: a command rewrites them with no question (the person
declines every question), and the user's next ``git commit`` runs what it wrote, outside the box. (The git config
side, ``_programs``, also takes a word with a ``.``; the hook side does not.) The payload writes a marker in the
test's tmp dir.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


def _cases(marker: Path) -> dict[str, tuple[str, str, str, str]]:
    py = f"open({str(marker)!r}, 'w').write('ran')\n"
    sh = f"echo ran > '{marker}'\n"
    return {
        # hook line, file it names, its content before, the content the command writes
        "python3-check.py": ("python3 check.py", "check.py", "print('ok')\n", py),
        "sh-precommit.sh": ("sh precommit.sh", "precommit.sh", "true\n", sh),
        "make-lint": ("make -s lint", "Makefile", "lint:\n\t@true\n", f"lint:\n\t@{sh}"),
    }


@pytest.mark.parametrize("case", ["python3-check.py", "sh-precommit.sh", "make-lint"])
async def test_attack_file_a_hook_runs_named_without_a_slash(workspace: Path, tmp_path: Path, case: str) -> None:
    if case == "make-lint" and shutil.which("make") is None:
        pytest.skip("make missing")
    marker = tmp_path / "MARKER-hook-ran"
    line, name, before, after = _cases(marker)[case]
    (workspace / name).write_text(before)
    git(workspace, "init", "-q")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\n{line}\n")
    hook.chmod(0o755)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "init")
    edit = program(workspace, "edit", f"open({name!r}, 'w').write({after!r})\n")
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next")
    assert not marker.exists(), (
        f"the user's next commit ran {name} (hook line {line!r}) the command rewrote: questions={person.questions} "
        f"transaction={out.get('transaction')} paths={[p['path'] for p in (out.get('changes') or {}).get('paths', [])]}"
    )
