"""Red team 17 F1: a name of a file with several names removed and made again in place, not by a rename (``rm h1 &&
cp -p backup h1``, ``tar x``, a checkout rewriting files), was taken for the file rewritten in place: the new bytes
reached its other names, and a later write through one of them reached it. The call's init now watches the
directories that hold such files (``shell.sandbox.unlinks``) and says the names removed and made again; each lands
as a file of its own, as natively. Each command is compared with the same command run natively, then undone and
redone; the first is each server's first call (the search for those directories is waited for)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.differential import Case, differential, differentials, failed, three_names

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

REMADE = [
    "rm h1 && cp -p o.txt h1",  # a lone restore: h2 and d/h3 keep the file as it was
    "rm h1 && echo new > h1 && echo z >> h2",  # then a write through another name: it stays there
    "rm d/h3 && printf 'other\\n' > d/h3 && echo z >> h1",  # in a subdirectory
    "tar cf ../t.tar h1 && rm h1 && tar xf ../t.tar && echo z >> h2",  # an archive extracted over the name
    "rm h1 h2 d/h3 && for n in h1 h2 d/h3; do echo 'important original' > $n; done",  # every name made again
    "rm h1 && ln h2 h1 && echo z >> h1",  # made a name of the same file again: still one file
    "rm h1 && cp -p o.txt h1 && mv h2 n && echo z >> n",  # beside a rename of another name
]


def _no_conflicts(case: Case) -> list[str]:
    problems = [] if case.out["changes"]["conflicts"] == 0 else [f"conflicts: {case.out['changes']}"]
    return problems + case.found


async def test_a_name_of_a_linked_file_removed_and_made_again_lands_as_a_file_of_its_own(workspace: Path) -> None:
    cases = await differentials(workspace, three_names, REMADE)
    assert not (problems := failed(cases, _no_conflicts)), problems


async def test_a_lone_restore_on_a_servers_first_call_leaves_the_other_names_as_they_were(workspace: Path) -> None:
    found, out = await differential(workspace, three_names, "rm h1 && cp -p o.txt h1")
    assert not found, found
    box = workspace / "p"
    assert (box / "h2").read_text() == (box / "d" / "h3").read_text() == "important original\n"
    assert (box / "h2").stat().st_ino == (box / "d" / "h3").stat().st_ino != (box / "h1").stat().st_ino
    assert out["transaction"] == "applied"
