"""Shared by the red-team tests of this directory: a project built twice by one setup function (``native/`` and
``boxed/`` under the workspace), a command run natively (bash, in the native copy) and through the real shell_exec
(in the boxed copy), the trees compared (support.fidelity.differences), then undo and redo compared exactly.
Commands are ordinary file operations inside the copy."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.boxed import Person, run, shell, undo
from support.fidelity import Tree, differences, snapshot

OLD_NS = 1_000_000_000 * 10**9  # a time long before any command's


def three_names(root: Path) -> None:
    """A project with a file of three names (``h1``, ``h2``, ``d/h3``) and another file, all of an old time."""
    (root / "d").mkdir()
    (root / "h1").write_text("important original\n")
    os.link(root / "h1", root / "h2")
    os.link(root / "h1", root / "d" / "h3")
    (root / "o.txt").write_text("o\n")
    for p in [root / "h1", root / "o.txt", root / "d", root]:
        os.utime(p, ns=(OLD_NS, OLD_NS))


def two_groups(root: Path, programs: Mapping[str, str]) -> None:
    """``three_names``, a second file of two names (``g1``, ``g2``) of an old time, and ``programs`` kept in the
    project (``.t/<name>.py``: what a command runs travels as data)."""
    three_names(root)
    (root / "g1").write_text("group g\n")
    os.link(root / "g1", root / "g2")
    (root / ".t").mkdir()
    for name, code in programs.items():
        (root / ".t" / f"{name}.py").write_text(code)
    for p in [root / "g1", root]:
        os.utime(p, ns=(OLD_NS, OLD_NS))


ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "TZ": "UTC"}


def native(root: Path, command: str) -> str:
    done = subprocess.run(["bash", "-c", command], cwd=root, env={**ENV, "HOME": str(root.parent)},
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    return done.stdout + done.stderr


def symlink_groups(root: Path) -> set[frozenset[str]]:
    """Hard-link groups of symlinks (names of one symlink inode)."""
    inodes: dict[tuple[int, int], list[str]] = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                inodes.setdefault((st.st_dev, st.st_ino), []).append(os.path.relpath(p, root))
    return {frozenset(v) for v in inodes.values() if len(v) > 1}


async def differential(
    workspace: Path,
    setup: Callable[[Path], None],
    command: str,
    *,
    undo_too: bool = True,
    warmup: Callable[[Any], Any] | None = None,
    person: Person | None = None,
    args: tuple[str, ...] = (),
) -> tuple[list[str], dict[str, Any]]:
    """Problems found (fidelity, then undo and redo), and the call's result. ``args``: the server's own."""
    nat, box = workspace.parent / "native", workspace / "p"
    for r in (nat, box):
        r.mkdir()
        setup(r)
    before = snapshot(box)
    nat_out = native(nat, command)
    async with shell(workspace, person, *args) as client:
        if warmup is not None:
            await warmup(client)
        out = await run(client, command, cwd=str(box))
    after = snapshot(box)
    return _compared(nat, box, nat_out, out, before, after, undo_too=undo_too), out


@dataclass
class Case:
    """One command of ``differentials``: its copies, the call's result and the problems found."""

    command: str
    name: str
    native: Path
    box: Path
    out: dict[str, Any] = field(default_factory=dict)
    found: list[str] = field(default_factory=list)


async def differentials(
    workspace: Path,
    setup: Callable[[Path], None],
    commands: Sequence[str] | Mapping[str, str],
    *,
    undo_too: bool = True,
    warmup: Callable[[Any], Any] | None = None,
    person: Person | None = None,
    args: tuple[str, ...] = (),
) -> list[Case]:
    """``differential`` of each command, all through one server (one call after the other, each in a pair of copies
    of its own: ``<workspace.parent>/native-<n>`` and ``<workspace>/p<n>``, all set up before the server starts);
    the comparisons, undo and redo once the server is gone, as ``differential`` does them. A case is named by its
    command, or by its key where ``commands`` maps names to commands."""
    named = commands.items() if isinstance(commands, Mapping) else ((c, c) for c in commands)
    cases = [Case(c, k, workspace.parent / f"native-{n}", workspace / f"p{n}") for n, (k, c) in enumerate(named)]
    for case in cases:
        for r in (case.native, case.box):
            r.mkdir()
            setup(r)
    trees: list[tuple[Tree, Tree, str]] = []
    async with shell(workspace, person, *args) as client:
        if warmup is not None:
            await warmup(client)
        for case in cases:
            before = snapshot(case.box)
            nat_out = native(case.native, case.command)
            case.out = await run(client, case.command, cwd=str(case.box))
            trees.append((before, snapshot(case.box), nat_out))
    for case, (before, after, nat_out) in zip(cases, trees, strict=True):
        case.found = _compared(case.native, case.box, nat_out, case.out, before, after, undo_too=undo_too)
    return cases


def failed(cases: Sequence[Case], check: Callable[[Case], list[str]]) -> str:
    """Each case whose ``check`` names problems, by its name; "" when none does."""
    lines: list[str] = []
    for case in cases:
        problems = check(case)
        if problems:
            lines.append(f"[{case.name}]")
            lines += [f"    {p}" for p in problems]
    return "\n".join(lines)


def _compared(
    nat: Path, box: Path, nat_out: str, out: dict[str, Any], before: Tree, after: Tree, *, undo_too: bool
) -> list[str]:
    nat_tree = snapshot(nat)
    found = differences(nat_tree, after)
    # the project's own user.overlay.* attributes, natively there too, are no bookkeeping of the box
    found = [
        f
        for f in found
        if not (f.startswith("overlayfs bookkeeping: ") and f[len("overlayfs bookkeeping: ") :] in nat_tree.bookkeeping)
    ]
    if symlink_groups(nat) != symlink_groups(box):
        found.append(f"symlink hard links {symlink_groups(nat)} != {symlink_groups(box)}")
    if out.get("transaction") not in ("applied", "unchanged"):
        found.append(f"transaction {out.get('transaction')}: {out.get('changes')}")
    if found:
        found.append(f"native output: {nat_out!r}; boxed stdout {out.get('stdout')!r} stderr {out.get('stderr')!r}")
    if undo_too and not found and out.get("transaction") == "applied":
        found += undo_redo(str(out["auditId"]), box, before, after)
    return found


async def one_call(client: Any) -> None:
    """A warm-up for ``differential``: one call before the one compared (that one is then no server's first)."""
    await run(client, "touch /tmp/x")


def _diffs(reference: Tree, now: Tree) -> list[str]:
    return [
        d
        for d in differences(reference, now, all_mtimes=True)
        if not (d.startswith("overlayfs bookkeeping: ") and d[23:] in reference.bookkeeping)
    ]


def undo_redo(audit_id: str, root: Path, before: Tree, after: Tree) -> list[str]:
    undo_id, why = undo(audit_id)
    if not undo_id:
        return [f"undo failed: {why[-600:]}"]
    found = [f"after undo: {d}" for d in _diffs(before, snapshot(root))]
    redo_id, why = undo(undo_id)
    if not redo_id:
        return [*found, f"undo of the undo failed: {why[-600:]}"]
    found += [f"after redo: {d}" for d in _diffs(after, snapshot(root))]
    return found
