"""A forged (or damaged) apply journal in the history store whose steps name a root like ``<allowed>/../outside``
passes ``recover``'s "second wall" (``_outside``): ``within_any`` is a string-prefix test, and only the steps'
relative paths are checked for ``..``, never the root itself. The next start of shell_exec then runs the plan
there — ``os.open(op.root)`` resolves the ``..`` — and moves a file *outside* the allowed directories into the
history store (deleted from where it was).

``recover``'s docstring names exactly this threat: "a journal someone forged ... naming a root, a path or an upper
directory elsewhere, to have the server place or remove files there".

Shown with the library: an apply of ``rm edit.txt`` killed before its first step leaves its journal; the journal's
roots are rewritten to ``<root>/../outside`` (where an ``edit.txt`` also exists); ``recover`` with the real root
as the allowed directory deletes ``outside/edit.txt``.

To pass: compare normalized (``os.path.normpath``, or better, real) paths in ``_outside`` — refuse a root with a
``..`` component or one not equal to one of the server's roots — and leave such a journal alone."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.changes.recovery import recover
from mcp_server_guard.files.history import HistoryStore
from support.copies import Copy, overlays_work
from support.journals import write_sealed

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


def _killed_apply(copy: Copy, store: HistoryStore, changes: object) -> None:
    from mcp_server_guard import faults

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            faults.reset(1, "")
            Applier(store).apply([changes], "a00000000001", copy.started)  # type: ignore[list-item]
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status


def test_a_journal_naming_allowed_dotdot_outside_makes_recover_delete_outside(tmp_path: Path) -> None:
    copy = Copy(tmp_path / "p")
    outside = tmp_path / "p" / "outside"
    outside.mkdir()
    (outside / "edit.txt").write_text("OUTSIDE: not the server's to touch\n")
    (copy.root / "edit.txt").write_text("inside\n")
    changes = copy.run("rm edit.txt")
    store = HistoryStore(tmp_path / "history", 1 << 30)
    _killed_apply(copy, store, changes)
    journal = next((store.directory / ".journal").glob("apply-*.json"))
    lines = [json.loads(line.rpartition("\t")[0]) for line in journal.read_text().splitlines()]
    plan = lines[0]
    forged_root = f"{copy.root}/../outside"
    text = json.dumps(plan).replace(json.dumps(str(copy.root))[1:-1], forged_root)
    write_sealed(store.directory, journal.name[len("apply-") : -len(".json")], [json.loads(text), *lines[1:]])
    assert str(copy.root) in forged_root and os.path.realpath(forged_root) == str(outside)

    recover(HistoryStore(tmp_path / "history", 1 << 30), [str(copy.root)], [str(copy.upper)])

    assert (outside / "edit.txt").exists(), (
        "a journal naming the root <allowed>/../outside was finished: outside/edit.txt, outside every allowed "
        f"directory, was deleted (moved into the history: {sorted(p.name for p in store.directory.iterdir())})"
    )
