"""Issue 42 (1): "the summary names every path whose mode changed" (docs/shell_exec.md "Judging": "Every path whose
mode changes is named ("change the mode of src/ to 2777")"). A command changes the mode of six files harmlessly
(0600) and makes four directories setgid and writable by everyone (2777); the question a person answers lists five
mode changes "and 5 more", and the setgid grants "and 1 more": one directory made 2777 is named nowhere.
Observed: ``a5.txt`` and ``m-tools`` (2777) are not in the question; expected every path named.
Cause (guess): changes/effects.py, the question's and summary's lists cut after a few names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()


def test_attack_mode_grants_hidden_behind_and_n_more(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    for i in range(6):
        (copy.root / f"a{i}.txt").write_text("a\n")
    for name in ("m-docs", "m-lib", "m-src", "m-tools"):
        (copy.root / name).mkdir()
    old = os.umask(0o022)
    try:
        changes = copy.run("chmod 600 a*.txt && chmod 2777 m-docs m-lib m-src m-tools")
    finally:
        os.umask(old)
    judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    question = judged.question
    missing = [p for p in (*(f"a{i}.txt" for i in range(6)), "m-docs", "m-lib", "m-src", "m-tools")
               if p not in question]  # fmt: skip
    assert not missing, f"not named: {missing} in {question!r}"
