"""Red team 76 (issue 42, a46186f): git objects are named by their hash, so the refs judgement reads an object
once and trusts what the file holds — and only looks at refs that move. A command can instead *rewrite* an
existing loose object in place: the root tree of HEAD~1 (the user's previous commit) replaced by a tree that also
holds ``.githooks/post-checkout``. No ref moves, so nothing is judged; git does not check a tree's hash when it
checks it out, so the user's ``git checkout HEAD~1`` (or ``reset --hard HEAD~1``) writes the hook and git runs it,
outside the box.

Passes when rewriting an existing object (or its effect) is asked/refused, so the user's checkout writes no hook."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.hooks_path import hooks_path_repository, planted_then

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
    hooks_path_repository(workspace, second=True)


async def test_attack_previous_commits_tree_rewritten_in_place(workspace: Path, tmp_path: Path) -> None:
    repository(workspace)
    found = await planted_then(workspace, tmp_path / "MARKER-post-checkout-ran", PLANT, "checkout", "-q", "HEAD~1")
    assert not found, found
