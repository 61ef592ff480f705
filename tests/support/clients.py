"""Helpers shared by the tests: the real console scripts, stdio and in-memory clients, refusal checks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, ElicitRequestParams, ElicitResult

BIN_DIR = Path(sys.executable).parent
MODES = ["legacy", "auto"]  # 2025-11-25 handshake era, and the 2026-07-28 per-request era
ERROR_META_KEY = "mcp-guard/error"
# What a server started by a test keeps of the test's environment (a fake HOME, its state, the servers' registry).
SERVER_ENV = ("PATH", "HOME", "XDG_STATE_HOME", "LANG", "TMPDIR", "MCP_GUARD_RUNTIME_DIR")


def console_script(name: str) -> str:
    found = shutil.which(name) or str(BIN_DIR / name)
    assert Path(found).exists(), f"console script {name} is not installed"
    return found


def server_params(
    script: str, cwd: Path, *args: str, audit: Path | None = None, env: dict[str, str] | None = None
) -> StdioServerParameters:
    audit_log = audit or (cwd.parent / "audit.jsonl")
    kept = {
        k: v
        for k, v in os.environ.items()
        if k in ("PATH", "HOME", "XDG_STATE_HOME", "LANG", "TMPDIR", "MCP_GUARD_RUNTIME_DIR")
    }
    env = kept | (env or {})
    return StdioServerParameters(
        command=console_script(script), args=["--audit-log", str(audit_log), *args], cwd=str(cwd), env=env
    )


@asynccontextmanager
async def serve(
    script: str,
    cwd: Path,
    *args: str,
    mode: str = "legacy",
    audit: Path | None = None,
    env: dict[str, str] | None = None,
    **client_kw: Any,
) -> AsyncIterator[Client]:
    async with Client(server_params(script, cwd, *args, audit=audit, env=env), mode=mode, **client_kw) as client:
        yield client


def refused_start(script: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Start a console script that is expected to refuse to start (exit 2 with one line on stderr)."""
    return subprocess.run(
        [console_script(script), *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False
    )


class Human:
    """A stand-in human answering shell_exec's forms: yes to a command (remembered as ``remember`` says), and
    ``network`` to a host question (None: decline a form that only asks about hosts). Records every question,
    and may take ``delay`` seconds to answer (a person reading the form)."""

    def __init__(self, *, remember: str = "no", network: str | None = None, delay: float = 0.0) -> None:
        self.remember, self.network, self.delay = remember, network, delay
        self.questions: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, _ctx: Any, params: ElicitRequestParams) -> ElicitResult:
        props: dict[str, Any] = dict(params.requested_schema["properties"])  # type: ignore[union-attr]
        self.questions.append((params.message, props))
        if self.delay:
            await anyio.sleep(self.delay)  # the person reading the form, not a wait for a condition
        content: dict[str, Any] = {}
        if "approve" in props:
            content["approve"] = True
            offered = props.get("remember", {}).get("enum", [])
            if self.remember in offered and self.remember != "no":
                content["remember"] = self.remember
        if "network" in props:
            if self.network is None and "approve" not in props:
                return ElicitResult(action="decline")
            content["network"] = self.network or "deny"
        return ElicitResult(action="accept", content=content)


def error_of(result: CallToolResult) -> dict[str, Any]:
    """The structured refusal of an isError result (and a check that the text carries it too)."""
    assert result.is_error, f"expected a refusal, got {result}"
    payload = (result.meta or {}).get(ERROR_META_KEY)
    assert isinstance(payload, dict), f"no {ERROR_META_KEY} in {result.meta}"
    assert {"code", "category", "message", "suggestion", "auditId", "policyDecision", "mode"} <= set(payload)
    assert set(payload) <= {
        "code",
        "category",
        "message",
        "suggestion",
        "example",
        "auditId",
        "policyDecision",
        "mode",
        "timeoutSeconds",
    }
    text = result.content[0].text  # type: ignore[union-attr]
    assert payload["code"] in text and payload["suggestion"] in text
    return payload


def text_of(result: CallToolResult, *, facts: bool = False) -> str:
    """The text blocks; without the facts line every result ends with (``[auditId=… policyDecision=…]``) unless
    ``facts``."""
    text = "".join(getattr(block, "text", "") for block in result.content)
    if facts:
        return text
    body, _, last = text.rpartition("\n")
    assert last.startswith("[auditId=") and last.endswith("]"), f"no facts line at the end of {text[-200:]!r}"
    return body


CallFn = Callable[..., Any]


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class RawClient:
    """A minimal JSON-lines client over a real server process, with bounded reads.

    ``modern=True`` speaks the 2026-07-28 era (every request carries the ``_meta`` envelope, no handshake);
    ``stderr`` names a file that receives the server's stderr (else it is discarded).
    """

    def __init__(
        self,
        args: list[str],
        cwd: Path,
        *,
        stderr: Path | None = None,
        modern: bool = False,
        env: dict[str, str] | None = None,
    ) -> None:
        import subprocess

        self.modern = modern
        self.stderr_path = stderr
        self._stderr = stderr.open("wb") if stderr is not None else None
        self.proc = subprocess.Popen(
            args,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr if self._stderr is not None else subprocess.DEVNULL,
        )
        self._buf = b""

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        import json

        self.send_raw(json.dumps(message).encode() + b"\n")

    def envelope(self, params: dict[str, Any] | None) -> dict[str, Any] | None:
        """The request params as this client's era wants them (2026-07-28: with the per-request _meta)."""
        if not self.modern:
            return params
        return {**(params or {}), "_meta": {**MODERN_META, **(params or {}).get("_meta", {})}}

    def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        import json
        import select
        import time

        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        buf = bytearray(self._buf)  # linear in the message's size, however large (a 50 MB resource)
        end = buf.find(b"\n")
        while end < 0:
            remaining = deadline - time.monotonic()
            assert remaining > 0, "no answer from the server in time"
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 1 << 20)
                assert chunk, "the server closed its stdout"
                found = chunk.find(b"\n")
                end = len(buf) + found if found >= 0 else -1
                buf += chunk
        line, self._buf = bytes(buf[:end]), bytes(buf[end + 1 :])
        return dict(json.loads(line))

    def read_to_eof(self, timeout: float = 10.0) -> bytes:
        """Everything the server still writes on stdout until it closes it (bounded)."""
        import select
        import time

        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        data, self._buf = self._buf, b""
        while True:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"the server did not close its stdout in time (got {data[:200]!r})"
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return data
                data += chunk

    def end_input(self, timeout: float = 30.0) -> bytes:
        """Close the server's stdin (the session's end) and read what it still writes until it closes stdout."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.read_to_eof(timeout=timeout)

    def imported(self) -> set[str]:
        """The modules the server's import statements loaded, as ``python -X importtime`` listed them on stderr."""
        return {line.rsplit("|", 1)[-1].strip() for line in self.stderr_lines() if line.startswith("import time:")}

    def until(self, id_: Any, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Every message up to and including the answer to ``id_``."""
        seen = []
        while True:
            message = self.recv(timeout)
            seen.append(message)
            if "method" not in message and message.get("id") == id_:
                return seen

    def request(
        self, id_: int, method: str, params: dict[str, Any] | None = None, timeout: float = 10.0
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
        if (enveloped := self.envelope(params)) is not None:
            message["params"] = enveloped
        self.send(message)
        return self.until(id_, timeout)[-1]

    def initialize(self) -> None:
        """Open the session: the initialize handshake (2025-11-25 era), or server/discover (2026-07-28 era)."""
        if self.modern:
            self.request(0, "server/discover")
            return
        self.request(
            0,
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def stderr_lines(self) -> list[str]:
        assert self.stderr_path is not None, "start the RawClient with stderr=PATH to read the server's stderr"
        return self.stderr_path.read_text(encoding="utf-8", errors="replace").splitlines()

    def close(self) -> None:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=10)
            assert self.proc.stdout is not None
            self.proc.stdout.close()
            if self._stderr is not None:
                self._stderr.close()
