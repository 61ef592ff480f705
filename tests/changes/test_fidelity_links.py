"""Fidelity of hard links and renames that the upper layer alone leaves ambiguous: each command runs natively on one
copy of a small project and through the real shell_exec on another; the trees must be the same (names, bytes,
modes, times, attributes, hard-link groups), and undo and its undo exact (support.differential).

The project: ``h1``/``h2`` one file with two names; ``sp/x1``/``d/x2`` one file with names in two directories;
``d/f``, ``d/sub/h`` single files; ``empty/`` an empty directory. Every command is an ordinary file operation
inside the copy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from mcp import Client

from support.boxed import run, shell
from support.clients import server_params
from support.differential import differential, differentials, failed

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

OLD_NS = 1_200_000_000 * 10**9


def project(root: Path) -> None:
    for d in ("d/sub", "sp", "empty"):
        (root / d).mkdir(parents=True)
    (root / "h1").write_text("linked\n")
    os.link(root / "h1", root / "h2")
    (root / "sp" / "x1").write_text("span\n")
    os.link(root / "sp" / "x1", root / "d" / "x2")
    (root / "d" / "f").write_text("f\n")
    (root / "d" / "sub" / "h").write_text("h\n")
    (root / "a.txt").write_text("a\n")
    for path in ("h1", "sp/x1", "d/f", "d/sub/h", "a.txt"):
        os.utime(root / path, ns=(OLD_NS, OLD_NS))


COMMANDS = [
    # a linked name renamed into the place of a directory the command had replaced by a file
    "rm -r d && printf 'was a dir\\n' > d && mv -f h2 d",
    # a linked name replaced by a file renamed out of a moved directory (its other name keeps the old bytes)
    "mv d empty/n1 && mv -f empty/n1/f h2",
    # a linked name renamed over a single file, its old place then made a directory
    "mv h2 d/sub/h && mkdir h2 && printf 'in\\n' > h2/in",
    # a new name of a linked file renamed into the place of a directory
    "ln h1 n && rm -r d && mv n d",
    # both directories holding names of one file renamed
    "mv sp sp2 && mv d d2",
    # two directories holding names of one file swapped through a temporary name
    "mv sp t && mv d sp && mv t d",
    # a directory moved away and back, changed in between
    "mv d d2 && echo more >> d2/f && mv d2 d",
    # a linked name's bytes replaced by a rename of a single file (the other name keeps its bytes)
    "mv -f a.txt h1",
    # a directory holding a name of a linked file moved, the other name removed
    "mv d d2 && rm sp/x1",
    # a directory holding a name of a linked file moved, a new name made of it
    "mv sp sp2 && ln sp2/x1 n",
    # an entry made and removed again: only the directory's time changed
    "touch d/t && rm d/t",
    # a name of one linked file renamed away, a name of another renamed into its place (a chain)
    "mv h1 t && mv sp/x1 h1",
    # two linked files swapped through a temporary name (a cycle)
    "mv sp/x1 t && mv h1 sp/x1 && mv t h1",
    # a directory holding a name of a linked file copied with everything it keeps, then moved (and the other way):
    # the moved name stays a name of the file, the copy is a file of its own with the same bytes, mode and times
    "cp -a d d3 && mv d d4",
    "mv d d4 && cp -a d4 d3",
    # one file changed in place through two of its names: every change reaches the one file (the later one wins
    # where both changed the same thing)
    "chmod 600 h2 && touch -d 2001-01-01 h1",
    'python3 -c \'import os; os.setxattr("h1", "user.j", b"2"); os.setxattr("h2", "user.k", b"1")\'',
    "chmod 600 h2 && echo more >> h1 && touch -d 2002-02-02 d/x2 && chmod 604 sp/x1",
    "touch -d 2001-01-01 h1 && echo more >> h2",
    # one name of a linked file removed, the other swapped through a temporary name into a directory then moved
    # (fuzzer seeds 260101, 310097: the undo gave the two names back as two files)
    "rm h1 && mv h2 n3 && mv d/f h2 && mv n3 d/f && mv d n8",
    # a new name of a linked file, then a symlink renamed over the name it was made from (fuzzer seed 7031)
    "ln -s ../a.txt d/up && ln h2 empty/n1 && mv -f d/up h2",
    # rename() of one name of a file onto another name of it: natively nothing happens (red team 40q B: a name of
    # the project was deleted; two names the command linked gave ESTALE)
    'python3 -c \'import os; os.rename("h1", "h2")\'',
    'python3 -c \'import os; os.replace("d/x2", "sp/x1")\'',
    'ln a.txt n && python3 -c \'import os; os.rename("n", "a.txt")\'',
]


async def test_renames_and_links_land_as_they_would_natively(workspace: Path) -> None:
    """Every command through one server (each in copies of its own): each failing one is named."""
    cases = await differentials(workspace, project, COMMANDS)
    assert not (problems := failed(cases, lambda case: case.found)), problems


def marked_project(root: Path) -> None:
    """A project whose files carry overlayfs's attribute names of their own (data: any user may set them)."""
    (root / "m").write_text("marked\n")
    os.setxattr(root / "m", "user.overlay.note", b"mine")
    (root / "n").write_text("next\n")
    os.setxattr(root / "n", "user.overlay.note", b"also")
    (root / "md").mkdir()
    (root / "md" / "f").write_text("in a marked directory\n")
    os.setxattr(root / "md" / "f", "user.overlay.own", b"file")
    os.setxattr(root / "md", "user.overlay.opaque", b"y")  # would hide nothing here; overlayfs reads it as its own
    for path in ("m", "n", "md/f", "md"):
        os.utime(root / path, ns=(OLD_NS, OLD_NS))


@pytest.mark.parametrize(
    "command",
    [
        "echo new > m",  # rewritten in place: it keeps its attributes, natively and here
        "rm m && echo new > m",  # a new file of that name: none of the old file's attributes
        "mv -f n m",  # renamed over it: the attributes of the file renamed
        "cp m c && echo more >> c",  # a copy: cp keeps no attributes
        "mv md md2",  # a marked directory holding a marked file, moved
        "mv md/f g && touch md/new",  # a marked file moved out of a marked directory
    ],
)
async def test_a_projects_own_overlay_attributes_land_as_they_would_natively_from_the_first_call(
    workspace: Path, command: str
) -> None:
    # Each is a fresh server's first call: the copy made ready at the box's start must show the attributes as well.
    problems, _out = await differential(workspace, marked_project, command)
    assert not problems, "\n".join(problems)


def wide_project(root: Path) -> None:
    for i in range(300):
        (root / "t" / f"d{i:03}").mkdir(parents=True)
    (root / "t" / "d000" / "f").write_text("f\n")
    os.link(root / "t" / "d000" / "f", root / "t" / "d299" / "g")


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="util-linux prlimit is missing")
async def test_a_move_of_a_tree_of_many_directories_needs_few_descriptors(workspace: Path) -> None:
    # Red team 40q F: the box's move helper held two descriptors per directory; under a soft limit of open files
    # below twice the directories (1,024 is usual), `mv t t2` failed with EMFILE. The server (and its box) run
    # under a soft limit of 256 here; the test's own process keeps its own.
    wide_project(workspace)
    params = server_params("mcp-server-shell-exec", workspace)
    limited = params.model_copy(
        update={"command": shutil.which("prlimit"), "args": ["--nofile=256:", params.command, *params.args]}
    )
    async with Client(limited, mode="legacy") as client:
        out = await run(client, "mv t t2")
    assert out["exitCode"] == 0 and out["transaction"] == "applied", (out["stderr"], out["changes"])
    assert not (workspace / "t").exists() and len(list((workspace / "t2").iterdir())) == 300
    assert os.path.samefile(workspace / "t2" / "d000" / "f", workspace / "t2" / "d299" / "g")


def twins_project(root: Path) -> None:
    """Files equal in bytes, mode and time (as an archive extracts them): ``c`` with a second name ``c2``."""
    for name in ("a", "b", "c"):
        (root / name).write_text("same\n")
        os.utime(root / name, ns=(OLD_NS, OLD_NS))
    os.link(root / "c", root / "c2")
    for name in ("x", "y"):
        (root / name).write_text("#!/bin/sh\n")
        (root / name).chmod(0o755)
        os.utime(root / name, ns=(OLD_NS, OLD_NS))


async def test_a_link_made_between_two_equal_files_lands_as_one_file(workspace: Path) -> None:
    # Red team 40s F9: the copy showed both names with the bytes and metadata the real files had, so nothing was
    # seen to change, and two files landed where natively one is (what `hardlink`, `rdfind`, `jdupes -L` do).
    # Where one of them has other names too, the call's init says which file the linked name holds (``unlinks``).
    commands = ["rm a && ln b a", "mv a b && ln b a", "rm x && ln y x", "ln -f b a", "rm a && ln c a", "rm c && ln a c",
                "rm a && ln c2 a && echo z >> c"]  # fmt: skip
    cases = await differentials(workspace, twins_project, commands)
    assert not (problems := failed(cases, lambda case: case.found)), problems


@pytest.mark.parametrize("command", ["rm a && ln c a", "rm c && ln a c"])
async def test_a_link_between_equal_files_never_relinks_a_name_the_command_did_not_touch(
    workspace: Path, command: str
) -> None:
    # Red team 4 F2: where one of the two had other names the copy cannot tell which became a name of which; taking
    # one for the other made an untouched name (`.envrc` there) a name of an ordinary file, unasked. The other names
    # keep the file they had (the call's init says which file the name the command linked holds: ``unlinks``).
    twins_project(workspace)
    before = {name: (workspace / name).stat().st_ino for name in ("c2", "b")}
    async with shell(workspace) as client:
        await run(client, command)
    assert {name: (workspace / name).stat().st_ino for name in ("c2", "b")} == before
    assert (workspace / "c2").read_text() == "same\n"
