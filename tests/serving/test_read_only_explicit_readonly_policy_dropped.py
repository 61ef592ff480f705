"""Red team 6: ``--policy readonly`` is the packaged allow-list for looking only ("what cannot be decided is refused,
not asked"; it refuses ``git push``, interpreters, ``curl -d``…). Since 185b3c6 a ``--mode read-only`` server with the
box drops it (``execution.writable_policy`` replaces a policy whose source is the packaged readonly.toml with the
default one) even when the user passed it explicitly, and says nothing: lines the user's chosen policy refuses run
(an interpreter, a ``git push`` through the egress proxy to an allowed code host). The user's own ``--policy`` should
still add its rules (the README: "a `--policy` file adds to the default rules")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


@pytest.mark.parametrize("line", ["python3 -c 'print(42)'", "git push origin HEAD:refs/heads/wip"])
async def test_attack_explicit_readonly_policy_ignored_in_read_only_mode(workspace: Path, line: str) -> None:
    async with shell(workspace, Person(answer=False), "--mode", "read-only", "--policy", "readonly") as client:
        result = await client.call_tool("shell_exec", {"command": line, "timeoutSeconds": 30})
    text = str(result.content)
    assert result.is_error, f"{line!r} ran under an explicit --policy readonly: {text[:400]}"
