"""A server's everyday command line is read without typer (``serving.options.fast_arguments``, issue 44): for
every line it takes, the command gets exactly what typer gives it; every other line is left to typer."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from mcp_server_guard.serving.launch import typer_app
from mcp_server_guard.serving.options import fast_arguments

SERVERS = ("mcp_server_file_read", "mcp_server_file_write", "mcp_server_shell_exec")

LINES: list[list[str]] = [
    [],
    ["--launch-dir", "/tmp"],
    ["--launch-dir=/tmp"],
    ["--allow-path", "/tmp", "--allow-path", "/usr", "--allow-path=/etc"],
    ["--allow-path", "relative/dir"],
    ["--allow-path", "~"],
    ["--allow-path", "~/nowhere"],
    ["--allow-path", " "],
    ["--allow-path", ""],
    ["--allow-path="],
    ["--launch-dir", "~nobody-here"],
    ["--symlinks", "reject"],
    ["--symlinks", "follow", "--symlinks", "reject"],
    ["--symlinks", "REJECT"],
    ["--symlinks", "bogus"],
    ["--mode", "read-only"],
    ["--mode", "full-access"],
    ["--mode", "Read-Only"],
    ["--mode"],
    ["--policy", "readonly"],
    ["--policy", "some/file.toml", "--policy", "other.toml"],
    ["--policy", "-"],
    ["--policy", "--mode"],
    ["--audit-log", "/tmp/a.jsonl"],
    ["--audit-log", "a b.jsonl"],
    ["--log-level", "DEBUG"],
    ["--log-level", "debug"],
    ["--log-level", "Warning"],
    ["--log-level", "LOUD"],
    ["--history-dir", "/tmp/h"],
    ["--sandbox", "off"],
    ["--sandbox", "required"],
    ["--sandbox-read", "jail"],
    ["--network", "deny"],
    ["--approvals-file", "/tmp/approvals.json"],
    ["--transactions", "off"],
    ["--transactions", "Off"],
    ["--version"],
    ["--help"],
    ["-h"],
    ["--mode", "read-only", "--version"],
    ["--modes", "read-only"],
    ["--mod", "read-only"],
    ["positional"],
    ["--"],
    ["--", "--mode", "read-only"],
    ["-"],
    ["--mode=read-only=x"],
    ["--audit-log", "x\udcff"],
    ["--launch-dir", "/tmp", "--mode", "workspace-write", "--audit-log", "/tmp/a", "--history-dir", "/tmp/h"],
]


def _typer_reads(params: list[Any], argv: list[str]) -> dict[str, Any] | str:
    """What typer gives the command for ``argv`` (or how it ends: an exception's name)."""
    got: dict[str, Any] = {}

    def capture(**kwargs: Any) -> None:
        got.update(kwargs)

    command = typer.main.get_command(typer_app(capture, params, None))
    try:
        command.main(argv, prog_name="x", standalone_mode=False)
    except (typer.Exit, typer.TyperException, typer.Abort, SystemExit) as exc:
        return type(exc).__name__
    return got if got else "nothing"


@pytest.mark.parametrize("server", SERVERS)
def test_every_line_read_without_typer_gets_what_typer_gives(server: str) -> None:
    params = importlib.import_module(f"{server}.cli").main.parameters
    names = {p.name for p in params}
    taken = 0
    for argv in LINES:
        fast = fast_arguments(params, argv)
        if fast is None:
            continue
        taken += 1
        expected = _typer_reads(params, argv)
        assert isinstance(expected, dict), (argv, expected)
        assert set(fast) == names, argv
        for name in names:
            assert fast[name] == expected[name], (argv, name, fast[name], expected[name])
            assert type(fast[name]) is type(expected[name]), (argv, name)
    assert taken >= 10


def test_what_is_left_to_typer() -> None:
    params = importlib.import_module("mcp_server_shell_exec.cli").main.parameters
    for argv in (
        ["--help"],
        ["--version"],
        ["--mode", "Read-Only"],
        ["--allow-path", "~/x"],
        ["--allow-path", ""],
        ["--policy", "-"],
        ["--mode"],
        ["positional"],
        ["--modes", "read-only"],
    ):
        assert fast_arguments(params, argv) is None, argv


def test_a_server_start_does_not_import_typer(tmp_path: Path) -> None:
    """The command line read, the config built: typer is not loaded (a usage error still reads as it did)."""
    code = (
        "import sys\n"
        "from mcp_server_file_read import cli\n"
        "from mcp_server_guard.serving.options import fast_arguments\n"
        "args = fast_arguments(cli.main.parameters, sys.argv[1:])\n"
        "assert args is not None\n"
        "print('typer' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "--launch-dir", str(tmp_path), "--mode", "read-only"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == "False"
    bad = subprocess.run(
        [sys.executable, "-m", "mcp_server_file_read", "--mode", "bogus"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert bad.returncode == 2
    assert "Invalid value for '--mode'" in bad.stderr
