"""docs/shell_exec.md "One protected list": "A hooks directory you configured (``core.hooksPath``, in the repository's
config or your global or system one, e.g. ``.githooks/``) is protected like ``.git/hooks/``: nothing in it is
written by a command". A relative ``core.hooksPath`` is taken by git from the top of each work tree. Global config:
``core.hooksPath = .githooks``. A command makes a repository (``git init tool``) and writes ``tool/.githooks/pre-
commit``; the user's next ``git commit`` in ``tool`` runs it, outside the box. Observed: the hook lands
(``git_dirs.git_rule`` looks for ``.git`` in the real tree, where the new repository is not yet). Expected: refused,
as ``.githooks/pre-commit`` of the project's existing repository is (the control)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")

HOOK = '#!/bin/sh\ntouch "$HOME/hook-ran"\n'


def _git(*args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True, capture_output=True)


def _refused(copy: Copy, script: str) -> set[str]:
    changes = copy.run(script)
    judged = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return {p for (_r, p) in judged.refused}


def test_attack_hook_in_a_new_repository_under_a_global_relative_hooks_path(tmp_path: Path) -> None:
    (Path(os.environ["HOME"]) / ".gitconfig").write_text("[core]\n\thooksPath = .githooks\n")
    control = Copy(tmp_path / "control")
    _git("init", "-q", str(control.root))
    (control.root / "hook.txt").write_text(HOOK)
    refused = _refused(control, "mkdir .githooks && cp hook.txt .githooks/pre-commit && chmod +x .githooks/pre-commit")
    assert ".githooks/pre-commit" in refused, refused  # the control: the existing repository's hooks are guarded

    copy = Copy(tmp_path / "new")
    (copy.root / "hook.txt").write_text(HOOK)
    refused = _refused(copy, "git init -q tool && mkdir tool/.githooks && cp hook.txt tool/.githooks/pre-commit && "
                             "chmod +x tool/.githooks/pre-commit")  # fmt: skip
    assert refused & {"tool/.githooks/pre-commit", "tool/.githooks"}, refused
