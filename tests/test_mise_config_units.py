"""What a project's mise config runs on entering the project and puts on PATH, read as TOML as mise reads it (red
team 146 F5): every TOML spelling of one key counts — a dotted key, a table, an inline table, an array over lines, an
array of ``[[env]]`` tables — and a file TOML cannot parse is still read line by line."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.mise_config import mise_files, mise_path_dirs, mise_runs

SPELLINGS = [
    '[env]\n_.source = "./scripts/env.sh"\n',
    'env._.source = "./scripts/env.sh"\n',
    '[env]\n_.source = [\n  "./scripts/env.sh",\n]\n',
    '[env]\n_ = { source = "./scripts/env.sh" }\n',
    '[env._]\nsource = "./scripts/env.sh"\n',
    '[env]\n_.source = { path = "./scripts/env.sh", redact = true }\n',
    '[[env]]\n_.source = "./scripts/env.sh"\n',
    '[env]\n_.source = "{{config_root}}/scripts/env.sh"\n',
    '[env]\n_.source = "./scripts/env.sh"\nbroken = \n',  # (TOML refuses it: read line by line)
]


@pytest.mark.parametrize("text", SPELLINGS)
def test_every_toml_spelling_of_a_sourced_file_is_read(text: str) -> None:
    assert "scripts/env.sh" in mise_runs(text)


def test_hooks_run_and_tasks_do_not() -> None:
    text = '[hooks]\nenter = ["sh tools/enter.sh"]\n[tasks.lint]\nrun = "sh tools/lint.sh"\n'
    runs = mise_runs(text)
    assert "tools/enter.sh" in runs and "tools/lint.sh" not in runs


@pytest.mark.parametrize(
    "text",
    [
        '[env]\n_.path = ["./bin"]\n',
        'env._.path = "./bin"\n',
        '[env._]\npath = ["{{config_root}}/bin"]\n',
    ],
)
def test_a_directory_put_on_path_is_found_in_every_spelling(text: str) -> None:
    assert any(d.rstrip("/").endswith("bin") for d in mise_path_dirs(text))


@pytest.mark.parametrize("text", ['[env]\n_.python.venv = ".venv"\n', 'env._.python = { venv = { path = ".venv" } }\n'])
def test_a_virtual_environment_puts_its_bin_on_path(text: str) -> None:
    assert ".venv/bin" in mise_path_dirs(text)


def test_every_config_file_mise_reads_is_found(tmp_path: Path) -> None:
    for name in ("mise.toml", ".config/mise/config.toml", ".config/mise/conf.d/a.toml", "mise.ci.toml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    names, more = mise_files(str(tmp_path))
    assert set(names) >= {"mise.toml", ".config/mise/config.toml", ".config/mise/conf.d/a.toml", "mise.ci.toml"}
    assert not more


def test_a_task_a_hook_runs_and_a_templates_command_are_read() -> None:
    text = ('[env]\nGREETING = "{{ exec(command=\'sh tools/greet.sh\') }}"\n[hooks]\nenter = { task = "setup" }\n'
            '[tasks.setup]\nrun = "sh tools/setup.sh"\n[tasks.lint]\nrun = "sh tools/lint.sh"\n')  # fmt: skip
    runs = mise_runs(text)
    assert "tools/greet.sh" in runs and "tools/setup.sh" in runs and "mise-tasks/setup" in runs
    assert "tools/lint.sh" not in runs
