"""Red team 100 F4 (LOW): the tree lock's log is bounded at _LOG_MAX_BYTES only down to one entry. One apply naming
LOG_PATHS paths with long non-UTF-8 names (each byte a ``\\udcXX`` escape: six bytes of JSON) writes a log entry of
several megabytes into the lock file, under the lock, and the next taking reads a 1 MiB prefix that does not parse
(every judgement running then is "anything"). Every taking after applies naming long paths also reads, parses and
rewrites up to 1 MiB of JSON under the lock (a file_write's taking: about 8 ms instead of under 1 ms here,
``perf_log.py``).

Answered: a run of takings names at most _ENTRY_BYTES of paths (more: "anything"), and at most LOG_KEEP runs
are kept (``files.treelock._log``).
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp_server_guard import registry
from mcp_server_guard.files import treelock
from mcp_server_guard.files.treelock import tree_lock


def test_attack_one_apply_with_long_undecodable_names_writes_megabytes_into_the_lock_file(tmp_path: Path) -> None:
    device = [tmp_path.stat().st_dev]
    deep = "/".join(["\udcff" * 250] * 15)  # (a name's undecodable bytes, as os.fsdecode gives them)
    said = [str(tmp_path / deep / f"f{i}.o") for i in range(treelock.LOG_PATHS)]
    with tree_lock(device, wrote=lambda: said):
        pass
    lock = registry.directory() / "locks" / f"{device[0]}.lock"
    assert os.path.getsize(lock) <= 8 + treelock._LOG_MAX_BYTES
