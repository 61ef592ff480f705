"""``shell_words`` expands a word as bash does (red team 170 F1, F3): each operation is checked against bash itself
on the same value — a differential test — and the hook reader names the file the expanded word is."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from mcp_server_guard.shell_words import ifs_split, operated, printf_values, sequence

OPERATIONS = [
    ("scripts/lint-check.disabled", "%.disabled"),
    ("a.b.c", "%.*"),
    ("a.b.c", "%%.*"),
    ("a.b.c", "#*."),
    ("a.b.c", "##*."),
    ("scripts/lint-chXck", "/X/e"),
    ("aXbXc", "//X/e"),
    ("aXbXc", "/#a/Z"),
    ("aXbXc", "/%c/Z"),
    ("aXbXc", "/#X/Z"),
    ("aXbXc", "/X"),
    ("SCRIPTS/LINT-CHECK", ",,"),
    ("scripts/x", "^^"),
    ("scripts", "^"),
    ("Scripts", ","),
    ("abcdef", ":2"),
    ("abcdef", ":2:3"),
    ("abcdef", ": -3"),
    ("abcdef", ":1:-2"),
    ("a*b", "/\\*/x"),
    ("aaa", "//a/bb"),
    ("tools/x", ":-default"),
    ("tools/x", ":+other"),
    ("tools/x", "-default"),
    ("x.tar.gz", "%.tar.*"),
    ("x.sh", "/%.sh/.py"),
]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is missing")
@pytest.mark.parametrize(("value", "operation"), OPERATIONS)
def test_a_parameter_operation_makes_what_bash_makes(value: str, operation: str) -> None:
    # (bash given the value and the operation as arguments: neither is ever code to it)
    script = 'x="$1"; eval "printf %s \\"\\${x$2}\\""'
    bash = subprocess.run(["bash", "-c", script, "_", value, operation], capture_output=True, text=True, check=True)
    assert operated(value, operation) == bash.stdout


def test_an_operation_not_read_leaves_the_word_as_written() -> None:
    assert operated("abc", "@Q") is None
    assert operated("x" * 2000, "%.x") is None  # (a value past what is matched slice by slice)


def test_brace_sequences_expand_as_bash_expands_them() -> None:
    assert sequence("check{1..3}") == ["check1", "check2", "check3"]
    assert sequence("x{a..c}y") == ["xay", "xby", "xcy"]
    assert sequence("n{10..1..3}") == ["n10", "n7", "n4", "n1"]
    assert sequence("plain{a,b}") is None


def test_printf_v_is_an_assignment_and_ifs_splits_a_value() -> None:
    assert printf_values("printf -v cmd '%s/%s' scripts lint-check\n") == {"cmd": "scripts/lint-check"}
    assert printf_values('printf -v cmd "%s" "$x"\n') == {}
    assert ifs_split("IFS=,\n", ["scripts/lint-check,--fast", "plain"]) == ["scripts/lint-check --fast"]
    assert ifs_split("echo no ifs\n", ["a,b"]) == []


def test_positional_parameters_are_given_by_set_and_by_each_call_of_a_function() -> None:
    from mcp_server_guard.shell_words import array_values, inlined

    assert any('"tools/lint"' in t for t in inlined('set -- tools lint\n"$1/$2"'))
    texts = inlined('function check { "$1/$2" "$@"; }\ncheck tools lint\ncheck ci run')
    assert any("tools/lint" in t for t in texts) and any("ci/run" in t for t in texts)
    assert inlined('run() { "$1"; }\nrun "$HOOK"') == []  # (an argument that is no plain word gives nothing)
    assert array_values("parts=(tools lint)\n") == {
        "parts[0]": "tools", "parts[1]": "lint", "parts[@]": "tools lint", "parts[*]": "tools lint"
    }  # fmt: skip
