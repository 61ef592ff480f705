"""Which lines only read (``shell.strings.reading``): those run on a read-only view of the roots instead of a copy.

The choice is advisory (the kernel refuses a write the spelling hid: see test_reading_box.py); what is tested here
is that a line that could write through its spelling is never taken for one that only reads.
"""

from __future__ import annotations

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine

ENGINE = PolicyEngine(load_policy().shell_exec, effects=True, roots=["/work/p"], home="/home/u")


@pytest.mark.parametrize(
    "line",
    [
        "echo hi",
        "ls -la 2>/dev/null | grep -n x",
        "cat a.txt > /dev/null",
        "ls 2>&1",
        "cd src && ls",
        "git status",
        "git log --oneline -n 5",
        "git diff HEAD~1 -- src",
        "find . -name '*.py' -type f",
        'for f in *.txt; do wc -l "$f"; done',
        "[ -f x ] && cat x",
        "cat <<EOF\nhi\nEOF",
        "sort -rn counts | uniq -c",
        "/bin/cat a",
        "cat < a.txt",
        "cat $FILE",
    ],
)
def test_a_line_of_reading_programs_only_reads(line: str) -> None:
    assert ENGINE.decide(line).reads_only


@pytest.mark.parametrize(
    "line",
    [
        "echo hi > f",  # a redirect to a file
        "echo hi >> f",
        "echo hi >& f",
        "echo hi &> f",
        "echo hi 1<>f",
        "echo hi > $OUT",  # a redirect only run time places
        "echo hi | tee f",  # a program that writes
        "rm -f x",
        "touch x",
        "sed -i s/a/b/ f",
        "find . -delete",
        "find . -name x -exec rm {} +",
        "find . -fprint out",
        "find $ARGS",  # an argument only run time knows could be -delete
        "sort -o out in",
        "sort -rno out in",
        "sort --output=out in",
        "sort --out=out in",
        "uniq in out",
        "tree -o out",
        "tree --output out",
        "file -C -m magic",
        "git commit -m x",
        "git -c core.pager=x log",  # git's own options are not read here
        "git -C elsewhere status",
        "git log --output=out",
        "env X=1 rm -rf y",  # with arguments env runs a program
        "echo $(rm x)",  # what a substitution runs counts
        "f() { rm x; }; f",
        "bash -c 'ls'",
        "sh script.sh",
        "python3 -c 'print(1)'",
        "timeout 5 cat a",  # a wrapper is a program of its own
        "./ls",  # a program of the project's
        "/opt/bin/cat a",
        "$CMD a",  # a program only run time names
        "eval ls",
        "source env.sh",
        "exec ls",
        "xargs cat < list",
        "awk '{print > \"out\"}' f",
    ],
)
def test_a_line_that_could_write_does_not_only_read(line: str) -> None:
    assert not ENGINE.decide(line).reads_only


def test_an_argv_call_of_a_reading_program_only_reads() -> None:
    assert ENGINE.decide("ls", ["-la", "src"]).reads_only
    assert not ENGINE.decide("touch", ["x"]).reads_only


def test_a_background_job_never_runs_as_only_reading() -> None:
    # A job's stdin may later carry any line: it works on a copy from the start.
    assert not ENGINE.decide("cat", job=True).reads_only
