"""Red team 68: a differential harness for several roots (and for times the shared harness does not compare).

A parent directory holds the roots (``A`` the launch directory, others given with ``--allow-path``); the same
setup is made twice (``<tmp>/nat`` and ``<tmp>/box``); the command runs natively in ``nat/A`` and through the real
shell_exec in ``box/A``; the two parents are compared as one tree (names, types, bytes, modes, targets, hard-link
groups across roots, user.* xattrs, every mtime set on purpose — before 2011 *or* after 2100), then undo and redo
are compared exactly (every mtime)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from support import serve
from support.boxed import SX, Person, run, undo
from support.fidelity import OLD, Tree, differences, snapshot

FAR = 4_102_444_800 * 10**9  # 2100-01-01: a time after it was set on purpose too

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "TZ": "UTC"}


def native(cwd: Path, command: str) -> str:
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env={**ENV, "HOME": str(cwd.parent.parent)},
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    return f"rc={done.returncode} " + done.stdout + done.stderr


def on_purpose(native_tree: Tree, boxed: Tree) -> list[str]:
    """Differences, with mtimes compared where either side is before 2011 or after 2100 (set on purpose)."""
    found = [
        f
        for f in differences(native_tree, boxed)
        if not (f.startswith("overlayfs bookkeeping: ") and f[23:] in native_tree.bookkeeping)
    ]
    for rel in sorted(set(native_tree.entries) & set(boxed.entries)):
        a, b = native_tree.entries[rel], boxed.entries[rel]
        if (
            (a.mtime_ns > FAR or b.mtime_ns > FAR)
            and a.mtime_ns != b.mtime_ns
            and not (a.mtime_ns < OLD or b.mtime_ns < OLD)
        ):
            found.append(f"{rel}: mtime {a.mtime_ns} != {b.mtime_ns}")
    return found


def exact(reference: Tree, now: Tree) -> list[str]:
    return [
        f
        for f in differences(reference, now, all_mtimes=True)
        if not (f.startswith("overlayfs bookkeeping: ") and f[23:] in reference.bookkeeping)
    ]


async def multi(
    tmp: Path,
    setup: Callable[[Path], None],
    command: str,
    *,
    roots: Sequence[str] = ("A", "B"),
    extra: Sequence[str] = (),
    undo_too: bool = True,
    allow: Callable[[Path], Sequence[str]] | None = None,
    made: bool = False,
) -> tuple[list[str], dict[str, Any]]:
    """Problems found and the call's result. ``roots``: directories of the parent (the first is the launch
    directory; ``{P}`` in ``command`` is the parent's absolute path in each run); ``allow``: the --allow-path
    values given a parent (default: the other roots, by path); ``made``: ``nat`` and ``box`` are made already (by
    someone who could: files given away by root), ``setup`` is not run."""
    nat, box = tmp / "nat", tmp / "box"
    for parent in (nat, box) if not made else ():
        parent.mkdir()
        setup(parent)
    before = snapshot(box, skip_git=False)
    nat_out = native(nat / roots[0], command.replace("{P}", str(nat)))
    args: list[str] = []
    for value in allow(box) if allow else [str(box / r) for r in roots[1:]]:
        args += ["--allow-path", value]
    async with serve(SX, box / roots[0], *args, *extra, audit=tmp / "audit.jsonl",
                     elicitation_callback=Person()) as client:  # fmt: skip
        out = await run(client, command.replace("{P}", str(box)), cwd=str(box / roots[0]))
    after = snapshot(box, skip_git=False)
    found = on_purpose(snapshot(nat, skip_git=False), after)
    if out.get("transaction") not in ("applied", "unchanged"):
        found.append(f"transaction {out.get('transaction')}: {out.get('changes')}")
    if (out.get("changes") or {}).get("conflicts"):
        found.append(f"conflicts: {out['changes']['conflicts']}")
    if found:
        found.append(f"native: {nat_out!r}; boxed rc={out.get('exitCode')} stdout {out.get('stdout')!r} "
                     f"stderr {out.get('stderr')!r}")  # fmt: skip
    if undo_too and not found and out.get("transaction") == "applied":
        undo_id, why = undo(str(out["auditId"]))
        if not undo_id:
            return [f"undo failed: {why[-800:]}"], out
        found += [f"after undo: {d}" for d in exact(before, snapshot(box, skip_git=False))]
        redo_id, why = undo(undo_id)
        if not redo_id:
            return [*found, f"redo failed: {why[-800:]}"], out
        found += [f"after redo: {d}" for d in exact(after, snapshot(box, skip_git=False))]
    return found, out
