"""Red team 139 F1 (LOW): a newline in a path a model sends reaches the error text raw, so the model can add a line
of its own choosing (a second ``Suggestion:``) to the refusal a person reads.

docs/errors.md: "Control and bidi characters a caller sent (an ANSI escape, a carriage return, U+202E) appear in a
message as their escapes, never raw". ``GuardError.__init__`` passes the message through ``paths.readable``, which
keeps newlines and tabs (a message's own lines); the refusals that quote the caller's path (PROTECTED_PATH,
OUTSIDE_JAIL: ``'{path}' is protected``) quote it as it came, so a newline in it breaks the message into a line
the model wrote. Control: the same refusal with an ANSI escape in the path shows ``\\x1b``.

Paths travel as data (rt139.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.redteam import FW, call, started

DATA: dict[str, str] = json.loads((Path(__file__).resolve().parent / "rt139.json").read_text())


def _refusal(tmp_path: Path, path: str) -> tuple[str, str]:
    root, state = tmp_path / "proj", tmp_path / "state"
    (root / ".git" / "hooks").mkdir(parents=True)
    raw = started(FW, root, state)
    try:
        result: dict[str, Any] = call(raw, 1, "file_write", {"path": path, "content": "x\n"})
    finally:
        raw.close()
    assert result.get("isError"), result
    text = "".join(str(block.get("text", "")) for block in result["content"])
    message = str(result["_meta"]["mcp-guard/error"]["message"])
    return text, message


def test_control_an_ansi_escape_in_a_refused_path_is_shown_escaped(tmp_path: Path) -> None:
    text, message = _refusal(tmp_path, DATA["control_hook_path"])
    assert "\x1b" not in text and "\x1b" not in message
    assert "\\x1b" in message


def test_a_newline_in_a_protected_path_adds_a_line_to_the_refusal(tmp_path: Path) -> None:
    text, message = _refusal(tmp_path, DATA["forged_hook_path"])
    assert "\n" not in message, ("the caller's newline reached the message raw", message)
    assert DATA["forged_line"] not in text.splitlines(), ("a line the model wrote stands alone in the refusal", text)


def test_a_newline_in_an_outside_path_adds_a_line_to_the_refusal(tmp_path: Path) -> None:
    text, message = _refusal(tmp_path, DATA["forged_outside_path"])
    assert "\n" not in message, ("the caller's newline reached the message raw", message)
    assert DATA["forged_line"] not in text.splitlines(), ("a line the model wrote stands alone in the refusal", text)
