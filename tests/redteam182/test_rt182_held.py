"""Red team 182: what held (issue 44's lazy start-up), kept as tests that pass.

* A user's policy reusing a packaged args_regex pattern (not compiled at load: PACKAGED_PATTERNS) in another rule,
  with ``inherit_rules = false``: loads, and the rule matches at run time as written (the same string compiles the
  same way: ``matching._regex`` adds no flags).
* A bad pattern that merely starts like a packaged one is still refused at load; so is one in a context-free
  validation of the Policy (the context is only given by ``load_policy``).
* The packaged patterns set is the default policy's own, never the user's file's.
* A policy file that is not UTF-8 is still refused (``_read_toml`` maps every ValueError to "invalid TOML").
* The job table made lazily: ``listJobs`` and a ``jobId`` before any job answer as before; a server with no job
  closes without making one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.policy import PACKAGED_PATTERNS, Policy, PolicyError, load_policy
from mcp_server_guard.shell.strings.matching import rule_matches

HERE = Path(__file__).parent


def test_user_policy_reusing_a_packaged_pattern_still_matches() -> None:
    policy = load_policy(HERE / "rt182_policy_reuses_packaged_pattern.toml")
    rules = [r for r in policy.shell_exec.rules if r.id == "rt182-reused"]
    assert rules and len(policy.shell_exec.rules) == 1
    assert rule_matches(rules[0], ["rt182tool", "delete", "x"])
    assert not rule_matches(rules[0], ["rt182tool", "list"])


def test_bad_pattern_like_a_packaged_one_is_refused() -> None:
    with pytest.raises(PolicyError, match="not a regular expression"):
        load_policy(HERE / "rt182_policy_bad_regex.toml")


def test_context_holds_only_the_packaged_policys_patterns(tmp_path: Path) -> None:
    # a user's own new pattern is never in the set that skips the compile: the set is taken from the default only
    data = load_policy().model_dump()
    bad = "(unclosed"
    data["shell_exec"]["rules"][0]["args_regex"] = [bad]
    with pytest.raises(Exception, match="not a regular expression"):
        Policy.model_validate(data)  # (no context: every pattern compiled)
    with pytest.raises(Exception, match="not a regular expression"):
        Policy.model_validate(data, context={PACKAGED_PATTERNS: frozenset()})


def test_policy_file_not_utf8_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "p.toml"
    bad.write_bytes(b'[shell_exec]\nmode = "\xff"\n')
    with pytest.raises(PolicyError, match="invalid TOML"):
        load_policy(bad)


# -- the lazy job table (ShellJobs.jobs) ------------------------------------------------------------------------

import signal  # noqa: E402

import anyio  # noqa: E402

from support import RawClient, console_script, marker, processes_with, wait_until  # noqa: E402

SX = "mcp-server-shell-exec"


@pytest.mark.parametrize("how", ["stdin-eof", "sigterm"])
def test_job_calls_before_any_job_then_exit_without_the_box_leaves_no_job(
    workspace: Path, tmp_path: Path, how: str
) -> None:
    token = marker()
    raw = RawClient([console_script(SX), "--audit-log", str(tmp_path / "a.jsonl"), "--sandbox", "off"], workspace)
    try:
        raw.initialize()
        # the table is made by these first calls about jobs (none exists yet)
        listed = raw.request(2, "tools/call", {"name": "shell_exec", "arguments": {"command": "", "listJobs": True}})
        assert "no background jobs" in json_text(listed)
        unknown = raw.request(3, "tools/call", {"name": "shell_exec", "arguments": {"command": "", "jobId": "j1"}})
        assert "JOB_NOT_FOUND" in json_text(unknown)
        read = raw.request(4, "resources/read", {"uri": "mcp-guard://outputs/j1/stdout"})
        assert "error" in read or "result" in read  # an answer, not a hang or a crash
        arguments = {"command": f"sleep {token}", "yieldAfterSeconds": 0.2}
        answer = raw.request(5, "tools/call", {"name": "shell_exec", "arguments": arguments})
        assert answer["result"]["structuredContent"]["status"] == "running"
        anyio.run(wait_until, lambda: processes_with(token))
        assert raw.proc.stdin is not None
        raw.proc.stdin.close() if how == "stdin-eof" else raw.proc.send_signal(signal.SIGTERM)
        raw.proc.wait(timeout=15)
        anyio.run(wait_until, lambda: not processes_with(token))
    finally:
        for proc in processes_with(token):
            proc.kill()
        raw.close()


def json_text(message: dict[str, Any]) -> str:
    import json

    return json.dumps(message)
