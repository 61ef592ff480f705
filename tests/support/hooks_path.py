"""Projects whose git hooks live in the work tree (``core.hooksPath = .githooks``), and the opening of a model's
program that builds, with git's plumbing only, a tree adding ``.githooks/post-checkout`` (red teams 74 and 76: what
git would write at the user's next checkout). The hook's text is given as ``HOOK`` by the test (data)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support.boxed import Person, program, run, shell
from support.hooked import git

# ``g`` runs git; ``hook`` is the blob, ``tree`` HEAD's root tree with .githooks/post-checkout added.
HOOK_TREE = """
import subprocess
def g(*a, i=None):
    return subprocess.run(['git', *a], input=i, capture_output=True, text=True, check=True).stdout.strip()
hook = g('hash-object', '-w', '--stdin', i=HOOK)
sub = g('mktree', i=g('ls-tree', 'HEAD:.githooks') + '\\n100755 blob ' + hook + '\\tpost-checkout\\n')
top = [l for l in g('ls-tree', 'HEAD').splitlines() if not l.endswith('\\t.githooks')]
tree = g('mktree', i='\\n'.join(top + ['040000 tree ' + sub + '\\t.githooks']) + '\\n')
"""


def hooks_path_repository(workspace: Path, *, second: bool = False) -> None:
    """A repository whose hooks are ``.githooks`` (committed, with a pre-commit hook); ``second``: a second commit."""
    (workspace / ".githooks").mkdir()
    (workspace / ".githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (workspace / ".githooks" / "pre-commit").chmod(0o755)
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "config", "core.hooksPath", ".githooks")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")
    if second:
        (workspace / "hello.txt").write_text("hello again\n")
        git(workspace, "add", "-A")
        git(workspace, "commit", "-q", "--no-verify", "-m", "second")


async def planted_then(workspace: Path, marker: Path, plant: str, *user_git: str) -> str:
    """Run the model's program ``plant`` (``HOOK`` set to a hook leaving ``marker``) through shell_exec with a
    person who declines every question, then the user's own ``git *user_git`` outside the box: "" when no hook was
    written or ran, else what happened (the questions, the transaction and its changes)."""
    hook = "#!/bin/sh\necho ran > " + str(marker) + "\n"
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, program(workspace, "plant", f"HOOK = {hook!r}\n" + plant))
    assert "planted" in (out.get("stdout") or "") or "substituted" in (out.get("stdout") or ""), out
    subprocess.run(["git", *user_git], cwd=workspace, capture_output=True, timeout=60, check=False)
    if not (workspace / ".githooks" / "post-checkout").exists() and not marker.exists():
        return ""
    return (f"git {' '.join(user_git)} wrote .githooks/post-checkout and ran it: questions={person.questions} "
            f"transaction={out.get('transaction')} changes={out.get('changes')}")  # fmt: skip
