"""A program glob without ``*``, ``?`` or ``[`` is matched by equality (issue 44: the first line judged compiled
every glob of the policy): the same answers as ``fnmatch.fnmatchcase``, for every glob of the packaged policies."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.matching import glob_matches

VALUES = ["git", "Git", "GIT", "rm", "python3", "python3.12", "npm", "", ".", "\\", "a\nb", "g?t", "g*t", "[x]", "x]"]
ODD = ["g?t", "g*t", "[x]", "x]", "\\", "a\nb", "a\\b", ".", "", "]", "!"]


def _globs() -> list[str]:
    found: set[str] = set(ODD)
    for policy in (load_policy(None), load_policy(Path("readonly"))):
        for rule in policy.shell_exec.rules:
            found.update(getattr(rule, "programs", ()) or ())
    return sorted(found)


@pytest.mark.parametrize("fold", [False, True])
def test_every_glob_matches_as_fnmatch_does(fold: bool) -> None:
    globs = _globs()
    assert len(globs) > 50
    values = VALUES + [g for g in globs if not any(c in g for c in "*?[")][:200]
    for value in values:
        for glob in globs:
            expected = fnmatch.fnmatchcase(value.lower() if fold else value, glob.lower() if fold else glob)
            assert glob_matches(value, [glob], fold=fold) == expected, (value, glob, fold)
