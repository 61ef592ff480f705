"""Review of issue 42 ("bounds that bound"): `mcp-guard undo` opened the history with the bounds of its own
(default) policy, not those of the server's `--policy`: an undo could keep more than the server's
`history_max_bytes` and leave the store over it. A server notes its bounds in its store at start; `mcp-guard undo`,
`history` and `history restore` keep them."""

from __future__ import annotations

from pathlib import Path

from support.redteam import FW, audit_id_of, call, mcp_guard, started


def test_attack_an_undo_run_from_the_cli_cannot_pass_the_servers_history_bound(workspace: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    policy = tmp_path / "p.toml"
    policy.write_text("[file_write]\nhistory_max_bytes = 65536\n", encoding="utf-8")
    raw = started(FW, workspace, state, "--policy", str(policy))
    try:
        # A new file keeps nothing; its undo keeps the file's 200 KB, over the server's 64 KiB (not the default's).
        result = call(raw, 2, "file_write", {"path": "big.txt", "content": "x" * 200_000})
    finally:
        raw.close()
    assert not result.get("isError"), result
    done = mcp_guard(
        "undo", audit_id_of(result), "--history-dir", str(state / "history"), "--audit-log", str(state / "a.jsonl")
    )
    assert done.returncode != 0 and "history_max_bytes" in done.stderr, done.stdout + done.stderr
    assert (workspace / "big.txt").stat().st_size == 200_000
