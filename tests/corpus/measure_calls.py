"""How a small model's wrong calls are answered: each is sent to the real server; it is handled when the server
takes it as meant (lenient where unambiguous) or refuses it with an example call that, sent as it is, succeeds.

    uv run python tests/corpus/measure_calls.py [--misses]

Prints the share handled per tool and overall; ``--misses`` lists the calls that were not.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult

CORPUS = Path(__file__).with_name("wrong_calls.jsonl")
SCRIPTS = {
    "file_read": "mcp-server-file-read",
    "file_write": "mcp-server-file-write",
    "shell_exec": "mcp-server-shell-exec",
}
ERROR_META_KEY = "mcp-guard/error"
FILES = {
    "README.md": "# Demo project\n\nRead me first.\n",
    "notes.md": "notes\n",
    "src/main.py": "print('main')\n",
    "src/utils.py": "def helper():\n    return 1\n",
    "docs/guide.md": "# Guide\n",
    "data/config.json": '{"debug": false}\n',
    "tests/test_main.py": "def test_main():\n    assert True\n",
}


@dataclass
class Outcome:
    tool: str
    arguments: dict[str, Any]
    why: str
    handled: bool
    how: str  # "accepted", "example worked", or what went wrong
    example: dict[str, Any] | None = None


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)

    def share(self, tool: str | None = None) -> tuple[int, int]:
        chosen = [o for o in self.outcomes if tool is None or o.tool == tool]
        return sum(o.handled for o in chosen), len(chosen)


def make_workspace(base: Path) -> tuple[Path, Path]:
    """A fake HOME with the project inside it (the launch directory)."""
    home = base / "home"
    project = home / "project"
    for rel, text in FILES.items():
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return home, project


def succeeded(result: CallToolResult) -> bool:
    if result.is_error:
        return False
    out = result.structured_content or {}
    return bool(out.get("exitCode", 0) == 0)


def has_placeholder(arguments: dict[str, Any]) -> bool:
    return any(isinstance(v, str) and v.startswith("<") and v.endswith(">") for v in arguments.values())


def script(name: str) -> str:
    return shutil.which(name) or str(Path(sys.executable).parent / name)


async def measure(base: Path) -> Report:
    home, project = make_workspace(base)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "XDG_STATE_HOME": str(base / "state"),
           "MCP_GUARD_RUNTIME_DIR": str(base / "servers")}  # fmt: skip
    cases = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    report = Report()
    for tool, name in SCRIPTS.items():
        params = StdioServerParameters(
            command=script(name), args=["--audit-log", str(base / "audit.jsonl")], cwd=str(project), env=env
        )
        async with Client(params, mode="legacy") as client:
            for case in (c for c in cases if c["tool"] == tool):
                report.outcomes.append(await judge(client, case))
    return report


async def judge(client: Client, case: dict[str, Any]) -> Outcome:
    tool, arguments, why = case["tool"], case["arguments"], case["why"]
    with anyio.fail_after(60):
        result = await client.call_tool(tool, arguments)
    if succeeded(result):
        return Outcome(tool, arguments, why, True, "accepted")
    payload = (result.meta or {}).get(ERROR_META_KEY) or {}
    example = payload.get("example")
    if not isinstance(example, dict):
        return Outcome(tool, arguments, why, False, f"{payload.get('code')} without an example")
    fixed = example.get("arguments", {})
    if example.get("name") != tool or has_placeholder(fixed):
        return Outcome(tool, arguments, why, False, "example needs the model's own value", example)
    with anyio.fail_after(60):
        retried = await client.call_tool(tool, fixed)
    if succeeded(retried):
        return Outcome(tool, arguments, why, True, "example worked", example)
    again = (retried.meta or {}).get(ERROR_META_KEY) or {}
    return Outcome(tool, arguments, why, False, f"example failed: {again.get('code')}", example)


def run() -> Report:
    with tempfile.TemporaryDirectory() as tmp:
        return anyio.run(measure, Path(tmp))


def main() -> None:
    report = run()
    for tool in SCRIPTS:
        ok, total = report.share(tool)
        print(f"{tool:<11} {ok}/{total} handled ({100 * ok / total:.0f}%)")
    ok, total = report.share()
    print(f"{'all':<11} {ok}/{total} handled ({100 * ok / total:.1f}%)")
    if "--misses" in sys.argv:
        for o in report.outcomes:
            if not o.handled:
                print(f"MISS {o.tool} {json.dumps(o.arguments)} ({o.why}): {o.how} {json.dumps(o.example or {})}")


if __name__ == "__main__":
    main()
