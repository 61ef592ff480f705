"""Real servers over JSON lines, several at once on one root, killed at fault points (red team 69)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from support import RawClient, console_script

FW = "mcp-server-file-write"
SX = "mcp-server-shell-exec"
OLD_NS = 1_000_000_000 * 10**9


def started(
    server: str, root: Path, state: Path, history: Path, env: dict[str, str] | None = None, *extra: str
) -> RawClient:
    state.mkdir(parents=True, exist_ok=True)
    args = [console_script(server), "--allow-path", str(root), "--audit-log", str(state / "audit.jsonl"),
            "--history-dir", str(history), *extra]  # fmt: skip
    raw = RawClient(args, root, env={**os.environ, **(env or {})}, stderr=state / f"{server}-{history.name}.err")
    raw.initialize()
    return raw


def killed_at(n: int, trace: Path | None = None) -> dict[str, str]:
    return {"MCP_GUARD_KILL_AT": str(n), **({"MCP_GUARD_KILL_TRACE": str(trace)} if trace else {})}


def ask(
    raw: RawClient, tool: str, arguments: dict[str, Any], timeout: float = 60, *, close: bool = True
) -> dict[str, Any] | None:
    """The tool's result, or None when the server died first."""
    raw.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
    try:
        while True:
            message = raw.recv(timeout=timeout)
            if message.get("id") == 7:
                return dict(message["result"])
    except AssertionError:
        if raw.proc.wait(timeout=30) is None:
            raise
        return None
    finally:
        if close:
            raw.close()


def undo(audit_id: str, state: Path, history: Path, *extra: str, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        [console_script("mcp-guard"), "undo", audit_id, "--audit-log", str(state / "audit.jsonl"),
         "--history-dir", str(history), *extra],
        capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})},
    )  # fmt: skip


def records(history: Path) -> dict[str, dict[str, Any]]:
    calls = history / "calls"
    found = {}
    for path in calls.glob("*.json") if calls.is_dir() else []:
        found[path.stem] = json.loads(path.read_text())
    return found


def start_and_end(server: str, root: Path, state: Path, history: Path, env: dict[str, str] | None = None) -> bool:
    """Start a server and end it at once; False when it died before its handshake (killed at a fault point)."""
    state.mkdir(parents=True, exist_ok=True)
    args = [console_script(server), "--allow-path", str(root), "--audit-log", str(state / "audit.jsonl"),
            "--history-dir", str(history)]  # fmt: skip
    raw = RawClient(args, root, env={**os.environ, **(env or {})}, stderr=state / f"{server}-{history.name}.err")
    try:
        raw.initialize()
        return True
    except (AssertionError, BrokenPipeError):
        return False
    finally:
        with contextlib.suppress(BrokenPipeError):
            raw.close()


def project(base: Path, *, more: bool = False) -> tuple[Path, Path]:
    """A project (``<base>/root``: tree/sub/f0..f2.txt and edit.txt; ``more``: gone/deep/g0..g2 and keep/k0..k2 too),
    every entry at an old time, and a state directory beside it: (root, state)."""
    root, state = base / "root", base / "state"
    (root / "tree" / "sub").mkdir(parents=True)
    state.mkdir()
    for i in range(3):
        (root / "tree" / "sub" / f"f{i}.txt").write_text(f"f{i}\n")
    if more:
        for top, sub, stem in (("gone", "deep", "g"), ("keep", "", "k")):
            (root / top / sub).mkdir(parents=True, exist_ok=True)
            for i in range(3):
                (root / top / sub / f"{stem}{i}").write_text(f"{stem}{i}\n")
    (root / "edit.txt").write_text("before\n")
    aged(root)
    return root, state


def aged(root: Path) -> None:
    """Every entry of ``root``, and ``root`` itself, given an old time (what a command sets on purpose then shows)."""
    for directory, dirs, files in os.walk(root, topdown=False):
        for name in files + dirs:
            os.utime(os.path.join(directory, name), ns=(OLD_NS, OLD_NS))
    os.utime(root, ns=(OLD_NS, OLD_NS))
