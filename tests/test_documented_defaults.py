"""The defaults the docs state are the defaults the code has: a changed default fails here until the docs say so."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.policy import load_policy
from support import console_script

ROOT = Path(__file__).parents[1]
_ROW = re.compile(r"^\| (?P<keys>`[^|]+`) \| (?P<defaults>[^|]+) \|")
_SERVERS = {
    "file_read": "mcp-server-file-read",
    "file_write": "mcp-server-file-write",
    "shell_exec": "mcp-server-shell-exec",
}


def _policy_rows(doc: Path) -> list[tuple[str, str]]:
    """(key, documented default) for each table row whose default cell holds only backticked values, one per key."""
    rows = []
    for line in doc.read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if match is None:
            continue
        keys = re.findall(r"`([a-z_]+)`", match["keys"])
        values = re.findall(r"`([^`]*)`", match["defaults"])
        cell = re.sub(r"`[^`]*`", "", match["defaults"]).strip(" ,")
        if keys and len(keys) == len(values) and not cell:
            rows += list(zip(keys, values, strict=True))
    return rows


def _as_documented(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, tuple | list):
        return " ".join(map(str, value)) if value else "[]"
    return str(value)


@pytest.mark.parametrize(
    ("doc", "section"),
    [
        ("docs/configuration.md", "file_read"),
        ("docs/configuration.md", "file_write"),
        ("docs/shell_exec.md", "shell_exec"),
    ],
)
def test_documented_policy_defaults_are_the_packaged_ones(doc: str, section: str) -> None:
    policy = getattr(load_policy(None), section)
    checked = 0
    for key, documented in _policy_rows(ROOT / doc):
        if key not in type(policy).model_fields:
            continue
        actual = _as_documented(getattr(policy, key))
        assert documented.strip('"') == actual.strip('"'), (
            f"{doc}: [{section}].{key} is {actual}, documented {documented}"
        )
        checked += 1
    assert checked >= 2, f"no default of [{section}] found in {doc}"


def test_the_readmes_flag_defaults_are_what_each_server_says_it_defaults_to() -> None:
    helps = {
        name: " ".join(
            subprocess.run(
                [console_script(script), "--help"], capture_output=True, text=True, timeout=60
            ).stdout.split()
        )
        for name, script in _SERVERS.items()
    }
    checked = 0
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        flag = re.match(
            r"^\| `(--[a-z-]+) ([a-z-]+\\?\|[^`]*)`(?: \((?P<only>[a-z_, ]+)\))? \| `(?P<default>[a-z-]+)`", line
        )
        if flag is None:
            continue
        servers = [s.strip() for s in (flag["only"] or "file_read, file_write, shell_exec").split(",")]
        for server in servers:
            assert f"{flag[1]} " in helps[server], f"{server} has no {flag[1]}"
            said = re.search(re.escape(flag[1]) + r" <[^>]*>.*?\[default: ([a-z-]+)", helps[server])
            assert said is not None and said[1] == flag["default"], (
                f"README says {flag[1]} defaults to {flag['default']} for {server}; its --help says "
                f"{said[1] if said else 'nothing'}"
            )
            checked += 1
    assert checked >= 6


def _readme_arguments(tool: str) -> list[str]:
    """The argument names README.md's "What the model sees" gives a tool (``- **`tool`** `{a, b?, ...}```)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"- \*\*`{tool}`\*\* `\{{([^}}]*)\}}`", text)
    assert match is not None, f"README.md lists no arguments for {tool}"
    return [name.strip().rstrip("?") for name in match[1].split(",")]


@pytest.mark.parametrize(
    ("tool", "model"),
    [
        ("file_read", "mcp_server_file_read.server:FileReadInput"),
        ("file_write", "mcp_server_file_write.server:FileWriteInput"),
        ("shell_exec", "mcp_server_shell_exec.server:ShellExecInput"),
    ],
)
def test_the_readme_lists_every_argument_of_each_tool(tool: str, model: str) -> None:
    module, _, name = model.partition(":")
    fields = list(getattr(__import__(module, fromlist=[name]), name).model_fields)
    assert _readme_arguments(tool) == fields
