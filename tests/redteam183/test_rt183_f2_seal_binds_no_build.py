"""Red team 183 F2 (LOW): "One file per interpreter build (sys.version): marshalled code is for the build that
made it" rests on the file's NAME only. The seal covers label + data, not the build (nor the path), so a sealed
cache of build A copied over build B's name is read by B and its code objects run by B's dataclasses/typing: for
two minor versions (3.11's code read by a 3.12 server: the same marshal layout, other opcodes) that is bytecode the
interpreter never validates, executed outside the box (a crash at start, or undefined behaviour). Whoever can write
``compiled/`` can do that without the key: F3 shows another server's tools reaching it. (The same class holds for
the start-up records: the seal does not bind the record key in the file name.)

Run: cd /work/rt183 && timeout 300 .venv/bin/python -m pytest -n 1 -p no:cacheprovider \
         tests/redteam183/test_rt183_f2_seal_binds_no_build.py
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_server_guard.serving import code_cache
from support.compiled import install_for_test

OTHER_BUILD = "3.12.99 (main, Jan  1 2030, 00:00:00) [GCC 99.0] (another build of the user's)"


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> Iterator[None]:
    install_for_test(monkeypatch)
    yield


def _keep_this_builds_cache() -> Path:
    @dataclasses.dataclass
    class Made:
        a: int

    code_cache.keep()
    return code_cache.cache_path()


def test_attack_a_sealed_cache_of_one_build_is_read_under_another_builds_name(
    cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = _keep_this_builds_cache()
    monkeypatch.setattr(sys, "version", OTHER_BUILD)
    theirs = code_cache.cache_path()
    assert theirs != mine
    shutil.copy2(mine, theirs)  # a rename inside compiled/: no key needed
    read = code_cache._read()
    assert not read, f"build {OTHER_BUILD!r} read {len(read)} code objects another build compiled"


def test_control_a_cache_changed_in_any_byte_is_not_read(cache: None, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = _keep_this_builds_cache()
    monkeypatch.setattr(sys, "version", OTHER_BUILD)
    theirs = code_cache.cache_path()
    data = bytearray(mine.read_bytes())
    data[-1] ^= 1
    theirs.write_bytes(bytes(data))
    theirs.chmod(0o600)
    assert code_cache._read() == {}
