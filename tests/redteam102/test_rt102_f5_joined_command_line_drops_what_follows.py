"""Red team 102 F5 (MEDIUM): a command line joined from a list (issue 45 item 5, ``code_texts._handed`` /
``_joined``) is judged as the join's line alone: whatever the code adds after the join (``+ '; …'``,
``.replace(…)``, a slice) is dropped, and a JavaScript list joined after another method (``[…].reverse().join(' ')``,
``.map(String)``, ``.concat([…])``) is not judged at all — not even as code-built-command, which the commit says a
join that is not all literals becomes. Without the box (``--sandbox off``, no bubblewrap, ``--mode full-access``) the
string layer is the only guard: these lines run what the plain line is denied or asked for, unasked.

The harmful lines are Python string literals here, only ever given to ``PolicyEngine.decide``; the one run through
the server (``--sandbox off``) sets ``core.editor`` in the test's own fake HOME (what ``git-config-sets-program``
asks about), nothing else.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine
from support.boxed import Person, run, shell

PLAIN = PolicyEngine(load_policy().shell_exec)  # what decides without the box

# (hidden form, the same command written plainly)
CASES = [
    (
        "python3 -c \"import os; os.system(' '.join(['echo', 'hi']) + '; rm -rf ~')\"",
        "python3 -c \"import os; os.system('echo hi; rm -rf ~')\"",
    ),
    (
        "python3 -c \"import subprocess; subprocess.run(' '.join(['echo', 'hi']) + '; rm -rf ~', shell=True)\"",
        "python3 -c \"import subprocess; subprocess.run('echo hi; rm -rf ~', shell=True)\"",
    ),
    (
        "python3 -c \"import os; os.popen(' '.join(['echo', 'hi']) + ' && rm -rf ~').read()\"",
        "python3 -c \"import os; os.popen('echo hi && rm -rf ~').read()\"",
    ),
    (
        "python3 -c \"import os; os.system(' '.join(['echo', 'hi']).replace('echo hi', 'rm -rf ~'))\"",
        "python3 -c \"import os; os.system('rm -rf ~')\"",
    ),
    (
        "node -e \"require('child_process').execSync(['echo','hi'].join(' ') + '; rm -rf ~')\"",
        "node -e \"require('child_process').execSync('echo hi; rm -rf ~')\"",
    ),
    (
        "node -e \"require('child_process').execSync(['~','-rf','rm'].reverse().join(' '))\"",
        "node -e \"require('child_process').execSync(['rm','-rf','~'].join(' '))\"",
    ),
    (
        "node -e \"require('child_process').execSync(['rm','-rf','~'].map(String).join(' '))\"",
        "node -e \"require('child_process').execSync(['rm','-rf','~'].join(' '))\"",
    ),
    (
        "node -e \"require('child_process').execSync(['rm','-rf'].concat(['~']).join(' '))\"",
        "node -e \"require('child_process').execSync(['rm','-rf','~'].join(' '))\"",
    ),
    (
        "node -e \"require('child_process').execSync(['echo','x]','; rm -rf ~'].join(' '))\"",
        "node -e \"require('child_process').execSync('echo x] ; rm -rf ~')\"",
    ),
]


@pytest.mark.parametrize(("hidden", "plain"), CASES)
def test_a_joined_line_with_more_after_it_is_judged_as_what_runs(hidden: str, plain: str) -> None:
    control = PLAIN.decide(plain)
    assert control.action != "allow", ("control: the plain form is not refused", plain, control)
    verdict = PLAIN.decide(hidden)
    assert verdict.action != "allow", ("runs unasked without the box", hidden, verdict.rule, control.rule)


ASKED = "git config --global core.editor true"  # asked (git-config-sets-program); harmless in the fake HOME
HIDDEN = "python3 -c \"import os; os.system(' '.join(['true']) + '; git config --global core.editor true')\""


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("git") is None, reason="git is missing")
async def test_without_the_box_the_joined_line_runs_what_the_plain_line_asks(workspace: Path) -> None:
    assert PLAIN.decide(ASKED).action == "ask"
    home = Path(subprocess.run(["sh", "-c", "echo $HOME"], capture_output=True, text=True, timeout=10).stdout.strip())
    assert home.is_dir() and str(home).startswith("/tmp/"), home  # the test's own HOME (tests/conftest.py)
    person = Person(False)  # declines every question
    async with shell(workspace, person, "--sandbox", "off") as client:
        out = await run(client, HIDDEN, cwd=str(workspace))
    config = home / ".gitconfig"
    written = config.exists() and "editor" in config.read_text()
    # (support.boxed.Person approves a question about running the line itself: asked is what the plain line gets)
    assert person.questions or not written, ("set core.editor with no question (--sandbox off)", out.get("exitCode"))
