"""What the hook reader names as a class, not by the spellings a red team used (red team 163): a program given a
path in its environment (any variable's value read as a command line, git's ``!`` dropped), a git setting written
anywhere as ``key=value`` or in a git config file a hook hands git, the top of the work tree spelled in a word, and
a program's script by any suffix that is not data's. Each text is a pre-commit hook; ``_hooks_rule`` says whether a
change of the path is one to a file the hook runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mcp_server_guard.git_dirs import _hooks_rule
from mcp_server_guard.hook_interpreters import _installed
from mcp_server_guard.hook_runs import run_by_hooks


def _found(root: Path, hook: str, files: dict[str, str] | None = None) -> tuple[list[str], str]:
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "hooks" / "pre-commit").write_text(f"#!/bin/sh\n{hook}\n")
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    real = os.path.realpath(root)
    return run_by_hooks([str(root / ".git" / "hooks")], real, None), real


@pytest.mark.parametrize(
    "hook",
    [
        'GIT_SSH_COMMAND="tools/ssh -q" git fetch',
        "export GIT_PAGER=tools/pager\ngit log -1",
        "declare CHECKER=tools/check; git -c core.editor=true commit",
        "LESSOPEN='|tools/pager %s' git log",
        "GIT_CONFIG_PARAMETERS=\"'alias.chk=!tools/ssh'\" git chk",
    ],
)
def test_a_path_a_program_takes_from_its_environment_is_what_the_hook_runs(tmp_path: Path, hook: str) -> None:
    found, real = _found(tmp_path, hook)
    named = [p for p in ("tools/ssh", "tools/pager", "tools/check") if _hooks_rule(f"{real}/{p}", found)]
    assert named, found
    assert _hooks_rule(f"{real}/src/app.py", found) is None


def test_a_git_config_file_the_hook_hands_git_is_read_for_what_it_runs(tmp_path: Path) -> None:
    config = '[core]\n\tpager = less\n[alias]\n\tchk = "!sh tools/lint-check.sh"\n'
    found, real = _found(tmp_path, "GIT_CONFIG_GLOBAL=tools/gitconfig git chk", {"tools/gitconfig": config})
    assert _hooks_rule(f"{real}/tools/gitconfig", found) is not None, found
    assert _hooks_rule(f"{real}/tools/lint-check.sh", found) is not None, found


def test_the_top_of_the_work_tree_spelled_in_a_word_is_the_top(tmp_path: Path) -> None:
    hook = 'git -c include.path="$(git rev-parse --show-toplevel)/tools/gitconfig" chk\nsh "$PWD/tools/run.sh"'
    found, real = _found(tmp_path, hook)
    assert _hooks_rule(f"{real}/tools/gitconfig", found) is not None, found
    assert _hooks_rule(f"{real}/tools/run.sh", found) is not None, found


@pytest.mark.parametrize(
    ("hook", "script"),
    [
        ("cmake -P lint.cmake 2>/dev/null || true", "lint.cmake"),
        ("bats checks.bats || true", "checks.bats"),
        ("runghc Lint.hs 2>/dev/null", "Lint.hs"),
        ("emacs --batch -l check.el", "check.el"),
    ],
)
def test_a_programs_script_by_any_suffix_is_named_before_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hook: str, script: str
) -> None:
    bin_dir = tmp_path / "bin"  # (the programs installed: a name run by a program nobody has names nothing)
    bin_dir.mkdir()
    for program in ("cmake", "bats", "runghc", "emacs"):
        (bin_dir / program).write_text("#!/bin/sh\n")
        (bin_dir / program).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    _installed.cache_clear()
    try:
        found, real = _found(tmp_path / "repo", hook)
    finally:
        _installed.cache_clear()
    assert _hooks_rule(f"{real}/{script}", found) is not None, found


@pytest.mark.parametrize(
    ("hook", "data"),
    [
        ("pytest --junitxml=report.xml tests", "report.xml"),
        ("npx prettier --check CHANGELOG.md", "CHANGELOG.md"),
        ("curl -fsS https://example.com/ping > /dev/null || true", "example.com"),
        ("git commit -F msg.txt", "msg.txt"),
    ],
)
def test_a_data_file_a_hook_names_that_is_not_there_is_not_protected(tmp_path: Path, hook: str, data: str) -> None:
    found, real = _found(tmp_path, hook)
    assert _hooks_rule(f"{real}/{data}", found) is None, found


def test_a_long_run_of_options_is_read_in_linear_time(tmp_path: Path) -> None:
    start = time.monotonic()
    _found(tmp_path, "true " + "-c." * 80_000 + "\ntrue " + "-x" + "a." * 100_000)
    assert time.monotonic() - start < 20  # (quadratic: minutes; bench/ keeps the figures, this only the class)


@pytest.mark.parametrize(
    ("hook", "files"),
    [
        ("./scripts/pre", {"scripts/pre": "#!/bin/zsh -f\nscripts/lint-check\n"}),
        ("./scripts/pre.hook", {"scripts/pre.hook": "#!/bin/sh -e\nscripts/lint-check\n"}),
        ("bash -x scripts/pre.inc", {"scripts/pre.inc": "scripts/lint-check\n"}),
        ("echo scripts/env.d\nsource scripts/env.d", {"scripts/env.d": "scripts/lint-check\n"}),
        ("./scripts/pre", {"scripts/pre": "#!/usr/bin/env -S make -f\nall:\n\tscripts/lint-check\n"}),
    ],
)
def test_a_text_run_as_shell_or_by_make_is_read_for_what_it_runs_whatever_its_name(
    tmp_path: Path, hook: str, files: dict[str, str]
) -> None:
    found, real = _found(tmp_path, hook, files)
    assert _hooks_rule(f"{real}/scripts/lint-check", found) is not None, found


def test_a_python_scripts_lines_are_not_read_as_shell(tmp_path: Path) -> None:
    script = "#!/usr/bin/env python3\nimport subprocess\nprint('scripts/notes')\n"
    found, real = _found(tmp_path, "./scripts/pre.py", {"scripts/pre.py": script, "scripts/notes": "x\n"})
    assert _hooks_rule(f"{real}/scripts/pre.py", found) is not None
    assert _hooks_rule(f"{real}/scripts/notes", found) is None, found


def test_dotted_names_of_code_read_as_shell_name_no_files(tmp_path: Path) -> None:
    found, real = _found(tmp_path, "\n".join(f"call module{i}.attribute{i}" for i in range(3000)))
    assert _hooks_rule(f"{real}/src/app.py", found) is None
    assert _hooks_rule(f"{real}/module1.attribute1", found) is None


@pytest.mark.parametrize(
    ("hook", "files", "runs"),
    [
        ("npm test", {"package.json": '{"scripts": {"test": "sh ci/test.sh"}}'}, "ci/test.sh"),
        ("yarn lint", {"package.json": '{"scripts": {"lint": "node tools/lint.mjs"}}'}, "tools/lint.mjs"),
        ("pnpm --dir web run check", {"web/package.json": '{"scripts": {"precheck": "sh pre.sh"}}'}, "web/pre.sh"),
        ("bun run --silent fmt", {"package.json": '{"scripts": {"fmt": "bin/fmt"}}'}, "bin/fmt"),
    ],
)
def test_a_package_script_a_hook_runs_is_read_for_what_it_runs(
    tmp_path: Path, hook: str, files: dict[str, str], runs: str
) -> None:
    found, real = _found(tmp_path, hook, files)
    assert _hooks_rule(f"{real}/{runs}", found) is not None, found
    assert _hooks_rule(f"{real}/src/app.js", found) is None


@pytest.mark.parametrize(
    "hook",
    [
        "true" + " " * 60_000 + "true",
        "check" + " " * 60_000 + "() {",
        "set --" + " " * 60_000 + "x",
        "npm" + " " * 60_000 + "run lint",
    ],
)
def test_a_long_run_of_blanks_is_read_in_linear_time(tmp_path: Path, hook: str) -> None:
    start = time.monotonic()
    _found(tmp_path, hook)
    assert time.monotonic() - start < 20  # (quadratic: a minute or more; bench/ keeps figures, this only the class)


@pytest.mark.parametrize(
    ("hook", "free"),
    [
        ('swift package --disable-sandbox plugin lefthook "$@"', "package.json"),
        ("node --test test/", "test/new.test.js"),
        ("bun test", "test/a.test.ts"),
        ("deno fmt --check", "fmt/x.ts"),
        ("dart analyze lib", "lib/new.dart"),
    ],
)
def test_a_subcommand_or_a_test_runner_is_no_script(tmp_path: Path, hook: str, free: str) -> None:
    found, real = _found(tmp_path, hook, {"package.json": "{}", "test/a.test.js": ""})
    assert _hooks_rule(f"{real}/{free}", found) is None, found


def test_the_script_after_run_is_still_one(tmp_path: Path) -> None:
    found, real = _found(tmp_path, "deno run tools/check.ts\nbun run scripts/lint.ts")
    assert _hooks_rule(f"{real}/tools/check.ts", found) is not None, found
    assert _hooks_rule(f"{real}/scripts/lint.ts", found) is not None, found
