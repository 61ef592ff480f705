"""Issue 42 claim 9: "Text from a command, a path or a model that reaches a person (errors, summaries, questions, audit
output …) has control and bidi characters escaped"; docs/shell_exec.md: "a client that sent a progressToken receives
notifications/progress every half second (… message: output bytes so far and the last complete line)" — a host shows
that message to the person while the command runs (the result's text block escapes the same line).

Setup: a client that sends a progressToken. Command: a program printing ``line \\x1b[2K\\u202eevil \\u2066x`` and
``\\x1b]0;title\\x07`` (clear the line, a bidi override, an isolate, an OSC title with BEL), sleeping between lines.
Expected: the progress message shows them as escapes (``\\x1b``, ``\\u202e`` …), as the text block does.
Observed: every progress message carries ESC, U+202E, U+2066 and BEL raw; the result's text block has none.

Guessed cause: ``tools/shell_results.running_display.report`` puts ``last_line.strip()[:200]`` into the message
without ``readable``/``printable``."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from support import serve
from support.boxed import program

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

RAW = ("\x1b", "\r", "\x07", "\u202e", "\u2066")
CODE = """
import time
print('line \\x1b[2K\\u202eevil \\u2066x', flush=True)
time.sleep(1.5)
print('line2 \\x1b]0;title\\x07', flush=True)
time.sleep(1.5)
"""


async def test_progress_messages_escape_what_the_command_printed(workspace: Path, tmp_path: Path) -> None:
    seen: list[str] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async with serve("mcp-server-shell-exec", workspace, audit=tmp_path / "audit.jsonl") as client:
        with anyio.fail_after(90):
            result = await client.call_tool(
                "shell_exec", {"command": program(workspace, "show", CODE), "timeoutSeconds": 60},
                progress_callback=progress,
            )  # fmt: skip
    assert not result.is_error, result
    text = result.content[0].text  # type: ignore[union-attr]
    assert not [c for c in RAW if c in text], "the text block itself shows them raw (control)"
    assert seen, "no progress message came"
    leaking = [m for m in seen if any(c in m for c in RAW)]
    assert not leaking, f"{len(leaking)} of {len(seen)} progress messages carry raw controls: {leaking[0]!r}"
