"""A file a command deleted whose bytes it kept beside it, compressed or decompressed (`gzip f`, `gunzip f.gz`, `xz`,
`bzip2`, `x.tgz` and `x.tar`), is not asked about as lost work (issue 45: everyday lines asked only where the copy
cannot help); a compressed file that holds other bytes, more than one stream, or is damaged still is
(``changes.compressed``)."""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.compressed import Decompressed, kept_beside
from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()
WORK = b"my untracked notes, the only copy\n" * 200


def _asks(tmp_path: Path, script: str, files: dict[str, bytes]) -> list[str]:
    copy = Copy(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=copy.root, check=True, timeout=60)
    for name, data in files.items():
        (copy.root / name).write_bytes(data)
    changes = copy.run(script)
    return judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)]).asks


@pytest.mark.parametrize(
    ("script", "files"),
    [
        ("gzip notes.txt", {"notes.txt": WORK}),
        ("gzip -9 -n notes.txt", {"notes.txt": WORK}),
        ("gunzip notes.txt.gz", {"notes.txt.gz": gzip.compress(WORK)}),
        ("xz notes.txt", {"notes.txt": WORK}),
        ("bzip2 notes.txt", {"notes.txt": WORK}),
        ("gzip -c notes.txt > notes.txt.gz && rm notes.txt", {"notes.txt": WORK}),
        ("gunzip data.tgz", {"data.tgz": gzip.compress(WORK)}),
    ],
)
def test_deleting_a_file_kept_compressed_or_decompressed_beside_it_is_not_asked(
    tmp_path: Path, script: str, files: dict[str, bytes]
) -> None:
    program = script.split(maxsplit=1)[0]
    if shutil.which(program) is None:
        pytest.skip(f"no {program} here")
    asks = _asks(tmp_path, script, files)
    assert not any("Git has no copy" in a for a in asks), asks


def test_a_compressed_file_of_other_bytes_made_beside_a_deleted_one_is_still_a_loss(tmp_path: Path) -> None:
    asks = _asks(tmp_path, "printf 'something else' | gzip > notes.txt.gz && rm notes.txt", {"notes.txt": WORK})
    assert any("Git has no copy of notes.txt" in a for a in asks), asks


def test_a_compressed_file_with_a_second_stream_is_not_taken_as_the_same(tmp_path: Path) -> None:
    # (the work, and then more: decompressed whole by gunzip it is not the file deleted)
    asks = _asks(tmp_path, "gzip -c notes.txt > notes.txt.gz && printf x | gzip >> notes.txt.gz && rm notes.txt",
                 {"notes.txt": WORK})  # fmt: skip
    assert any("Git has no copy of notes.txt" in a for a in asks), asks


def test_a_damaged_archive_deleted_beside_a_file_of_its_name_is_still_a_loss(tmp_path: Path) -> None:
    damaged = gzip.compress(WORK)[:-12]
    asks = _asks(tmp_path, "printf 'x' > notes.txt && rm notes.txt.gz", {"notes.txt.gz": damaged})
    assert any("notes.txt.gz" in a for a in asks), asks


def test_what_is_decompressed_is_bounded_per_call(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=copy.root, check=True, timeout=60)
    (copy.root / "notes.txt").write_bytes(WORK)
    changes = copy.run("gzip notes.txt")
    made = {c.path: c for c in changes.changes}
    gone = made["notes.txt"]
    assert kept_beside(changes, gone, made, Decompressed())
    assert not kept_beside(changes, gone, made, Decompressed(budget=len(WORK) - 1))  # (a bomb stops at the bound)
