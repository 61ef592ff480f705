"""The SDK's web transports stand in until used (``serving.sdk``): what a stand-in does when something uses it.

Each case runs in a fresh interpreter of its own: deferring imports changes ``sys.modules`` and ``sys.meta_path``
for the whole process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def _run(code: str, cwd: Path) -> str:
    prelude = "from mcp_server_guard.serving import sdk\nsdk.defer_sdk_client()\n"
    run = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_the_sdk_server_imports_with_no_web_transport_loaded(tmp_path: Path) -> None:
    out = _run(
        """
        import sys
        sdk.import_sdk()
        from mcp.server.mcpserver import MCPServer
        server = MCPServer("x")
        print(sdk.loaded_web_transports(), "starlette.routing" in sys.modules, type(sys.modules["starlette"]).__name__)
        """,
        tmp_path,
    )
    assert out.split() == ["[]", "True", "_StandIn"]


def test_a_used_web_transport_is_the_real_one(tmp_path: Path) -> None:
    # Called, subclassed, checked with isinstance, read from, and in a `X | None` made at definition time: each
    # use loads the real module, and the objects are the real ones.
    out = _run(
        """
        sdk.import_sdk()
        from starlette.responses import Response, PlainTextResponse
        from starlette import applications
        annotation = Response | None
        class Mine(PlainTextResponse):
            pass
        reply = Mine("hi")
        import importlib
        real = importlib.import_module("starlette.responses")
        assert type(sdk.sys.modules["starlette.responses"]) is not sdk._StandIn
        assert isinstance(reply, Response) and isinstance(reply, real.Response), type(reply).__mro__
        assert Mine.__mro__[1] is real.PlainTextResponse
        assert reply.body == b"hi"
        assert applications.Starlette is importlib.import_module("starlette.applications").Starlette
        assert annotation.real() == (real.Response | None)
        print(sdk.loaded_web_transports())
        """,
        tmp_path,
    )
    assert out.strip() == "['starlette']"


def test_the_sdks_own_http_app_still_builds(tmp_path: Path) -> None:
    # A server that did use HTTP (not ours: the same SDK in the same process) gets the real thing.
    out = _run(
        """
        sdk.import_sdk()
        from mcp.server.mcpserver import MCPServer
        app = MCPServer("x").streamable_http_app()
        print(type(app).__module__, sorted(sdk.loaded_web_transports())[:3])
        """,
        tmp_path,
    )
    assert out.split()[0] == "starlette.applications"


def test_an_sdk_that_cannot_use_a_stand_in_is_imported_the_plain_way(tmp_path: Path) -> None:
    # Should a later SDK need a real web object while loading, in a way a stand-in cannot serve: the import is
    # done again without stand-ins (slower, never broken).
    out = _run(
        """
        import sys
        sdk.WEB_ONLY = (*sdk.WEB_ONLY, "mcp.server.lowlevel")  # the SDK's core: a stand-in cannot serve it
        sdk.import_sdk()
        from mcp.server.mcpserver import MCPServer
        MCPServer("x")
        print(type(sys.modules["mcp.server.lowlevel"]).__name__, sys.meta_path.count(sdk._finder))
        """,
        tmp_path,
    )
    assert out.split() == ["module", "0"]
