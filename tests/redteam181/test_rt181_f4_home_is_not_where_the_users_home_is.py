"""Red team 181 F4: "still asked under HOME" — HOME as the server's environment spells it, or nowhere.

(Pinned: the narrowing this red team attacked was withdrawn on 2026-12-07, before it landed; these tests keep
the question it took away. Where the text says "no longer asked" or "now", read "would not be asked".)

``open_to_others(end, protection.home)`` spares a missing directory only outside ``protection.home``, which is
``$HOME`` of the server's start (``protection_for``). Where that is not the user's home the exemption covers the
real one: ``~/.lein/profiles.clj`` (red team 150's own case), ``~/.config/<newtool>/``, ``~/.newtool/`` — the
directories "the next install of a tool makes" — land unasked:

* HOME unset (a server started by a service manager, ``env -i``, a client passing a bare environment):
  ``protection.home`` is None and nothing is "under HOME";
* HOME set to another directory than the account's (``sudo -E`` / ``env_keep+=HOME``, a client or a container that
  sets a per-session HOME — as this test suite does): the account's own home (``pwd``) is "outside HOME".

Before issue 45 each was asked ("... is not there yet"). Control: the same ends under HOME as set are asked. Only
the account's home's metadata is read (the judgement's ``stat``); nothing is made there.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from support.copies import overlays_work
from support.link_judging import DATA, fill, judged_links, link_asks

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")


def _ends(home: str) -> list[str]:
    return [fill(e, home=home) for e in DATA["home_ends"]]


@pytest.mark.parametrize("index", range(3))
def test_attack_home_unset_a_link_into_a_missing_directory_of_the_users_home_is_not_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index: int
) -> None:
    home = os.environ["HOME"]  # the user's home (the test's own), then unset for the server
    end = _ends(home)[index]
    if os.path.lexists(os.path.dirname(end)):
        pytest.skip("its directory exists")
    monkeypatch.delenv("HOME")
    judged = judged_links(tmp_path, {"dist/" + os.path.basename(end): end})
    assert link_asks(judged) or judged.refused, (f"{end}: unasked with HOME unset", judged.summary)


@pytest.mark.parametrize("index", range(3))
def test_attack_home_not_the_accounts_a_link_into_a_missing_directory_of_the_accounts_home_is_not_asked(
    tmp_path: Path, index: int
) -> None:
    account = pwd.getpwuid(os.geteuid()).pw_dir
    if os.path.realpath(account) == os.path.realpath(os.environ["HOME"]) or not os.path.isdir(account):
        pytest.skip("HOME is the account's home here")
    end = _ends(account)[index].replace("newtool", "rt181-newtool").replace(".lein", ".rt181-lein")
    if os.path.lexists(os.path.dirname(end)):
        pytest.skip("its directory exists")
    judged = judged_links(tmp_path, {"dist/" + os.path.basename(end): end})
    assert link_asks(judged) or judged.refused, (f"{end}: unasked, HOME={os.environ['HOME']}", judged.summary)


@pytest.mark.parametrize("index", range(3))
def test_control_the_same_links_under_home_as_set_are_asked(tmp_path: Path, index: int) -> None:
    end = _ends(os.environ["HOME"])[index]
    judged = judged_links(tmp_path, {"dist/" + os.path.basename(end): end})
    assert link_asks(judged) or judged.refused, judged.asks
