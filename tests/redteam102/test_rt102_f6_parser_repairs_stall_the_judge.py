"""Red team 102 F6 (MEDIUM, new in 7fa0856 and 1fd6bec): two parser repairs stall the judge. (1) The substring-offset
repair's pattern (``parsing._OFFSETS``) backtracks exponentially. Its offset part is ``(?:[\\w …]|\\$(?:[A-Za-
z_]\\w*|…))+\\}``: a ``$name`` may end after any of its letters (the rest matched one by one as ``\\w``), so k names
of L letters with no closing ``}`` cost about L**k steps. ``_repaired`` runs ``_OFFSETS.search`` on every line that
does not parse; ``re`` holds the GIL, and the server calls ``decide`` on a worker thread with no bound, so one such
line stalls the whole server (every call, the event loop). Measured here: 89 bytes 4 s, 102 bytes 69 s (each further
``$aaaaaaaaaaaa`` about x15); at f1b512f the same lines took 0.02 s. The lines are harmless text (``echo``), given
only to ``decide``."""

from __future__ import annotations

import contextlib
import time

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine

PLAIN = PolicyEngine(load_policy().shell_exec)


def _line(names: int) -> str:
    return "echo ${x:" + ("$" + "a" * 12) * names + " ;"


def test_a_short_unclosed_substring_offset_is_judged_quickly() -> None:
    line = _line(6)  # 89 bytes
    started = time.monotonic()
    PLAIN.decide(line)
    took = time.monotonic() - started
    assert took < 1.0, (f"a {len(line)}-byte line took {took:.1f} s to judge (one more name: about x15)", line)


def test_many_unclosed_arithmetic_openings_are_judged_in_linear_time() -> None:
    """``parsing._subshell_in``: for every ``$((`` of a line that does not parse, ``subshell`` scans forward until the
    first parenthesis closes, in a Python loop — to the end of the line when none does. 3000 ``$((`` (9 KB) took 9 s
    here, 8000 (24 KB) 62 s; the limit is 256 KiB (hours), and ``parse`` repairs before it counts the syntax nodes
    (at f1b512f the 24 KB line took 0.12 s, and 256 KiB is refused as too complex at once)."""
    line = "echo " + "$((" * 3000
    started = time.monotonic()
    with contextlib.suppress(Exception):
        PLAIN.decide(line)
    took = time.monotonic() - started
    assert took < 1.0, f"a {len(line)}-byte line took {took:.1f} s to judge (time grows with its square)"
