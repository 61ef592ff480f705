"""Red team 102 F3 (MEDIUM): the new kernel-modules rules (072b461) let a module load unasked without the box.

1. ``kernel-modules-modprobe`` is waived by ``-n``/``-c``/``-D``/``-R`` anywhere in the arguments, but modprobe's
   ``-C``/``--config``, ``-d``/``--dirname`` and ``-S``/``--set-version`` take a value (kmod: ``"…C:d:S:…"``), and
   getopt gives them the next word whatever it looks like: ``modprobe -Cn e1000`` (config file ``n``) and
   ``modprobe -d -n evil`` (modules under ``./-n/lib/modules/…``: the caller's own module) load a module. The
   matcher (``matching.parse_args``) has no VALUE_OPTIONS for modprobe, so it reads ``n`` as the dry-run flag.
2. kmod is one program that acts by the name it is called: ``exec -a modprobe kmod e1000`` loads e1000, and the rule
   sees the program ``kmod``.

Lines are Python string literals given only to ``PolicyEngine.decide`` (plain: what decides without the box).
"""

from __future__ import annotations

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine

PLAIN = PolicyEngine(load_policy().shell_exec)

LOADS = [
    "modprobe -Cn e1000",
    "modprobe -C -n e1000",
    "modprobe --config -n e1000",
    "modprobe -dn evil",
    "modprobe -d -n evil",
    "modprobe --dirname -n evil",
    "modprobe -S -c e1000",
    "modprobe --set-version -D e1000",
    "modprobe -C -R e1000",
    "exec -a modprobe kmod e1000",
    "exec -a insmod /usr/bin/kmod ./driver.ko",
    "bash -c 'exec -a modprobe /bin/kmod e1000'",
]


def test_control_modprobe_is_asked() -> None:
    assert PLAIN.decide("modprobe e1000").action == "ask"
    assert PLAIN.decide("insmod ./driver.ko").action == "ask"


@pytest.mark.parametrize("line", LOADS)
def test_a_module_loaded_through_an_option_value_or_another_name_is_asked(line: str) -> None:
    verdict = PLAIN.decide(line)
    assert verdict.action != "allow", ("loads a kernel module unasked without the box", line, verdict)
