"""Red team 87: a short append to the planted log (a full disk) swallows the NEXT path a tool lands.

``files.planted.Planted.add`` appends its lines in a loop of ``os.write``; on a full disk the first write can land
part of a line and the next raise ENOSPC: the log then ends with half a line, and ``add`` only logs a warning. The
next append (room again) writes its lines right after the half line: the first of them joins it into one line that
is no JSON, and ``paths()`` drops it. So the marker landed AFTER the disk was full again has room is forgotten --
``out/`` is a cache directory again for every server of the user, and its deletion is not asked about.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from mcp_server_guard.files import planted


def test_a_half_line_left_by_a_full_disk_does_not_swallow_the_next_landed_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = planted.Planted(tmp_path / "planted")
    real_write = os.write
    calls = {"n": 0}

    def full_disk(fd: int, data: bytes | memoryview) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data[:10]))  # the room left takes ten bytes ...
        raise OSError(errno.ENOSPC, "No space left on device")  # ... then none

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(OSError):  # (the apply that lands it does not run: nothing to forget)
        log.add(["/w/proj/build/out/CACHEDIR.TAG"])
    monkeypatch.setattr(os, "write", real_write)
    # room again: the next call plants a marker in the user's out/
    log.add(["/w/proj/out/CACHEDIR.TAG"])
    seen = planted.Planted(tmp_path / "planted").paths()  # any server of the user, reading the log
    assert "/w/proj/out/CACHEDIR.TAG" in seen, (sorted(seen), (tmp_path / "planted" / "log").read_bytes())
