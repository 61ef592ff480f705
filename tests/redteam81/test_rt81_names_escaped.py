"""Red team 81: a path's name reaches the person unescaped in shell_exec's result (its text lines
``[refused: <path>: …]`` and ``changes.paths[*].path``) and in the audit record, when the name holds an ANSI escape
or a bidi control. The summary and the question escape them (``paths.printable``); the paths listed do not
(``files/jail.py:Jail.display_path`` is used raw by ``changes/results.py``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest

from support import serve
from support.boxed import Person, program

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

ESC, RLO = "\x1b", "\u202e"
# The names the command makes, as escapes in the program's text (the test's own lines stay plain).
CODE = (
    "os.makedirs('.vscode', exist_ok=True)\n"
    "open('.vscode/tasks\\u202enosj.json', 'w').write('{}')\n"  # refused (.vscode/**)
    "open('note\\x1b[2K\\u202etxt.md', 'w').write('rt81')\n"  # applied
)


def _bad(text: str) -> bool:
    return ESC in text or RLO in text


async def test_attack_names_in_the_result_are_escaped(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    command = program(root, "names", CODE)
    audit = tmp_path / "audit.jsonl"
    async with serve("mcp-server-shell-exec", root, audit=audit, elicitation_callback=Person()) as client:
        with anyio.fail_after(120):
            result = await client.call_tool("shell_exec", {"command": command, "cwd": str(root), "timeoutSeconds": 60})
    assert not result.is_error, result
    assert not (root / ".vscode").exists()  # refused: never landed
    texts = [str(getattr(c, "text", "")) for c in result.content]
    structured = json.dumps(result.structured_content, ensure_ascii=False)
    record = audit.read_text(encoding="utf-8", errors="surrogateescape") if audit.exists() else ""
    found = {"text": any(_bad(t) for t in texts), "structured": _bad(structured), "audit": _bad(record)}
    assert not any(found.values()), (found, texts)
