"""Red team 8, C and D: what a shell runs on ``cd`` and an environment manager runs on every start, past the rules.

C. ``.envrc`` is protected, but not what it sources. ``source scripts/dev-env`` (also direnv's ``source_env x``,
``source_env_if_exists .envrc.local``, ``dotenv`` reading ``.env`` — a ``NODE_OPTIONS=--require ./x.js`` or
``LD_PRELOAD`` there —, ``use flake`` evaluating ``flake.nix``'s ``shellHook``) runs, as the user, at direnv's next
load (every ``cd`` into the project after the file changes: direnv watches ``.envrc`` only — and a sourced file is
re-read on the next change of ``.envrc`` or ``direnv reload``; here the load is simulated by sourcing ``.envrc`` in
bash, which is what direnv does). No rule follows a file ``.envrc`` names (``run_by_hooks`` reads git hooks only).

D. A conda or pixi environment (``.pixi/envs/default``, ``./env`` made by ``conda create -p``) has no ``pyvenv.cfg``,
so ``later._python_start`` takes it for "a new environment: the installer's whole" and its ``bin/python3`` rewritten
in place is not asked about; nor is ``etc/conda/activate.d/*.sh``, which ``conda activate`` and every ``pixi run``
source. The user's next ``pixi run pytest`` runs the interpreter. (``effects._shadows`` asks only where the server's
PATH has a program of the same name: ``python3.11`` is asked about here by that accident, ``python3.14`` is not.)
The payload writes a marker in the test's tmp dir.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell
from support.planted import git, landed, plant, sh_payload

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_attack_file_envrc_sources(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-envrc-ran"
    (workspace / ".envrc").write_text("source scripts/dev-env\n")
    (workspace / "scripts").mkdir()
    (workspace / "scripts" / "dev-env").write_text("export APP_ENV=dev\n")
    git(workspace, "init", "-q")
    person, out = await plant(workspace, {"scripts/dev-env": f"export APP_ENV=dev\n{sh_payload(marker)}"})
    # direnv's next load: bash evaluating .envrc in the project (the user's own shell, outside the box)
    subprocess.run(["bash", "-c", "source ./.envrc"], cwd=workspace, capture_output=True, timeout=30)
    assert not marker.exists(), (
        f"direnv's next load ran what the command wrote to scripts/dev-env: questions={person.questions} "
        f"transaction={out.get('transaction')} landed={landed(out)}"
    )


def _conda_env(workspace: Path) -> Path:
    env = workspace / ".pixi" / "envs" / "default"
    (env / "conda-meta").mkdir(parents=True)
    (env / "conda-meta" / "history").write_text("==> 2026-01-01 00:00:00 <==\n")
    (env / "bin").mkdir()
    shutil.copy2(Path(sys.executable).resolve(), env / "bin" / "python3.14")
    (env / "bin" / "python3").symlink_to("python3.14")
    (env / "etc" / "conda" / "activate.d").mkdir(parents=True)
    (env / "etc" / "conda" / "activate.d" / "env.sh").write_text("export X=1\n")
    return env


async def test_attack_conda_env_interpreter_rewritten(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-interpreter-ran"
    env = _conda_env(workspace)
    rel = env.relative_to(workspace) / "bin" / "python3.14"
    edit = program(
        workspace, "edit",
        f"p = {str(rel)!r}\nos.unlink(p)\nopen(p, 'w').write({sh_payload(marker)!r})\nos.chmod(p, 0o755)\n",
    )  # fmt: skip
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    # the user's next `pixi run python …` / `pixi run pytest` starts the environment's interpreter
    subprocess.run([str(env / "bin" / "python3"), "-c", "pass"], capture_output=True, timeout=30)
    assert not marker.exists(), (
        f"the next start of the pre-existing conda/pixi environment ran what the command wrote to {rel}: "
        f"questions={person.questions} transaction={out.get('transaction')} landed={landed(out)}"
    )


async def test_attack_conda_env_activate_d_rewritten(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-activate-ran"
    env = _conda_env(workspace)
    rel = str(env.relative_to(workspace) / "etc" / "conda" / "activate.d" / "env.sh")
    person, out = await plant(workspace, {rel: f"export X=1\n{sh_payload(marker)}"})
    # `conda activate ./.pixi/envs/default` / `pixi shell`: each activate.d script is sourced
    subprocess.run(["bash", "-c", f"source ./{rel}"], cwd=workspace, capture_output=True, timeout=30)
    assert not marker.exists(), (
        f"the next activation ran what the command wrote to {rel}: questions={person.questions} "
        f"transaction={out.get('transaction')} landed={landed(out)}"
    )
