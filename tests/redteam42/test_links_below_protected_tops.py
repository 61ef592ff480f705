"""A symlink in place of a protected directory is refused — but only at a pattern's first component (``.config``,
``.local``) or where the directory itself matches a pattern. A link at a directory *between* the top and the
protected part is allowed: ``.local/lib/python3.11 -> ../../src`` (``.local/lib/python*/site-packages/**``),
``.config/Code -> ../src`` (``.config/Code/User/**``), ``.local/share -> ../src`` (``.local/share/direnv/**``).
Everything then written under ``src/`` (unjudged: it is an ordinary directory) is what Python's site, VS Code or
direnv read from the protected path (a ``.pth`` runs code at every Python start).

Passes when a link is refused at every directory some protected pattern lies below (the probe should test whether
a pattern could match a path *below* the link, not only ``<link>/_``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()


def refused(tmp_path: Path, script: str) -> dict[str, str]:
    copy = Copy(tmp_path)
    (copy.root / "src").mkdir()
    judged = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    return {path: why for (_root, path), why in judged.refused.items()}


@pytest.mark.parametrize(
    ("script", "link"),
    [
        ("mkdir -p .local/lib src/site-packages && ln -s ../../src .local/lib/python3.11", ".local/lib/python3.11"),
        ("mkdir -p .config src/User && ln -s ../src .config/Code", ".config/Code"),
        ("mkdir -p .local src/direnv && ln -s ../src .local/share", ".local/share"),
    ],
)
def test_attack_symlink_at_a_directory_between_a_protected_top_and_its_pattern(
    tmp_path: Path, script: str, link: str
) -> None:
    why = refused(tmp_path, script)
    assert link in why, f"{link} became a link to src/ (protected files below it now unjudged): {why}"
