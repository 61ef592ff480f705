"""Attacks on the string ids of the server's own requests (``mcp-guard-N``) that serving/stdio.py rewrites back to N.

What must hold: whatever id a client puts on a response, the server keeps reading and answers every later request
with an id (docs/agent-cli.md: a request with an id always gets an answer)."""

from __future__ import annotations

import os
from pathlib import Path

from support import RawClient, console_script


def _raw(workspace: Path) -> RawClient:
    raw = RawClient(
        [console_script("mcp-server-shell-exec"), "--audit-log", str(workspace.parent / "audit.jsonl")],
        workspace, stderr=workspace.parent / "stderr.txt", env={**os.environ},
    )  # fmt: skip
    raw.initialize()
    return raw


def test_a_response_id_with_a_unicode_digit_after_the_prefix_stops_the_server(workspace: Path) -> None:
    """``_own_id`` takes ``str.isdigit()`` for "int() can read it": ``"mcp-guard-²"`` (SUPERSCRIPT TWO) is a digit to
    isdigit but ``int("²")`` raises ValueError inside ``_receive``, out of the stdin loop. Expected: the odd response
    is ignored (or logged) and the next ping is answered. Observed: the server crashes
    (ValueError in _own_id, traceback on stderr) and closes stdout; the ping is never answered."""
    raw = _raw(workspace)
    try:
        raw.send({"jsonrpc": "2.0", "id": "mcp-guard-\u00b2", "result": {}})
        raw.send({"jsonrpc": "2.0", "id": 7, "method": "ping"})
        answer = raw.until(7, timeout=20)[-1]
        assert answer.get("result") == {}, answer
    finally:
        raw.close()
