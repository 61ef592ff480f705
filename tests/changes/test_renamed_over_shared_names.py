"""A file renamed over one name of a project file with several (``sed -i h1``, an editor's save by rename, ``cp h1
tmp && mv tmp h1``) replaces that name, whatever bytes and times it holds: natively the file's other names keep the
file, and a later change through one of them (a rewrite, a mode, a time, a rename) does not reach the replaced name.
The box's rename helper says which names a rename left a file at; one it says came from the file itself (``mv h1 n
&& mv n h1``, ``mv h2 h1``) is still a name of it. Each command is compared with the same command run natively, then
undone and redone. (And a copy made with ``cp`` through a renamed name of a file written through another is
whole: the box answers copy_file_range ENOSYS on a copy.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.differential import differentials, failed, three_names

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

COMMANDS = [
    # a copy with the same bytes renamed over one name (a time of now, or the file's own kept with -p)
    "cp h1 t && mv t h1 && echo z >> h2",
    "cp -p h1 t && mv t h1 && echo z >> h2",
    "cp -p h1 t && echo z >> h2 && mv t h1",
    # then a time, a mode, a rename through the other names
    "cp -p h1 t && mv t h1 && touch -d @7 h2 && chmod 600 d/h3",
    "cp -p h1 t && mv t h1 && mv h2 n && echo z >> n",
    "cp -p h1 t && mv -f t d/h3 && ln h2 x && echo z >> x",
    # an in-place editor (sed -i) and a save through a temporary name, with the other names changed
    "sed -i s/important/x/ h1 && chmod 600 h2",
    "printf 'new\\n' > .h1.swp && mv .h1.swp h1 && echo z >> d/h3",
    # renames between names of the file itself stay names of it
    "mv h2 h1 && echo z >> d/h3",
    "mv h1 n && mv n h1 && echo z >> h2",
    "mv h1 n && mv h2 h1 && echo z >> d/h3",
    # a name made in the call, renamed, then the file written through another and copied with cp through the
    # renamed name (its overlay inode kept the old size, and copy_file_range stopped there: the fuzzer's seed 20200)
    "ln o.txt n && mv n m && echo z >> o.txt && cp m c",
]


async def test_a_name_of_a_shared_file_replaced_by_a_rename_is_a_file_of_its_own_as_natively(workspace: Path) -> None:
    cases = await differentials(workspace, three_names, COMMANDS)
    assert not (problems := failed(cases, lambda case: case.found)), problems
    assert not (
        conflicts := failed(cases, lambda c: [str(c.out["changes"])] if c.out["changes"]["conflicts"] else [])
    ), conflicts
