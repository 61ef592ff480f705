"""Red team 181 F3: "a missing directory below a place others may write still is [asked]: another user can make
it" — but ``open_to_others`` knows others only by the world-write bit (``st_mode & 0o002``). A directory a group
may write (a team's setgid share ``/srv/team`` 2775 root:devs, a devcontainer's ``/usr/local/share/nvm`` or
``/usr/local/cargo``, a directory with an ACL for a colleague) is one others may write too: not asked now.

(Pinned: the narrowing this red team attacked was withdrawn on 2026-12-07, before it landed; these tests keep
the question it took away. Where the text says "no longer asked" or "now", read "would not be asked".)

Another member of the group makes the directory and puts a link of theirs at the name; the user's next build,
copying to ``dist/``, writes through both links: into any file the user may write (here a file of the user's in
HOME stands for ``~/.bashrc``). Reads work the same way the other round (the colleague's bytes read as the
project's file). Before issue 45 the missing name was asked ("... is not there yet"). The colleague's steps are
played by root with ``lchown`` (the test's tmp dir is not reachable by another uid); fs.protected_symlinks does not
apply (not a sticky world-writable directory). Control: the same under a world-writable sticky directory is asked.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.copies import overlays_work
from support.link_judging import judged_links, link_asks

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")

COLLEAGUE = 4242  # (uid and gid of the other member of the group: no account needed)
PRECIOUS = "the user's file, written by nobody else\n"


def _shared(tmp_path: Path, mode: int) -> Path:
    shared = tmp_path / "team"
    shared.mkdir()
    os.chown(shared, os.geteuid(), COLLEAGUE)
    shared.chmod(mode)
    return shared


def test_attack_link_to_a_missing_directory_in_a_group_writable_share_is_not_asked(tmp_path: Path) -> None:
    shared = _shared(tmp_path, 0o2775)
    end = shared / "cfg" / "settings.ini"
    victim = Path(os.environ["HOME"]) / "notes.txt"
    victim.write_text(PRECIOUS)
    judged = judged_links(tmp_path / "c", {"dist/settings.ini": str(end)})
    project = tmp_path / "c" / "root"
    link = project / "dist" / "settings.ini"
    if not link_asks(judged) and not judged.refused:  # applied with no question: the apply makes the link
        link.parent.mkdir(exist_ok=True)
        os.symlink(end, link)
    # The colleague, later: makes cfg/ (the group may) and a link of theirs at the name.
    (shared / "cfg").mkdir()
    os.symlink(victim, end)
    os.lchown(shared / "cfg", COLLEAGUE, COLLEAGUE)
    os.lchown(end, COLLEAGUE, COLLEAGUE)
    # The user's build: copies src/settings.ini to dist/settings.ini, through the links.
    (project / "src").mkdir()
    (project / "src" / "settings.ini").write_text("[build]\n")
    if link.is_symlink():
        shutil.copyfile(project / "src" / "settings.ini", link)
    assert victim.read_text() == PRECIOUS or link_asks(judged), (
        "the user's file overwritten through a link nobody was asked about, below a directory the group may write",
        judged.asks, judged.summary)  # fmt: skip


def test_control_link_to_a_missing_directory_below_a_world_writable_directory_is_asked(tmp_path: Path) -> None:
    shared = _shared(tmp_path, 0o1777)
    judged = judged_links(tmp_path / "c", {"dist/settings.ini": str(shared / "cfg" / "settings.ini")})
    assert link_asks(judged), judged.asks
