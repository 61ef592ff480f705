"""Red team 54 through the real server: files with several names followed by the call's init. Data: rt54.json
(commands and programs only as data). The findings (findings.md), each failing on HEAD ec53709."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from support.boxed import probed
from support.differential import OLD_NS, Case, differentials, failed, two_groups

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "rt54.json").read_text())


def _project(root: Path) -> None:
    """two_groups with the programs the commands run, and a directory u/ holding a file of one name."""
    names = ("link", "rename", "exchange", "pexchange", "texchange", "flood", "landlocked", "toctou")
    two_groups(root, {name: DATA[f"{name}_program"] for name in names})
    (root / "u").mkdir()
    (root / "u" / "f").write_text("f\n")
    for p in [root / "u" / "f", root / "u", root]:
        os.utime(p, ns=(OLD_NS, OLD_NS))


def _untouched(case: Case) -> list[str]:
    """The names the command never named (d/h3, g2) hold what they hold natively (the swap the helper cannot make
    itself is refused, never left to the kernel: the names the command swapped may then differ from native)."""
    return [f"{n}: {(case.box / n).read_bytes()!r} != {(case.native / n).read_bytes()!r}"
            for n in ("d/h3", "g2") if (case.box / n).read_bytes() != (case.native / n).read_bytes()]  # fmt: skip


async def test_a_swap_through_another_process_proc_entry_never_rewrites_untouched_names(workspace: Path) -> None:
    """F1: an exchange through another process's /proc/<pid>/cwd (or /proc/self/task/<tid>/cwd) was left to the
    kernel; the init read it as two renames and said h1 held its own file: the command's new file landed under h2
    and d/h3. The helper now refuses a swap it cannot make itself (ELOOP here)."""
    keys = ("kernel_exchange_new_file_into_h1_rm", "kernel_exchange_via_task_path", "kernel_exchange_two_names")
    cases = await differentials(workspace, _project, {k: DATA["fooled_cases"][k] for k in keys})
    assert not (problems := failed(cases, _untouched)), problems


async def test_a_swap_whose_path_flips_in_the_callers_memory_is_never_the_kernels(workspace: Path) -> None:
    """F1 without /proc: a second thread flips the source path between "nope" (the helper's stat fails: _Skip, seccomp
    CONTINUE) and "h1" (the kernel re-reads it and exchanges). Each case wins the race about half of the time; six
    cases all lose it once in ~64 runs."""
    cases = await differentials(workspace, _project, DATA["toctou_cases"])
    assert not (problems := failed(cases, lambda case: case.found)), problems


async def test_a_flood_of_events_never_lands_a_name_made_again_under_its_other_names(workspace: Path) -> None:
    """F2: an overflowed inotify queue says nothing, and a name removed and made again lands as the real file
    rewritten in place (its untouched names get the new bytes)."""
    keys = ("flood_then_remade", "remade_then_flood_dir")
    cases = await differentials(workspace, _project, {k: DATA["fooled_cases"][k] for k in keys})
    assert not (problems := failed(cases, lambda case: case.found)), problems


async def test_a_link_through_a_symlink_into_proc_1_tells_nothing_of_the_inits_view(workspace: Path) -> None:
    """F3: linkat(AT_SYMLINK_FOLLOW) of a symlink into /proc/1/root or /proc/1/fd/N: the helper follows it in the
    init's own process; the answers tell what exists in the init's view, where the command gets EACCES."""
    found = await probed(workspace, _project, DATA["probe_program"])
    assert found["real_h1"][0] == "Permission denied", found  # the command itself cannot look there
    # the kernel would answer alike for all three; the helper tells an existing file, a missing one, a directory
    assert found["real_h1"][1] == found["real_missing"][1] == found["real_dir"][1], found
