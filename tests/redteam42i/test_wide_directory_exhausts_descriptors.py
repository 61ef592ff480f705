"""Issue 42, red team i, claims 7 and 5: a change set of a directory with more subdirectories than the descriptor
limit (``seq 1 1500 | xargs mkdir``, a node_modules/) ended "Too many open files; nothing applied": the walker kept
one open descriptor per subdirectory of the directory it listed. It now keeps about one per level."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

WALK = """
import os, resource, sys
from mcp_server_guard.changes.changeset import walk_real
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
print(sum(1 for _ in walk_real(fd, "", [10_000])))
"""


def test_a_directory_wider_than_the_descriptor_limit_is_walked_whole(tmp_path: Path) -> None:
    wide = tmp_path / "wide"
    for n in range(300):
        (wide / f"d{n}" / "inner").mkdir(parents=True)
    (wide / "d7" / "inner" / "f").write_text("x", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", WALK, str(wide)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == 300 * 2 + 1


def test_a_walk_stopped_early_leaves_no_descriptor_open(tmp_path: Path) -> None:
    import os

    from mcp_server_guard.changes.changeset import walk_real

    for n in range(50):
        (tmp_path / "t" / f"d{n}" / "e").mkdir(parents=True)
    before = len(os.listdir("/proc/self/fd"))
    fd = os.open(tmp_path / "t", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for budget in (1, 7, 60, 1000):
            walked = walk_real(fd, "", [budget])
            for _ in zip(range(budget), walked, strict=False):
                pass
            walked.close()
    finally:
        os.close(fd)
    assert len(os.listdir("/proc/self/fd")) == before
