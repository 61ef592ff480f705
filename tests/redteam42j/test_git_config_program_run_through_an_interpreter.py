"""Red team 5b: a program a git config runs, named after an interpreter or quoted with a space, is not protected.

``git_dirs._programs`` protects the file a git config's command names by a path — but only its *first word*, and only
when that word has a "/". The everyday spellings ``smudge = python3 tools/smudge.py``, ``clean = node
scripts/clean.js``, ``alias.x = !sh scripts/x.sh`` name an interpreter first (no "/": nothing protected), and a
quoted path with a space (``'./my tools/clean'``) is cut at the space (``./my`` protected, not the program). A command
that rewrites the script lands with no question (the person declines everything); the user's next ``git add`` (or
status, diff, checkout) runs it outside the box. The payload writes a marker in the test's tmp dir.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

# (the filter's clean command as the user configured it, the script file it runs)
CASES = {
    "interpreter-first": ("python3 tools/clean.py", "tools/clean.py"),
    "quoted-path-with-space": ("'./my tools/clean'", "my tools/clean"),
    "control-path-first": ("./tools/clean", "tools/clean"),  # held: the first word is the program's path
}
HARMLESS = "#!/usr/bin/env python3\nimport sys\nsys.stdout.write(sys.stdin.read())\n"


@pytest.mark.parametrize("case", sorted(CASES))
async def test_attack_git_filter_script_rewritten(workspace: Path, tmp_path: Path, case: str) -> None:
    command, script = CASES[case]
    marker = tmp_path / "MARKER-filter-ran"
    git(workspace, "init", "-q")
    git(workspace, "config", "filter.tidy.clean", command)  # the user's own set-up, before the agent
    (workspace / ".gitattributes").write_text("*.dat filter=tidy\n")
    target = workspace / script
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(HARMLESS)
    target.chmod(0o755)
    (workspace / "a.dat").write_text("one\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "init")
    evil = HARMLESS + f"open({str(marker)!r}, 'w').write('ran')\n"
    edit = program(workspace, "edit", f"open({script!r}, 'w').write({evil!r})\n")
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, edit)
    # The user's next ordinary git use, outside any box.
    (workspace / "a.dat").write_text("two\n")
    git(workspace, "add", "a.dat")
    assert not marker.exists(), (
        f"the user's git ran the script the command rewrote; questions={person.questions} "
        f"transaction={out.get('transaction')} changes={out.get('changes')}"
    )


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("filter.tidy.clean", "python3 tools/clean.py --strict", "tools/clean.py"),
        ("filter.tidy.smudge", "'./my tools/smudge' %f", "my tools/smudge"),
        ("alias.x", "!f() { ./scripts/x; }; f", "scripts/x"),
        ("difftool.mine.cmd", "node scripts/diff.js $LOCAL $REMOTE", "scripts/diff.js"),
        ("mergetool.mine.path", "./bin/merge", "bin/merge"),
        ("core.gitProxy", "./proxy.sh", "proxy.sh"),
        ("remote.origin.uploadpack", "sh hooks/up.sh", "hooks/up.sh"),
        ("trailer.sign.cmd", "./tools/trailer", "tools/trailer"),
    ],
)
def test_every_file_a_git_config_command_names_is_protected(key: str, value: str, named: str, tmp_path: Path) -> None:
    from mcp_server_guard import git_dirs

    found = git_dirs._programs([(key, value)], str(tmp_path), None)
    assert "@" + os.path.realpath(tmp_path / named) in found, found
    assert not any(p.endswith(("/--strict", "/%f", "/$LOCAL")) for p in found), found
