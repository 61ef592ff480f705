"""shell_exec makes its part of the copies' areas before its box begins (issue 44: what comes before the box holds it,
and the first answer, back): the area loads without the rest of the changes package, which the first call's copy
reader and judge load later, while the box starts."""

from __future__ import annotations

import subprocess
import sys


def test_the_copies_area_loads_without_the_copy_reader_the_judge_or_the_applier() -> None:
    code = (
        "import sys\n"
        "from mcp_server_guard.changes.area import CopyArea\n"
        "print(sorted(m for m in sys.modules if m.startswith('mcp_server_guard.changes.')))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert run.stdout.strip() == "['mcp_server_guard.changes.area']"


def test_the_package_still_names_the_copy_reader() -> None:
    from mcp_server_guard.changes import read_upper
    from mcp_server_guard.changes.upper import read_upper as in_its_module

    assert read_upper is in_its_module
