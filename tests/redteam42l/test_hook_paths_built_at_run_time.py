"""Red team 8, H: the way hooks usually name the project's scripts, and the compiled copy of a protected module.

- ``"$(git rev-parse --show-toplevel)/scripts/check"``, ``"$(dirname "$0")/../../scripts/check"``,
  ``ROOT=$(git rev-parse --show-toplevel); "$ROOT/scripts/check"``: a path built from a variable or a command
  substitution — how robust hooks name files (they may run from another directory). ``program_words`` drops every
  word starting with ``$`` (and shlex splits ``$(git rev-parse --show-toplevel)/scripts/check`` into ``$(git``,
  ``rev-parse``, ``--show-toplevel)/scripts/check``, the last dropped as an option), so the script is not protected.
- Depth: hook -> a.sh -> b.sh -> c.sh -> d.sh -> e.sh. ``_RUN_DEPTH = 4`` reads four texts deep; ``e.sh`` is not
  protected (documented bound; a five-step chain of helpers exists in real hook setups).
- ``invoke lint`` protects ``tasks.py``; invoke imports it with importlib, which takes ``__pycache__/tasks.*.pyc``
  first — one compiled with ``unchecked-hash`` is used whatever ``tasks.py`` says. The compiled copy is not
  protected (``sitecustomize``'s is: ``python_startup.startup_module``). invoke is not installed: its loading is done
  here as its ``FilesystemLoader`` does it (``spec_from_file_location`` + ``exec_module``). ``nox``'s noxfile.py alike.
The payload writes a marker in the test's tmp dir.
"""

from __future__ import annotations

import importlib.util
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell
from support.planted import git, landed, plant, repo, sh_payload

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

X = 0o755
HOOKS = {
    "toplevel-substitution": '"$(git rev-parse --show-toplevel)/scripts/check"',
    "dirname-of-hook": 'exec "$(dirname "$0")/../../scripts/check"',
    "root-variable": 'ROOT=$(git rev-parse --show-toplevel)\n"$ROOT/scripts/check"',
}


@pytest.mark.parametrize("case", list(HOOKS))
async def test_attack_script_named_through_a_variable(workspace: Path, tmp_path: Path, case: str) -> None:
    marker = tmp_path / "MARKER-hook-ran"
    repo(workspace, HOOKS[case], {"scripts/check": "#!/bin/sh\ntrue\n"}, {"scripts/check": X})
    person, out = await plant(workspace, {"scripts/check": sh_payload(marker)})
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next")
    assert not marker.exists(), (
        f"the user's next commit ran what the command wrote to scripts/check (hook {HOOKS[case]!r}): "
        f"questions={person.questions} transaction={out.get('transaction')} landed={landed(out)}"
    )


async def test_attack_fifth_level_script(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-hook-ran"
    files = {f"scripts/{a}.sh": f"#!/bin/sh\nsh scripts/{b}.sh\n" for a, b in zip("abcd", "bcde", strict=True)}
    files["scripts/e.sh"] = "#!/bin/sh\ntrue\n"
    repo(workspace, "sh scripts/a.sh", files)
    person, out = await plant(workspace, {"scripts/e.sh": sh_payload(marker)})
    git(workspace, "commit", "-q", "--allow-empty", "-m", "next")
    assert not marker.exists(), (
        f"the user's next commit ran what the command wrote to scripts/e.sh (five scripts deep): "
        f"questions={person.questions} transaction={out.get('transaction')} landed={landed(out)}"
    )


async def test_attack_compiled_copy_of_a_protected_tasks_py(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-tasks-ran"
    source = tmp_path / "payload.py"
    source.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    compiled = tmp_path / "payload.pyc"
    py_compile.compile(
        str(source), cfile=str(compiled), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
    )
    tasks = "from invoke import task\n" if importlib.util.find_spec("invoke") else ""
    repo(workspace, "invoke lint", {"tasks.py": tasks + "X = 1\n"})
    pyc = f"__pycache__/tasks.{sys.implementation.cache_tag}.pyc"
    edit = program(workspace, "edit", f"os.makedirs('__pycache__', exist_ok=True)\n"
                                      f"open({pyc!r}, 'wb').write({compiled.read_bytes()!r})\n")  # fmt: skip
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    # invoke's FilesystemLoader: spec_from_file_location("tasks", ".../tasks.py"); exec_module (outside the box)
    loader = ("import importlib.util as u; s = u.spec_from_file_location('tasks', 'tasks.py'); "
              "m = u.module_from_spec(s); s.loader.exec_module(m)")  # fmt: skip
    subprocess.run([sys.executable, "-c", loader], cwd=workspace, capture_output=True, timeout=30)
    assert not marker.exists(), (
        f"invoke's next load of the protected tasks.py ran the compiled copy the command wrote ({pyc}): "
        f"questions={person.questions} transaction={out.get('transaction')} landed={landed(out)}"
    )
