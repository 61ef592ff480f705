"""Names a command can make that are awkward for the new apply: bytes that are not UTF-8 (in file names and in
attribute names), new lines, 255-byte names, paths longer than PATH_MAX (each component short enough), hard links
between them, renames of them; the call must get an ordinary answer, the server must keep answering, and undo
and its undo must be exact.

FAILS on an INTERNAL_ERROR, a server that stops answering, or an undo that is not exact."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from support import serve
from support.boxed import SX, Person, program, snap, undo

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

SCRIPTS = {
    "non-utf8-names-links-xattrs": """
name = b"bad-\\xff\\xfe-name"
open(name, "w").write("x")
os.link(name, b"link-\\xff")
os.setxattr(name, b"user.attr-\\xff", b"\\xff\\x00value")
os.setxattr("hello.txt", b"user.\\xc3(", b"v")
os.chmod(b"link-\\xff", 0o600)
""",
    "newlines-and-long-names": """
n = "line1\\nline2\\r\\x1b[31mred"
open(n, "w").write("y"); os.link(n, "L" * 255)
os.link("hello.txt", "h" * 250 + "\\n")
os.rename("sub", "sub\\nrenamed")
""",
}


@pytest.mark.parametrize("case", sorted(SCRIPTS))
async def test_odd_names_get_an_answer_and_undo_exactly(workspace: Path, case: str) -> None:
    code = program(workspace, "odd", SCRIPTS[case])
    before = snap(workspace)
    async with serve(SX, workspace, elicitation_callback=Person()) as client:
        with anyio.fail_after(120):
            result = await client.call_tool("shell_exec", {"command": code, "timeoutSeconds": 60})
        with anyio.fail_after(60):
            alive = await client.call_tool("shell_exec", {"command": "echo alive", "timeoutSeconds": 30})
    assert not result.is_error, result
    assert not alive.is_error and "alive" in str(alive.structured_content), alive
    out = dict(result.structured_content)
    after = snap(workspace)
    assert out["transaction"] == "applied" and not out["changes"]["conflicts"], str(out["changes"])[:3000]
    undo_id, why = undo(out["auditId"])
    assert undo_id, why
    now = snap(workspace)
    assert now == before, [k for k in {*before, *now} if before.get(k) != now.get(k)][:5]
    redo_id, why = undo(undo_id)
    assert redo_id, why
    now = snap(workspace)
    assert now == after, [k for k in {*after, *now} if after.get(k) != now.get(k)][:5]
