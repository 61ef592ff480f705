"""Shared by red team 181's link tests: a copy of a small git project in which a command makes links (their
targets read from data), judged as the server judges a call (``effects.judge``)."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

from mcp_server_guard.changes.effects import Judgement, judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy

POLICY = load_policy()
_LINKS = Path(__file__).resolve().parent.parent / "redteam181" / "rt181_links.json"
DATA: dict[str, Any] = json.loads(_LINKS.read_text())


def fill(text: str, **values: str) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def judged_links(base: Path, links: dict[str, str]) -> Judgement:
    """``links`` (name in the project -> target) made by one command on a copy, judged with the protection the
    server builds from this process's environment (HOME as it is now)."""
    copy = Copy(base)
    subprocess.run(["git", "init", "-q", str(copy.root)], check=True)
    (copy.root / "README").write_text("a project\n")
    script = "mkdir -p dist && " + " && ".join(f"ln -s {shlex.quote(t)} {shlex.quote(n)}" for n, t in links.items())
    return judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])


def link_asks(judged: Judgement) -> list[str]:
    return [a for a in judged.asks if "links dist/" in a]
