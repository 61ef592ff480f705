"""Issue 42 claim 1: "the summary names every path whose mode changed"; docs/shell_exec.md "Judging": "Every path
whose mode changes is named ("change the mode of src/ to 2777")".

Case: a command both rewrites a file and changes its mode (``echo >> run.sh && chmod 700 run.sh``; ``chmod +x`` of
an edited script in an executable place; ``mv -f`` of a file with another mode over it; a directory removed and
made again with another mode). Observed: the summary says "modify 1 file" / "change 1 directory", the mode change is
named nowhere (no question either, as nothing is granted beyond what asks). Expected: "change the mode of run.sh to
0700" as for a mode-only change.
Guessed cause: ``effects.summary_line`` collects ``remoded`` only from ``action == "meta"`` changes; a ``modify``
(content and mode) or a re-created directory (``create`` with ``opaque``) whose mode differs from ``old_mode`` is never
listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


def _summary(copy: Copy, script: str) -> str:
    j = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return j.question


def _setup(copy: Copy) -> None:
    (copy.root / "scripts").mkdir()
    (copy.root / "scripts" / "run.sh").write_text("echo hi\n")
    (copy.root / "scripts" / "run.sh").chmod(0o644)
    (copy.root / "notes.txt").write_text("notes\n")
    (copy.root / "notes.txt").chmod(0o644)
    (copy.root / "other.txt").write_text("other\n")
    (copy.root / "other.txt").chmod(0o600)
    (copy.root / "d").mkdir(mode=0o755)
    (copy.root / "d" / "f").write_text("f\n")


def test_control_mode_only_change_is_named(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _setup(copy)
    q = _summary(copy, "chmod 700 notes.txt")
    assert "notes.txt to 0700" in q, q


@pytest.mark.parametrize(
    ("script", "named"),
    [
        ("echo more >> notes.txt && chmod 700 notes.txt", "notes.txt to 0700"),
        ("echo more >> scripts/run.sh && chmod +x scripts/run.sh", "run.sh to 0755"),
        ("mv -f other.txt notes.txt", "notes.txt to 0600"),
        ("rm -r d && mkdir -m 700 d && echo f > d/f", "d/ to 0700"),
        # red team 42q I: a file moved, then re-moded
        ("mv notes.txt n2.txt && chmod 600 n2.txt", "n2.txt to 0600"),
        ("mv scripts/run.sh scripts/go && chmod 755 scripts/go", "scripts/go to 0755"),
    ],
)
def test_mode_change_with_new_content_is_named(tmp_path: Path, script: str, named: str) -> None:
    copy = Copy(tmp_path)
    _setup(copy)
    q = _summary(copy, script)
    assert named in q, q
