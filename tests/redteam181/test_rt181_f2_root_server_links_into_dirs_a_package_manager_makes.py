"""Red team 181 F2: a server run as root (a container, a dev VM: this machine's tests) — links into system
directories that a package manager or a tool makes later are no longer asked.

(Pinned: the narrowing this red team attacked was withdrawn on 2026-12-07, before it landed; these tests keep
the question it took away. Where the text says "no longer asked" or "now", read "would not be asked".)

To root, every system directory is "the user's" (``open_to_others``: st_uid 0 == geteuid, writable): before issue 45
a link to a missing name there was asked ("... is not there yet"). Now, where the name's own directory is missing
too, it is not — on the narrowing's claim that "outside the home no program makes one of the user's directories by
itself". For root, the package manager does, every day: ``apt install nginx`` makes ``/etc/nginx/conf.d``, ``apt
install sudo`` ``/etc/sudoers.d``, ``systemctl edit x`` ``/etc/systemd/system/x.service.d``, a new Python (or the
first ``pip install`` as root) ``/usr/local/lib/python3.X/dist-packages``; an installer ``/opt/<tool>/etc``. Once
it is there, the user's next build (copying to ``dist/``) writes the model's bytes into it: a config nginx or sudo
loads, a drop-in systemd applies, a ``.pth`` every Python runs — as root, outside the box.

Only metadata of the real system is looked at (the judgement's own ``stat``); nothing outside the test's tmp dir is
made. Ends whose directory exists on this machine are skipped (they are asked: the control). On HEAD without the
patch every attack case is asked. Targets travel as data (rt181_links.json).
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

import pytest

from support.copies import overlays_work
from support.link_judging import DATA, judged_links, link_asks

pytestmark = [
    pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the server runs as root in this finding"),
]


@pytest.mark.parametrize("end", DATA["root_system_ends"])
def test_attack_root_link_into_a_system_directory_a_package_manager_makes_later_is_not_asked(
    tmp_path: Path, end: str
) -> None:
    if os.path.lexists(posixpath.dirname(end)):
        pytest.skip(f"{posixpath.dirname(end)} exists on this machine (asked: see the control)")
    judged = judged_links(tmp_path, {"dist/" + posixpath.basename(end): end})
    assert link_asks(judged) or judged.refused, (
        f"a link to {end} lands unasked: the directory's package makes it, the user's next build writes through it "
        "as root", judged.summary)  # fmt: skip


@pytest.mark.parametrize("end", DATA["root_system_control_ends"])
def test_control_root_link_into_an_existing_system_directory_is_asked(tmp_path: Path, end: str) -> None:
    if not os.path.isdir(posixpath.dirname(end)) or os.path.lexists(end):
        pytest.skip(f"{posixpath.dirname(end)} missing here, or {end} exists")
    judged = judged_links(tmp_path, {"dist/" + posixpath.basename(end): end})
    assert link_asks(judged), judged.asks
