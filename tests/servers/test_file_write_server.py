"""file_write through the real console script over stdio, in both protocol eras; logic-only cases (history,
conflicts, refusals whose kind a stdio test here shows too) through the same server in this process (``in_memory``).

Attack tests are named after the attack they stop; fault tests kill the writer, fill the disk and race
two agents.
"""

from __future__ import annotations

import hashlib
import os
import random
import select
import shutil
import signal
import stat
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from support import RawClient, console_script, error_of, in_memory, serve, text_of

pytestmark = pytest.mark.anyio
FW = "mcp-server-file-write"


@pytest.fixture
def mode() -> str:
    """One protocol era through the real process here; the in-memory tier (test_in_memory.py) runs this tool's
    logic in both eras, and the transport tests (serving/, test_fuzz.py) run the processes in both."""
    return "auto"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def history(tmp_path: Path) -> Path:
    return tmp_path / "history"


def fw_args(history: Path, *extra: str) -> tuple[str, ...]:
    return ("--history-dir", str(history), *extra)


async def write(client: Any, path: str, content: str, **extra: Any) -> Any:
    with anyio.fail_after(30):
        return await client.call_tool("file_write", {"path": path, "content": content, **extra})


# -- the contract --------------------------------------------------------------------------------


async def test_file_write_tool_matches_the_seed_004_contract(workspace: Path, history: Path, mode: str) -> None:
    async with serve(FW, workspace, *fw_args(history), mode=mode) as client:
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == ["file_write"]
    tool = tools[0]
    assert tool.description == "指定されたパスにファイルを作成または上書きし、内容を書き込みます。"
    hints = tool.annotations
    assert hints is not None
    assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint) == (
        False,
        True,
        False,
        False,
    )
    assert tool.input_schema["required"] == ["path", "content"]
    assert tool.input_schema["properties"]["overwrite"]["default"] is False
    assert tool.output_schema is not None and tool.output_schema["required"][0] == "success"


async def test_creates_a_new_file_without_exec_bits(workspace: Path, history: Path, mode: str) -> None:
    async with serve(FW, workspace, *fw_args(history), mode=mode) as client:
        result = await write(client, "new.txt", "hello ✓\n")
    out = dict(result.structured_content or {})
    audit_id = out.pop("auditId")
    assert len(audit_id) == 12 and audit_id in text_of(result, facts=True).splitlines()[-1]
    assert out == {
        "success": True,
        "path": "new.txt",
        "bytesWritten": len("hello ✓\n".encode()),
        "sha256": sha("hello ✓\n".encode()),
        "created": True,
        "backup": "",  # one JSON type for every field: an empty id, not a missing one
        "policyDecision": "allow",
        "mode": "workspace-write",
        "timeoutSeconds": 0,  # none: the contract's field, stated on every result
    }
    assert (workspace / "new.txt").read_text(encoding="utf-8") == "hello ✓\n"
    assert (workspace / "new.txt").stat().st_mode & 0o111 == 0
    assert not [p for p in workspace.iterdir() if p.name.startswith(".mcp-guard-")]  # no temp file left


async def test_overwrite_false_on_an_existing_file_is_refused(workspace: Path, history: Path, mode: str) -> None:
    async with serve(FW, workspace, *fw_args(history), mode=mode) as client:
        result = await write(client, "hello.txt", "clobbered")
    assert error_of(result)["code"] == "FILE_EXISTS"
    assert "overwrite" in error_of(result)["suggestion"]
    assert (workspace / "hello.txt").read_text(encoding="utf-8") == "hello\nworld\n"


async def test_overwrite_keeps_permission_bits_and_saves_the_previous_content(
    workspace: Path, history: Path, mode: str
) -> None:
    target = workspace / "hello.txt"
    target.chmod(0o600)
    async with serve(FW, workspace, *fw_args(history), mode=mode) as client:
        result = await write(client, "hello.txt", "v2\n", overwrite=True)
    out = result.structured_content
    assert out["created"] is False and out["backup"]
    assert target.read_text(encoding="utf-8") == "v2\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert (history / f"{out['backup']}.data").read_bytes() == b"hello\nworld\n"
    proc = subprocess.run(
        [console_script("mcp-guard"), "history", "list", str(target), "--history-dir", str(history)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out["backup"] in proc.stdout and str(target) in proc.stdout


async def test_identical_writes_keep_one_history_entry(workspace: Path, history: Path, mode: str) -> None:
    async with in_memory("file_write", workspace, history=history, mode=mode) as client:
        first = (await write(client, "hello.txt", "v2\n", overwrite=True)).structured_content
        again = (await write(client, "hello.txt", "v2\n", overwrite=True)).structured_content
        result = await write(client, "hello.txt", "v2\n", overwrite=True)
    assert first["backup"] and again["backup"] == "" and again["created"] is False and again["bytesWritten"] == 0, again
    assert "unchanged" in result.content[0].text
    assert len(list(history.glob("*.data"))) == 1
    assert (workspace / "hello.txt").read_text(encoding="utf-8") == "v2\n"


async def test_expected_sha256_guards_against_lost_updates(workspace: Path, history: Path, mode: str) -> None:
    current = sha(b"hello\nworld\n")
    async with in_memory("file_write", workspace, history=history, mode=mode) as client:
        stale = await write(client, "hello.txt", "x", overwrite=True, expectedSha256="0" * 64)
        fresh = await write(client, "hello.txt", "mine\n", overwrite=True, expectedSha256=current)
        again = await write(client, "hello.txt", "theirs\n", overwrite=True, expectedSha256=current)
    assert error_of(stale)["code"] == "CONFLICT"
    assert fresh.structured_content["success"] is True
    assert error_of(again)["code"] == "CONFLICT"
    assert sha(b"mine\n") in error_of(again)["message"]
    assert (workspace / "hello.txt").read_text(encoding="utf-8") == "mine\n"


# -- path and symlink attacks --------------------------------------------------------------------


async def test_path_escapes_are_refused_for_writes(workspace: Path, history: Path, mode: str) -> None:
    outside = workspace.parent / "outside"
    async with serve(FW, workspace, *fw_args(history), mode=mode) as client:
        results = {
            "dotdot": await write(client, "../outside/pwned", "x"),
            "absolute": await write(client, str(outside / "pwned"), "x"),
            "sibling": await write(client, "../proj-evil/pwned", "x"),
            "nul": await write(client, "ok.txt\x00/../../outside/pwned", "x"),
        }
    assert error_of(results["dotdot"])["code"] == "PATH_OUTSIDE_JAIL"
    assert error_of(results["absolute"])["code"] == "PATH_OUTSIDE_JAIL"
    assert error_of(results["sibling"])["code"] == "PATH_OUTSIDE_JAIL"
    assert error_of(results["nul"])["code"] == "INVALID_PATH"
    assert not (outside / "pwned").exists() and not (workspace.parent / "proj-evil" / "pwned").exists()


async def test_symlink_at_final_component_is_never_written_through(workspace: Path, history: Path, mode: str) -> None:
    # The classic: ln -s /outside/pwned link; write link. Dangling and existing targets alike.
    outside = workspace.parent / "outside"
    (workspace / "dangling").symlink_to(outside / "pwned")
    (workspace / "existing").symlink_to(outside / "secret.txt")
    (workspace / "inside").symlink_to(workspace / "hello.txt")
    async with serve(FW, workspace, *fw_args(history), mode=mode) as client:
        dangling = await write(client, "dangling", "x")
        dangling_over = await write(client, "dangling", "x", overwrite=True)
        existing = await write(client, "existing", "x", overwrite=True)
        inside = await write(client, "inside", "x", overwrite=True)
    for result in (dangling, dangling_over, existing, inside):
        assert error_of(result)["code"] == "SYMLINK_TARGET"
    assert not (outside / "pwned").exists()
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "SECRET-OUTSIDE\n"
    assert (workspace / "hello.txt").read_text(encoding="utf-8") == "hello\nworld\n"


async def test_symlinked_parent_directory_pointing_outside_is_refused(workspace: Path, history: Path) -> None:
    (workspace / "out").symlink_to(workspace.parent / "outside")
    async with in_memory("file_write", workspace, history=history) as client:
        result = await write(client, "out/pwned", "x")
        made = await write(client, "out/deeper/pwned", "x", createDirs=True)
    assert error_of(result)["code"] == "SYMLINK_ESCAPE"
    assert error_of(made)["code"] == "SYMLINK_ESCAPE"
    assert not (workspace.parent / "outside" / "pwned").exists()
    assert not (workspace.parent / "outside" / "deeper").exists()


async def test_fifo_target_is_refused_without_blocking(workspace: Path, history: Path) -> None:
    os.mkfifo(workspace / "pipe")
    async with serve(FW, workspace, *fw_args(history)) as client:
        with anyio.fail_after(5):
            result = await client.call_tool("file_write", {"path": "pipe", "content": "x", "overwrite": True})
    assert error_of(result)["code"] == "NOT_REGULAR_FILE"


# -- executables and protected paths -------------------------------------------------------------


async def test_executable_writes_are_refused_by_extension_content_and_target(
    workspace: Path, history: Path, mode: str
) -> None:
    tool = workspace / "tool.py"
    tool.write_text("print(1)\n", encoding="utf-8")
    tool.chmod(0o755)
    elf = "\x7fELF\x02\x01\x01\x00" + "\x00" * 8 + "\x02\x00\x3e\x00\x01\x00\x00\x00" + "\x00" * 100
    async with serve(FW, workspace, *fw_args(history), mode=mode) as client:
        results = {
            "sh": await write(client, "run.sh", "echo hi\n"),
            "exe_upper": await write(client, "SETUP.EXE", "MZ"),
            "bash_shebang": await write(client, "deploy", "#!/bin/bash\nrm -rf ~\n"),
            "env_shebang": await write(client, "deploy2", "#!/usr/bin/env -S sh -e\necho\n"),
            "elf": await write(client, "payload.dat", elf),
            "exec_target": await write(client, "tool.py", "print(2)\n", overwrite=True),
        }
    codes = {k: error_of(v)["code"] for k, v in results.items()}
    assert codes == {
        "sh": "EXECUTABLE_EXTENSION",
        "exe_upper": "EXECUTABLE_EXTENSION",
        "bash_shebang": "EXECUTABLE_CONTENT",
        "env_shebang": "EXECUTABLE_CONTENT",
        "elf": "EXECUTABLE_CONTENT",
        "exec_target": "EXECUTABLE_TARGET",
    }
    assert tool.read_text(encoding="utf-8") == "print(1)\n"
    assert not any((workspace / n).exists() for n in ("run.sh", "SETUP.EXE", "deploy", "deploy2", "payload.dat"))


async def test_python_shebang_and_ordinary_text_are_allowed(workspace: Path, history: Path) -> None:
    async with in_memory("file_write", workspace, history=history) as client:
        py = await write(client, "script.py", "#!/usr/bin/env python3\nprint('hi')\n")
        md = await write(client, "notes.md", "# Title\n\nsh is a shell.\n")
    assert py.structured_content["success"] and md.structured_content["success"]
    assert (workspace / "script.py").stat().st_mode & 0o111 == 0


# Each a file that runs code at the user's next git command, shell start or agent start. One server walks the list
# (a server per path proved nothing more and cost a second each); the in-memory tier runs it in both eras.
PROTECTED_TARGETS = [
    ".git/hooks/pre-commit",
    ".git/config",
    "sub/.git/hooks/post-checkout",
    ".bashrc",
    ".zshrc",
    ".profile",
    ".gitconfig",
    ".mcp.json",
    ".vscode/mcp.json",
    ".cursor/mcp.json",
    ".config/Claude/claude_desktop_config.json",
    ".GIT/HOOKS/pre-push",
    ".vscode/tasks.json",
    ".vscode/settings.json",
    ".codex/config.toml",
    ".gemini/settings.json",
    ".config/git/config",
    ".envrc",
    "sub/.git",
]


async def test_protected_paths_are_never_written(workspace: Path, history: Path) -> None:
    async with serve(FW, workspace, *fw_args(history)) as client:
        results = {
            target: await write(client, target, "x", overwrite=True, createDirs=True) for target in PROTECTED_TARGETS
        }
    for target, result in results.items():
        assert error_of(result)["code"] == "PROTECTED_PATH", target
        assert not (workspace / target).exists(), target
        assert not (workspace / target.split("/", maxsplit=1)[0]).exists() or target.startswith("sub/"), target


# A git dir of any name (git init --separate-git-dir), its modules and worktrees, a bare repository.
SEPARATE_GIT_DIR_TARGETS = [
    "gitdir/config",
    "gitdir/hooks/pre-commit",
    "gitdir/modules/lib/config",
    "gitdir/modules/lib/hooks/post-checkout",
    "gitdir/worktrees/w/config.worktree",
    "gitdir/commondir",
    "bare.git/hooks/pre-receive",
    "bare.git/config",
]


async def test_git_config_and_hooks_are_protected_wherever_the_git_dir_lies(workspace: Path, history: Path) -> None:
    subprocess.run(["git", "init", "-q", "--separate-git-dir=gitdir", "work"], cwd=workspace, check=True)
    subprocess.run(["git", "init", "-q", "--bare", "bare.git"], cwd=workspace, check=True)
    (workspace / "gitdir" / "modules" / "lib").mkdir(parents=True)
    (workspace / "gitdir" / "worktrees" / "w").mkdir(parents=True)
    async with in_memory("file_write", workspace, history=history) as client:
        results = {
            target: await write(client, target, "x", overwrite=True, createDirs=True)
            for target in SEPARATE_GIT_DIR_TARGETS
        }
        ordinary = await write(client, "gitdir/description", "mine", overwrite=True)
    for target, result in results.items():
        assert error_of(result)["code"] == "PROTECTED_PATH", target
        assert "git" in error_of(result)["message"], target
    assert not ordinary.is_error


def _git(*args: str, cwd: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    subprocess.run(
        ["git", "-c", "protocol.file.allow=always", *args], cwd=cwd, env=env, check=True, capture_output=True
    )


SUBMODULE_AND_WORKTREE_TARGETS = [
    ".git/modules/lib/config",  # a core.fsmonitor there runs at the user's next git command in the submodule
    ".git/modules/lib/hooks/post-checkout",
    ".git/modules/lib/modules/inner/config",  # a submodule of the submodule
    ".git/modules/fresh/config",  # a module git dir that does not exist yet
    ".git/worktrees/wt/config.worktree",
    ".git/worktrees/wt/gitdir",
    "lib/.git",  # the submodule's pointer to its git dir
    "wt/.git",
]


async def test_a_submodules_or_worktrees_git_config_and_hooks_are_never_written(workspace: Path, history: Path) -> None:
    lib = workspace.parent / "lib-origin"
    lib.mkdir()
    _git("init", "-q", cwd=lib)
    (lib / "f").write_text("x", encoding="utf-8")
    _git("add", "f", cwd=lib)
    _git("commit", "-qm", "i", cwd=lib)
    _git("init", "-q", cwd=workspace)
    _git("submodule", "-q", "add", str(lib), "lib", cwd=workspace)
    _git("commit", "-qm", "s", cwd=workspace)
    _git("worktree", "add", "-q", "wt", cwd=workspace)
    (workspace / ".git" / "modules" / "lib" / "modules" / "inner").mkdir(parents=True)
    for name in ("objects", "refs"):
        (workspace / ".git" / "modules" / "lib" / "modules" / "inner" / name).mkdir()
    before = {p: p.read_bytes() for p in workspace.rglob("*") if p.is_file() and "objects" not in p.parts}
    async with in_memory("file_write", workspace, history=history) as client:
        results = {
            target: await write(client, target, "[core]\n\tfsmonitor = touch pwned\n", overwrite=True, createDirs=True)
            for target in SUBMODULE_AND_WORKTREE_TARGETS
        }
        ordinary = await write(client, "lib/f", "changed", overwrite=True)  # the submodule's work tree stays writable
    for target, result in results.items():
        assert error_of(result)["code"] == "PROTECTED_PATH", target
    assert not ordinary.is_error
    after = {p: p.read_bytes() for p in workspace.rglob("*") if p.is_file() and "objects" not in p.parts}
    assert {p for p in after if after[p] != before.get(p)} == {workspace / "lib" / "f"}


async def test_the_servers_own_policy_and_audit_log_are_protected(workspace: Path, history: Path) -> None:
    policy = workspace / "guard.toml"
    policy.write_text("[file_write]\nmax_write_bytes = 1000\n", encoding="utf-8")
    audit = workspace / "logs" / "audit.jsonl"
    async with serve(FW, workspace, *fw_args(history, "--policy", str(policy)), audit=audit) as client:
        on_policy = await write(client, "guard.toml", "[file_write]\nmax_write_bytes = 99999999\n", overwrite=True)
        on_audit = await write(client, "logs/audit.jsonl", "", overwrite=True)
        via_link = await write(client, "logs/../guard.toml", "x", overwrite=True)
    for result in (on_policy, on_audit, via_link):
        assert error_of(result)["code"] == "PROTECTED_PATH"
    assert "99999999" not in policy.read_text(encoding="utf-8")


async def test_history_dir_inside_the_jail_is_refused_at_start_up(workspace: Path) -> None:
    proc = subprocess.run(
        [console_script(FW), "--history-dir", str(workspace / "hist")],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and "inside the allowed directories" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


async def test_content_over_the_cap_is_a_resource_error(workspace: Path, history: Path, tmp_path: Path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text("[file_write]\nmax_write_bytes = 100\n", encoding="utf-8")
    async with serve(FW, workspace, *fw_args(history, "--policy", str(policy))) as client:
        result = await write(client, "big.txt", "x" * 101)
    assert error_of(result)["code"] == "CONTENT_TOO_LARGE"
    assert error_of(result)["category"] == "RESOURCE"


async def test_client_roots_narrow_writes_too(workspace: Path, history: Path, mode: str) -> None:
    from mcp.client import ClientRequestContext
    from mcp.types import ListRootsResult, Root

    async def list_roots(_ctx: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=(workspace / "sub").as_uri())])  # type: ignore[arg-type]

    async with serve(FW, workspace, *fw_args(history), mode=mode, list_roots_callback=list_roots) as client:
        outside_root = await write(client, "top.txt", "x")
        inside_root = await write(client, "sub/ok.txt", "x")
    assert error_of(outside_root)["code"] == "PATH_OUTSIDE_JAIL"
    assert inside_root.structured_content["success"]


# -- faults --------------------------------------------------------------------------------------


def test_writer_killed_mid_write_leaves_old_or_new_content_never_a_mix(workspace: Path, history: Path) -> None:
    old, new = b"A" * (6 << 20), "B" * (6 << 20)
    target = workspace / "big.txt"
    outcomes = set()
    rng = random.Random(1234)
    for attempt in range(8):
        target.write_bytes(old)
        raw = RawClient(
            [console_script(FW), "--audit-log", str(workspace.parent / "a.jsonl"), *fw_args(history)], workspace
        )
        try:
            raw.initialize()
            raw.send(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {
                        "name": "file_write",
                        "arguments": {"path": "big.txt", "content": new, "overwrite": True},
                    },
                }
            )
            # The random moment: wait for an answer at most this long, then SIGKILL whatever state it is in.
            assert raw.proc.stdout is not None
            select.select([raw.proc.stdout.fileno()], [], [], rng.uniform(0.0, 0.25) if attempt else 0.0)
            raw.proc.send_signal(signal.SIGKILL)
        finally:
            raw.close()
        data = target.read_bytes()
        assert data in (old, new.encode()), f"attempt {attempt}: {len(data)} bytes, mixed or truncated"
        outcomes.add("new" if data == new.encode() else "old")
    assert "old" in outcomes  # at least one kill landed before the rename


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=10).returncode == 0


@pytest.mark.skipif(not _can_unshare(), reason="unprivileged user+mount namespaces are not available")
def test_disk_full_leaves_the_old_file_intact_and_reports_a_resource_error(tmp_path: Path, history: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    after = tmp_path / "after.txt"
    script = (
        'mount -t tmpfs -o size=256k tmpfs "$1" && cd "$1" && printf "precious\\n" > f.txt && '
        '"$2" --audit-log "$3" --history-dir "$4"; cat "$1/f.txt" > "$5"; ls -a "$1" >> "$5"'
    )
    raw = RawClient(
        [
            "unshare",
            "-rm",
            "sh",
            "-c",
            script,
            "sh",
            str(small),
            console_script(FW),
            str(tmp_path / "a.jsonl"),
            str(history),
            str(after),
        ],
        tmp_path,
    )
    try:
        raw.initialize()
        full = raw.request(
            1,
            "tools/call",
            {"name": "file_write", "arguments": {"path": "f.txt", "content": "x" * (1 << 20), "overwrite": True}},
        )
        fresh = raw.request(
            2, "tools/call", {"name": "file_write", "arguments": {"path": "g.txt", "content": "y" * (1 << 20)}}
        )
    finally:
        raw.close()
    meta = full["result"]["_meta"]["mcp-guard/error"]
    assert full["result"]["isError"] and meta["code"] == "DISK_FULL" and meta["category"] == "RESOURCE"
    assert fresh["result"]["_meta"]["mcp-guard/error"]["code"] == "DISK_FULL"
    listing = after.read_text(encoding="utf-8")
    assert listing.startswith("precious\n")
    assert ".mcp-guard-" not in listing and "g.txt" not in listing  # temp files cleaned up


def test_two_agents_racing_with_the_same_expected_sha256_exactly_one_wins(workspace: Path, history: Path) -> None:
    args = [console_script(FW), "--audit-log", str(workspace.parent / "a.jsonl"), *fw_args(history)]
    agents = [RawClient(args, workspace), RawClient(args, workspace)]
    try:
        for agent in agents:
            agent.initialize()
        for round_ in range(15):
            base = f"base {round_}\n".encode()
            (workspace / "shared.txt").write_bytes(base)
            for i, agent in enumerate(agents):
                agent.send(
                    {
                        "jsonrpc": "2.0",
                        "id": 100 + round_,
                        "method": "tools/call",
                        "params": {
                            "name": "file_write",
                            "arguments": {
                                "path": "shared.txt",
                                "content": f"agent {i} round {round_}\n",
                                "overwrite": True,
                                "expectedSha256": sha(base),
                            },
                        },
                    }
                )
            results = [_answer(agent, 100 + round_) for agent in agents]
            wins = [r for r in results if not r["isError"]]
            losses = [r for r in results if r["isError"]]
            assert len(wins) == 1, f"round {round_}: {results}"
            assert losses[0]["_meta"]["mcp-guard/error"]["code"] == "CONFLICT"
            winner = agents.index(next(a for a, r in zip(agents, results, strict=True) if not r["isError"]))
            assert (workspace / "shared.txt").read_text(encoding="utf-8") == f"agent {winner} round {round_}\n"
    finally:
        for agent in agents:
            agent.close()


def _answer(agent: RawClient, id_: int) -> dict[str, Any]:
    while True:
        message = agent.recv(timeout=30)
        if message.get("id") == id_:
            return dict(message["result"])


async def test_a_write_is_undone_by_its_audit_id_and_an_overwrite_brings_the_old_content_back(
    workspace: Path, tmp_path: Path
) -> None:
    import subprocess

    from support import console_script

    async with serve("mcp-server-file-write", workspace, "--history-dir", str(tmp_path / "hist")) as client:
        made = await client.call_tool("file_write", {"path": "notes.md", "content": "first\n"})
        again = await client.call_tool("file_write", {"path": "notes.md", "content": "second\n", "overwrite": True})
    assert made.structured_content is not None and again.structured_content is not None

    def undo(audit_id: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [console_script("mcp-guard"), "undo", audit_id, "--history-dir", str(tmp_path / "hist")],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    assert undo(again.structured_content["auditId"]).returncode == 0
    assert (workspace / "notes.md").read_text() == "first\n"
    assert undo(made.structured_content["auditId"]).returncode == 0
    assert not (workspace / "notes.md").exists()
