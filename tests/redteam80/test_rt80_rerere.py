"""Red team 80: git rerere's recorded resolutions. A ``.git/rr-cache`` directory turns rerere on (``rerere.enabled``
unset: on where the directory exists), and a recorded postimage is written into the work tree at the user's next
merge with that conflict. The command makes two harmless branches that conflict in package.json, records a resolution
that adds a ``postinstall`` script (asked when written now), and leaves everything else as it was. The user's
``git checkout f1 && git merge f2`` writes the postinstall (``Resolved 'package.json' using previous resolution``);
``npm install`` runs it. The script's text is harmless (``echo rt80``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()
ENV = dict(os.environ, GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@x", GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@x",
           GIT_CONFIG_GLOBAL="/dev/null", GIT_EDITOR="true")  # fmt: skip
PACKAGE = '{\n  "name": "p",\n  "version": "1.0.0"\n}\n'
RESOLVED = '{\n  "name": "p",\n  "version": "1.0.2",\n  "scripts": {"postinstall": "echo rt80"}\n}\n'
GIT = "git -c user.name=u -c user.email=u@x -c commit.gpgsign=false -c rerere.enabled=true"
SCRIPT = (
    f"{GIT} checkout -q -b f1 && sed -i s/1.0.0/1.0.1/ package.json && {GIT} commit -qam v1 && "
    f"{GIT} checkout -q -b f2 main && sed -i s/1.0.0/1.0.2/ package.json && {GIT} commit -qam v2 && "
    f"{GIT} checkout -q f1 && ({GIT} merge -q f2 >/dev/null 2>&1 || true) && cp {{resolved}} package.json && "
    f"{GIT} rerere && {GIT} merge --abort && {GIT} checkout -q main"
)


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=60)


def _project(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "package.json").write_text(PACKAGE)
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "one"]):
        assert _git(root, *args).returncode == 0


def test_attack_a_recorded_resolution_is_judged(tmp_path: Path) -> None:
    resolved = tmp_path / "resolved.json"
    resolved.write_text(RESOLVED)
    script = SCRIPT.format(resolved=resolved)
    plain = tmp_path / "plain"
    _project(plain)
    subprocess.run(["sh", "-ec", script], cwd=plain, env=ENV, check=True, capture_output=True, timeout=60)
    assert (plain / "package.json").read_text() == PACKAGE
    _git(plain, "checkout", "-q", "f1")
    _git(plain, "merge", "f2")  # the user's merge, no rerere setting of theirs: it stops, "resolved" by rerere
    assert "postinstall" in (plain / "package.json").read_text()  # git wrote the recorded resolution
    shutil.rmtree(plain)
    copy = Copy(tmp_path)
    _project(copy.root)
    changes = copy.run(script)
    asks = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)]).asks
    assert any("postinstall" in a or "rr-cache" in a or "package.json" in a for a in asks), asks


def test_control_the_postinstall_written_now_is_asked(tmp_path: Path) -> None:
    resolved = tmp_path / "resolved.json"
    resolved.write_text(RESOLVED)
    copy = Copy(tmp_path)
    _project(copy.root)
    changes = copy.run(f"cp {resolved} package.json")
    asks = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)]).asks
    assert any("postinstall" in a for a in asks), asks
