"""Red team 183 F1 (LOW): the compiled-code cache's key is (mode, text) and its file is per ``sys.version``; but the
code ``compile`` makes for a text also depends on the interpreter's compile context: its optimize level (``-O``,
``-OO``, ``PYTHONOPTIMIZE``: asserts, ``__debug__``, docstrings), and likewise warnings turned into errors
(``-W error``: a text that raises natively compiles from the cache) and ``-X no_debug_ranges``. Every server of the
user shares the one file per build, so a server started once with ``PYTHONOPTIMIZE=1`` keeps code that every later
server without it runs (and the reverse): not "the code the builtin would have compiled from the very text".

No text dataclasses or typing compile today contains an assert or ``__debug__`` (checked on a real start's 803
texts), so this is a correctness gap of the module's stated guarantee, not a present exploit.

Run: cd /work/rt183 && timeout 300 .venv/bin/python -m pytest -n 1 -p no:cacheprovider \
         tests/redteam183/test_rt183_f1_optimize_level.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

DRIVER = Path(__file__).with_name("rt183_cache_driver.py")


def _drive(role: str, *flags: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, *flags, str(DRIVER), role], capture_output=True, text=True, timeout=120, check=True
    )
    said: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return said


def test_attack_code_kept_by_an_optimized_server_runs_without_its_asserts_in_a_normal_one(
    isolated_home: Path,
) -> None:
    kept = _drive("keep", "-O")  # a server started once under PYTHONOPTIMIZE / -O
    assert kept["optimize"] == 1 and kept["cached"] == kept["native"] == "does not assert"
    later = _drive("read")  # every later start of the same build, without -O
    assert later["optimize"] == 0 and not later["read_back"]  # (a file of its own: code_cache.cache_path)
    assert later["cached"] == later["native"] == "asserts", (
        "the cache gave a normal interpreter the code an optimized one compiled for the same text: "
        f"natively it {later['native']}, from the cache it {later['cached']}"
    )


def test_control_code_kept_at_the_same_optimize_level_behaves_natively(isolated_home: Path) -> None:
    kept = _drive("keep")
    assert kept["cached"] == kept["native"] == "asserts"
    later = _drive("read")
    assert later["read_back"]
    assert later["cached"] == later["native"] == "asserts"
