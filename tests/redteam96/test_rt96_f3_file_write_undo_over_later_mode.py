"""Red team 96 F3 (claim B: "`undo` says success only when ... any change made after the call — content, mode,
attributes ... — is a conflict (UNDO_CONFLICT) rather than silently undone"; "file_write uses the same writer").

Red team 94 F1 / 95 F2 made an apply's and an undo's records say the mode and the attributes' digest they left a
regular file with (``plan.left_as``), which ``revert.as_left`` compares. file_write writes its call record itself
(``files.write_records.WriteRecords._record``): its change holds ``after`` and ``sha256`` but no ``mode`` nor
``attrs`` — read back as -1 and "", so ``as_left`` skips both checks. After a file_write, a person's
``chmod 600`` (or ``setfattr``/``setfacl``) of the file is silently put back by ``mcp-guard undo``, which exits 0:
the file the person locked down is readable by everyone again, and nothing said so.

Safe behaviour: UNDO_CONFLICT (exit 1), the file as the person left it — as for a shell_exec call's rewrite.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from support.redteam import FW, audit_id_of, call, mcp_guard, started


def _written(tmp_path: Path) -> tuple[Path, Path, str]:
    root, state = tmp_path / "proj", tmp_path / "state"
    root.mkdir()
    (root / "notes.txt").write_text("secret v1\n")
    os.chmod(root / "notes.txt", 0o644)
    raw = started(FW, root, state)
    try:
        result = call(raw, 1, "file_write", {"path": "notes.txt", "content": "secret v2\n", "overwrite": True})
    finally:
        raw.close()
    assert not result.get("isError"), result
    return root, state, audit_id_of(result)


def _undo(state: Path, audit_id: str) -> tuple[int, str]:
    done = mcp_guard("undo", audit_id, "--history-dir", str(state / "history"), "--audit-log",
                     str(state / "audit.jsonl"))  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def test_control_a_later_edit_after_a_file_write_is_a_conflict(tmp_path: Path) -> None:
    root, state, audit_id = _written(tmp_path)
    with open(root / "notes.txt", "a") as f:
        f.write("the person's line\n")
    code, out = _undo(state, audit_id)
    assert code != 0 and "UNDO_CONFLICT" in out, out


def test_an_undo_of_a_file_write_over_a_later_chmod_is_a_conflict(tmp_path: Path) -> None:
    root, state, audit_id = _written(tmp_path)
    os.chmod(root / "notes.txt", 0o600)  # the person, after the write: nobody else may read it
    code, out = _undo(state, audit_id)
    mode = stat.S_IMODE(os.lstat(root / "notes.txt").st_mode)
    assert code != 0 and mode == 0o600, (
        f"the undo of a file_write silently undid a chmod 600 made after it (exit {code}, mode now {mode:o}, "
        f"content {(root / 'notes.txt').read_text()!r}): {out}"
    )


def test_an_undo_of_a_file_write_over_a_later_attribute_is_a_conflict(tmp_path: Path) -> None:
    root, state, audit_id = _written(tmp_path)
    try:
        os.setxattr(root / "notes.txt", "user.reviewed", b"yes")
    except OSError:
        return  # (no user.* attributes on this file system)
    code, out = _undo(state, audit_id)
    names = os.listxattr(root / "notes.txt")
    assert code != 0 and "user.reviewed" in names, (
        f"the undo of a file_write silently dropped an attribute set after it (exit {code}, attributes {names}): {out}"
    )
