"""Red team 102 F4 (MEDIUM, new in e030547): ``pacman-sync`` is waived by ``-s``/``-i``/``-l``/``-g``/``-p`` (and their
long names) anywhere in the arguments, but pacman's options that take a value (``--ignore``, ``--overwrite``,
``-b``/``--dbpath``, ``--cachedir``, ``--logfile``, ``--assume-installed``, ``--ignoregroup``, ``--arch`` …) take the
next word whatever it looks like (getopt_long, required_argument): ``pacman -S --ignore -s foo`` installs foo
(ignoring a package named ``-s``). ``matching.parse_args`` has no VALUE_OPTIONS for pacman/yay/paru, so it reads
``-s`` as --search. Before e030547 every one of these was asked (``pacman-install-remove``).

Lines are Python string literals given only to ``PolicyEngine.decide`` (plain: what decides without the box).
"""

from __future__ import annotations

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine

PLAIN = PolicyEngine(load_policy().shell_exec)

INSTALLS = [
    "pacman -S --ignore -s foo",
    "pacman -S --noconfirm --ignore -i foo",
    "pacman -S --overwrite -s foo",
    "pacman -S -b -s foo",
    "pacman -S --dbpath -l foo",
    "pacman -S --cachedir -i foo",
    "pacman -S --logfile -l foo",
    "pacman -S --assume-installed -g foo",
    "pacman -S --ignoregroup -p foo",
    "pacman --sync --ignore --search foo",
    "yay -S --ignore -s foo",
    "paru -S --ignore -i foo",
]


def test_control_an_install_is_asked() -> None:
    assert PLAIN.decide("pacman -S --noconfirm foo").action == "ask"


@pytest.mark.parametrize("line", INSTALLS)
def test_an_install_whose_search_flag_is_an_option_value_is_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert verdict.action != "allow", ("installs a system package unasked without the box", line, verdict)
