"""Red team 18, on a name of a file with several replaced by a rename (3b8697b): such a name lost the file, which
went nowhere — a ``cp -p`` copy made in the same call (a backup, any new name, a file renamed over another, even a
copy of a git hook) is a copy, not the file renamed there (it was made a hard link of the group: a later write
through the file rewrote the backup; a new name of a hook was one). Several names replaced in one call each hold a
file of their own. Each command is compared with the same command run natively, then undone and redone."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, run, shell
from support.differential import differentials, failed, three_names

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

COMMANDS = [
    "cp -p h1 a && cp -p h1 b && mv a h1 && mv b h2",
    "cp -p h1 a && cp -p h1 b && mv a h1 && mv b h2 && echo z >> d/h3",
    "for n in h1 h2 d/h3; do cp -p $n t && mv t $n; done",
    "echo A > a && echo A > b && touch -d @5 a b && mv a h1 && mv b h2 && echo z >> d/h3",
    "echo A > a && echo B > b && mv a h1 && mv b h2 && echo z >> d/h3",
    "sed -i s/important/x/ h1 h2",
    "sed -i s/important/x/ h1 h2 d/h3",
    "cp h1 a && cp h1 b && mv a h1 && mv b h2",
    "cp -p o.txt a && cp -p o.txt b && mv a h1 && mv b h2",
    "cp -p h1 a && mv a h1 && cp -p h1 b && mv b o.txt",
    "cp -p h1 a && mv a h1 && touch -d @1000000000 o.txt && cp -p h1 o.txt",
    "cp -p h1 a && mv a h1 && cp -p h1 b && mv b h2 && echo z >> h1",
    "cp -p h1 a && mv a h1 && cp -p h1 b && mv b h2 && chmod 600 h1",
    "cp -p h1 b && mv b o.txt && echo z >> h2",
    "cp -p h1 a && mv a h1 && cp -p h2 b && mv b new.txt && echo z >> h2",
    "cp -p h1 a && mv a h1 && cp -p h1 new.txt",
    "cp -p h1 a && mv a h1 && mkdir e && cp -p h1 b && mv b e/x",
    "sed -i s/nomatch/x/ h1 && cp -p h2 b && mv b o.txt",
    "sed -i s/nomatch/x/ h1 && cp -p h2 h2.orig",
    "sed -i s/important/x/ h1 && cp -p h2 h2.orig",
    "sed -i s/important/x/ h1 && cp -p h2 h2.orig && echo z >> h2",
    "printf 'new\\n' > .h1.swp && mv .h1.swp h1 && cp -a d/h3 h3.bak",
    "mv -f o.txt h1 && cp -p h2 h2.orig",
    "mv h1 t && cp -p t h1 && echo z >> t",
    "mv h1 n && cp -p h2 t && mv t h1 && echo z >> n",
    "cp -p h1 t && mv t h1 && mv h2 h1 && echo z >> d/h3",
    "ln -s ../o.txt d/up && ln h2 n1 && mv -f d/up h2",
]


async def test_a_copy_made_after_a_name_was_replaced_by_a_rename_is_a_copy_as_natively(workspace: Path) -> None:
    cases = await differentials(workspace, three_names, COMMANDS)
    assert not (problems := failed(cases, lambda case: case.found)), problems


# renameat2(RENAME_EXCHANGE), as `mv --exchange` (coreutils 9.5) makes it: a program of the project's, as data.
XCHG = (
    "import ctypes, sys\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "r = libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2)\n"
    "sys.exit(ctypes.get_errno() if r else 0)\n"
)


def with_exchange(root: Path) -> None:
    three_names(root)
    (root / "xchg.py").write_text(XCHG)


async def test_a_name_of_a_shared_file_swapped_with_another_by_rename_exchange_lands_as_natively(
    workspace: Path,
) -> None:
    # F4: RENAME_EXCHANGE went past the box's rename helper, which said nothing of either file: the swapped name
    # kept its bytes where the file was rewritten through another name, or the other file joined the group.
    cases = await differentials(workspace, with_exchange, [
        "echo new > x && python3 xchg.py x h1 && echo z >> h2",
        "python3 xchg.py h1 o.txt && echo z >> h2",
        "python3 xchg.py h1 o.txt",
        "python3 xchg.py h1 h2 && echo z >> d/h3",
        "echo new > x && python3 xchg.py x h1",
    ])  # fmt: skip
    assert not (problems := failed(cases, lambda case: case.found)), problems


async def test_attack_a_copy_of_a_linked_hook_made_beside_a_replaced_name_is_no_second_name_of_the_hook(
    workspace: Path,
) -> None:
    # F1: `hooks/pre-commit` and `.git/hooks/pre-commit` one file; `sed -i` (matching nothing) renames a file over the
    # tracked name, and `cp -p` of the hook made notes.txt, which landed as the hook's own inode, unasked.
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "hooks").mkdir()
    tracked = workspace / "hooks" / "pre-commit"
    tracked.write_text("#!/bin/sh\n# the user's hook, switched off for now\nexit 0\n")
    os.chmod(tracked, 0o644)
    hook = workspace / ".git" / "hooks" / "pre-commit"
    os.link(tracked, hook)
    async with shell(workspace, Person(answer=False)) as client:
        await run(client, "sed -i s/nomatch/x/ hooks/pre-commit && cp -p .git/hooks/pre-commit notes.txt")
    notes = workspace / "notes.txt"
    assert not (notes.exists() and os.path.samefile(notes, hook))
    assert stat.S_IMODE(os.stat(hook).st_mode) == 0o644
