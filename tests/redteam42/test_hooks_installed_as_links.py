"""Red team 42m F0b (promise 2: git's runnable entries are judged wherever they really are): hooks installed as
links — `ln -s ../../scripts/pre-commit .git/hooks/pre-commit`, or `.git/hooks` a link to a directory — are what
git runs, but a write to their targets (or through the links, which lands on the targets) was an ordinary file's.
Payloads are harmless text and never run: the test reads what the judgement says."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()


def repository(copy: Copy) -> None:
    subprocess.run(["git", "init", "-q", str(copy.root)], check=True)
    for directory in ("scripts", "githooks"):
        (copy.root / directory).mkdir()
        (copy.root / directory / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
        (copy.root / directory / "notes.txt").write_text("notes\n")
    os.symlink("../../scripts/pre-commit", copy.root / ".git" / "hooks" / "pre-commit")


@pytest.mark.parametrize(
    ("script", "path"),
    [
        ("printf 'echo marker\\n' >> scripts/pre-commit", "scripts/pre-commit"),
        ("printf 'echo marker\\n' >> .git/hooks/pre-commit", "scripts/pre-commit"),
    ],
)
def test_attack_a_hook_installed_as_a_link_is_written_through_its_target(
    tmp_path: Path, script: str, path: str
) -> None:
    copy = Copy(tmp_path)
    repository(copy)
    judged = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    refused = {p: why for (_root, p), why in judged.refused.items()}
    assert path in refused and "git hook" in refused[path], (refused, judged.summary)


def test_attack_a_hooks_directory_that_is_a_link_protects_every_hook_in_its_target(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    repository(copy)
    hooks = copy.root / ".git" / "hooks"
    for entry in hooks.iterdir():
        entry.unlink()
    hooks.rmdir()
    os.symlink("../githooks", hooks)
    judged = judge([copy.run("printf 'echo marker\\n' >> githooks/pre-commit && echo x >> scripts/notes.txt")],
                   protection_for(POLICY), POLICY.effects, [str(copy.root)])  # fmt: skip
    refused = {p for _root, p in judged.refused}
    assert "githooks/pre-commit" in refused and "scripts/notes.txt" not in refused, (refused, judged.summary)
