"""Red team 78: claim 9 — text from a path that reaches a person has its bidi and control characters escaped.

A refusal about a path that missed ("did you mean …") appends the suggested real path to the error's message, and
the corrected call (json.dumps, ensure_ascii=False) to its suggestion, after GuardError made both readable: a name
the command or a clone made with a bidi override reaches the error text the host prints as it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.memory import in_memory

RLO = "\u202e"


@pytest.mark.anyio
async def test_attack_path_suggestion_with_a_bidi_override_is_shown_escaped_and_still_works(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    # a file whose name reads, with the override, as "notes_txt.exe" reversed into something else
    (root / f"notes{RLO}txt.md").write_text("x\n")
    async with in_memory("file_read", root) as client:
        result = await client.call_tool("file_read", {"path": "notes" + "txt.md"})
    assert result.is_error
    text = "".join(getattr(block, "text", "") for block in result.content)
    # the suggestion was made (the near name): it must be shown escaped
    assert RLO not in text, text
    # the call shown, read as the JSON it is, names the real file (printable's escape is JSON's own)
    shown = text.split("Call it like this: ", 1)[1].split("\n", 1)[0]
    assert json.loads(shown)["arguments"]["path"] == f"notes{RLO}txt.md", shown
