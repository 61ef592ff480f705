"""--mode read-only: the env field is judged as the same assignments written before the line, and the read-only list
refuses the options of allowed programs that write files or run programs (curl -o/-K, man's pager variables …). What
must hold: a variable that makes an allowed program take exactly those options from a file or the environment is
refused too (as ``RIPGREP_CONFIG_PATH`` for rg and ``TAR_OPTIONS`` for tar are), so a read-only session writes
nothing and runs nothing but reading programs.

The config files are written by Python into the test's tmp dir; all they do is make a marker file in the tmp dir.
--sandbox off so that only the policy stands between the line and the write."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import serve

pytestmark = pytest.mark.anyio
SX = "mcp-server-shell-exec"


@pytest.mark.parametrize("through", ["env-field", "in-line"])
async def test_curl_home_gives_curl_an_output_file_in_read_only_mode(
    workspace: Path, tmp_path: Path, through: str
) -> None:
    """``CURL_HOME=cfg curl file://…/hello.txt``: curl reads ``cfg/.curlrc`` as options; ``output = FILE`` is curl -o
    (refused by rule curl-writes-or-sends, as is -K/--config). Expected: refused (undecidable env-code like
    XDG_CONFIG_HOME/HOME, which curl also reads its .curlrc from) and no marker. Observed: allowed by
    read-only-tools; the marker is written outside the allowed directories."""
    cfg = workspace / "cfg"
    cfg.mkdir()
    marker = tmp_path / "outside" / "curl-marker"
    (cfg / ".curlrc").write_text(f'output = "{marker}"\n', encoding="utf-8")
    line = f"curl -s file://{workspace}/hello.txt"
    async with serve(SX, workspace, "--mode", "read-only", "--sandbox", "off") as client:
        if through == "env-field":
            result = await client.call_tool("shell_exec", {"command": line, "env": {"CURL_HOME": str(cfg)}})
        else:
            result = await client.call_tool("shell_exec", {"command": f"CURL_HOME={cfg} {line}"})
    assert result.is_error and not marker.exists(), (result.structured_content, marker.exists())


async def test_manroffopt_unsafe_runs_a_page_request_in_read_only_mode(workspace: Path, tmp_path: Path) -> None:
    """``man ./page.1`` with ``MANROFFOPT=-U``: groff in unsafe mode honours the page's ``.sy`` request, which runs a
    shell command. Expected: MANROFFOPT (like MANPAGER/PAGER) refused in read-only mode, no marker. Observed:
    allowed (read-only-tools)."""
    marker = tmp_path / "outside" / "man-marker"
    (workspace / "page.1").write_text(f'.TH X 1\n.SH NAME\nx\n.sy touch "{marker}"\n', encoding="utf-8")
    async with serve(SX, workspace, "--mode", "read-only", "--sandbox", "off") as client:
        result = await client.call_tool(
            "shell_exec",
            {"command": "man ./page.1", "env": {"MANROFFOPT": "-U"}, "timeoutSeconds": 60},
        )
    assert result.is_error and not marker.exists(), (result.structured_content, marker.exists())
