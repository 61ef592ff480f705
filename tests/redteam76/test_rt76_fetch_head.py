"""Red team 76 (issue 42, a46186f): ``changes/git_refs.py`` judges HEAD, ORIG_HEAD, MERGE_HEAD, CHERRY_PICK_HEAD,
REVERT_HEAD, AUTO_MERGE, refs/** and packed-refs — not ``FETCH_HEAD`` (though ``_resolve`` knows its lines). A
command that writes a commit carrying ``.githooks/post-checkout`` and a FETCH_HEAD naming it lands unasked; the
user's ``git checkout FETCH_HEAD`` (how a fetched pull request is looked at) or ``git merge FETCH_HEAD`` writes the
hook and git runs it, outside the box.

Passes when that FETCH_HEAD is asked/refused, so the user's checkout writes no hook."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

PLANT = """
import subprocess
def g(*a, i=None):
    return subprocess.run(['git', *a], input=i, capture_output=True, text=True, check=True).stdout.strip()
hook = g('hash-object', '-w', '--stdin', i=HOOK)
sub = g('mktree', i=g('ls-tree', 'HEAD:.githooks') + '\\n100755 blob ' + hook + '\\tpost-checkout\\n')
top = [l for l in g('ls-tree', 'HEAD').splitlines() if not l.endswith('\\t.githooks')]
tree = g('mktree', i='\\n'.join(top + ['040000 tree ' + sub + '\\t.githooks']) + '\\n')
evil = g('-c', 'user.name=a', '-c', 'user.email=a@x', 'commit-tree', tree, '-p', 'HEAD', '-m', 'fix', i='')
with open('.git/FETCH_HEAD', 'w') as f:
    f.write(f"{evil}\\t\\tbranch 'fix' of ../upstream\\n")
print('planted', evil)
"""


def repository(workspace: Path) -> None:
    (workspace / ".githooks").mkdir()
    (workspace / ".githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (workspace / ".githooks" / "pre-commit").chmod(0o755)
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "config", "core.hooksPath", ".githooks")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")


async def test_attack_fetch_head_names_a_commit_with_a_hook(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-post-checkout-ran"
    repository(workspace)
    hook = "#!/bin/sh\necho ran > " + str(marker) + "\n"
    plant = program(workspace, "plant", f"HOOK = {hook!r}\n" + PLANT)
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, plant)
    assert "planted" in (out.get("stdout") or ""), out

    subprocess.run(["git", "checkout", "-q", "FETCH_HEAD"], cwd=workspace, capture_output=True, timeout=60)
    assert not (workspace / ".githooks" / "post-checkout").exists() and not marker.exists(), (
        "git checkout FETCH_HEAD wrote .githooks/post-checkout and ran it: "
        f"questions={person.questions} transaction={out.get('transaction')} changes={out.get('changes')}"
    )
