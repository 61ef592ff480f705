"""A check of the fast loop: ``uv run pytest -m "unit or memory" -p support.no_servers`` fails every test that starts
a server's console script, the CLI, the box (bubblewrap) or a third-party client (node) as a process.

An audit hook (``subprocess.Popen``, ``os.posix_spawn``, ``os.exec``) refuses such a start before it happens, so
the test that tried it errors with the program's name. Other processes (git, bash, a Python child running the
library) stay allowed: they are what the unit and memory tiers' code runs.
"""

from __future__ import annotations

import itertools
import os
import sys
from typing import Any

_PROGRAMS = ("bwrap", "node", "mcp-guard")
_PREFIXES = ("mcp-server-",)
_MODULES = ("mcp_server_file_read", "mcp_server_file_write", "mcp_server_shell_exec", "mcp_server_guard.admin")


def _words(args: Any) -> list[str]:
    if isinstance(args, (str, bytes, os.PathLike)):
        return [os.fsdecode(args)]
    try:
        return [os.fsdecode(a) for a in args]
    except TypeError:
        return []


def forbidden(executable: Any, args: Any) -> str | None:
    """The server, CLI, box or client this start would run, or None."""
    words = _words(args)
    programs = [os.path.basename(w) for w in [*_words(executable or ()), *words[:1]]]
    for program in programs:
        if program in _PROGRAMS or program.startswith(_PREFIXES):
            return program
    for flag, module in itertools.pairwise(words):
        if flag == "-m" and module.startswith(_MODULES):
            return f"-m {module}"
    return None


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event not in ("subprocess.Popen", "os.posix_spawn", "os.exec"):
        return
    found = forbidden(args[0], args[1])
    if found is not None:
        raise RuntimeError(f"the fast loop starts no server, CLI, box or client as a process: {found}")


def pytest_configure(config: Any) -> None:
    sys.addaudithook(_hook)
