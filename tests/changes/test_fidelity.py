"""The differential tier: the same seeded scripts of everyday file operations run natively on one copy of a project
and through the real shell_exec on another must leave the same tree — names, types, bytes, modes, symlink targets,
hard-link groups, modification times (those set on purpose across the two runs; every one against what the command
itself saw), ``user.*`` extended attributes — with no overlayfs bookkeeping and no conflict copy; ``mcp-guard undo``
then puts the tree back exactly, and an undo of that undo brings the call's tree back.

A failing seed is reduced to a minimal script, shown in the failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp.types import ElicitRequestParams, ElicitResult

from support import serve
from support.boxed import undo
from support.fidelity import (
    as_command,
    differences,
    git_state,
    reduce,
    run_native,
    script_for,
    seed_project,
    snapshot,
    snapshot_text,
    stale_in_view,
)

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

SX = "mcp-server-shell-exec"
SEEDS_PER_CHUNK = 40
CHUNKS = 6  # 240 seeds in all, a chunk per test (spread over the workers)
_CONCURRENT = 3


@dataclass
class Outcome:
    seed: int
    lines: list[str]
    problems: list[str]


class Lab:
    """Projects side by side under ``work``: ``native/<n>`` run by bash, ``boxed/<n>`` through ``client``."""

    def __init__(self, work: Path, client: Any) -> None:
        self.work, self.client = work, client
        self.base = work / "base"
        if not self.base.exists():
            seed_project(self.base)
        self.count = 0

    def fresh(self) -> tuple[Path, Path]:
        self.count += 1
        native, boxed = self.work / "native" / f"p{self.count}", self.work / "boxed" / f"p{self.count}"
        for target in (native, boxed):
            target.parent.mkdir(exist_ok=True)
            subprocess.run(["cp", "-a", str(self.base), str(target)], check=True)
        return native, boxed

    async def boxed(self, root: Path, lines: list[str]) -> dict[str, Any]:
        with anyio.fail_after(120):
            result = await self.client.call_tool(
                "shell_exec",
                {"command": as_command(lines), "cwd": str(root), "timeoutSeconds": 60, "maxOutputBytes": 4 << 20},
            )
        assert not result.is_error, result
        return dict(result.structured_content)

    async def problems(self, lines: list[str], *, undo: bool) -> list[str]:
        native, boxed = self.fresh()
        before = snapshot(boxed)
        await anyio.to_thread.run_sync(run_native, native, lines)
        result = await self.boxed(boxed, lines)
        after = snapshot(boxed)
        found = differences(snapshot(native), after)
        if any(line.startswith("git ") for line in lines) and git_state(native) != git_state(boxed):
            found.append(f"git differs:\n{git_state(native)}\n---\n{git_state(boxed)}")
        seen = snapshot_text(str(result.get("stdout", "")))
        if seen is None:
            found.append(f"no snapshot printed: {str(result.get('stdout', ''))[-300:]} {result.get('stderr', '')}")
        else:
            stale = stale_in_view(before, after) | seen.hidden(after.entries)
            found += [
                f"vs what the command saw: {d}"
                for d in differences(seen, after, all_mtimes=True, links=False, skip=stale)
            ]
        if result.get("transaction") not in ("applied", "unchanged"):
            found.append(f"transaction {result.get('transaction')}: {result.get('changes')}")
        if undo and not found and result.get("transaction") == "applied":
            found += await anyio.to_thread.run_sync(undo_problems, str(result["auditId"]), boxed, before, after)
        return found


async def yes(_ctx: Any, params: ElicitRequestParams) -> ElicitResult:
    """A person who says yes to every question (a script's changes are asked about like anyone's)."""
    props = dict(params.requested_schema.get("properties", {}))  # type: ignore[union-attr]
    return ElicitResult(action="accept", content={k: True for k, p in props.items() if p.get("type") == "boolean"})


def undo_problems(audit_id: str, root: Path, before: Any, after: Any) -> list[str]:
    """Undoing the call puts ``before`` back exactly; undoing that undo puts ``after`` back."""
    undo_id, why = undo(audit_id)
    if not undo_id:
        return [f"undo failed: {why[-400:]}"]
    found = [f"after undo: {d}" for d in differences(before, snapshot(root), all_mtimes=True)]
    redo_id, why = undo(undo_id)
    if not redo_id:
        return [*found, f"undo of the undo failed: {why[-400:]}"]
    found += [f"after undoing the undo: {d}" for d in differences(after, snapshot(root), all_mtimes=True)]
    return found


async def run_seeds(work: Path, seeds: range, *, undo: bool = True, minimal: bool = True) -> list[Outcome]:
    """Every seed's script through one server; the failing ones, reduced when ``minimal``."""
    (work / "boxed").mkdir(parents=True, exist_ok=True)
    failures: list[Outcome] = []
    limiter = anyio.Semaphore(_CONCURRENT)
    async with serve(SX, work / "boxed", elicitation_callback=yes) as client:
        lab = Lab(work, client)

        async def one(seed: int) -> None:
            lines = script_for(seed)
            async with limiter:
                problems = await lab.problems(lines, undo=undo)
            if problems:
                failures.append(Outcome(seed, lines, problems))

        async with anyio.create_task_group() as tg:
            for seed in seeds:
                tg.start_soon(one, seed)
        if minimal:
            for failure in failures[:3]:

                def fails(candidate: list[str]) -> bool:
                    return bool(anyio.from_thread.run(partial(lab.problems, candidate, undo=undo)))

                shrunk = await anyio.to_thread.run_sync(partial(reduce, failure.lines, fails, budget=60))
                failure.lines = shrunk
                failure.problems = await lab.problems(shrunk, undo=undo)
    return sorted(failures, key=lambda f: f.seed)


def report(failures: list[Outcome], total: int) -> str:
    lines = [f"{len(failures)} of {total} seeds differ"]
    for failure in failures[:3]:
        lines.append(f"seed {failure.seed}, minimal script:\n  " + "\n  ".join(failure.lines))
        lines += [f"    {p}" for p in failure.problems[:8]]
    lines.append("seeds: " + ", ".join(str(f.seed) for f in failures[:40]))
    return "\n".join(lines)


@pytest.mark.parametrize("chunk", range(CHUNKS))
async def test_everyday_scripts_land_as_they_would_natively_and_undo_exactly(tmp_path: Path, chunk: int) -> None:
    seeds = range(chunk * SEEDS_PER_CHUNK, (chunk + 1) * SEEDS_PER_CHUNK)
    failures = await run_seeds(tmp_path, seeds)
    assert not failures, report(failures, len(seeds))


def main() -> None:  # pragma: no cover - by hand: uv run python tests/changes/test_fidelity.py FIRST COUNT
    import sys
    import tempfile

    first, count = int(sys.argv[1]), int(sys.argv[2])
    with tempfile.TemporaryDirectory(prefix="fidelity-") as work:
        home = Path(work) / "home"
        (home / ".local" / "state").mkdir(parents=True)
        os.environ.update(HOME=str(home), XDG_STATE_HOME=str(home / ".local" / "state"))
        failures = anyio.run(run_seeds, Path(work), range(first, first + count))
        print(report(failures, count))


if __name__ == "__main__":
    main()
