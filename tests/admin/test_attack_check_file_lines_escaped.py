"""Red team 74 F3 (issue 42): ``mcp-guard check --file`` prints each judged line raw to the person's terminal.

``admin/check.py:_check_many`` writes ``f"{number}  {decision}  {rule}  {line}"`` with the line as the file holds it
(the single-line form and ``--json`` escape it: ``printable``/``json_text``). The file is one the model can write (a
script it proposes, notes, the project's ``commands.txt``; the docs suggest ``--file ~/.bash_history``): an ANSI
cursor move and erase in a line repaint the verdict printed before it, so a ``deny`` reads ``allow`` (and a bidi
override reorders what follows). Issue 42's promise 9: text from a model that reaches a person is escaped.

Passes when the line is printed through ``printable`` (no ESC or bidi control reaches stdout).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from support import console_script

CASES = json.loads((Path(__file__).with_name("rt74_check_file_lines.json")).read_text(encoding="utf-8"))["lines"]


def test_attack_check_file_prints_a_lines_escapes_raw(tmp_path: Path) -> None:
    listing = tmp_path / "commands.txt"
    listing.write_text("\n".join(CASES) + "\n", encoding="utf-8")
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}
    # stdout a terminal, as the person's (click strips ANSI escapes only from a pipe)
    main, tty = os.openpty()
    try:
        argv = [console_script("mcp-guard"), "check", "--file", str(listing)]
        subprocess.run(argv, cwd=tmp_path, env=env, stdout=tty, stderr=subprocess.DEVNULL, timeout=120,
                       stdin=subprocess.DEVNULL, check=False)  # fmt: skip
        os.close(tty)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(main)
    shown = b"".join(chunks).decode("utf-8", "replace")
    assert "deny" in shown, shown
    raw = [c for c in ("\x1b", "\u202e") if c in shown]
    assert not raw, f"control or bidi characters printed raw: {raw!r} in {shown!r}"
