"""Tests of what a user (not root) meets: a file or directory its owner may not read or write. The server runs as a
user, without CAP_DAC_OVERRIDE; run as root with it, such a module's tests run again, all in one process, without
it (``setpriv --bounding-set``): its ``test_*_as_a_user`` calls :func:`again_as_a_user`, and its other tests are
marked :data:`as_a_user` (skipped where they would prove nothing)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import fidelity


def capable() -> bool:
    """Whether this process may read and write any file (CAP_DAC_OVERRIDE, bit 1 of CapEff)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) & 0b10)
    return False


as_a_user = pytest.mark.skipif(capable(), reason="run without CAP_DAC_OVERRIDE by the module's *_as_a_user test")


def again_as_a_user(module: str, tmp_path: Path, *, only: str = "") -> None:
    """Run ``module``'s tests once more, in one pytest (its temporary directories below ``tmp_path``), without
    CAP_DAC_OVERRIDE; they must all pass. ``only``: those whose names hold it (a long module split over workers)."""
    if not capable():
        pytest.skip("this process is a user already: the module's tests ran as one")
    if shutil.which("setpriv") is None:
        pytest.skip("root with CAP_DAC_OVERRIDE and no setpriv to drop it")
    chosen = "not as_a_user" + (f" and {only}" if only else "")
    done = subprocess.run(
        ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", sys.executable, "-m", "pytest", "-q",
         "-p", "no:cacheprovider", "-p", "no:logging", "-n", "0", "-k", chosen,
         "--basetemp", str(tmp_path / "as-a-user"), module],
        capture_output=True, text=True, timeout=300, check=False, cwd=Path(module).parents[2],
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    assert done.returncode == 0 and " passed" in done.stdout and "skipped" not in done.stdout, done.stdout[-3000:]


def snapshot_unopened(root: Path, *, skip_git: bool = True) -> fidelity.Tree:
    """``fidelity.snapshot`` of ``root`` taken in a user namespace where this user is root (``unshare -r``): what
    its owner may not read or search is read without a chmod, so the look moves no ctime an undo checks."""
    done = subprocess.run(
        ["unshare", "-r", sys.executable, fidelity.__file__, str(root), "1" if skip_git else "0"],
        capture_output=True, timeout=60, check=True, text=True,
    )  # fmt: skip
    raw = json.loads(done.stdout)
    return fidelity.Tree(
        entries={k: fidelity.Entry(kind, body, mode, mtime, tuple(tuple(x) for x in xattrs))
                 for k, (kind, body, mode, mtime, xattrs) in raw["entries"].items()},
        links={frozenset(group) for group in raw["links"]},
        bookkeeping=list(raw["bookkeeping"]),
    )  # fmt: skip
