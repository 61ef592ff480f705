"""``upper._Reader.add`` returns ``len(self.out) - 1`` when the MAX_ENTRIES budget has run out (the change is NOT
appended), and ``note`` files the upper file under that index: the index of the LAST change that was appended, an
unrelated path. ``links`` then rewrites that unrelated change into ``link=<anchor>``. A change set that big is
asked about ("It changed too many paths to list them all."), and on a yes the unrelated path lands as a hard link
of a real file the command never linked it to — with bytes the judgement never read at that path (it judged the
upper file there).

Library level, with MAX_ENTRIES made small; through shell_exec it takes 200,000 paths in one call.

FAILS when a change's ``link`` names a file its upper file is not a name of."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard.changes import names as names_module
from mcp_server_guard.changes.upper import read_upper


def test_a_change_set_cut_at_its_budget_links_no_unrelated_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, upper = tmp_path / "real", tmp_path / "upper"
    real.mkdir()
    upper.mkdir()
    (real / "anchor.cfg").write_text("[core]\n\tfsmonitor = echo would-run\n")  # an ordinary file of the project
    st = (real / "anchor.cfg").stat()
    (upper / "anchor.cfg").write_text((real / "anchor.cfg").read_text())  # copied up for `ln anchor.cfg zz-other`
    os.utime(upper / "anchor.cfg", ns=(st.st_atime_ns, st.st_mtime_ns))
    os.chmod(upper / "anchor.cfg", st.st_mode & 0o7777)
    os.link(upper / "anchor.cfg", upper / "zz-other")
    (upper / "a1").write_text("filler")
    (upper / "b-victim").write_text("[user]\n\tname = judged bytes\n")  # what the judgement reads at b-victim
    monkeypatch.setattr(names_module, "MAX_ENTRIES", 2)
    fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY)
    try:
        changes = read_upper(str(upper), fd, str(real))
    finally:
        os.close(fd)
    wrong = []
    for change in changes.changes:
        if change.link:
            same = os.path.samefile(upper / change.path, upper / change.link)
            if not same:
                wrong.append(f"{change.path} -> link={change.link}")
    assert changes.incomplete
    assert not wrong, f"links to files the command never linked: {wrong} (changes: {changes.changes})"
