"""The commands a hook's shell text runs, read with bash's grammar (``hook_words.parsed_lines``): red team 138's
classes — command substitution, ``cd`` read as bash reads it, variables, continued lines, and what a shell is given
to run otherwise."""

from __future__ import annotations

import pytest

from mcp_server_guard.hook_interpreters import interpreter_files, module_words
from mcp_server_guard.hook_words import (
    git_commands,
    loaded_by_option,
    parsed_lines,
    program_words,
    put_on_path,
    python_modules,
    search_dirs,
)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("out=$(./scripts/lint.sh) || exit 1", "./scripts/lint.sh"),
        ("out=`./scripts/lint.sh`", "./scripts/lint.sh"),
        ('eval "$(./scripts/env.sh)"', "./scripts/env.sh"),
        ("cd tools; ./lint.sh", "cd tools"),
        ('cd "dev tools" && ./lint.sh', "cd 'dev tools'"),
        ('LINT=scripts/lint.sh; sh "$LINT"', "sh scripts/lint.sh"),
        ("sh -o nounset lint", "sh lint"),
        ("sh \\\n  lint", "sh lint"),
        ("BASH_ENV=scripts/env.sh bash -c true", "source scripts/env.sh"),
        ("alias check='sh scripts/lint.sh'\ncheck", "sh scripts/lint.sh"),
        ("cat lint | sh", "sh lint"),
        ('checks=(scripts/lint.sh)\nfor c in "${checks[@]}"; do sh "$c"; done', "sh scripts/lint.sh"),
    ],
)
def test_a_command_a_hook_runs_is_read_as_bash_reads_it(text: str, named: str) -> None:
    lines, whole = parsed_lines(text)
    assert named in lines and whole, lines


def test_a_text_past_the_parsers_bounds_is_read_in_part() -> None:
    _lines, whole = parsed_lines("(" * 400 + "true" + ")" * 400)
    assert not whole


@pytest.mark.parametrize(
    ("text", "directory"),
    [
        ("PYTHONPATH=src python3 -m app.lint", "src"),
        ("export NODE_PATH=tools\nnode -e 'x'", "tools"),
        ('PERL5LIB="$PWD/lib" perl -MCheck -e 1', "lib"),
        ("perl -Itools -MCheck -e 1", "tools"),
        ("ruby -I lib x.rb", "lib"),
        ("java -cp build/classes:vendor Main", "vendor"),
    ],
)
def test_a_search_path_a_hook_sets_is_where_names_are_looked_for(text: str, directory: str) -> None:
    assert f"/w/{directory}" in search_dirs(text, "/w/.git/hooks", "/w")


def test_the_shells_own_path_is_not_a_search_path() -> None:
    assert search_dirs('PATH="$PWD/tools:$PATH" lint', "/w/.git/hooks", "/w") == []


def test_a_git_subcommand_is_a_program_on_path() -> None:
    assert git_commands(["git", "lint"]) == ["git-lint"]
    assert git_commands(["make", "lint"]) == []


def test_a_module_loaded_by_an_option_is_named_as_the_program_finds_it() -> None:
    for line, loaded in [("perl -MApp::Check -e 1", ["App/Check.pm"]), ("grep -r pattern .", []),
                         ("node --require ./tools/setup x.js", ["./tools/setup"])]:  # fmt: skip
        assert loaded_by_option(line, program_words(line)) == loaded


def test_an_interpreters_script_is_found_as_it_reads_its_command_line() -> None:
    assert interpreter_files("node scripts/check") == (["scripts/check"], ["scripts/check"])
    assert interpreter_files("node -r ./tools/setup scripts/check lib") == (
        ["./tools/setup", "scripts/check"],
        ["scripts/check"],
    )  # (``lib`` is the script's argument: red team 149 F8)
    assert interpreter_files("python3 -W ignore check src") == (["check"], ["check"])
    assert interpreter_files("python3 -m mypy src") == ([], [])
    assert interpreter_files("java -cp tools com.x.Check") == (["com.x.Check", "com/x/Check"],) * 2
    assert interpreter_files("eslint src") == ([], [])


def test_every_spelling_of_a_python_import_names_its_module() -> None:
    code = "from tools import check; import a.b as c, d; importlib.import_module('e.f')"
    assert {"a.b", "d", "tools", "tools.check", "e.f"} <= set(python_modules(code, "python3"))
    assert python_modules(code, "node") == []


def test_a_module_is_every_file_python_may_take_for_it() -> None:
    words = module_words("app.lint")
    for word in ("app/__init__.py", "app/lint.py", "app/lint.*so", "app/lint.pyc", "app/lint/__main__.py"):
        assert word in words, words


@pytest.mark.parametrize(
    "text",
    [
        'ROOT="$(git rev-parse --show-toplevel)"; export PATH="$ROOT/tools:$PATH"',
        'PATH="`pwd`/tools:$PATH"',
        'PATH="$(pwd -P)/tools:$PATH"',
        'HERE="$(cd "$(dirname "$0")" && pwd)"; PATH="$HERE/../../tools:$PATH"',
        'PATH="$PWD/tools${PATH:+:$PATH}"',
        'PATH="$(realpath tools):$PATH"',
        'TOOLS=tools\nPATH="$TOOLS:$PATH"',
        'ROOT=$(git rev-parse --show-toplevel)\nTOOLS="$ROOT/tools"\nPATH="$TOOLS:$PATH"',
        'PATH="$(dirname "$(readlink -f "$0")")/../../tools:$PATH"',
    ],
)
def test_a_directory_put_on_path_from_the_top_or_the_hooks_own_by_any_spelling_is_found(text: str) -> None:
    assert put_on_path(text, "/w/.git/hooks", "/w") == ["/w/tools"]


@pytest.mark.parametrize(
    "text",
    [
        'PATH="$SOMEWHERE/tools:$PATH"',
        'PATH="$(npm bin):$PATH"',
        'PATH="`cat .tools`:$PATH"',
        'D=$(git config hooks.dir); PATH="$D:$PATH"',
        'export PATH="$PATH:$(go env GOPATH)/bin"',
    ],
)
def test_a_path_entry_the_reader_cannot_name_is_any_directory_of_the_work_tree(text: str) -> None:
    assert put_on_path(text, "/w/.git/hooks", "/w") == ["/w/**"]


def test_a_path_set_before_a_directory_by_its_alternate_value_is_split_there() -> None:
    assert put_on_path('PATH="${PATH:+$PATH:}$PWD/tools"', "/w/.git/hooks", "/w") == ["/w/tools"]


def test_the_search_path_itself_and_home_are_no_unknown_entry() -> None:
    assert put_on_path('PATH="$HOME/bin:$PATH:${PATH}"', "/w/.git/hooks", "/w") == []
    assert search_dirs('PYTHONPATH="$PYTHONPATH:src" python3 -m x', "/w/.git/hooks", "/w") == ["/w/src"]
