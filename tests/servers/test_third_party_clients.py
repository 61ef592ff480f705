"""The file_read and file_write servers as seen by third-party MCP clients.

* The official TypeScript SDK (``Client`` + ``StdioClientTransport``), driven by
  ``tests/clients/ts_client.mjs``. Its ``callTool()`` validates structuredContent
  against the tool's outputSchema and throws on a mismatch, so a successful call
  is one the SDK accepted.
* The MCP Inspector CLI (``@modelcontextprotocol/inspector-cli``), in ``--cli`` mode.

Both are pinned in ``tests/clients/package.json``; install them with
``cd tests/clients && npm ci``. The tests skip only when ``node`` or that
``node_modules`` folder is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CLIENTS_DIR = Path(__file__).resolve().parents[1] / "clients"
NODE_MODULES = CLIENTS_DIR / "node_modules"
TS_CLIENT = CLIENTS_DIR / "ts_client.mjs"
TS_SDK_DIR = NODE_MODULES / "@modelcontextprotocol" / "sdk"
INSPECTOR_CLI = NODE_MODULES / "@modelcontextprotocol" / "inspector-cli" / "build" / "cli.js"

SERVER_SCRIPT = "mcp-server-file-read"
DESCRIPTION = "指定されたパスのファイルを読み込み、その内容を返します。"
TEXT = "first line\n二行目: こんにちは\nthird line\n"
OUTSIDE_TEXT = "secret outside the jail\n"
TIMEOUT_S = 20


# --------------------------------------------------------------------------- helpers


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH")
    if not NODE_MODULES.is_dir():
        pytest.skip(f"{NODE_MODULES} is missing (run `npm ci` in {CLIENTS_DIR})")
    return node


def _server_script(name: str = SERVER_SCRIPT) -> str:
    found = shutil.which(name)
    if found is not None:
        return found
    candidate = Path(sys.executable).parent / name
    assert candidate.is_file(), f"{name} not found on PATH nor next to {sys.executable}"
    return str(candidate)


def _jail(tmp_path: Path) -> Path:
    """A launch directory (the server's allowed root) with a text file, and a file just outside it."""
    jail = tmp_path / "jail"
    jail.mkdir()
    (jail / "notes.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "outside.txt").write_text(OUTSIDE_TEXT, encoding="utf-8")
    return jail


def _server_args(tmp_path: Path) -> list[str]:
    return ["--audit-log", str(tmp_path / "audit.jsonl")]


def _run_ts_client(node: str, spec: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run(
        [node, str(TS_CLIENT), "-"],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=CLIENTS_DIR,
        check=False,
    )
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"ts_client.mjs printed no JSON (rc={proc.returncode})\nstdout:{proc.stdout}\nstderr:{proc.stderr}")
    return proc.returncode, report, proc.stderr


def _run_inspector(node: str, jail: Path, server_cmd: list[str], method_args: list[str]) -> Any:
    # Inspector CLI 1.0.3 reads its own package.json via `fs.existsSync("../package.json")`,
    # i.e. relative to the *working directory*, so it must run from a folder whose parent
    # holds a package.json. The server it spawns inherits that working directory, which
    # is what makes `jail` the server's allowed root.
    parent_pkg = jail.parent / "package.json"
    if not parent_pkg.exists():
        parent_pkg.write_text("{}\n", encoding="utf-8")
    proc = subprocess.run(
        [node, str(INSPECTOR_CLI), "--cli", *server_cmd, *method_args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=jail,
        check=False,
    )
    assert proc.returncode == 0, f"inspector failed (rc={proc.returncode})\nstdout:{proc.stdout}\nstderr:{proc.stderr}"
    return json.loads(proc.stdout)


# --------------------------------------------------------------------------- TypeScript SDK


def test_ts_sdk_client_lists_and_calls_file_read(tmp_path: Path) -> None:
    node = _node()
    jail = _jail(tmp_path)
    rc, report, stderr = _run_ts_client(
        node,
        {
            "command": _server_script(),
            "args": _server_args(tmp_path),
            "cwd": str(jail),
            "calls": [
                {"name": "file_read", "arguments": {"path": "notes.txt"}},
                {"name": "file_read", "arguments": {"path": "../outside.txt"}},
            ],
        },
    )
    assert rc == 0, f"failures: {report.get('failures')}\nserver stderr: {report.get('serverStderr')}\n{stderr}"
    assert report["ok"] is True

    # tools/list
    assert [t["name"] for t in report["tools"]] == ["file_read"]
    tool = report["tools"][0]
    assert tool["description"] == DESCRIPTION
    assert tool["annotations"]["readOnlyHint"] is True
    assert tool["annotations"]["openWorldHint"] is False
    assert tool["inputSchema"]["required"] == ["path"]
    assert {"path", "offset", "limit"} <= set(tool["inputSchema"]["properties"])
    assert "content" in tool["outputSchema"]["required"]

    # A successful read: structuredContent present and accepted by the SDK's validator.
    ok_call, outside_call = report["calls"]
    assert ok_call["ok"] is True
    assert ok_call["threw"] is False
    assert ok_call["result"]["isError"] is False
    assert ok_call["structuredContentValidated"] is True
    assert ok_call["result"]["structuredContent"]["content"] == TEXT
    assert TEXT in ok_call["result"]["text"]

    # A path outside the jail: a tool error, not a protocol error, with the guard's metadata.
    assert outside_call["threw"] is False
    result = outside_call["result"]
    assert result["isError"] is True
    assert result["structuredContent"] is None
    assert result["text"].startswith("PATH_OUTSIDE_JAIL (SECURITY):")
    assert OUTSIDE_TEXT.strip() not in result["text"]
    error = result["_meta"]["mcp-guard/error"]
    assert error["code"] == "PATH_OUTSIDE_JAIL"
    assert error["category"] == "SECURITY"
    assert error["message"]
    assert error["suggestion"]


FAKE_SERVER = r"""
import json
import sys

SCHEMA = {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]}
RESULTS = {
    "good": {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"content": "ok"}},
    "mismatch": {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"content": 42}},
    "missing": {"content": [{"type": "text", "text": "ok"}]},
    "error_mismatch": {"content": [{"type": "text", "text": "no"}], "isError": True, "structuredContent": {}},
}
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "fake", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "probe", "inputSchema": {"type": "object"}, "outputSchema": SCHEMA}]}
    elif method == "tools/call":
        result = RESULTS[msg["params"]["arguments"]["case"]]
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""


def test_ts_client_reports_output_schema_violations(tmp_path: Path) -> None:
    """Negative control: the SDK's outputSchema check is live, and ts_client.mjs turns it into a failure."""
    node = _node()
    server = tmp_path / "fake_server.py"
    server.write_text(FAKE_SERVER, encoding="utf-8")
    cases = ["good", "mismatch", "missing", "error_mismatch"]
    rc, report, _ = _run_ts_client(
        node,
        {
            "command": sys.executable,
            "args": [str(server)],
            "cwd": str(tmp_path),
            "calls": [{"name": "probe", "arguments": {"case": case}} for case in cases],
        },
    )
    assert rc == 1
    assert report["ok"] is False
    calls = dict(zip(cases, report["calls"], strict=True))
    assert calls["good"]["ok"] is True
    assert calls["good"]["structuredContentValidated"] is True
    assert calls["mismatch"]["threw"] is True
    assert calls["mismatch"]["error"]["code"] == -32602
    assert calls["missing"]["threw"] is True
    # Even with isError, structuredContent that is present is validated (and rejected).
    assert calls["error_mismatch"]["threw"] is True
    assert calls["error_mismatch"]["error"]["code"] == -32602
    assert len(report["failures"]) == 3


# --------------------------------------------------------------------------- MCP Inspector CLI


def test_inspector_cli_lists_and_calls_file_read(tmp_path: Path) -> None:
    node = _node()
    jail = _jail(tmp_path)
    server_cmd = [_server_script(), *_server_args(tmp_path)]

    listed = _run_inspector(node, jail, server_cmd, ["--method", "tools/list"])
    tools = {t["name"]: t for t in listed["tools"]}
    assert "file_read" in tools
    assert tools["file_read"]["description"] == DESCRIPTION

    called = _run_inspector(
        node, jail, server_cmd, ["--method", "tools/call", "--tool-name", "file_read", "--tool-arg", "path=notes.txt"]
    )
    assert called.get("isError", False) is False
    assert called["structuredContent"]["content"] == TEXT
    assert any(c["type"] == "text" and TEXT in c["text"] for c in called["content"])

    refused = _run_inspector(
        node,
        jail,
        server_cmd,
        ["--method", "tools/call", "--tool-name", "file_read", "--tool-arg", "path=../outside.txt"],
    )
    assert refused["isError"] is True
    assert refused["_meta"]["mcp-guard/error"]["code"] == "PATH_OUTSIDE_JAIL"


# --------------------------------------------------------------------------- file_write

WRITE_DESCRIPTION = "指定されたパスにファイルを作成または上書きし、内容を書き込みます。"


def _write_args(tmp_path: Path) -> list[str]:
    return [*_server_args(tmp_path), "--history-dir", str(tmp_path / "history")]


def test_ts_sdk_client_lists_and_calls_file_write(tmp_path: Path) -> None:
    node = _node()
    jail = _jail(tmp_path)
    (jail / "link").symlink_to(tmp_path / "outside.txt")
    rc, report, stderr = _run_ts_client(
        node,
        {
            "command": _server_script("mcp-server-file-write"),
            "args": _write_args(tmp_path),
            "cwd": str(jail),
            "calls": [
                {"name": "file_write", "arguments": {"path": "new.txt", "content": "fresh\n"}},
                {"name": "file_write", "arguments": {"path": "notes.txt", "content": "v2\n", "overwrite": True}},
                {"name": "file_write", "arguments": {"path": "link", "content": "pwned", "overwrite": True}},
            ],
        },
    )
    assert rc == 0, f"failures: {report.get('failures')}\nserver stderr: {report.get('serverStderr')}\n{stderr}"
    tool = report["tools"][0]
    assert tool["name"] == "file_write" and tool["description"] == WRITE_DESCRIPTION
    assert tool["annotations"] == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": False,
    }
    assert tool["inputSchema"]["required"] == ["path", "content"]
    created, replaced, symlink = report["calls"]
    for call in (created, replaced):
        assert call["ok"] is True and call["structuredContentValidated"] is True
    assert created["result"]["structuredContent"]["created"] is True
    assert replaced["result"]["structuredContent"]["backup"]
    assert (jail / "new.txt").read_text(encoding="utf-8") == "fresh\n"
    assert symlink["result"]["isError"] is True and symlink["result"]["structuredContent"] is None
    assert symlink["result"]["_meta"]["mcp-guard/error"]["code"] == "SYMLINK_TARGET"
    assert (tmp_path / "outside.txt").read_text(encoding="utf-8") == OUTSIDE_TEXT


def test_inspector_cli_lists_and_calls_file_write(tmp_path: Path) -> None:
    node = _node()
    jail = _jail(tmp_path)
    server_cmd = [_server_script("mcp-server-file-write"), *_write_args(tmp_path)]
    listed = _run_inspector(node, jail, server_cmd, ["--method", "tools/list"])
    assert [t["name"] for t in listed["tools"]] == ["file_write"]
    called = _run_inspector(
        node,
        jail,
        server_cmd,
        ["--method", "tools/call", "--tool-name", "file_write", "--tool-arg", "path=hello.md", "content=hi there"],
    )
    assert called.get("isError", False) is False
    assert called["structuredContent"]["success"] is True
    assert (jail / "hello.md").read_text(encoding="utf-8") == "hi there"


# --------------------------------------------------------------------------- shell_exec

SHELL_DESCRIPTION = "指定されたシェルコマンドを実行し、その標準出力と標準エラー出力を返します。"


def test_ts_sdk_client_lists_and_calls_shell_exec(tmp_path: Path) -> None:
    node = _node()
    jail = _jail(tmp_path)
    rc, report, stderr = _run_ts_client(
        node,
        {
            "command": _server_script("mcp-server-shell-exec"),
            "args": _server_args(tmp_path),
            "cwd": str(jail),
            "calls": [
                {"name": "shell_exec", "arguments": {"command": "cat notes.txt | wc -l"}},
                {"name": "shell_exec", "arguments": {"command": "echo", "args": ["a", "b"]}},
                {"name": "shell_exec", "arguments": {"command": "shutdown -h now"}},
                {"name": "shell_exec", "arguments": {"command": "sudo ls"}},
            ],
        },
    )
    assert rc == 0, f"failures: {report.get('failures')}\nserver stderr: {report.get('serverStderr')}\n{stderr}"
    tool = report["tools"][0]
    assert tool["name"] == "shell_exec" and tool["description"] == SHELL_DESCRIPTION
    assert tool["annotations"] == {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True}
    assert tool["inputSchema"]["required"] == ["command"]
    assert tool["inputSchema"]["properties"]["args"]["default"] == []
    pipeline, argv, denied, asked = report["calls"]
    for call in (pipeline, argv):
        assert call["ok"] is True and call["structuredContentValidated"] is True
    assert pipeline["result"]["structuredContent"]["stdout"].strip() == "3"
    assert argv["result"]["structuredContent"]["stdout"] == "a b\n"
    assert denied["result"]["_meta"]["mcp-guard/error"]["code"] == "COMMAND_DENIED"
    # The TS client here declares no elicitation capability: an ask is refused, never run.
    assert asked["result"]["_meta"]["mcp-guard/error"]["code"] == "ASK_UNAVAILABLE"
    assert (jail / "notes.txt").exists()


def test_inspector_cli_lists_and_calls_shell_exec(tmp_path: Path) -> None:
    node = _node()
    jail = _jail(tmp_path)
    server_cmd = [_server_script("mcp-server-shell-exec"), *_server_args(tmp_path)]
    listed = _run_inspector(node, jail, server_cmd, ["--method", "tools/list"])
    assert [t["name"] for t in listed["tools"]] == ["shell_exec"]
    called = _run_inspector(
        node, jail, server_cmd, ["--method", "tools/call", "--tool-name", "shell_exec", "--tool-arg", "command=ls"]
    )
    assert called.get("isError", False) is False
    assert "notes.txt" in called["structuredContent"]["stdout"]


def test_ts_sdk_client_answers_shell_execs_approval_form_and_the_session_grant_sticks(tmp_path: Path) -> None:
    """The TypeScript SDK's client, as a host would use it: it answers the approval form (approve + remember),
    and the same line then runs without a question; its results pass the SDK's outputSchema check."""
    node = _node()
    jail = _jail(tmp_path)
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[[shell_exec.rules]]\nid = "pkgtool-install"\naction = "ask"\nreason = "installs packages"\n'
        'programs = ["pkgtool"]\nsubcommands = ["install"]\n',
        encoding="utf-8",
    )
    call = {"name": "shell_exec", "arguments": {"command": "pkgtool install a"}}
    rc, report, stderr = _run_ts_client(
        node,
        {
            "command": _server_script("mcp-server-shell-exec"),
            "args": [*_server_args(tmp_path), "--policy", str(policy)],
            "cwd": str(jail),
            "elicit": {"approve": True, "remember": "prefix"},
            "calls": [call, call | {"arguments": {"command": "pkgtool install b"}}],
        },
    )
    assert rc == 0, f"failures: {report.get('failures')}\nserver stderr: {report.get('serverStderr')}\n{stderr}"
    [question] = report["elicitations"]
    assert "pkgtool install a" in question["message"]
    assert question["properties"]["remember"]["enum"] == ["no", "line", "prefix"]
    first, second = (c["result"]["structuredContent"] for c in report["calls"])
    assert all(c["structuredContentValidated"] for c in report["calls"])
    assert (first["policyDecision"], first["approval"]) == ("ask-approved", "session-prefix:pkgtool install")
    assert (second["policyDecision"], second["approval"]) == ("approved-session", "session-prefix:pkgtool install")
