"""Red team 78: claim 2 — refs, the index and the stash a command leaves are judged by what the user's next checkout
would write. They are judged by path only (``refusals.later_checkouts`` -> ``_protected``): the judgements a write
of the same file in the work tree gets by its *content* or by what it makes runnable — a package.json's hook and
lifecycle keys (``later.runs_later``), an executable named like a PATH program in a directory direnv puts first
(``effects._shadowing``) — never see a file that arrives by a checkout. The user's ``git checkout feature`` (or
``reset --hard``, ``stash pop``) then writes it outside the box, and ``npm install`` / ``ls`` runs it, unasked."""

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
GIT = "git -c user.name=u -c user.email=u@example.invalid -c commit.gpgsign=false"

PLAIN = '{\n  "name": "app",\n  "version": "1.0.0",\n  "scripts": {"build": "tsc"}\n}\n'
# What the command puts on a branch: a lifecycle script npm runs at the user's next `npm install`.
HOOKED = (
    '{\n  "name": "app",\n  "version": "1.0.0",\n'
    '  "scripts": {"build": "tsc", "postinstall": "sh -c \'echo planted > /tmp/rt78-never-run\'"}\n}\n'
)


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *GIT.split()[1:], *args], check=True, capture_output=True, timeout=30)


def _repo(copy: Copy, files: dict[str, str]) -> None:
    _git(copy.root, "init", "-q", "-b", "main")
    for name, text in files.items():
        (copy.root / name).parent.mkdir(parents=True, exist_ok=True)
        (copy.root / name).write_text(text)
    _git(copy.root, "add", ".")
    _git(copy.root, "commit", "-qm", "one")


def _judged(copy: Copy, script: str) -> tuple[list[str], dict[tuple[str, str], str]]:
    changes = copy.run(script)
    judgement = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return judgement.asks, judgement.refused


def test_control_package_json_lifecycle_script_written_in_the_work_tree_is_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy, {"package.json": PLAIN})
    payload = tmp_path / "payload.json"
    payload.write_text(HOOKED)
    asks, _ = _judged(copy, f"cp {payload} package.json")
    assert any("package.json" in a and "postinstall" in a for a in asks), asks


def test_attack_package_json_lifecycle_script_committed_on_a_branch_is_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy, {"package.json": PLAIN})
    payload = tmp_path / "payload.json"
    payload.write_text(HOOKED)
    # On a branch of its own; the work tree and main are left as they were.
    script = (
        f"{GIT} checkout -q -b feature && cp {payload} package.json && {GIT} commit -qam deps && {GIT} checkout -q main"
    )
    asks, refused = _judged(copy, script)
    assert not refused, refused
    assert (copy.root / "package.json").read_text() == PLAIN
    assert any("package.json" in a for a in asks), ("nothing asked about the branch's package.json", asks)


def test_attack_package_json_lifecycle_script_committed_on_the_current_branch_is_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy, {"package.json": PLAIN})
    payload = tmp_path / "payload.json"
    payload.write_text(HOOKED)
    # Committed on main; the work tree (and index) put back: `git status` shows package.json modified, and the
    # user's `git checkout .` / `git reset --hard` / `git stash` writes the planted one.
    script = f"cp {payload} package.json && {GIT} commit -qam deps && {GIT} checkout -q HEAD~1 -- package.json"
    asks, refused = _judged(copy, script)
    assert not refused, refused
    assert any("package.json" in a for a in asks), ("nothing asked about HEAD's package.json", asks)


def test_control_shadowing_executable_written_in_the_work_tree_is_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy, {".envrc": "PATH_add bin\n", "bin/build.sh": "#!/bin/sh\necho build\n"})
    payload = tmp_path / "ls"
    payload.write_text("#!/bin/sh\necho planted\n")
    os.chmod(payload, 0o755)
    asks, _ = _judged(copy, f"cp {payload} bin/ls")
    assert any("named like programs on your PATH" in a for a in asks), asks


def test_attack_shadowing_executable_committed_on_a_branch_is_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy, {".envrc": "PATH_add bin\n", "bin/build.sh": "#!/bin/sh\necho build\n"})
    payload = tmp_path / "ls"
    payload.write_text("#!/bin/sh\necho planted\n")
    os.chmod(payload, 0o755)
    script = (
        f"{GIT} checkout -q -b feature && cp {payload} bin/ls && {GIT} add bin/ls && {GIT} commit -qm tools "
        f"&& {GIT} checkout -q main"
    )
    asks, refused = _judged(copy, script)
    assert not refused, refused
    assert not (copy.root / "bin" / "ls").exists()
    assert any("bin/ls" in a for a in asks), ("nothing asked about the branch's bin/ls", asks)
