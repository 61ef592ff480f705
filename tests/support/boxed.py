"""The real shell_exec over stdio for attack tests: a temp HOME (the autouse fixture of tests/conftest.py), a
recording person who says yes to everything (so a landing proves only that it was not refused), and undo."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.types import ElicitRequestParams, ElicitResult

from mcp_server_guard.audit import new_audit_id
from mcp_server_guard.changes import Applier, UndoConflict
from mcp_server_guard.files.history import HistoryError, HistoryStore
from mcp_server_guard.paths import state_dir
from support import serve

SX = "mcp-server-shell-exec"


class Person:
    """Says yes to every form, and records each question. ``answer=False`` declines only the questions after a
    command ran (what it changed: applied or not) — a question before running (the form with ``approve``) is still
    answered yes, so that the command runs and its effects are judged. A person who declines everything: decline in
    an ``elicitation_callback`` of the test's own (``tests/redteam179``'s ``Decliner``)."""

    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.questions: list[str] = []

    async def __call__(self, _ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        self.questions.append(params.message)
        props = dict(params.requested_schema.get("properties", {}))  # type: ignore[union-attr]
        if not self.answer and "approve" not in props:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content={k: True for k, p in props.items() if p.get("type") == "boolean"})


@asynccontextmanager
async def shell(root: Path, person: Person | None = None, *args: str) -> AsyncIterator[Any]:
    async with serve(SX, root, *args, elicitation_callback=person or Person()) as client:
        yield client


async def run(client: Any, command: str, timeout: float = 90, **arguments: Any) -> dict[str, Any]:
    with anyio.fail_after(timeout):
        result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 60, **arguments})
    assert not result.is_error, result
    return dict(result.structured_content)


def program(root: Path, name: str, code: str) -> str:
    """A Python program kept in the project (``.t/``): the payload travels as data, the command line stays plain."""
    (root / ".t").mkdir(exist_ok=True)
    (root / ".t" / f"{name}.py").write_text("import os, stat, sys, errno\n" + code)
    return f"python3 .t/{name}.py"


async def probed(workspace: Path, setup: Callable[[Path], None], code: str) -> dict[str, Any]:
    """A probe (``code``, a Python program kept in the project ``<workspace>/p`` that ``setup`` makes) run by the
    real shell_exec: what it printed as JSON after ``PROBE `` on a line of its stdout."""
    root = workspace / "p"
    root.mkdir()
    setup(root)
    command = program(root, "probe", code)
    async with shell(workspace) as client:
        out = await run(client, command, cwd=str(root))
    text = out.get("stdout") or ""
    assert "PROBE " in text, out
    found: dict[str, Any] = json.loads(text.split("PROBE ", 1)[1].splitlines()[0])
    return found


def undo(audit_id: str, *, force: bool = False) -> tuple[str, str]:
    """``mcp-guard undo`` of a call, in this process (the library the console script runs): the undo's own audit
    id, or "" and why not."""
    store = HistoryStore(state_dir() / "history", 1 << 40, 1 << 30)
    try:
        roots = [str(r) for r in store.calls.read(audit_id).get("roots", [])]
        undo_id = new_audit_id()
        try:
            outcome = Applier(store).undo(audit_id, undo_id, roots, force=force)
        except (UndoConflict, HistoryError) as exc:
            return "", f"{type(exc).__name__}: {exc}"
        if outcome.conflicts:
            return "", "not undone: " + "; ".join(f"{c.path}: {c.what}" for c in outcome.conflicts)
        return undo_id, ""
    finally:
        store.close()  # its lock of the history's owners (one per store, for the process's life): not leaked per undo


def snap(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every path: type, mode, bytes/target, inode-group index, user.* xattrs (no following; by directory fd, so
    paths longer than PATH_MAX are fine)."""
    out: dict[str, tuple[Any, ...]] = {}
    groups: dict[tuple[int, int], int] = {}
    for dirpath, dirnames, filenames, dirfd in os.fwalk(os.fsencode(root)):
        rel_dir = os.path.relpath(dirpath, os.fsencode(root))
        for name in [*dirnames, *filenames]:
            rel = os.fsdecode(os.path.normpath(os.path.join(rel_dir, name)))
            if rel.startswith(".t"):
                continue
            st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
            p = f"/proc/self/fd/{dirfd}/{os.fsdecode(name)}"
            xattrs: tuple[tuple[str, bytes], ...] = ()
            if not stat.S_ISLNK(st.st_mode):
                xattrs = tuple(
                    sorted(
                        (n, os.getxattr(p, n, follow_symlinks=False)) for n in os.listxattr(p, follow_symlinks=False)
                    )
                )
            if stat.S_ISREG(st.st_mode):
                g = groups.setdefault((st.st_dev, st.st_ino), len(groups)) if st.st_nlink > 1 else -1
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dirfd)
                try:
                    data = os.read(fd, 1 << 20)
                finally:
                    os.close(fd)
                out[rel] = ("f", stat.S_IMODE(st.st_mode), data, g, xattrs)
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = ("l", os.readlink(name, dir_fd=dirfd))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("d", stat.S_IMODE(st.st_mode), xattrs)
            else:
                out[rel] = ("?", st.st_mode)
    return out
