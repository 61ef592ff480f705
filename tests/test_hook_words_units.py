"""The commands a hook's shell text runs, read with bash's grammar (``hook_words.parsed_lines``): red team 138's
classes — command substitution, ``cd`` read as bash reads it, variables, continued lines, and what a shell is given
to run otherwise."""

from __future__ import annotations

import pytest

from mcp_server_guard.hook_words import parsed_lines


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
