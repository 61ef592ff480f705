"""file_read through the real console script over stdio, in both protocol eras; a few logic-only cases (refusals
whose stdio twin is here too) through the same server in this process (``in_memory``, the fast tier).

Attack tests are named after the attack they stop.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import threading
import zlib
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import ClientRequestContext
from mcp.types import ListRootsResult, Root

from support import error_of, in_memory, serve, text_of
from support.processes import my_children_with

pytestmark = pytest.mark.anyio
FR = "mcp-server-file-read"


@pytest.fixture
def mode() -> str:
    """One protocol era through the real process here; the in-memory tier (test_in_memory.py) runs this tool's
    logic in both eras, and the transport tests (serving/, test_fuzz.py) run the processes in both."""
    return "auto"


async def read(client: Any, path: str, **extra: Any) -> Any:
    with anyio.fail_after(30):
        return await client.call_tool("file_read", {"path": path, **extra})


def png_bytes() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"\x00\xff\x00\x00" * 1
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def elf_bytes() -> bytes:
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    header = struct.pack("<HHIQQQIHHHHHH", 2, 0x3E, 1, 0x401000, 64, 0, 0, 64, 56, 0, 64, 0, 0)
    return ident + header + bytes(200)


# -- the contract --------------------------------------------------------------------------------


async def test_file_read_tool_matches_the_seed_004_contract(workspace: Path, mode: str) -> None:
    async with serve(FR, workspace, mode=mode) as client:
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == ["file_read"]
    tool = tools[0]
    assert tool.description == "指定されたパスのファイルを読み込み、その内容を返します。"
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is True
    assert tool.annotations.open_world_hint is False
    assert tool.input_schema["required"] == ["path"]
    assert tool.input_schema["properties"]["path"]["type"] == "string"
    assert tool.output_schema is not None
    assert "content" in tool.output_schema["required"]
    assert tool.output_schema["properties"]["content"]["type"] == "string"


async def test_reads_a_text_file_with_metadata(workspace: Path, mode: str) -> None:
    async with serve(FR, workspace, mode=mode) as client:
        result = await read(client, "hello.txt")
    assert not result.is_error
    out = result.structured_content
    assert out["content"] == "hello\nworld\n"
    assert out["path"] == "hello.txt"
    assert out["size"] == 12
    assert out["mimeType"] == "text/plain"
    assert out["encoding"] == "utf-8"
    assert out["totalLines"] == 2
    assert out["truncated"] is False
    assert "nextOffset" not in out  # absent at the end of the file (the schema has no null)
    assert out["sha256"] == hashlib.sha256(b"hello\nworld\n").hexdigest()
    assert text_of(result) == "hello\nworld\n"


async def test_allow_path_adds_a_second_root(workspace: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "notes.md").write_text("# notes\n", encoding="utf-8")
    async with serve(FR, workspace, "--allow-path", str(extra)) as client:
        result = await read(client, str(extra / "notes.md"))
        via_dotdot = await read(client, "../extra/notes.md")
    assert result.structured_content["content"] == "# notes\n"
    assert via_dotdot.structured_content["content"] == "# notes\n"


# -- path attacks --------------------------------------------------------------------------------


async def test_credentials_stay_unread_even_when_home_is_allowed(workspace: Path, isolated_home: Path) -> None:
    (isolated_home / ".ssh").mkdir()
    (isolated_home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    (isolated_home / ".aws").mkdir()
    (isolated_home / ".aws" / "credentials").write_text("secret\n")
    (isolated_home / ".bashrc").write_text("# rc\n")
    async with serve(FR, workspace, "--allow-path", str(isolated_home)) as client:
        key = await client.call_tool("file_read", {"path": str(isolated_home / ".ssh" / "id_rsa")})
        dotted = await client.call_tool(
            "file_read", {"path": str(isolated_home / ".aws" / ".." / ".aws" / "credentials")}
        )
        rc = await client.call_tool("file_read", {"path": str(isolated_home / ".bashrc")})
    for refused in (key, dotted):
        payload = error_of(refused)
        assert payload["code"] == "PATH_HIDDEN" and "PRIVATE" not in text_of(refused)
    assert not rc.is_error and rc.structured_content["content"] == "# rc\n"


async def test_a_hidden_directory_renamed_or_a_hidden_file_linked_elsewhere_stays_hidden(
    workspace: Path, isolated_home: Path
) -> None:
    """Threat: `mv ~/.docker ~/d2`, `ln ~/.ssh/id_rsa key` (by anything that can rename or link in an allowed home):
    the same directory or file under a name the hidden list does not spell. Hidden is by identity too."""
    (isolated_home / ".docker").mkdir()
    (isolated_home / ".docker" / "config.json").write_text('{"auths": "SECRET"}\n')
    (isolated_home / ".ssh").mkdir()
    (isolated_home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    async with in_memory("file_read", workspace, allow=(isolated_home,)) as client:
        before = await client.call_tool("file_read", {"path": str(isolated_home / ".docker" / "config.json")})
        (isolated_home / ".docker").rename(isolated_home / "d2")
        os.link(isolated_home / ".ssh" / "id_rsa", isolated_home / "key.txt")
        renamed = await client.call_tool("file_read", {"path": str(isolated_home / "d2" / "config.json")})
        linked = await client.call_tool("file_read", {"path": str(isolated_home / "key.txt")})
        # A key made after the server looked the list up, then linked: no name the lookup watches changed.
        (isolated_home / ".ssh" / "id_new").write_text("NEW PRIVATE KEY\n")
        os.link(isolated_home / ".ssh" / "id_new", isolated_home / "new.txt")
        linked_new = await client.call_tool("file_read", {"path": str(isolated_home / "new.txt")})
    for refused in (before, renamed, linked, linked_new):
        payload = error_of(refused)
        assert payload["code"] == "PATH_HIDDEN", payload
        assert "SECRET" not in text_of(refused) and "PRIVATE" not in text_of(refused)


async def test_dotdot_traversal_is_refused(workspace: Path, mode: str) -> None:
    async with serve(FR, workspace, mode=mode) as client:
        results = [await read(client, p) for p in ("../outside/secret.txt", "sub/../../outside/secret.txt", "..")]
    for result in results:
        assert error_of(result)["code"] == "PATH_OUTSIDE_JAIL"
        assert error_of(result)["category"] == "SECURITY"
        assert "SECRET" not in text_of(result)


async def test_absolute_path_outside_is_refused(workspace: Path, mode: str) -> None:
    outside = workspace.parent / "outside" / "secret.txt"
    async with in_memory("file_read", workspace, mode=mode) as client:
        result = await read(client, str(outside))
        etc = await read(client, "/etc/passwd")
    assert error_of(result)["code"] == "PATH_OUTSIDE_JAIL"
    assert error_of(etc)["code"] == "PATH_OUTSIDE_JAIL"


async def test_sibling_prefix_directory_is_refused(workspace: Path, mode: str) -> None:
    # /x/proj must never admit /x/proj-evil: containment compares whole components.
    evil = workspace.parent / "proj-evil" / "secret.txt"
    async with in_memory("file_read", workspace, mode=mode) as client:
        absolute = await read(client, str(evil))
        relative = await read(client, "../proj-evil/secret.txt")
    assert error_of(absolute)["code"] == "PATH_OUTSIDE_JAIL"
    assert error_of(relative)["code"] == "PATH_OUTSIDE_JAIL"


async def test_nul_byte_in_path_is_refused(workspace: Path, mode: str) -> None:
    async with serve(FR, workspace, mode=mode) as client:
        result = await read(client, "hello.txt\x00../../outside/secret.txt")
        empty = await read(client, "")
    assert error_of(result)["code"] == "INVALID_PATH"
    assert error_of(result)["category"] == "PARAM"
    assert error_of(empty)["code"] == "INVALID_PATH"


async def test_symlinked_file_pointing_outside_is_refused(workspace: Path, mode: str) -> None:
    secret = workspace.parent / "outside" / "secret.txt"
    (workspace / "abs-link.txt").symlink_to(secret)
    (workspace / "rel-link.txt").symlink_to("../outside/secret.txt")
    async with serve(FR, workspace, mode=mode) as client:
        results = [await read(client, "abs-link.txt"), await read(client, "rel-link.txt")]
    for result in results:
        error = error_of(result)
        assert error["code"] == "SYMLINK_ESCAPE"
        # Messages never reveal where outside the jail the link points.
        assert str(secret.parent) not in error["message"] + error["suggestion"]
        assert "SECRET" not in text_of(result)


async def test_symlinked_directory_component_pointing_outside_is_refused(workspace: Path, mode: str) -> None:
    (workspace / "linkdir").symlink_to(workspace.parent / "outside")
    async with in_memory("file_read", workspace, mode=mode) as client:
        result = await read(client, "linkdir/secret.txt")
    assert error_of(result)["code"] == "SYMLINK_ESCAPE"


async def test_dangling_symlink_to_outside_is_refused_as_escape(workspace: Path) -> None:
    (workspace / "dangling").symlink_to(workspace.parent / "outside" / "nope.txt")
    async with in_memory("file_read", workspace) as client:
        result = await read(client, "dangling")
    assert error_of(result)["code"] == "SYMLINK_ESCAPE"


async def test_symlinks_that_stay_inside_the_jail_are_followed(workspace: Path, mode: str) -> None:
    (workspace / "rel-ok").symlink_to("sub/inner.txt")
    (workspace / "abs-ok").symlink_to(workspace / "hello.txt")
    (workspace / "subdir-link").symlink_to(workspace / "sub")
    async with serve(FR, workspace, mode=mode) as client:
        rel = await read(client, "rel-ok")
        absolute = await read(client, "abs-ok")
        through_dir = await read(client, "subdir-link/inner.txt")
    assert rel.structured_content["content"] == "inner\n"
    assert absolute.structured_content["content"] == "hello\nworld\n"
    assert through_dir.structured_content["content"] == "inner\n"


async def test_symlinks_reject_mode_refuses_even_symlinks_inside_the_jail(workspace: Path) -> None:
    (workspace / "rel-ok").symlink_to("sub/inner.txt")
    (workspace / "subdir-link").symlink_to("sub")
    async with serve(FR, workspace, "--symlinks", "reject") as client:
        link = await read(client, "rel-ok")
        through_dir = await read(client, "subdir-link/inner.txt")
        plain = await read(client, "sub/inner.txt")
    assert error_of(link)["code"] == "SYMLINK_REJECTED"
    assert error_of(through_dir)["code"] == "SYMLINK_REJECTED"
    assert plain.structured_content["content"] == "inner\n"


async def test_symlink_swapped_in_while_reads_run_never_returns_outside_content(workspace: Path) -> None:
    outside = workspace.parent / "outside"
    (outside / "data.txt").write_text("SECRET-OUTSIDE\n", encoding="utf-8")
    flip = workspace / "flip"
    parked = workspace / "parked"
    flip.mkdir()
    (flip / "data.txt").write_text("inside\n", encoding="utf-8")
    stop = threading.Event()
    flips = 0

    def flipper() -> None:
        nonlocal flips
        while not stop.is_set():
            os.rename(flip, parked)
            os.symlink(outside, flip)
            os.unlink(flip)
            os.rename(parked, flip)
            flips += 1
            # Hold the intact tree for a moment each round: without it the intact window is a few
            # instructions long and every read may land in a broken state (no read would succeed).
            stop.wait(0.001)

    thread = threading.Thread(target=flipper, daemon=True)
    seen: dict[str, int] = {}
    async with serve(FR, workspace) as client:
        thread.start()
        try:
            for i in range(4000):  # at least 400 reads, and until the race has really run (a loaded machine)
                result = await read(client, "flip/data.txt")
                assert "SECRET" not in text_of(result)
                key = "ok" if not result.is_error else error_of(result)["code"]
                seen[key] = seen.get(key, 0) + 1
                if i >= 400 and flips > 50 and seen.get("ok", 0) > 0:
                    break
        finally:
            stop.set()
            thread.join(timeout=10)
    assert flips > 50, "the race never really ran"
    assert seen.get("ok", 0) > 0
    # PATH_HIDDEN: a refusal too — the link the flipper makes may take the inode number of a hidden entry's file
    # deleted meanwhile (hidden entries are also known by identity); never content.
    assert set(seen) <= {"ok", "SYMLINK_ESCAPE", "NOT_FOUND", "PATH_HIDDEN"}


# -- file types and sizes ------------------------------------------------------------------------


async def test_fifo_is_refused_promptly(workspace: Path, mode: str) -> None:
    os.mkfifo(workspace / "pipe")
    async with serve(FR, workspace, mode=mode) as client:
        with anyio.fail_after(5):
            result = await client.call_tool("file_read", {"path": "pipe"})
    assert error_of(result)["code"] == "NOT_REGULAR_FILE"


async def test_directory_and_missing_file_are_refused(workspace: Path) -> None:
    async with serve(FR, workspace) as client:
        directory = await read(client, "sub")
        missing = await read(client, "nope.txt")
        through_file = await read(client, "hello.txt/x")
    assert error_of(directory)["code"] == "IS_DIRECTORY"
    assert error_of(missing)["code"] == "NOT_FOUND"
    assert error_of(missing)["category"] == "RESOURCE"
    assert error_of(through_file)["code"] == "NOT_A_DIRECTORY"


async def test_binary_png_and_elf_files_are_refused(workspace: Path, mode: str) -> None:
    (workspace / "image.txt").write_bytes(png_bytes())  # the extension lies; the content decides
    (workspace / "program").write_bytes(elf_bytes())
    async with serve(FR, workspace, mode=mode) as client:
        png = await read(client, "image.txt")
        elf = await read(client, "program")
    assert error_of(png)["code"] == "BINARY_FILE"
    assert "image/png" in error_of(png)["message"]
    assert error_of(elf)["code"] == "BINARY_FILE"
    assert error_of(elf)["suggestion"]


async def test_sparse_1gib_file_gives_a_truncated_page_and_server_memory_stays_small(workspace: Path) -> None:
    big = workspace / "big.log"
    line = b"0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789\n"
    with big.open("wb") as fh:
        fh.write(line * 20_000)  # 1.5 MB of text, then a 1 GiB hole
        fh.truncate(1 << 30)
    async with serve(FR, workspace) as client:
        result = await read(client, "big.log")
        # (One of this worker's children that exited unreaped, from an earlier test, is a zombie: skipped.)
        server = my_children_with("mcp-server-file-read")[0]
        hwm_kib = int(
            next(
                ln for ln in Path(f"/proc/{server.pid}/status").read_text().splitlines() if ln.startswith("VmHWM")
            ).split()[1]
        )
    out = result.structured_content
    assert out["truncated"] is True
    assert out["size"] == 1 << 30
    assert len(out["content"].encode()) <= 262144
    assert out["nextOffset"] == out["endLine"] + 1
    assert f"offset={out['nextOffset']}" in text_of(result)
    assert hwm_kib < 200 * 1024, f"server peak RSS {hwm_kib} KiB"


async def test_a_small_read_is_not_held_up_by_a_huge_one_in_flight(workspace: Path) -> None:
    # Regression: one page of a huge file was computed on the event loop and stalled every other request.
    with (workspace / "huge.log").open("wb") as fh:
        fh.write(b"some text\n" * 1000)
        fh.truncate(1 << 30)  # a page of it hashes and counts the whole GiB: seconds of work
    finished: list[str] = []
    async with serve(FR, workspace) as client:

        async def call(name: str, path: str) -> None:
            result = await client.call_tool("file_read", {"path": path, "limit": 5})
            assert not result.is_error, text_of(result)
            finished.append(name)

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "huge", "huge.log")  # sent first: tasks start in order
                tg.start_soon(call, "small", "hello.txt")
    assert finished == ["small", "huge"]


async def test_invalid_arguments_are_refused_and_the_server_keeps_serving(workspace: Path, mode: str) -> None:
    async with serve(FR, workspace, mode=mode) as client:
        wrong_type = await client.call_tool("file_read", {"path": {"name": "hello.txt"}})
        missing = await client.call_tool("file_read", {})
        bad_offset = await client.call_tool("file_read", {"path": "hello.txt", "offset": 0})
        bad_limit = await client.call_tool("file_read", {"path": "hello.txt", "limit": "many"})
        past_end = await client.call_tool("file_read", {"path": "hello.txt", "offset": 50})
        still_fine = await read(client, "hello.txt")
    for result in (wrong_type, missing, bad_offset, bad_limit):
        assert error_of(result)["code"] == "INVALID_ARGUMENT"
        assert error_of(result)["category"] == "PARAM"
    assert "path" in error_of(missing)["message"]
    assert error_of(past_end)["code"] == "OFFSET_OUT_OF_RANGE"
    assert still_fine.structured_content["content"] == "hello\nworld\n"


async def test_unknown_tool_is_a_structured_refusal(workspace: Path) -> None:
    async with serve(FR, workspace) as client:
        result = await client.call_tool("file_write", {"path": "x", "content": "y"})
    assert error_of(result)["code"] == "UNKNOWN_TOOL"


# -- roots ---------------------------------------------------------------------------------------


async def test_client_roots_narrow_the_jail_and_list_changed_refreshes_it(workspace: Path, mode: str) -> None:
    roots = [workspace / "sub"]

    async def list_roots(_ctx: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=r.as_uri()) for r in roots])  # type: ignore[arg-type]

    async with serve(FR, workspace, mode=mode, list_roots_callback=list_roots) as client:
        narrowed_out = await read(client, "hello.txt")
        narrowed_in = await read(client, "sub/inner.txt")
        roots[:] = [workspace]
        await client.send_roots_list_changed()
        widened_back = await read(client, "hello.txt")
    assert error_of(narrowed_out)["code"] == "PATH_OUTSIDE_JAIL"
    assert narrowed_in.structured_content["content"] == "inner\n"
    assert widened_back.structured_content["content"] == "hello\nworld\n"


async def test_client_roots_can_never_widen_the_jail(workspace: Path, mode: str) -> None:
    outside = workspace.parent / "outside"

    async def list_roots(_ctx: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=outside.as_uri())])  # type: ignore[arg-type]

    async with serve(FR, workspace, mode=mode, list_roots_callback=list_roots) as client:
        escape = await read(client, str(outside / "secret.txt"))
        inside = await read(client, "hello.txt")
    assert error_of(escape)["code"] in ("NO_ALLOWED_ROOTS", "PATH_OUTSIDE_JAIL")
    assert error_of(inside)["code"] == "NO_ALLOWED_ROOTS"
    assert "SECRET" not in text_of(escape)


@pytest.mark.parametrize(
    ("script", "tool", "inside", "outside"),
    [
        (FR, "file_read", {"path": "hello.txt"}, {"path": "../outside/secret.txt"}),
        (
            "mcp-server-file-write",
            "file_write",
            {"path": "new.txt", "content": "x"},
            {"path": "../outside/n.txt", "content": "x"},
        ),
        ("mcp-server-shell-exec", "shell_exec", {"command": "echo hi"}, {"command": "ls", "cwd": "../outside"}),
    ],
)
async def test_an_empty_roots_list_leaves_the_launch_jail_in_force(
    workspace: Path, mode: str, script: str, tool: str, inside: dict[str, Any], outside: dict[str, Any]
) -> None:
    # Regression: MCP Inspector 2.x and editors with no folder open answer roots/list with []; that locked
    # every call of every server with NO_ALLOWED_ROOTS. An empty list names no roots: no narrowing, no widening.
    async def list_roots(_ctx: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[])

    async with serve(script, workspace, mode=mode, list_roots_callback=list_roots) as client:
        with anyio.fail_after(30):
            allowed = await client.call_tool(tool, inside)
            refused = await client.call_tool(tool, outside)
    assert not allowed.is_error, text_of(allowed)
    assert error_of(refused)["code"] == "PATH_OUTSIDE_JAIL"


# -- audit ---------------------------------------------------------------------------------------


async def test_every_call_is_audited_outside_the_jail(workspace: Path, tmp_path: Path) -> None:
    audit = tmp_path / "logs" / "audit.jsonl"
    async with serve(FR, workspace, audit=audit) as client:
        await read(client, "hello.txt")
        await read(client, "../outside/secret.txt")
        await client.call_tool("file_read", {"path": {"name": "hello.txt"}})
    records = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    entries = [r for r in records if r["phase"] == "outcome"]  # a call that acted also has its intent record
    assert [e["policy_result"] for e in entries] == ["allow", "deny", "error"]
    assert [e["approved_by"] for e in entries] == ["policy", None, None]
    assert entries[1]["reason"] == "'../outside/secret.txt' is outside the allowed directories."
    assert {e["actor"] for e in entries} == {"mcp/0.1.0"}  # the SDK client's name/version from initialize
    assert [e["action"] for e in entries] == ["read"] * 3
    assert [e["target"] for e in entries[:2]] == ["hello.txt", "../outside/secret.txt"]
    assert [e["code"] for e in entries] == [None, "PATH_OUTSIDE_JAIL", "INVALID_ARGUMENT"]
    assert entries[0]["bytes"] == 12 and entries[0]["server"] == "file_read" and entries[0]["tool"] == "file_read"
    assert entries[0]["arguments"] == {"path": "hello.txt"}
    assert all(e["durationMs"] >= 0 and e["time"] for e in entries)


async def test_default_audit_log_goes_to_xdg_state_home(workspace: Path, isolated_home: Path) -> None:
    from mcp import Client

    from support import server_params

    params = server_params(FR, workspace)
    params.args = []  # no --audit-log: the default location applies
    async with Client(params, mode="legacy") as client:
        await read(client, "hello.txt")
    log = isolated_home / ".local" / "state" / "mcp-guard" / "audit.jsonl"
    assert json.loads(log.read_text(encoding="utf-8").splitlines()[-1])["code"] is None
