"""Red team 88: a directory moved with another mode is not named by the summary when it holds no file.

Claim (issue 42, 1): the summary names every path whose mode changed. ``summary._remoded`` knows a moved directory
only through the files moved with it (``_moved_dirs`` over ``moves``, which are file moves recognised by their
bytes: red team 74 F5). A directory that holds no file (empty, or only directories: a package's skeleton, an
output tree) moved with another mode is "change 2 directories": its new mode is named nowhere in the summary. In a
build directory the question is not asked either (scratch), so nothing the person reads says ``build/e`` is now
0777; outside one, ``chmod 700`` (nothing to ask) is named nowhere too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.protected import protection_for
from support.copies import Copy
from support.settling import POLICY

PROTECTION = protection_for(POLICY)


@pytest.mark.parametrize(
    ("script", "moved"),
    [
        ("mkdir d/s && chmod 700 d && mv d e", "e"),  # only a subdirectory in it
        ("chmod 700 d && mv d e", "e"),  # empty
        ("chmod 777 build/x && mv build/x build/y", "build/y"),  # in a build directory: not asked either
    ],
)
def test_a_directory_moved_with_another_mode_is_named_by_the_summary(tmp_path: Path, script: str, moved: str) -> None:
    copy = Copy(tmp_path)
    (copy.root / "d").mkdir()
    (copy.root / "build" / "x").mkdir(parents=True)
    changes = copy.run(script)
    judgement = judge([changes], PROTECTION, POLICY.effects, [str(copy.root)])
    assert f"{moved}/ to " in judgement.summary, (judgement.summary, judgement.asks)


def test_control_a_directory_moved_with_a_file_and_another_mode_is_named(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    (copy.root / "d").mkdir()
    (copy.root / "d" / "f").write_text("the user's\n")
    changes = copy.run("chmod 700 d && mv d e")
    judgement = judge([changes], PROTECTION, POLICY.effects, [str(copy.root)])
    assert "e/ to 0700" in judgement.summary, judgement.summary
