"""What of a job's input the next write can still continue (``shell.jobs.unfinished_line``): the text after the last
line start at which the shell stands outside every quote and continued line (red team 120 F4: a quote opened by one
write, a denied line inside it by the next; red team 122 F2: a here-document's body, whose quotes are none)."""

from __future__ import annotations

import pytest

from mcp_server_guard.shell.jobs import unfinished_line


@pytest.mark.parametrize(
    ("text", "carry"),
    [
        ("echo a\n", ""),
        ("echo a\nec", "ec"),
        ("shut\\\ndown", "shut\\\ndown"),
        ('echo "start\n', 'echo "start\n'),
        ('echo "x"\nls', "ls"),
        ("echo it's # x\nok", "echo it's # x\nok"),
        ("# it's a comment\nls\n", ""),
        ("echo $'a\\'b\nc", "echo $'a\\'b\nc"),
        ("a `b\nc", "a `b\nc"),
        ('echo "a\\"\nb', 'echo "a\\"\nb'),
        ("cat <<EOF\nit's\nEOF\n", ""),
        ("cat <<EOF\nit's\n", "cat <<EOF\nit's\n"),
        ("cat <<-'E'\n\tdon't\n\tE\nls", "ls"),
        ('cat <<< "x"\nls', "ls"),
        ("a <<A <<B\n1\nA\n2\nB\nz", "z"),
        ("echo a\\ #'\nls", "echo a\\ #'\nls"),
        ('echo "$(echo \')"\nls', 'echo "$(echo \')"\nls'),
        ("echo $(echo a\n)\nls", "ls"),
    ],
)
def test_attack_an_open_quote_keeps_the_input_since_its_line_for_the_next_write(text: str, carry: str) -> None:
    assert unfinished_line(text) == carry
