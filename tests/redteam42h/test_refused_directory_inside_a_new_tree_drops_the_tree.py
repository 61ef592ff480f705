"""Issue 42 claim 5: "a result never reports a refusal [or a change] that was not carried out (a refused FIFO,
.vscode/tasks.json or .envrc deep in a new tree must really be left out)"; docs/shell_exec.md "Judging": a refused
path is left out, "The rest of the change set still applies; the result lists each refusal".

Setup: an empty project. Command: ``mkdir -p deep/.vscode && echo {} > deep/.vscode/tasks.json && echo fine >
deep/ok.txt`` (a new tree holding a refused protected directory with a file in it, and an ordinary file).
Expected: ``deep/ok.txt`` lands, ``deep/.vscode`` does not; or the result says the tree was not applied.
Observed: ``transaction: "applied"``, summary "create 1 file", only the two .vscode refusals listed — and nothing of
``deep/`` lands (ok.txt is silently lost; the copy is discarded). Without ``tasks.json`` inside ``.vscode`` (an
empty refused directory), or with a refused file (.envrc, a FIFO) instead, the tree lands.

Guessed cause: ``plan.steps_for`` calls ``_drop`` for every refused path in order: ``deep/.vscode`` is removed from
the upper layer with its contents, then ``_drop("deep/.vscode/tasks.json")`` cannot open its (now gone) parent,
returns False, and the whole top ``deep`` is put in ``stuck`` — left out without a word in the result."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


@pytest.mark.parametrize(
    "command",
    [
        "mkdir -p deep/.vscode && echo {} > deep/.vscode/tasks.json && echo fine > deep/ok.txt",
        "mkdir -p deep/a/b/.idea/x && echo {} > deep/a/b/.idea/x/w.xml && echo fine > deep/ok.txt",
    ],
)
async def test_the_rest_of_a_new_tree_lands_without_its_refused_directory(workspace: Path, command: str) -> None:
    async with shell(workspace) as client:
        out = await run(client, command)
    assert out["transaction"] == "applied", out
    refused = [p["path"] for p in out["changes"]["paths"] if p["action"] == "refused"]
    assert refused, out["changes"]
    assert (workspace / "deep" / "ok.txt").exists(), (
        f"result: applied, {out['changes']['summary']!r}, refused {refused}; but deep/ok.txt did not land "
        f"(deep exists: {(workspace / 'deep').exists()})"
    )
    assert not (workspace / "deep" / ".vscode").exists() and not (workspace / "deep" / "a" / "b" / ".idea").exists()
