"""Red team 182 F1: a module a lazy import (issue 44) now loads after the session began is taken from the project.

With the project on ``sys.path`` (the server started as ``python -m mcp_server_file_write`` from the project: its
``__main__`` supports it, and ``sys.path[0]`` is then the working directory, which ``paths.code_dirs`` never
protects), the standard library's ``tomllib`` was loaded at every start before af5cef6 (``policy.py``). Since the
change it loads with the git rule (``mise_config``, ``hook_configs``, ``package_*``), that is with file_write's first
write. A ``tomllib.py`` the agent put in the project meanwhile (by shell_exec here: a plain new file, no question of
the guard's) is then run by file_write's own process, outside any box: here it only leaves a marker in HOME.

Control: the same session with file_write started by its console script (``sys.path[0]`` is the environment's
``bin``, a protected code directory): the marker is never made. (And before af5cef6 with ``python -m``: the start
imported the standard ``tomllib`` before any call; shown by hand in the report.)

Answered by class (``paths.imports_only_from_code_dirs``, at every server's start): ``sys.path`` keeps only the
places ``code_dirs`` protects — ``''`` and every directory holding the working directory or HOME are taken off —, so
no module a server imports later, standard (``tomllib``) or a dependency (``magic``, the class before the change),
is looked up in the project.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from support import RawClient, console_script
from support.boxed import Person, run, shell

pytestmark = pytest.mark.anyio

SHADOW = Path(__file__).with_name("rt182_shadow_module.txt")


def _file_write(root: Path, state: Path, *, as_module: bool) -> RawClient:
    state.mkdir(parents=True, exist_ok=True)
    head = [sys.executable, "-m", "mcp_server_file_write"] if as_module else [console_script("mcp-server-file-write")]
    args = [*head, "--allow-path", str(root), "--audit-log", str(state / "audit.jsonl"),
            "--history-dir", str(state / "history")]  # fmt: skip
    raw = RawClient(args, root, env=None, stderr=state / "file_write.err")
    raw.initialize()
    return raw


def _write(raw: RawClient, path: str, content: str) -> dict[str, Any]:
    raw.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
              "params": {"name": "file_write", "arguments": {"path": path, "content": content}}})  # fmt: skip
    while True:
        message = raw.recv(timeout=60)
        if message.get("id") == 7:
            return dict(message["result"])


async def _session(workspace: Path, isolated_home: Path, *, as_module: bool, module: str = "tomllib") -> Path:
    marker = isolated_home / "rt182-shadow-ran.txt"
    (workspace / ".t").mkdir()
    shutil.copyfile(SHADOW, workspace / ".t" / "shadow.txt")
    raw = _file_write(workspace, workspace.parent / "fw-state", as_module=as_module)  # both servers start
    try:
        assert not marker.exists()  # nothing ran at the start
        async with shell(workspace, Person()) as client:  # the agent plants the module with a plain command
            out = await run(client, f"cp .t/shadow.txt {module}.py")
        assert out.get("exitCode") == 0, out
        assert (workspace / f"{module}.py").exists(), out
        result = await anyio.to_thread.run_sync(_write, raw, "notes.txt", "the first write of the session\n")
        assert not result.get("isError"), result
    finally:
        raw.close()
    return marker


@pytest.mark.parametrize("module", ["tomllib", "magic"])
async def test_module_planted_in_session_runs_in_file_write_started_as_python_m(
    workspace: Path, isolated_home: Path, module: str
) -> None:
    """tomllib: late since af5cef6 (fails from it on); magic (``files.mime``): late before it too (the class)."""
    marker = await _session(workspace, isolated_home, as_module=True, module=module)
    assert not marker.exists(), f"the project's {module}.py ran in file_write's process: {marker.read_text()}"


@pytest.mark.parametrize("module", ["tomllib", "magic"])
async def test_control_console_script_does_not_run_the_planted_module(
    workspace: Path, isolated_home: Path, module: str
) -> None:
    marker = await _session(workspace, isolated_home, as_module=False, module=module)
    assert not marker.exists()
