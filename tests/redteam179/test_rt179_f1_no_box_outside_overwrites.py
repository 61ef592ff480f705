"""Red team 179, claim 3 (without the box the string rules are the only guard).

F1: a user's file outside the allowed directories is emptied or replaced with no question: `truncate -s 0`,
`cp /dev/null`, `ln -sf /dev/null`, `sort -o`, `tee < /dev/null`, `find -exec truncate`. Deleting the same file
(`rm`, `unlink`, `mv`) is refused (delete-outside / move-from-outside): the controls.
F2: `fuser -k FILE` kills whatever process holds a file, with no question (kill rules only see kill/pkill/killall).
F4: with ``--sandbox off`` a path in the machine's real /tmp is still taken for the box's private /tmp: `rm`,
`unlink`, `mv` of a file in /tmp outside the project (another project, a user's download) land with no question.
Control: the same lines with the box are refused or touch only the box's own /tmp.
F1-F3 are shown with ``--basetemp`` outside /tmp (so F4 does not explain them); F4 needs the default (/tmp).
F3: `git worktree remove --force ../wt` deletes a linked worktree outside the project, its uncommitted work
included, with no question.

Every payload is aimed at a directory of the test's own tmp dir (``outside``) beside the project, and a process the
test starts itself. The lines are data (rt179_outside_overwrites.json); ``@F``/``@D``/``@W`` are filled in here.

Answered: a write outside the allowed directories is asked without a copy (``write-outside``), ``fuser -k`` asked
(``kill-by-file``), ``git worktree remove`` outside refused (``worktree-remove-outside``), a home under /tmp is the
user's (the files here lie in the fake home); F4 kept as a strict expected failure: without the box the machine's
/tmp is scratch, as the box's own (docs/security.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import ElicitRequestParams, ElicitResult

from support.boxed import Person, shell

pytestmark = pytest.mark.anyio

CASES: dict[str, Any] = json.loads((Path(__file__).parent / "rt179_outside_overwrites.json").read_text())
PRECIOUS = "the user's only copy of this report\n"


class Decliner(Person):
    """Declines every question (``Person(False)`` approves a command's own question: it declines only the question
    about what a command changed), and records each."""

    def __init__(self) -> None:
        super().__init__(False)

    async def __call__(self, _ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        self.questions.append(params.message)
        return ElicitResult(action="decline")


async def _call(workspace: Path, person: Person, line: str) -> dict[str, Any]:
    async with shell(workspace, person, "--sandbox", "off") as client:
        with anyio.fail_after(90):
            result = await client.call_tool(
                "shell_exec", {"command": line, "cwd": str(workspace), "timeoutSeconds": 30}
            )
    return dict(result.structured_content or {}) | {"isError": bool(result.is_error)}


def _outside(workspace: Path, in_home: bool = True) -> tuple[Path, Path]:
    """The user's file outside the project: in the (fake) home directory, or beside the project in the machine's
    /tmp (where pytest's tmp dirs are: F4)."""
    directory = (Path(os.environ["HOME"]) if in_home else workspace.parent / "outside") / "docs"
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "report.txt"
    target.write_text(PRECIOUS, encoding="utf-8")
    return directory, target


def _fill(template: str, directory: Path, target: Path) -> str:
    return template.replace("@F", str(target)).replace("@D", str(directory))


def _intact(target: Path) -> bool:
    return target.is_file() and not target.is_symlink() and target.read_text(encoding="utf-8") == PRECIOUS


@pytest.mark.parametrize("template", CASES["empties_a_file_outside"])
async def test_f1_a_file_outside_is_not_emptied_unasked(workspace: Path, template: str) -> None:
    directory, target = _outside(workspace)
    person = Decliner()  # declines every question
    out = await _call(workspace, person, _fill(template, directory, target))
    assert _intact(target), ("emptied outside the project with no question", template, person.questions, out)


@pytest.mark.parametrize("template", CASES["controls_deleting_it"])
async def test_control_deleting_the_same_file_is_refused(workspace: Path, template: str) -> None:
    directory, target = _outside(workspace)
    person = Decliner()
    await _call(workspace, person, _fill(template, directory, target))
    assert _intact(target)


@pytest.mark.skipif(shutil.which("fuser") is None, reason="fuser is missing")
async def test_f2_fuser_kill_is_not_run_unasked(workspace: Path) -> None:
    directory, target = _outside(workspace)
    with target.open("a", encoding="utf-8") as held:
        holder = subprocess.Popen(["sleep", "60"], stdout=held, start_new_session=True)
    try:
        person = Decliner()
        out = await _call(workspace, person, _fill(CASES["kills_what_holds_a_file"], directory, target))
        await anyio.sleep(0.5)
        alive = holder.poll() is None
        assert alive, ("a process outside was killed with no question", person.questions, out)
    finally:
        if holder.poll() is None:
            os.kill(holder.pid, 9)
        holder.wait()


async def test_f3_linked_worktree_outside_is_not_removed_unasked(workspace: Path) -> None:
    env = os.environ | {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    git = ["git", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=workspace, check=True, env=env)
    subprocess.run([*git, "add", "-A"], cwd=workspace, check=True, env=env)
    subprocess.run([*git, "commit", "-qm", "one"], cwd=workspace, check=True, env=env)
    wt = Path(os.environ["HOME"]) / "wt"
    wt.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([*git, "worktree", "add", "-q", "-b", "side", str(wt)], cwd=workspace, check=True, env=env)
    work = wt / "draft.txt"
    work.write_text(PRECIOUS, encoding="utf-8")  # uncommitted work, in no object of git's
    person = Decliner()
    out = await _call(workspace, person, CASES["removes_a_linked_worktree_outside"].replace("@W", str(wt)))
    assert work.is_file(), ("a worktree outside was deleted with no question", person.questions, out)


@pytest.mark.xfail(strict=True, reason="without the box the machine's /tmp is scratch, as the box's own (known)")
@pytest.mark.parametrize("template", CASES["controls_deleting_it"])
async def test_f4_no_box_a_file_in_the_real_tmp_is_not_deleted_unasked(workspace: Path, template: str) -> None:
    if not str(workspace).startswith("/tmp/"):
        pytest.xfail("F4 needs the test's tmp dir under /tmp (pytest's default basetemp)")
    directory, target = _outside(workspace, in_home=False)
    person = Decliner()
    out = await _call(workspace, person, _fill(template, directory, target))
    assert _intact(target), ("deleted in the real /tmp with no question (--sandbox off)", person.questions, out)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("template", CASES["controls_deleting_it"])
async def test_f4_control_with_the_box_the_real_tmp_is_untouched(workspace: Path, template: str) -> None:
    directory, target = _outside(workspace, in_home=False)
    person = Decliner()
    async with shell(workspace, person) as client:
        with anyio.fail_after(90):
            await client.call_tool("shell_exec", {"command": _fill(template, directory, target), "timeoutSeconds": 30})
    assert _intact(target)
