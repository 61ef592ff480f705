"""Rules that carry their examples (issue 46): every default shell rule matches the lines it gives as examples and
none it gives as not examples; a policy file's rule that does not is refused where the policy is loaded (the
shell_exec server's start, ``mcp-guard check``); the docs' table of default rules is the one made from the policy."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.admin.rule_table import put_in
from mcp_server_guard.policy import PolicyError, load_policy
from mcp_server_guard.shell.strings.rules import check_examples
from support import console_script

DOCS = Path(__file__).resolve().parents[2] / "docs" / "shell_exec.md"

DRIFTED = """\
[[shell_exec.rules]]
id = "no-npm-publish"
action = "deny"
reason = "Publishing is done by CI."
programs = ["npm"]
subcommands = ["publish"]
examples = ["npm publish", "npm unpublish my-package"]
not_examples = ["npm pack"]
"""

KEPT = DRIFTED.replace('"npm publish", "npm unpublish my-package"', '"npm publish", "npm publish --tag next"')


def test_every_default_rule_carries_examples_that_it_matches_and_none_it_says_it_does_not() -> None:
    policy = load_policy().shell_exec
    assert [rule.id for rule in policy.rules if not rule.examples] == []
    check_examples(policy)  # raises on the first rule that misses


def test_a_rule_whose_meaning_drifted_from_its_examples_is_named(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text(DRIFTED)
    loaded = load_policy(tmp_path / "p.toml")
    assert loaded.own_rules == ("no-npm-publish",)
    with pytest.raises(PolicyError, match="'no-npm-publish' does not match its example 'npm unpublish my-package'"):
        check_examples(loaded.shell_exec, loaded.own_rules)
    (tmp_path / "p.toml").write_text(KEPT)
    kept = load_policy(tmp_path / "p.toml")
    check_examples(kept.shell_exec, kept.own_rules)


def test_a_rule_that_matches_a_line_it_says_it_does_not_is_refused(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text(KEPT.replace('not_examples = ["npm pack"]', 'not_examples = ["npm publish ."]'))
    loaded = load_policy(tmp_path / "p.toml")
    with pytest.raises(PolicyError, match=re.escape("matches 'npm publish .', given as not an example")):
        check_examples(loaded.shell_exec, loaded.own_rules)


def test_the_shell_server_does_not_start_with_a_policy_whose_rule_misses_its_example(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "p.toml").write_text(DRIFTED)
    started = subprocess.run(
        [console_script("mcp-server-shell-exec"), "--policy", str(tmp_path / "p.toml"), "--audit-log",
         str(tmp_path / "audit.jsonl")],
        cwd=project, input=b"", capture_output=True, timeout=60, check=False, env=dict(os.environ),
    )  # fmt: skip
    assert started.returncode == 2, started.stderr[-2000:]
    assert b"no-npm-publish" in started.stderr and b"npm unpublish my-package" in started.stderr
    checked = subprocess.run(
        [console_script("mcp-guard"), "check", "--policy", str(tmp_path / "p.toml"), "npm publish"],
        cwd=project, capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert checked.returncode == 2 and b"does not match its example" in checked.stderr, checked.stderr
    (tmp_path / "p.toml").write_text(KEPT)
    kept = subprocess.run(
        [console_script("mcp-guard"), "check", "--policy", str(tmp_path / "p.toml"), "npm publish"],
        cwd=project, capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert kept.returncode == 20 and b"no-npm-publish" in kept.stdout, kept


def test_the_docs_table_of_default_rules_is_the_one_made_from_the_policy() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert put_in(text) == text, "run: uv run python -m mcp_server_guard.admin.rule_table --write docs/shell_exec.md"
