"""The minimal raw JSON-lines MCP client the bench drives servers with, audit readings, and result checks."""

from __future__ import annotations

import hashlib
import json
import os
import selectors
import shutil
import subprocess
import sys
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from bench.core import INIT_PARAMS, REPO, median, p95


class RPCError(RuntimeError):
    pass


class RawClient:
    """JSON lines on the child's stdin/stdout; responses matched by id; notifications skipped; bounded reads."""

    def __init__(self, argv: Sequence[str], cwd: Path, stderr: TextIO, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        os.set_blocking(self._out, False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._out, selectors.EVENT_READ)
        self._partial = bytearray()
        self._lines: deque[bytes] = deque()
        self._early: dict[int, dict[str, Any]] = {}
        self._next_id = 0
        self.sent_at = 0.0  # perf_counter when the last request was fully written into the pipe
        self.last_line_at = 0.0  # perf_counter when the last response line was complete
        self.last_line_bytes = 0
        self.arrived: dict[int, float] = {}  # response id -> perf_counter when its line was complete

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _write(self, obj: dict[str, Any]) -> None:
        self._write_parts([json.dumps(obj, separators=(",", ":")).encode() + b"\n"])

    def _write_parts(self, parts: Sequence[bytes]) -> None:
        """writev the parts (no joined copy); on a blocking pipe this returns once the reader has taken
        all but the pipe's buffer (64 KiB), so for a big request ``sent_at`` ~ when the server drained it."""
        views = [memoryview(p) for p in parts if p]
        while views:
            n = os.writev(self._in, views)
            while n:
                if n >= len(views[0]):
                    n -= len(views.pop(0))
                else:
                    views[0] = views[0][n:]
                    n = 0
        self.sent_at = time.perf_counter()

    def _split(self, chunk: bytes) -> None:
        start = 0
        while (nl := chunk.find(b"\n", start)) >= 0:
            if self._partial:
                self._partial += chunk[start:nl]
                self._lines.append(bytes(self._partial))
                self._partial.clear()
            else:
                self._lines.append(chunk[start:nl])
            start = nl + 1
        if start < len(chunk):
            self._partial += chunk[start:]

    def _read_line(self, deadline: float) -> bytes:
        while not self._lines:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError("no complete line from the server in time")
            if not self._sel.select(remaining):
                continue
            try:
                chunk = os.read(self._out, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                raise EOFError(f"server closed stdout (exit code {self.proc.poll()})")
            self._split(chunk)
        return self._lines.popleft()

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._write(msg)

    def request(self, method: str, params: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        return self._response(self.send(method, params), method, time.perf_counter() + timeout)

    def send(self, method: str, params: dict[str, Any]) -> int:
        """Write one request without waiting for its response (see ``wait``); returns its id."""
        self._next_id += 1
        self._write({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    def wait(self, rid: int, method: str = "tools/call", timeout: float = 60.0) -> dict[str, Any]:
        """The result of request ``rid`` (responses to other ids that arrive first are kept for their turn)."""
        return self._response(rid, method, time.perf_counter() + timeout)

    def _response(self, rid: int, method: str, deadline: float) -> dict[str, Any]:
        if rid in self._early:
            msg = self._early.pop(rid)
        else:
            while True:
                line = self._read_line(deadline)
                self.last_line_at = time.perf_counter()
                self.last_line_bytes = len(line)
                if not line.strip():
                    continue
                try:
                    msg = json.loads(line)
                except json.JSONDecodeError:
                    continue  # not ours to judge here; a stray line is skipped
                if not isinstance(msg, dict):
                    continue
                if "method" in msg:
                    if "id" in msg:  # a server->client request we do not serve
                        self._write(
                            {
                                "jsonrpc": "2.0",
                                "id": msg["id"],
                                "error": {"code": -32601, "message": "not supported by bench client"},
                            }
                        )
                    continue  # notification (log, progress, ...)
                if isinstance(msg.get("id"), int):
                    self.arrived[msg["id"]] = self.last_line_at
                if msg.get("id") == rid:
                    break
                if isinstance(msg.get("id"), int):
                    self._early[msg["id"]] = msg
        if "error" in msg:
            raise RPCError(f"{method}: {msg['error']}")
        result: dict[str, Any] = msg["result"]
        return result

    def initialize(self, timeout: float = 60.0) -> dict[str, Any]:
        result = self.request("initialize", INIT_PARAMS, timeout=timeout)
        self.notify("notifications/initialized")
        return result

    def call_tool(self, name: str, arguments: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
        result = self.request("tools/call", {"name": name, "arguments": arguments}, timeout=timeout)
        if result.get("isError"):
            raise RPCError(f"tool {name} failed: {result.get('content')}")
        return result

    def call_tool_encoded(self, name: str, arguments_json: Sequence[bytes], timeout: float = 120.0) -> dict[str, Any]:
        """tools/call whose arguments object is already JSON (in parts), so no client-side encoding is timed."""
        self._next_id += 1
        rid = self._next_id
        head = f'{{"jsonrpc":"2.0","id":{rid},"method":"tools/call","params":{{"name":{json.dumps(name)},"arguments":'
        self._write_parts([head.encode(), *arguments_json, b"}}\n"])
        result = self._response(rid, "tools/call", time.perf_counter() + timeout)
        if result.get("isError"):
            raise RPCError(f"tool {name} failed: {result.get('content')}")
        return result

    def close(self) -> None:
        self._sel.close()
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (subprocess.TimeoutExpired, OSError):
            self.proc.kill()
            self.proc.wait(timeout=5)
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def find_server(name: str = "mcp-server-file-read") -> str:
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name) or str(REPO / ".venv" / "bin" / name)
    if not Path(found).exists():
        sys.exit(f"{name} not found; run `uv sync` in the repo first")
    return found


def audit_durations(path: Path, last: int) -> dict[str, float] | None:
    """Median/p95 of the server's own per-call time (audit ``durationMs``) over its last ``last`` entries.

    That span covers the tool call inside the server (guards, read, result model) but not the JSON encoding
    of the response nor the pipe, so it splits a round trip into handler time and transport time.
    """
    try:
        entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return None
    ms_ = [float(e["durationMs"]) / 1e3 for e in entries[-last:] if isinstance(e.get("durationMs"), int | float)]
    return {"median_s": median(ms_), "p95_s": p95(ms_)} if ms_ else None


def audit_series(path: Path) -> list[float]:
    """Every audit ``durationMs`` of a log, in order, in seconds."""
    try:
        entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return []
    return [float(e["durationMs"]) / 1e3 for e in entries if isinstance(e.get("durationMs"), int | float)]


def check_read(result: dict[str, Any], sha: str, size: int) -> None:
    sc = result.get("structuredContent") or {}
    if sc.get("sha256") != sha or sc.get("size") != size or sc.get("truncated") or sc.get("nextOffset") is not None:
        raise RuntimeError(f"unexpected file_read result: { {k: v for k, v in sc.items() if k != 'content'} }")
    if len(sc.get("content", "").encode()) != size:
        raise RuntimeError("file_read content length differs from the file size")


def check_write(result: dict[str, Any], data: bytes, *, created: bool) -> None:
    sc = result.get("structuredContent") or {}
    ok = (
        sc.get("success") is True
        and sc.get("bytesWritten") == len(data)
        and sc.get("sha256") == hashlib.sha256(data).hexdigest()
        and sc.get("created") is created
        and (sc.get("backup") is None) is created
    )
    if not ok:
        raise RuntimeError(f"unexpected file_write result: {sc}")


def check_shell(
    result: dict[str, Any], *, stdout: str | None = None, size: int | None = None, sandbox: str | None = None
) -> dict[str, Any]:
    """A successful, allowed run, with the expected stdout or size; ``sandbox``: the label the result must say."""
    sc: dict[str, Any] = result.get("structuredContent") or {}
    ok = sc.get("exitCode") == 0 and sc.get("policyDecision") == "allow" and not sc.get("timedOut")
    ok = ok and sc.get("limitHit") is None and (sandbox is None or sc.get("sandbox") == sandbox)
    if stdout is not None:
        ok = ok and sc.get("stdout") == stdout and not sc.get("truncated")
    if size is not None:
        ok = ok and sc.get("stdoutBytes") == size and sc.get("truncated") is True
        ok = ok and sc.get("stdout", "").startswith("x" * 256) and sc.get("stdout", "").endswith("x" * 256)
    if not ok:
        raise RuntimeError(f"unexpected shell_exec result: { {k: v for k, v in sc.items() if k != 'stdout'} }")
    return sc
