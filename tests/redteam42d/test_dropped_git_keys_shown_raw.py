"""docs/shell_exec.md (Output): the text block "shows its control and bidi characters other than newlines and tabs as
escapes"; every other refusal reason of a change set goes through ``printable`` (names "that fake or bury text in
the question a person answers"). A repository the command makes keeps "a config written afresh from the safe keys
git read (the result names the keys left out)". A git subsection may hold any character but a newline (``[filter
"…"]``): a hostile template's config names a filter whose subsection carries an ANSI escape and a right-to-left
override. Observed: the result's reason, in the structured result and in the text block hosts print, ``applied
without the keys that can make git run programs: filter.<ESC>[2K…`` carries them raw (``transactions._described``
joins the keys unescaped). Expected: escaped, as every other reason."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

EVIL = "x\x1b[2K\x1b[1A\u202eevil"


async def test_attack_dropped_config_keys_carry_control_characters(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    code = f"""
with open('lib/.git/config', 'a') as f:
    f.write('[filter "' + {EVIL!r} + '"]\\n\\tclean = cat\\n')
"""
    async with shell(root, Person()) as client:
        script = program(root, "cfg", code)
        result = await client.call_tool("shell_exec", {"command": f"git init -q lib && {script}", "timeoutSeconds": 60})
    made = dict(result.structured_content)
    text = "".join(getattr(block, "text", "") for block in result.content)
    reasons = [p.get("reason", "") for p in made.get("changes", {}).get("paths", [])]
    dropped = [r for r in reasons if "left out" in r or "without the keys" in r]
    assert dropped, (reasons, made)
    assert not any("\x1b" in r or "\u202e" in r for r in dropped), (
        dropped,
        "in the text block too:",
        "\x1b" in text or "\u202e" in text,
    )
