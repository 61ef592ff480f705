"""Red team 103 F3 (MEDIUM): system packages installed or upgraded unasked without the box, after 102ecb2/359e397.

1. ``VALUE_OPTIONS["pacman"]`` (``shell/strings/option_values.py``) lacks ``ask``: pacman's ``--ask <n>`` is
   required_argument (``config->ask = atoi(optarg)``, "-s" reads as 0), so ``pacman -S --ask -s foo`` installs foo,
   read here as ``-Ss`` (a search). yay's parser (``pkg/settings/parser/parser.go: hasParam``) has ``ask`` too.
2. yay and paru share pacman's table, but yay's own options that take a value (``hasParam``: aururl, aurrpcurl,
   mflags, gpgflags, gitflags, builddir, editor, editorflags, makepkg, makepkgconf, pacman, git, gpg, sudo,
   sudoflags, requestsplitn, answerclean, answerdiff, answeredit, answerupgrade, completioninterval, sortby,
   searchby) take the next word whatever it is (``parseLongOption``: ``usedNext = true``): ``yay -S --editor -s foo``
   installs foo. paru has its own such options (mflags, makepkg, sudo, editor/fm, bat, pacman …; not checked here
   one by one).
3. ``yay`` or ``paru`` with no operation and no target is ``-Syu`` (parser.go ``Parse``: ``if a.Op == ""`` and no
   targets, ``parseShortOption("-Syu")``; paru likewise): ``yay --noconfirm`` upgrades the whole machine with no
   question. ``pacman-refresh``/``pacman-sync`` need ``-S``/``--sync`` written. Not new (before e030547 too).

Lines are Python string literals given only to ``PolicyEngine.decide`` (plain: what decides without the box).
"""

from __future__ import annotations

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine

PLAIN = PolicyEngine(load_policy().shell_exec)

INSTALLS = [
    "pacman -S --ask -s foo",
    "yay -S --ask -s foo",
    "yay -S --editor -s foo",
    "yay -S --builddir -s foo",
    "yay -S --makepkg -s foo",
    "yay -S --mflags -s foo",
    "yay -S --answerdiff -s foo",
    "yay -S --sudo -i foo",
    "yay -S --sortby -s foo",
    "paru -S --mflags -s foo",
    "paru -S --sudo -s foo",
]
UPGRADES = ["yay", "yay --noconfirm", "yay --editor vim", "paru", "paru --noconfirm"]


def test_control_an_install_and_an_upgrade_are_asked() -> None:
    assert PLAIN.decide("pacman -S --noconfirm foo").action == "ask"
    assert PLAIN.decide("yay -Syu --noconfirm").action == "ask"


@pytest.mark.parametrize("line", INSTALLS)
def test_an_install_whose_search_flag_is_an_option_value_is_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert verdict.action != "allow", ("installs a system package unasked without the box", line, verdict)


@pytest.mark.parametrize("line", UPGRADES)
def test_a_bare_aur_helper_is_a_system_upgrade_and_is_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert verdict.action != "allow", ("yay/paru alone is -Syu: the whole machine upgraded unasked", line, verdict)
