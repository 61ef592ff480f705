"""Issue 42 claim 4: "Deletion questions look at what was lost, not what stands at the path afterwards (a directory
re-created ... is a tree deletion)"; docs/shell_exec.md: "It deletes src/ (1,234 files)".

Case: ``src/`` held 10 files; the command removes it and makes a new one (``rm -rf src && git init -q src`` — or any
new content). Observed: "It deletes src/ (27 files)" — the 17 files git init *made* are counted as deleted ones
(``rm -rf src && mkdir src && echo x > src/new.txt`` says 11). Expected: "src/ (10 files)": what was lost. A person
judging "27 files" against their memory of src/ is misled, and a small loss can be padded to look like churn (or a
large one described with a number that is not the loss).
Guessed cause: ``effects.judge`` counts ``held`` as every non-directory change whose ``top`` is the directory —
creations under the re-made directory included — instead of only its deletions."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
GIT = "git -c user.name=t -c user.email=t@t"


@pytest.mark.parametrize("script", ["rm -rf src && git init -q src", "rm -rf src && mkdir src && echo x > src/new.txt"])
def test_tree_deletion_counts_the_files_lost(tmp_path: Path, script: str) -> None:
    copy = Copy(tmp_path)
    r = copy.root
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    (r / "src").mkdir()
    for i in range(10):
        (r / "src" / f"m{i}.py").write_text(f"module {i}\n")
    subprocess.run(f"{GIT} add -A && {GIT} commit -qm init", shell=True, cwd=r, check=True)
    j = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(r)])
    assert "It deletes src/ (10 files)." in j.asks, j.asks
