"""Conflicts keep the command's version beside the path (docs/shell_exec.md "Conflicts are only what someone else
did": ``<name>.mcp-guard-<auditId>``) whatever the name's length: a name of 240 bytes and more leaves no room for
the suffix, so the name is cut (in bytes, never inside a UTF-8 character) before it. (Such a conflict once lost
the command's version: the rename beside failed with ENAMETOOLONG.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.changes.apply import Applier
from mcp_server_guard.files.history import HistoryStore
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


@pytest.mark.parametrize("name", ["n" * 250, "é" * 127, "a" + "日本" * 41])
def test_a_conflict_on_a_long_name_keeps_the_commands_version_beside_it(tmp_path: Path, name: str) -> None:
    copy = Copy(tmp_path)
    (copy.root / name).write_text("host v1\n")
    (copy.root / "data").write_text(name)  # the name travels as data, never in the command line
    changes = copy.run('echo "command version" > "$(cat data)"')
    with (copy.root / name).open("a") as fh:
        fh.write("host edit\n")  # someone else, while the command ran
    outcome = Applier(HistoryStore(tmp_path / "history", 1 << 30)).apply([changes], "a00000000001", copy.started)
    assert (copy.root / name).read_text() == "host v1\nhost edit\n"
    beside = [p for p in copy.root.iterdir() if ".mcp-guard-a00000000001" in p.name]
    assert len(beside) == 1 and beside[0].read_text() == "command version\n", (beside, outcome.conflicts)
    assert len(beside[0].name.encode()) <= 255 and beside[0].name.encode().decode("utf-8")
    assert [c.path for c in outcome.conflicts] == [str(copy.root / name)]
