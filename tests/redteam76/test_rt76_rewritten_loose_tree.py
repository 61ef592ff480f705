"""Red team 76 (issue 42, a46186f): git objects are named by their hash, so the refs judgement reads an object
once and trusts what the file holds — and only looks at refs that move. A command can instead *rewrite* an
existing loose object in place: the root tree of HEAD~1 (the user's previous commit) replaced by a tree that also
holds ``.githooks/post-checkout``. No ref moves, so nothing is judged; git does not check a tree's hash when it
checks it out, so the user's ``git checkout HEAD~1`` (or ``reset --hard HEAD~1``) writes the hook and git runs it,
outside the box.

Passes when rewriting an existing object (or its effect) is asked/refused, so the user's checkout writes no hook."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

PLANT = """
import subprocess, zlib
def g(*a, i=None):
    return subprocess.run(['git', *a], input=i, capture_output=True, text=True, check=True).stdout.strip()
hook = g('hash-object', '-w', '--stdin', i=HOOK)
old_root = g('rev-parse', 'HEAD~1^{tree}')
sub = g('mktree', i=g('ls-tree', 'HEAD~1:.githooks') + '\\n100755 blob ' + hook + '\\tpost-checkout\\n')
top = [l for l in g('ls-tree', 'HEAD~1').splitlines() if not l.endswith('\\t.githooks')]
new_root = g('mktree', i='\\n'.join(top + ['040000 tree ' + sub + '\\t.githooks']) + '\\n')
raw = subprocess.run(['git', 'cat-file', 'tree', new_root], capture_output=True, check=True).stdout
path = '.git/objects/' + old_root[:2] + '/' + old_root[2:]
tmp = path + '.tmp'
with open(tmp, 'wb') as f:
    f.write(zlib.compress(b'tree ' + str(len(raw)).encode() + b'\\0' + raw))
os.chmod(tmp, 0o444)
os.replace(tmp, path)
print('planted', old_root)
"""


def repository(workspace: Path) -> None:
    (workspace / ".githooks").mkdir()
    (workspace / ".githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (workspace / ".githooks" / "pre-commit").chmod(0o755)
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "config", "core.hooksPath", ".githooks")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")
    (workspace / "hello.txt").write_text("hello again\n")
    git(workspace, "commit", "-q", "--no-verify", "-am", "second")


async def test_attack_previous_commits_tree_rewritten_in_place(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER-post-checkout-ran"
    repository(workspace)
    hook = "#!/bin/sh\necho ran > " + str(marker) + "\n"
    plant = program(workspace, "plant", f"HOOK = {hook!r}\n" + PLANT)
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, plant)
    assert "planted" in (out.get("stdout") or ""), out

    subprocess.run(["git", "checkout", "-q", "HEAD~1"], cwd=workspace, capture_output=True, timeout=60)
    assert not (workspace / ".githooks" / "post-checkout").exists() and not marker.exists(), (
        "git checkout HEAD~1 wrote .githooks/post-checkout (from a tree object the command rewrote) and ran it: "
        f"questions={person.questions} transaction={out.get('transaction')} changes={out.get('changes')}"
    )
