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


@pytest.mark.parametrize(("text", "readable"), [("echo a\n", True), ('echo "x\n', True), ("(( 1 #' ))\n", False),
                                                ("a=(x)#'\n", False), ("[[ x =~ (#') ]]\n", False),
                                                ("if true; then\n", True), ("set -euo pipefail\n", True),
                                                ("shopt -s extglob\n", False), ("set -H\n", False),
                                                ("alias x='echo'\n", False)])  # fmt: skip
def test_attack_input_bash_reads_as_open_where_the_scanner_sees_it_closed_stops_the_jobs_input(
    text: str, readable: bool
) -> None:
    # Threat (red team 126 F1): `(( 1 #' ))` leaves bash inside a quote the judge's parser reads as a comment; no later
    # write can be judged, so none is sent (STDIN_UNREADABLE).
    from mcp_server_guard.shell.jobs import job_input

    assert job_input(text)[1] is readable
