"""Red team 52 through the real server: names of files with several names followed by the call's init
(shell.sandbox.unlinks, renames._linking/_exchange, changes.upper._linked_elsewhere). Data: rt52.json."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.differential import OLD_NS, differentials, failed, three_names

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
DATA = json.loads((Path(__file__).parent / "rt52.json").read_text())
EXCHANGE = json.loads((Path(__file__).parents[1] / "changes" / "names_followed.json").read_text())["exchange_program"]


def _odd(root: Path) -> None:
    """three_names, and two more names of that file with odd bytes: a newline, a byte that is no UTF-8."""
    three_names(root)
    os.link(root / "h1", os.fsencode(root) + b"/n\nl")
    os.link(root / "h1", os.fsencode(root) + b"/x\xff")


def _many(root: Path, untouched: str = "d/h3") -> None:
    """One file of 21 names: f0..f19 and ``untouched`` (the race consumes two names a round), 8 MiB (its copy-up,
    while the exchange holds the directory's lock, keeps the other process's removal waiting until the exchange is
    done). d/ is watched either way (the flooder's directory)."""
    (root / "d").mkdir()
    (root / "d" / "keep").write_text("k\n")
    (root / untouched).parent.mkdir(exist_ok=True)
    (root / untouched).write_bytes(b"important original\n" + bytes(range(256)) * (8 << 12))
    os.link(root / untouched, root / "d" / "h3x")
    for i in range(20):
        os.link(root / untouched, root / f"f{i}")
    (root / ".t").mkdir()
    (root / ".t" / "race.py").write_text(DATA["race_program"])
    for p in [root / untouched, root / "d", root]:
        os.utime(p, ns=(OLD_NS, OLD_NS))


def _flip(root: Path) -> None:
    """One small file of 21 names: f0..f19 and d/h3; the program that races the helper's link (flip.py)."""
    (root / "d").mkdir()
    (root / "d" / "h3").write_text("important original\n")
    for i in range(20):
        os.link(root / "d" / "h3", root / f"f{i}")
    (root / ".t").mkdir()
    (root / ".t" / "flip.py").write_text(DATA["flip_program"])
    for p in [root / "d" / "h3", root / "d", root]:
        os.utime(p, ns=(OLD_NS, OLD_NS))


async def _race(
    workspace: Path, untouched: str, attempts: int = 3, setup: Any = None, key: str = "race_cases"
) -> list[str]:
    """The race's cases, up to ``attempts`` times (each through a server of its own), until one goes wrong: each
    name must land holding what the command saw there at its end (SEEN, its first bytes), and ``untouched`` (never
    named by the command) must keep its bytes."""
    problems: list[str] = []
    for attempt in range(attempts):
        where = workspace / f"a{attempt}" / "w"  # (each attempt's native copies beside its own workspace)
        where.mkdir(parents=True)
        cases = await differentials(where, setup or (lambda root: _many(root, untouched)), DATA[key], undo_too=False)
        for case in cases:
            stdout = case.out.get("stdout") or ""
            if "SEEN " not in stdout:
                problems.append(f"[{case.name}] no SEEN: {case.out}")
                continue
            seen = json.loads(stdout.split("SEEN ", 1)[1].splitlines()[0])
            landed = {n: (case.box / n).read_bytes()[:4].decode("latin-1") for n in seen if (case.box / n).exists()}
            wrong = {n: (seen[n], landed.get(n)) for n in seen if landed.get(n) != seen[n]}
            changed = (case.box / untouched).read_bytes()[:4] != b"impo"
            if wrong or changed:
                problems.append(
                    f"[attempt {attempt} {case.name}] box saw != landed: {wrong}; "
                    f"{untouched} rewritten: {changed}; transaction {case.out.get('transaction')}"
                )
        if problems:
            break
    return problems


async def test_names_followed_sequences_land_as_natively(workspace: Path) -> None:
    cases = await differentials(workspace, three_names, DATA["cases"])
    assert not (problems := failed(cases, lambda case: case.found)), problems


def _single(root: Path) -> None:
    """three_names, and sub/single: a project file of one name in a directory that holds no file with several names
    (not watched), with a user.* attribute."""
    three_names(root)
    (root / "sub").mkdir()
    (root / "sub" / "single").write_text("single\n")
    os.setxattr(root / "sub" / "single", "user.tag", b"v")
    for p in [root / "sub" / "single", root / "sub", root]:
        os.utime(p, ns=(OLD_NS, OLD_NS))


async def test_single_name_files_from_unwatched_directories_land_as_natively(workspace: Path) -> None:
    cases = await differentials(workspace, _single, DATA["single_cases"])
    assert not (problems := failed(cases, lambda case: case.found)), problems


def _exchanging(root: Path) -> None:
    three_names(root)
    (root / ".t").mkdir()
    (root / ".t" / "exchange.py").write_text(EXCHANGE)


async def test_exchanges_with_a_directory_not_watched_land_as_natively(workspace: Path) -> None:
    cases = await differentials(workspace, _exchanging, DATA["exchange_cases"])
    assert not (problems := failed(cases, lambda case: case.found)), problems


def _symlinked(root: Path) -> None:
    """three_names and a project symlink s -> h2."""
    three_names(root)
    os.symlink("h2", root / "s")
    os.utime(root, ns=(OLD_NS, OLD_NS))


async def test_links_through_a_project_symlink_land_as_natively(workspace: Path) -> None:
    cases = await differentials(workspace, _symlinked, DATA["symlink_cases"])
    assert not (problems := failed(cases, lambda case: case.found)), problems


async def test_names_with_odd_bytes_land_as_natively(workspace: Path) -> None:
    cases = await differentials(workspace, _odd, DATA["odd_cases"])
    assert not (problems := failed(cases, lambda case: case.found)), problems


async def test_a_name_remade_by_another_process_during_an_exchange_does_not_rewrite_the_file(workspace: Path) -> None:
    """F1 end to end, a race: a child process removes and writes anew the name the helper just exchanged (its
    removal waits on the directory's lock while the exchange copies the file up), while a second one floods a
    watched directory with events so that the helper's second drain lasts; ``exchanging`` then sets the name to the
    project's file over the events it just read, and the server lands the new bytes under every name of the real
    file — d/h3, never named by the command, included. The oracle is what the command saw in the box (natively the
    race may end otherwise)."""
    problems = await _race(workspace, "d/h3")
    assert not problems, "\n".join(problems)


async def test_a_link_whose_source_path_changes_under_the_helper_is_not_taken_for_the_project_file(
    workspace: Path,
) -> None:
    """F2, a race: the helper resolves a link's source twice (``_at`` for the init's follow, then ``linkat``); a
    second process flips a symlinked directory of that path (u/s -> .. or ../ev) between the two, with unlink and
    symlink (not intercepted). The init then says f<i> holds f19's file (a name of the project file) while it holds
    ev/f19, a file of the call's; the server lands its bytes under every name of the real file, d/h3 included."""
    problems = await _race(workspace, "d/h3", setup=_flip, key="flip_cases")
    assert not problems, "\n".join(problems)
