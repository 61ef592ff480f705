"""What a program a hook runs finds by its own rules (red team 146), and what it does not make count: a search path
or an interpreter's operand names the files the program may take there, never the whole project for an everyday
hook (``PYTHONPATH=. pytest``, ``python3 scripts/check.py src``)."""

from __future__ import annotations

import os
from pathlib import Path

from mcp_server_guard.git_dirs import _hooks_rule
from mcp_server_guard.hook_runs import run_by_hooks


def _rule(root: Path, hook: str, files: dict[str, str]) -> list[str]:
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "hooks" / "pre-commit").write_text(f"#!/bin/sh\n{hook}\n")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return run_by_hooks([str(root / ".git" / "hooks")], str(root), None)


def _counts(found: list[str], root: Path, rel: str) -> bool:
    return _hooks_rule(os.path.join(os.path.realpath(root), rel), found) is not None


def test_a_node_program_named_without_its_suffix_protects_each_file_node_may_take(tmp_path: Path) -> None:
    found = _rule(tmp_path, "node scripts/check && node tools/lint", {"tools/lint/package.json": "{}"})
    assert _counts(found, tmp_path, "scripts/check.js") and _counts(found, tmp_path, "scripts/check/index.js")
    assert _counts(found, tmp_path, "tools/lint/lib/run.js")  # (a directory run: its package.json's main)
    assert not _counts(found, tmp_path, "scripts/other.js")


def test_a_module_on_a_search_path_the_hook_sets_is_protected(tmp_path: Path) -> None:
    found = _rule(tmp_path, "PYTHONPATH=src python3 -m app.lint", {"src/app/lint.py": ""})
    assert _counts(found, tmp_path, "src/app/lint.py")
    assert not _counts(found, tmp_path, "src/app/other.py")


def test_an_everyday_search_path_does_not_make_the_project_count(tmp_path: Path) -> None:
    hook = "PYTHONPATH=. pytest -q\npython3 scripts/check.py src"
    found = _rule(tmp_path, hook, {"src/app.py": "", "scripts/check.py": ""})
    assert _counts(found, tmp_path, "scripts/check.py")
    assert not _counts(found, tmp_path, "src/app.py") and not _counts(found, tmp_path, "README.md")


def test_a_file_a_hook_runs_if_it_is_there_is_protected_before_it_exists(tmp_path: Path) -> None:
    found = _rule(tmp_path, "tclsh local.tcl 2>/dev/null || true\n[ ! -f extra ] || sh extra", {})
    assert _counts(found, tmp_path, "local.tcl") and _counts(found, tmp_path, "extra")


def test_a_git_subcommand_on_the_hooks_path_is_protected(tmp_path: Path) -> None:
    found = _rule(tmp_path, 'PATH="$PWD/tools:$PATH" git lint', {})
    assert _counts(found, tmp_path, "tools/git-lint")


def test_a_long_hook_in_another_language_does_not_make_the_project_count(tmp_path: Path) -> None:
    # (its dotted names are not files: naming each, there or not, would pass the names' bound and count everything)
    hook = "\n".join(f"call module{i}.attribute{i} config.value{i}" for i in range(3000))
    found = _rule(tmp_path, hook, {"src/app.py": ""})
    assert not _counts(found, tmp_path, "src/app.py")


def test_a_path_a_hook_writes_with_a_slash_is_completed_with_any_suffix(tmp_path: Path) -> None:
    hook = "node -e \"require(require('path').resolve('tools/check'))\""
    found = _rule(tmp_path, hook, {"tools/README": ""})
    assert _counts(found, tmp_path, "tools/check.js") and not _counts(found, tmp_path, "tools/README")


def test_a_glob_a_hook_gives_a_tool_is_its_data_and_one_it_runs_is_protected(tmp_path: Path) -> None:
    hook = 'npx eslint src/**/*.js\nfor f in scripts/checks/*.sh; do sh "$f"; done'
    found = _rule(tmp_path, hook, {"src/lib/app.js": "", "scripts/checks/a.sh": ""})
    assert not _counts(found, tmp_path, "src/lib/app.js")  # (linted, not run: an everyday edit stays free)
    assert _counts(found, tmp_path, "scripts/checks/a.sh") and _counts(found, tmp_path, "scripts/checks/new.sh")


def test_code_an_interpreter_reads_on_stdin_or_as_its_own_text_names_its_modules(tmp_path: Path) -> None:
    hook = "python3 - <<'EOF'\nfrom tools.check import main\nEOF\npython3 -Bm app.lint\nperl -Itools -mCheck -e 1"
    found = _rule(tmp_path, hook, {"tools/check.py": "", "app/lint.py": "", "tools/Check.pm": ""})
    for rel in ("tools/check.py", "tools/__init__.py", "app/lint.py", "app/__init__.py", "tools/Check.pm"):
        assert _counts(found, tmp_path, rel), rel


def test_a_hook_managers_entry_by_its_bare_name_is_protected(tmp_path: Path) -> None:
    config = (
        "repos:\n- repo: local\n  hooks:\n  - id: lint\n    name: lint\n    entry: lint-check\n    language: script\n"
    )
    (tmp_path / ".pre-commit-config.yaml").write_text(config)
    found = _rule(tmp_path, "true", {"lint-check": ""})
    assert _counts(found, tmp_path, "lint-check")


def test_a_file_make_may_remake_a_makefile_or_a_prerequisite_from_is_protected(tmp_path: Path) -> None:
    files = {
        "Makefile": "include common.mk\nlint: scripts/check\n\tscripts/check\n",
        "common.mk": "",
        "scripts/check": "",
    }
    found = _rule(tmp_path, "make lint", files)
    for rel in ("Makefile.sh", "common.mk.sh", "scripts/check.sh", "scripts/check.c"):
        assert _counts(found, tmp_path, rel), rel
    assert not _counts(found, tmp_path, "scripts/other.c")


def test_files_a_hook_managers_config_takes_in_and_its_script_directory_are_protected(tmp_path: Path) -> None:
    config = "extends:\n  - lefthook-base.yml\n  - hooks-*.yml\nsource_dir: githooks/\n"
    (tmp_path / "lefthook.yml").write_text(config)
    files = {
        "lefthook-base.yml": "pre-commit:\n  commands:\n    lint:\n      run: sh tools/lint.sh\n",
        "tools/lint.sh": "",
    }
    found = _rule(tmp_path, "true", files)
    for rel in ("lefthook-base.yml", "hooks-extra.yml", "tools/lint.sh", "githooks/pre-commit/check.sh"):
        assert _counts(found, tmp_path, rel), rel
    assert not _counts(found, tmp_path, "tools/other.sh")
