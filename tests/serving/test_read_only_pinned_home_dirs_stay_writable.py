"""Red team 6: ``--mode read-only`` with the box, HOME inside the roots (the launch directory is HOME, which the server
warns about but allows, or ``--allow-path ~``). Every directory between a root and a hidden path is pinned (bound onto
itself: ``mounts._pin_ancestors``) *before* the roots are made read-only, and ``linux.bind_read_only`` remounts only
the top mount of its recursive bind: the pinned directories (``~/.config`` above ``~/.config/gh``, ``~/.local`` and
``~/.local/state`` above the server's own state directory, ``~/.docker``, ``~/.claude``, ``~/.codex`` ...) stay
writable mounts of the real tree. Landlock still refuses creating and writing files there, but not chmod, chown,
setxattr (ACLs) or utimes: a read-only session makes ``~/.config`` world-writable (anyone on the machine can then
plant ``~/.config/autostart/*.desktop``, ``~/.config/systemd/user/*``), grants ACLs, changes times — on the real
HOME, with the result saying nothing changed.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


async def test_attack_read_only_session_re_modes_home_dirs_above_a_hidden_path(tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])  # the test's own temp HOME (tests/conftest.py)
    (home / ".config" / "gh").mkdir(parents=True)  # hidden: masked, so ~/.config is pinned
    (home / ".config" / "gh" / "hosts.yml").write_text("oauth_token: x\n")
    (home / ".config" / "app.conf").write_text("a=1\n")
    (home / ".config").chmod(0o700)
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local").chmod(0o700)
    before = os.stat(home / ".config" / "app.conf").st_mtime_ns
    person = Person(answer=False)
    async with shell(home, person, "--mode", "read-only") as client:
        outs = [
            await run(client, line)
            for line in (
                "chmod 0777 .config .local",
                "touch -c -d 2001-01-01 .config/app.conf",
            )
        ]
    changed = []
    for name in (".config", ".local"):
        mode = stat.S_IMODE(os.stat(home / name).st_mode)
        if mode != 0o700:
            changed.append(f"~/{name} is now {oct(mode)}")
    if os.stat(home / ".config" / "app.conf").st_mtime_ns != before:
        changed.append("~/.config/app.conf's time changed")
    assert not changed, (
        f"a read-only session changed the real HOME: {changed}; "
        f"results: {[(o['exitCode'], o['stderr'], o['transaction'], o['changes']['reason']) for o in outs]}"
    )


async def test_attack_read_only_session_re_modes_a_project_dir_above_a_hidden_path(workspace: Path) -> None:
    """The same with no HOME in the roots: the user's policy hides a secret inside the project
    (``[paths] hidden = ["<project>/config/secrets"]``); ``config/`` is pinned, and stays writable."""
    (workspace / "config" / "secrets").mkdir(parents=True)
    (workspace / "config" / "secrets" / "prod.env").write_text("KEY=1\n")
    (workspace / "config" / "app.toml").write_text("a = 1\n")
    (workspace / "config").chmod(0o750)
    policy = workspace.parent / "policy.toml"
    policy.write_text(f'[paths]\nhidden = ["{workspace}/config/secrets"]\n')
    async with shell(workspace, Person(answer=False), "--mode", "read-only", "--policy", str(policy)) as client:
        out = await run(client, "chmod 0777 config config/app.toml")
    modes = {n: oct(stat.S_IMODE(os.stat(workspace / n).st_mode)) for n in ("config", "config/app.toml")}
    assert modes == {"config": "0o750", "config/app.toml": "0o644"}, (
        f"a read-only session re-moded the project: {modes}; result: {out['exitCode']} {out['stderr']!r} "
        f"{out['transaction']}"
    )
