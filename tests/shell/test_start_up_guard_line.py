"""Issue 45 item 5: every start of shell_exec says, in one line on stderr at the default log level, which guard is in
force for commands — the box (with copies and undo, read-only by the kernel, or writing the files directly) and the
command rules, or the command rules alone and why there is no box. Through the real console script, one start per
situation; the server ends when its stdin does."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support import console_script

SX = "mcp-server-shell-exec"
needs_box = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")


def _without_bwrap(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH has everything of the real one but bubblewrap."""
    shadow = tmp_path / "no-bwrap-bin"
    shadow.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        for entry in Path(directory).glob("*") if Path(directory).is_dir() else []:
            if entry.name != "bwrap" and not (shadow / entry.name).exists():
                (shadow / entry.name).symlink_to(entry)
    return {**os.environ, "PATH": str(shadow)}


def _guard(workspace: Path, *flags: str, env: dict[str, str] | None = None) -> tuple[str, str]:
    """The start-up's guard line, and all it said on stderr."""
    done = subprocess.run(
        [console_script(SX), "--audit-log", str(workspace.parent / "audit.jsonl"), *flags],
        cwd=workspace,
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith(f"{SX}: guard: ")]
    assert len(lines) == 1, done.stderr
    return lines[0].removeprefix(f"{SX}: guard: "), done.stderr


@needs_box
def test_the_start_up_names_the_box_with_copies_and_undo(workspace: Path) -> None:
    line, said = _guard(workspace)
    assert line.startswith("box (bubblewrap: bwrap+") and line.endswith("+ copies with undo + command rules"), said
    assert said.strip().splitlines()[-1].endswith(line)  # (said last)


@needs_box
def test_the_start_up_in_read_only_mode_names_the_box_read_only_by_the_kernel(workspace: Path) -> None:
    line, said = _guard(workspace, "--mode", "read-only")
    assert line.startswith("box (bubblewrap: bwrap+"), said
    assert "read-only (the kernel refuses every write to the project) + command rules" in line, said


@needs_box
def test_the_start_up_with_transactions_off_says_commands_write_the_files_directly(workspace: Path) -> None:
    line, said = _guard(workspace, "--transactions", "off")
    assert line.startswith("box (bubblewrap: bwrap+") and "+ command rules" in line, said
    assert "commands write the files directly (--transactions off); nothing can be undone" in line, said
    assert "copies" not in line


def test_the_start_up_without_bubblewrap_names_the_command_rules_alone(workspace: Path, tmp_path: Path) -> None:
    line, said = _guard(workspace, "--network", "deny", env=_without_bwrap(tmp_path))
    assert line.startswith("command rules only (no box: bubblewrap is not installed"), said
    assert line.endswith("commands write the files directly; nothing can be undone"), said
    assert "no box: bubblewrap is not installed" in said.splitlines()[0]  # (the note on what is missing stays first)


def test_the_start_up_with_the_sandbox_off_names_the_command_rules_alone(workspace: Path) -> None:
    line, said = _guard(workspace, "--sandbox", "off")
    assert line == (
        "command rules only (no box: --sandbox off); commands write the files directly; nothing can be undone"
    ), said
    assert "commands write the files directly (transaction: none)" in said  # (the earlier note stays)


def test_the_start_up_in_full_access_mode_names_the_command_rules_alone(workspace: Path) -> None:
    line, said = _guard(workspace, "--mode", "full-access")
    assert line == (
        "command rules only (no box: --mode full-access); commands write the files directly; nothing can be undone"
    ), said
    assert "sandbox off: commands run with the policy and the jail only" in said


def test_the_start_up_read_only_without_the_box_names_the_allow_list(workspace: Path) -> None:
    line, said = _guard(workspace, "--mode", "read-only", "--sandbox", "off")
    assert line.startswith("command rules only (no box: --sandbox off); read-only by the allow-list"), said
    assert "nothing else keeps commands from writing" in line
