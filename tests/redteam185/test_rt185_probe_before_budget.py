"""Red team 185 F2 (answered): a process the server starts before ``make_pids_cgroup(limit)`` has set the budget.

``plan`` (layers.begin) runs the network-namespace probe (``python -c ... _enter_netns()``, with ``--network deny``)
BEFORE it calls ``make_pids_cgroup``: since fef15f4 the server is by then (usually) in ``mcp-guard-<pid>`` with
``pids.max`` = max, so the probe is born outside any budget (at cc1b579 the cgroup the move made had its budget from
the start). Now the cgroup is made with the server's own headroom, and given the commands' budget before the box
starts. ``rt185_site/sitecustomize.py`` (observation only) records where each ``-c`` process was born.

Set RT185_BIN to another venv's bin directory to run the same start of another commit (e.g. /work/rt185p/.venv/bin).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from support import RawClient

HERE = Path(__file__).parent
AS_ROOT = os.geteuid() == 0 and Path("/sys/fs/cgroup/pids").is_dir()
BIN = Path(os.environ.get("RT185_BIN", str(Path(sys.executable).parent)))


def _env(seen: Path) -> dict[str, str]:
    keep = ("PATH", "HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "LANG", "TMPDIR",
            "MCP_GUARD_RUNTIME_DIR")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["PYTHONPATH"] = str(HERE / "rt185_site")
    env["RT185_SEEN"] = str(seen)
    return env


def _probes_seen(workspace: Path, tmp_path: Path, flags: list[str]) -> list[list[str]]:
    seen = tmp_path / "seen.txt"
    argv = [str(BIN / "mcp-server-shell-exec"), "--audit-log", str(tmp_path / "a.jsonl"), *flags]
    client = RawClient(argv, workspace, env=_env(seen), stderr=tmp_path / "err.txt")
    try:
        client.initialize()
        answer = client.request(1, "tools/call", {"name": "shell_exec", "arguments": {"command": "true"}}, timeout=60)
        assert not answer["result"].get("isError"), answer
    finally:
        client.close()
    return [line.split() for line in seen.read_text(encoding="ascii").splitlines()] if seen.exists() else []


@pytest.mark.skipif(not AS_ROOT, reason="needs root and a pids cgroup")
def test_network_probe_is_never_born_outside_a_pids_budget(workspace: Path, tmp_path: Path) -> None:
    probes = _probes_seen(workspace, tmp_path, ["--network", "deny"])
    assert probes, "no network-namespace probe was seen (the machine cannot make one?)"
    unbudgeted = [p for p in probes if p[2] in ("max", "(root cgroup)")]
    assert not unbudgeted, f"processes born outside the pids budget: {unbudgeted}"


@pytest.mark.skipif(not AS_ROOT, reason="needs root and a pids cgroup")
def test_control_default_network_starts_no_process_before_the_budget(workspace: Path, tmp_path: Path) -> None:
    probes = _probes_seen(workspace, tmp_path, [])
    assert not [p for p in probes if p[2] in ("max", "(root cgroup)")], probes
