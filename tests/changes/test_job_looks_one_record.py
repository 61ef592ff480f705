"""Issue 40, red team i: a background job's looks apply what it did so far. A look made by a later call (a poll
with ``jobId``) recorded what it applied under that call's audit id, while every result named the job's: the undo
the job named put back its start and its end but not those looks (a directory a look deleted stayed deleted, a
name a look removed stayed removed) and said success. A file with several names that the job rewrote, or re-moded
and retimed, through different names at different looks split in two (overlayfs copies each name up on its own).
Now every look is recorded under the job's id, and a file with several names that the job rewrote or linked waits
for the job's end, where it lands as one call's."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.boxed import run, shell, undo
from support.fidelity import GIT_ENV, differences, snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def job(client: Any, root: Path, command: str) -> list[dict[str, Any]]:
    """Start ``command`` as a job (a look after 1.5 s), then look every 3 s until it ends: each look's result.
    Its steps are 3 s apart, so each look falls between two of them."""
    looks = [await run(client, command, cwd=str(root), yieldAfterSeconds=1.5)]
    with anyio.fail_after(120):
        while looks[-1]["status"] == "running":
            looks.append(await run(client, "", jobId=looks[0]["jobId"], yieldAfterSeconds=3))
    return looks


def natively(root: Path, tmp_path: Path, command: str) -> Path:
    native = tmp_path / "native"
    subprocess.run(["cp", "-a", str(root), str(native)], check=True, timeout=60)  # hard links kept
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8", **GIT_ENV}
    subprocess.run(["bash", "-c", command], cwd=native, env=env, check=True, timeout=60)
    return native


def undone_and_redone(audit_id: str, root: Path, before: Any, after: Any) -> list[str]:
    """Undo the call, undo that undo, undo the redo: the tree after each, compared exactly (all mtimes)."""
    found: list[str] = []
    for step, expected in (("undo", before), ("redo", after), ("undo of the redo", before)):
        audit_id, why = undo(audit_id)
        if not audit_id:
            return [*found, f"{step} failed: {why[-600:]}"]
        found += [f"after {step}: {d}" for d in differences(expected, snapshot(root), all_mtimes=True)]
    return found


async def as_natively(workspace: Path, tmp_path: Path, command: str) -> tuple[list[dict[str, Any]], Any, Any]:
    """``command`` run natively on a copy of the project and as a job through the server: the job's looks, and the
    tree before and after it (after: checked equal to the native one)."""
    native = natively(workspace, tmp_path, command)
    before = snapshot(workspace)
    async with shell(workspace) as client:
        looks = await job(client, workspace, command)
    assert looks[-1]["status"] == "exited", looks[-1]
    after = snapshot(workspace)
    assert not differences(snapshot(native), after)
    return looks, before, after


def conflicts(looks: list[dict[str, Any]], actions: tuple[str, ...] = ("conflict",)) -> list[dict[str, Any]]:
    return [path for look in looks for path in look["changes"]["paths"] if path["action"] in actions]


async def test_the_undo_a_job_names_puts_back_what_a_later_calls_look_applied(workspace: Path, tmp_path: Path) -> None:
    (workspace / "d").mkdir()
    (workspace / "d" / "f.txt").write_text("f\n", encoding="utf-8")
    os.utime(workspace / "d" / "f.txt", ns=(1_100_000_000 * 10**9,) * 2)
    os.utime(workspace / "d", ns=(1_200_000_000 * 10**9,) * 2)
    command = "cp -a d d5; sleep 3; mv d5/f.txt d5/g; rm -r d; sleep 3; mv d5 d"
    looks, before, after = await as_natively(workspace, tmp_path, command)
    # A look made by a later call applied something (the directory's deletion), under the job's one id.
    assert any(look["transaction"] == "applied" for look in looks[1:-1]), looks
    named = {look["changes"]["undo"] for look in looks if look["changes"]["undo"]}
    assert named == {f"mcp-guard undo {looks[0]['auditId']}"}, looks
    assert not undone_and_redone(looks[0]["auditId"], workspace, before, after)


async def test_a_file_with_two_names_changed_through_each_at_different_looks_stays_one_file(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("a\n", encoding="utf-8")
    os.link(workspace / "a.txt", workspace / "h1")
    os.utime(workspace / "a.txt", ns=(1_000_000_000 * 10**9,) * 2)
    command = "chmod 600 a.txt; sleep 3; printf q >> h1; sleep 3; touch -d @1009843200 a.txt"
    looks, before, after = await as_natively(workspace, tmp_path, command)
    assert not conflicts(looks), conflicts(looks)
    # The look after the append leaves the file's names for the job's end, and says so (nothing said applied).
    assert looks[1]["transaction"] == "waiting" and not looks[1]["changes"]["paths"], looks[1]
    a, h1 = (workspace / "a.txt").stat(), (workspace / "h1").stat()
    assert (a.st_ino, a.st_nlink, stat.S_IMODE(a.st_mode)) == (h1.st_ino, 2, 0o600)
    assert (workspace / "h1").read_bytes() == b"a\nq" and a.st_mtime_ns == 1009843200 * 10**9
    assert not undone_and_redone(looks[0]["auditId"], workspace, before, after)


async def test_the_undo_of_the_redo_of_a_job_that_re_moded_a_file_through_one_of_its_names(
    workspace: Path, tmp_path: Path
) -> None:
    # The look set the mode through both names (one file): each name's record, undone one after the other, found
    # the other name's step had changed the file too and refused the redo's undo ("UndoConflict: h1").
    (workspace / "a.txt").write_text("a\n", encoding="utf-8")
    os.link(workspace / "a.txt", workspace / "h1")
    command = "chmod 600 a.txt; sleep 3; touch new"
    before = snapshot(workspace)
    async with shell(workspace) as client:
        looks = await job(client, workspace, command)
    assert looks[-1]["status"] == "exited", looks
    after = snapshot(workspace)
    assert stat.S_IMODE((workspace / "h1").stat().st_mode) == 0o600 and (workspace / "h1").stat().st_nlink == 2
    assert not undone_and_redone(looks[0]["auditId"], workspace, before, after)


def _linked(root: Path) -> None:
    (root / "e").mkdir()
    (root / "a.txt").write_text("a\n", encoding="utf-8")
    os.link(root / "a.txt", root / "h1")
    (root / "b.txt").write_text("b\n", encoding="utf-8")
    (root / "c.txt").write_text("c\n", encoding="utf-8")
    (root / "x" / "y").mkdir(parents=True)
    os.link(root / "c.txt", root / "x" / "y" / "c3")


@pytest.mark.parametrize(
    "command",
    [
        # Red team 40j A: a directory a look made, written in later: its record was checked against the time the
        # look left it, and the job's own later file made the undo refuse ("UndoConflict: m").
        "mkdir m; sleep 3; echo 2 > m/q",
        # 40j C: a mode set through one name at a look, the other name moved later: the move did not cover the
        # earlier record of the old name.
        "chmod 600 h1; sleep 3; mv a.txt e/a",
        # 40j E: one file rewritten at two looks: the redo kept both pre-images under one id, and its undo failed.
        "printf 1 >> b.txt; sleep 3; printf 2 >> b.txt",
        # 40j G: a directory moved: its deletion landed at a look, and the name of a linked file in it, known as such
        # only while the old directory stood, landed as a file of its own.
        "mv x e/x; sleep 3; touch e/t",
        # 40k A: a new name of a file the job then rewrote (one file in the copy too) landed as two files at a look.
        "ln b.txt n9; printf more >> b.txt; sleep 3; touch t",
        # 40k B: a directory replaced by a file, then by a directory again with an old time: the look set that time
        # on the old directory (the replacement itself waits), and the undo put it back with it.
        "rm -r e; echo x > e; sleep 3; rm e; mkdir e; touch -d @1046476800 e; sleep 3; touch t",
        # 40k C: a file replaced by a directory: the look copied the directory's files into the old file's place
        # (a conflict on the job's own path) and said the replacement landed.
        "rm b.txt; mkdir b.txt; echo i > b.txt/i; sleep 3; touch t",
        # 40l A: one name of a file deleted at a look moved the ctime the other name shares: the job's later
        # rewrite of that name was "someone else's" (a conflict copy); both in one part split the file.
        "rm a.txt; sleep 3; printf z >> h1",
        "rm a.txt; printf z >> h1; sleep 3; touch t",
        # 40k D: a directory re-moded and retimed after a look wrote in it: the mode landed, the time did not.
        "echo 1 > e/n; sleep 3; chmod 700 e; touch -d @978307200 e",
    ],
)
async def test_a_job_across_looks_lands_as_natively_and_its_undo_redo_and_undo_of_the_redo_are_exact(
    workspace: Path, tmp_path: Path, command: str
) -> None:
    _linked(workspace)
    looks, before, after = await as_natively(workspace, tmp_path, command)
    assert not conflicts(looks), conflicts(looks)
    assert not undone_and_redone(looks[0]["auditId"], workspace, before, after)


async def test_a_jobs_held_end_applied_later_is_judged_from_its_looks_and_recorded_with_them(
    workspace: Path, tmp_path: Path
) -> None:
    # Red team 40j D: the end of a job (a tree deletion: asked, and nobody is asked at a job's end, so held) was
    # judged from the job's start when a later call applied it: the look's own mode change of d/ was "someone
    # else's", d/ stayed as a conflict; and what it applied was recorded under the applying call's id, which the
    # job's undo does not play back.
    (workspace / "d").mkdir()
    (workspace / "d" / "f.txt").write_text("f\n", encoding="utf-8")
    command = "chmod 700 d; sleep 3; rm -r d"
    native = natively(workspace, tmp_path, command)
    before = snapshot(workspace)
    async with shell(workspace) as client:
        looks = await job(client, workspace, command)
        assert looks[0]["transaction"] == "applied" and looks[-1]["transaction"] == "held", looks
        applied = await run(client, "", applyChanges=looks[-1]["pendingChanges"]["id"])
    assert applied["transaction"] == "applied" and not applied["changes"]["conflicts"], applied
    assert applied["changes"]["undo"] == f"mcp-guard undo {looks[0]['auditId']}", applied
    after = snapshot(workspace)
    assert not differences(snapshot(native), after)
    assert not undone_and_redone(looks[0]["auditId"], workspace, before, after)


async def test_a_projects_own_overlay_attributes_survive_a_job_that_rewrites_and_moves_across_looks(
    workspace: Path, tmp_path: Path
) -> None:
    # Red team 40j I: a look copies what the job wrote into the real tree; the copy did not hold the project's own
    # user.overlay.* attributes (the job's file stores them escaped), so the look dropped them and the job's later
    # move was refused them as "the command's own".
    (workspace / "d").mkdir()
    (workspace / "e").mkdir()
    (workspace / "b.txt").write_text("b\n", encoding="utf-8")
    os.setxattr(workspace / "b.txt", "user.overlay.mine", b"v")
    os.setxattr(workspace / "e", "user.overlay.dirmine", b"w")
    command = "printf z >> b.txt; echo 1 > e/n; mkdir m; setfattr -n user.k -v 1 m; sleep 3; mv b.txt d/b; mv e e2"
    looks, _before, _after = await as_natively(workspace, tmp_path, command)
    assert not conflicts(looks, ("refused", "conflict")), conflicts(looks, ("refused", "conflict"))
    assert os.getxattr(workspace / "d" / "b", "user.overlay.mine") == b"v"
    assert os.getxattr(workspace / "e2", "user.overlay.dirmine") == b"w"


async def test_a_look_never_lands_the_box_move_helpers_copy_in_the_making(workspace: Path, tmp_path: Path) -> None:
    # Red team 40n: the box moves a real directory by copying it under ``.<target>.mcp-guard-mv-<hex>`` beside the
    # target, then renaming the copy into place; a look during the copy landed the half-made copy, and the job's
    # end then had to delete it (asked, held; declined, it stayed). Natively no such name ever exists. Here the job
    # makes such names itself (the helper's are made the same way, just slower), then renames them into place.
    temp = "n/.big2.mcp-guard-mv-0123456789ab"
    command = (f"mkdir -p {temp}/s && echo x > {temp}/s/f && mkdir .top.mcp-guard-mv-abcdefabcdef; sleep 3; "
               f"mv {temp} n/big2; rmdir .top.mcp-guard-mv-abcdefabcdef; sleep 3")  # fmt: skip
    looks, before, after = await as_natively(workspace, tmp_path, command)
    shown = [path["path"] for look in looks for path in look["changes"]["paths"]]
    assert not [path for path in shown if "mcp-guard-mv" in path], shown
    assert [look["transaction"] for look in looks if look["transaction"] not in ("unchanged", "waiting")] == [
        "applied"
    ] * len([look for look in looks if look["transaction"] not in ("unchanged", "waiting")]), looks
    assert undone_and_redone(looks[0]["auditId"], workspace, before, after) == []


async def test_a_commands_own_file_named_like_the_move_helpers_copy_lands(workspace: Path, tmp_path: Path) -> None:
    # Red team 40o B: the reader skipped every name of the helper's pattern, whoever made it: ``mv b.txt
    # .n.mcp-guard-mv-<hex>`` landed as a deletion alone. The helper makes directories only: a file is the command's.
    (workspace / "b.txt").write_text("b\n", encoding="utf-8")
    command = "echo x > .f.mcp-guard-mv-0123456789ab && mv b.txt .n.mcp-guard-mv-abcdefabcdef"
    native = natively(workspace, tmp_path, command)
    async with shell(workspace) as client:
        await run(client, command, cwd=str(workspace))
    assert not differences(snapshot(native), snapshot(workspace))


async def test_a_directory_renamed_through_proc_self_moves_as_natively(workspace: Path, tmp_path: Path) -> None:
    # Red team 40o C: the box's rename helper resolved ``/proc/self/...`` and ``/dev/fd/N/...`` in its own process:
    # the rename of a real directory through them failed EXDEV (natively it moves).
    (workspace / "d").mkdir()
    (workspace / "d" / "f.txt").write_text("f\n", encoding="utf-8")
    (workspace / "e").mkdir()
    script = workspace / "mv.py"
    script.write_text(
        "import os\nos.rename('/proc/self/cwd/d', '/proc/self/cwd/d2')\n"
        "fd = os.open('.', os.O_RDONLY)\nos.rename(f'/dev/fd/{fd}/e', f'/dev/fd/{fd}/e2')\n",
        encoding="utf-8",
    )
    command = "python3 mv.py"
    native = natively(workspace, tmp_path, command)
    async with shell(workspace) as client:
        result = await run(client, command, cwd=str(workspace))
    assert result["exitCode"] == 0, result
    assert not differences(snapshot(native), snapshot(workspace))


@pytest.mark.parametrize("replacement", ["echo x > d", "ln -s b.txt d"])
async def test_a_jobs_undo_takes_back_a_look_in_a_directory_its_end_replaced(
    workspace: Path, tmp_path: Path, replacement: str
) -> None:
    # Red team 40o F: a look made d/n1; the job's end replaced d by a file (or a link), held, then applied. The
    # undo found d/n1 "changed since" (the end's record of d is a file's, so d/ was not taken as replaced whole)
    # and undid nothing.
    (workspace / "d").mkdir()
    (workspace / "d" / "f.txt").write_text("f\n", encoding="utf-8")
    (workspace / "b.txt").write_text("b\n", encoding="utf-8")
    command = f"echo 1 > d/n1; sleep 3; rm -r d && {replacement}; sleep 1"
    native = natively(workspace, tmp_path, command)
    before = snapshot(workspace)
    async with shell(workspace) as client:
        looks = await job(client, workspace, command)
        if looks[-1]["transaction"] == "held":
            await run(client, "", applyChanges=looks[-1]["pendingChanges"]["id"])
    after = snapshot(workspace)
    assert not differences(snapshot(native), after)
    assert not undone_and_redone(looks[0]["auditId"], workspace, before, after)
