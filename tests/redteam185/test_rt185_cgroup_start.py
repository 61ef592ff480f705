"""Red team 185: the pids cgroup's move begun before the configuration is read (fef15f4; F1 answered).

As root (cgroup v1 here: /sys/fs/cgroup/pids), every server start with the box must end with the server in
``mcp-guard-<pid>`` whose ``pids.max`` is the policy's ``max_processes`` + 64, and every start that does not serve
must leave no cgroup behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from support import RawClient, console_script

HERE = Path(__file__).parent
AS_ROOT = os.geteuid() == 0 and (
    Path("/sys/fs/cgroup/pids").is_dir() or "pids" in Path("/sys/fs/cgroup/cgroup.controllers").read_text()
    if Path("/sys/fs/cgroup/cgroup.controllers").exists()
    else Path("/sys/fs/cgroup/pids").is_dir()
)
needs_root = pytest.mark.skipif(not AS_ROOT, reason="needs root and a pids cgroup")
SERVER_PIDS = 64
DEFAULT_PROCESSES = 256  # the packaged policy's [shell_exec] max_processes


def _cgroups_of(pid: int) -> list[Path]:
    return [p for base in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/pids")) for p in base.glob(f"mcp-guard-{pid}")]


def _remove(groups: list[Path]) -> None:
    for group in groups:
        with contextlib.suppress(OSError):
            group.rmdir()


def _env() -> dict[str, str]:
    keep = ("PATH", "HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "LANG", "TMPDIR",
            "MCP_GUARD_RUNTIME_DIR")  # fmt: skip
    return {k: v for k, v in os.environ.items() if k in keep}


def _default_processes() -> int:
    from mcp_server_guard.policy import load_policy

    return load_policy(None).shell_exec.max_processes


# -- 1. the budget a served start really has ---------------------------------------------------------------------


@needs_root
@pytest.mark.parametrize(
    ("flags", "processes"),
    [
        ([], None),
        (["--sandbox", "required"], None),
        (["--mode", "read-only"], None),
        (["--transactions", "off", "--network", "deny"], None),
        (["--network", "allow", "--policy", str(HERE / "rt185_policy_processes_100.toml")], 100),
    ],
)
def test_budget_of_a_served_start_is_the_policy_limit_plus_64(
    workspace: Path, tmp_path: Path, flags: list[str], processes: int | None
) -> None:
    argv = [console_script("mcp-server-shell-exec"), "--audit-log", str(tmp_path / "a.jsonl"), *flags]
    client = RawClient(argv, workspace, env=_env(), stderr=tmp_path / "err.txt")
    pid = client.proc.pid
    try:
        client.initialize()
        own = Path(f"/proc/{pid}/cgroup").read_text(encoding="ascii")
        groups = _cgroups_of(pid)
        assert f"mcp-guard-{pid}" in own and len(groups) == 1, (own, groups, client.stderr_lines())
        budget = (groups[0] / "pids.max").read_text(encoding="ascii").strip()
        expected = (processes or _default_processes()) + SERVER_PIDS
        assert budget == str(expected), (budget, expected)
        answer = client.request(1, "tools/call", {"name": "shell_exec", "arguments": {"command": "true"}}, timeout=60)
        assert not answer["result"].get("isError"), answer
        for child in psutil.Process(pid).children(recursive=True):
            with contextlib.suppress(psutil.Error, OSError):
                assert f"mcp-guard-{pid}" in Path(f"/proc/{child.pid}/cgroup").read_text(encoding="ascii")
    finally:
        client.close()
    left = _cgroups_of(pid)
    _remove(left)
    assert not left


# -- 2. a stop signal while the configuration is read ------------------------------------------------------------


def _start_blocked_on_policy(workspace: Path, tmp_path: Path) -> subprocess.Popen[bytes]:
    """A server whose --policy is a FIFO nobody writes: it blocks in build_config, after ``_ahead`` began the move."""
    fifo = tmp_path / "policy.toml"
    os.mkfifo(fifo)
    argv = [console_script("mcp-server-shell-exec"), "--audit-log", str(tmp_path / "a.jsonl"), "--policy", str(fifo)]
    return subprocess.Popen(argv, cwd=workspace, env=_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip


def _wait_for_cgroup(pid: int, proc: subprocess.Popen[bytes]) -> list[Path]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        groups = _cgroups_of(pid)
        if groups and f"mcp-guard-{pid}" in Path(f"/proc/{pid}/cgroup").read_text(encoding="ascii"):
            return groups
        time.sleep(0.05)
    return []


def _signalled_during_config_read(workspace: Path, tmp_path: Path, sig: signal.Signals) -> tuple[list[Path], str]:
    proc = _start_blocked_on_policy(workspace, tmp_path)
    try:
        groups = _wait_for_cgroup(proc.pid, proc)
        assert groups, "the move into the cgroup did not begin while the policy was read"
        budget = (groups[0] / "pids.max").read_text(encoding="ascii").strip()
        os.kill(proc.pid, sig)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    left = _cgroups_of(proc.pid)
    _remove(left)
    return left, budget


@needs_root
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_stop_signal_while_policy_is_read_leaves_no_cgroup(
    workspace: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    # F1: SIGTERM or SIGHUP while the policy was read (a FIFO: as long as one likes) killed the start where it stood,
    # and the cgroup its move had made stayed. Until the server's own stop handlers, a stop signal unwinds the start.
    left, budget = _signalled_during_config_read(workspace, tmp_path, sig)
    assert budget == str(SERVER_PIDS)  # (meanwhile the server's own headroom: never no budget, F2)
    assert not left, f"{sig.name} during the configuration's read left {left}"


@needs_root
def test_control_sigint_while_policy_is_read_leaves_no_cgroup(workspace: Path, tmp_path: Path) -> None:
    left, _ = _signalled_during_config_read(workspace, tmp_path, signal.SIGINT)
    assert not left


# -- 3. starts that never reach the command ----------------------------------------------------------------------


@needs_root
@pytest.mark.parametrize(
    "flags",
    [["--help"], ["--version"], ["--sandbox", "bogus"], ["--no-such-flag"], ["--mode"],
     ["--policy", "{root}/bad.toml"], ["--policy", "{root}/unreadable.toml"]],
)  # fmt: skip
def test_control_help_version_and_usage_errors_leave_no_cgroup(
    workspace: Path, tmp_path: Path, flags: list[str]
) -> None:
    (workspace / "bad.toml").write_text("[shell_exec\nmax_processes = =", encoding="utf-8")
    (workspace / "unreadable.toml").mkdir()  # (a directory: unreadable as a file, even by root)
    argv = [console_script("mcp-server-shell-exec"), "--audit-log", str(tmp_path / "a.jsonl")]
    proc = subprocess.Popen([*argv, *(f.format(root=workspace) for f in flags)], cwd=workspace, env=_env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    _out, err = proc.communicate(timeout=60)
    left = _cgroups_of(proc.pid)
    _remove(left)
    assert not left, (flags, err)
