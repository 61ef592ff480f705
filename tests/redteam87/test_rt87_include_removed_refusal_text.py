"""Red team 87 (LOW): taking an ``include.path`` out of ``.git/config`` is refused as "would gain keys that can make
git run programs: " -- naming no key, and saying "gain" of a config that only loses one.

``git_verdicts.git_verdict``: ``added = sorted(set(new) - set(old)) or new`` -- when entries only went, ``added`` is
the new config's unsafe entries, here none: the refusal the person reads names nothing. (Whether a removal should be
refused at all is another matter: git reads less.)
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from mcp_server_guard.changes.transactions import Transactions
from support.settling import settled_call

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("git") is None, reason="git is missing")]


async def test_a_refusal_of_an_include_taken_out_names_what_it_refuses(
    settled: tuple[Transactions, Path], tmp_path: Path
) -> None:
    transactions, part = settled
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    subprocess.run(["git", "-C", str(root), "init", "-q"], check=True, capture_output=True, timeout=60)
    config = root / ".git" / "config"
    plain = config.read_text()
    config.write_text(plain + "[include]\n\tpath = ../shared.gitconfig\n")
    (root / "shared.gitconfig").write_text("[user]\n\tname = The User\n")
    time.sleep(0.02)
    done = await settled_call(transactions, part, "000000000001", {".git/config": plain})
    for _path, why in done.refused:
        assert not why.rstrip().endswith(":") and "gain" not in why, f"a refusal that names nothing: {why!r}"
