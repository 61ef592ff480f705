"""What shell_exec's start loads before its box begins (issue 44): the box's start (bubblewrap, then its supervisor's
Python) runs on another CPU while the server loads the rest, so what the box does not need loads after it begins.

Each case runs in a fresh interpreter: imports change ``sys.modules`` for the whole process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_the_command_line_and_the_box_load_without_asyncio(tmp_path: Path) -> None:
    # Everything shell_exec's start imports up to Box.start: the command line (build_config), the protected paths,
    # the copies' area and the box itself. asyncio (and anyio's backend) come with the tool's modules, after.
    code = (
        "import sys\n"
        "import mcp_server_shell_exec.cli, mcp_server_guard.protected, mcp_server_guard.changes.area\n"
        "import mcp_server_guard.shell.sandbox.layers, mcp_server_guard.shell.sandbox.box\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'asyncio' or m.startswith('anyio._backends')))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["[]"]
