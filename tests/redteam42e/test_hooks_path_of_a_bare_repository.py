"""docs/shell_exec.md "One protected list": "A hooks directory you configured (``core.hooksPath``, in the repository's
config ...) is protected like ``.git/hooks/``: nothing in it is written by a command", and "every file a repository's
configs include (``include.path`` ... relative to the including file) ... while the repository includes it", for
"every repository found within the allowed directories" (bare ones too: ``git_dirs.repos_files`` expands a bare
repository's relative hooksPath from its git dir, as git does: hooks of a bare repository run in ``$GIT_DIR``, so
``git push`` to ``proj.git`` runs ``proj.git/githooks/post-update``).

Attack: a bare repository in the project (``proj.git``, the user's deploy target) has ``core.hooksPath = githooks``
and its ``post-update`` hook; a command rewrites that hook (or the config file the repository includes from beside
its config). Observed: applied silently: nothing refused, nothing asked. Expected: refused. Guessed cause:
``git_rule`` walks up from the path, meets the git dir ``proj.git`` itself, finds ``githooks/post-update`` is not one
of git's own runnable entries and returns None before it looks at the repositories' hooks directories and includes
(``lookups.nested``)."""

from __future__ import annotations

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
GOOD = "#!/bin/sh\nexec git update-server-info\n"


def _git(*args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True, capture_output=True)


def _judged(copy: Copy, script: str) -> tuple[set[str], list[str]]:
    j = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return {p for (_r, p) in j.refused}, list(j.asks)


def _bare(copy: Copy) -> Path:
    bare = copy.root / "proj.git"
    _git("init", "-q", "--bare", str(bare))
    _git("--git-dir", str(bare), "config", "core.hooksPath", "githooks")
    (bare / "githooks").mkdir()
    (bare / "githooks" / "post-update").write_text(GOOD)
    (bare / "githooks" / "post-update").chmod(0o755)
    (copy.root / "hook.txt").write_text(HOOK)
    return bare


def test_attack_rewrite_hook_of_a_bare_repository_with_a_relative_hooks_path(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _bare(copy)
    refused, asks = _judged(copy, "cat hook.txt > proj.git/githooks/post-update")
    assert "proj.git/githooks/post-update" in refused, (refused, asks)


def test_attack_rewrite_config_a_bare_repository_includes(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    bare = _bare(copy)
    (bare / "team.gitconfig").write_text("[user]\n\tname = team\n")
    _git("--git-dir", str(bare), "config", "include.path", "team.gitconfig")
    (copy.root / "fsm.txt").write_text("[core]\n\tfsmonitor = touch-marker\n")  # data only: never run here
    refused, asks = _judged(copy, "cat fsm.txt >> proj.git/team.gitconfig")
    assert "proj.git/team.gitconfig" in refused, (refused, asks)
