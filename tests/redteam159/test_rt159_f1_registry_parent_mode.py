"""Red team 159 F1 (MEDIUM): the registry of the user's servers (``$MCP_GUARD_RUNTIME_DIR``; by default
``~/.local/state/mcp-guard-servers``) lies in a directory a server serves (``big/reg/servers``: HOME or a root above
the registry allowed). Server B's command re-modes the directory above the registry (``chmod 000 reg``): no
question ("change the mode of reg/ to 0000"), it lands. A server C started afterwards on ``big`` no longer knows
server A's state directory (``big/sa``, A's ``XDG_STATE_HOME``, A still running): C's command lists A's history
(call records, pre-images, ``.journal/``) and writes a file into ``sa/mcp-guard/history/calls/`` — applied.
docs/security.md: "every registered state path is hidden from every server's tools and commands while it exists".
With the registry unreachable, the journal key also falls back to ``<history>/.key`` (registry.sealing_key) and the
tree lock to one per state directory (treelock._opened): what red team 95 F1 and red team 83 F1 closed.

Answered (``refusals._state_locked``): a mode change taking the owner's rights from a directory that holds a
server's state or the registry is refused.

Control: the same three steps with the registry outside ``big``: C hides A's state, nothing is planted. Run as a
user (no CAP_DAC_OVERRIDE; as root a mode stops nothing). Lines travel as data."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from support import serve
from support.as_a_user import again_as_a_user, as_a_user
from support.boxed import Person

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

SX = "mcp-server-shell-exec"
LINES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "rt159_f1_registry_parent.json").read_text())


async def _sx(client: Any, command: str, **kw: Any) -> dict[str, Any]:
    with anyio.fail_after(90):
        result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 60, **kw})
    assert not result.is_error, result
    return dict(result.structured_content)


@as_a_user
@pytest.mark.parametrize("where", ["registry_in_the_root", "control_registry_outside"])
async def test_a_later_server_still_hides_a_running_servers_state(tmp_path: Path, where: str) -> None:
    big = tmp_path / "big"
    ra, sa, reg = big / "ra", big / "sa", big / "reg"
    ra.mkdir(parents=True)
    reg.mkdir()
    (ra / "notes.txt").write_text("the user's notes\n")
    servers = reg / "servers" if where == "registry_in_the_root" else tmp_path / "registry" / "servers"
    registry = {"MCP_GUARD_RUNTIME_DIR": str(servers)}
    person = Person(False)
    report: dict[str, Any] = {}
    async with serve(SX, ra, audit=sa / "audit-a.jsonl", env={"XDG_STATE_HOME": str(sa), **registry},
                     elicitation_callback=person) as a:  # fmt: skip
        first = await _sx(a, LINES["a_first"], cwd=str(ra))
        assert first["transaction"] == "applied", first
        async with serve(SX, big, audit=tmp_path / "audit-b.jsonl",
                         env={"XDG_STATE_HOME": str(tmp_path / "sb"), **registry},
                         elicitation_callback=person) as b:  # fmt: skip
            locked = await _sx(b, LINES["b_lock_registry_parent"], cwd=str(big))
        report["b"] = (locked.get("transaction"), dict(locked.get("changes") or {}).get("summary"))
        try:
            async with serve(SX, big, audit=tmp_path / "audit-c.jsonl",
                             env={"XDG_STATE_HOME": str(tmp_path / "sc"), **registry},
                             elicitation_callback=person) as c:  # fmt: skip
                look = await _sx(c, LINES["c_look"], cwd=str(big))
            report["c"] = (look.get("transaction"), str(look.get("stdout"))[:600], look.get("changes"))
        except Exception as exc:
            report["c"] = repr(exc)[:600]
    reg.chmod(0o700)
    planted = (sa / "mcp-guard" / "history" / "calls" / "planted.txt").exists()
    assert not planted, report


def test_f1_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)
