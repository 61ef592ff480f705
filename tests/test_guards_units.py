"""Unit tests of the MIME sniffer, the streaming reader, the policy loader, the audit log and errors."""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

import pytest

from mcp_server_guard.audit import AuditLog, AuditRecord, default_audit_path, read_entries, summarize_value
from mcp_server_guard.errors import ERROR_CODES, ERROR_META_KEY, GuardError, ParamError, SecurityError
from mcp_server_guard.files.mime import sniff
from mcp_server_guard.files.reading import read_page
from mcp_server_guard.policy import PolicyError, default_policy_path, load_policy

ERRORS_DOC = Path(__file__).resolve().parents[1] / "docs" / "errors.md"


def test_utf8_without_nul_is_text_even_when_libmagic_disagrees() -> None:
    assert sniff(b"SELECT 1;\n", complete=True).is_text
    cut = "ü".encode() * 10
    assert sniff(cut[:-1], complete=False).is_text  # a head cut mid-character is still UTF-8
    assert not sniff(b"abc\x00def", complete=True).is_text


def test_boms_pick_the_encoding() -> None:
    assert sniff(b"\xef\xbb\xbfx", complete=True).encoding == "utf-8"
    assert sniff("x".encode("utf-16-le").join([b"\xff\xfe", b""]), complete=True).encoding == "utf-16-le"


def test_read_page_hashes_the_whole_file_and_counts_lines(tmp_path: Path) -> None:
    data = b"".join(b"line %d\n" % i for i in range(1, 100_001))
    path = tmp_path / "f"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        page = read_page(fd, encoding="utf-8", bom=0, offset=5, limit=3, max_bytes=1 << 20)
    finally:
        os.close(fd)
    assert page.content == "line 5\nline 6\nline 7\n"
    assert page.total_lines == 100_000
    assert page.sha256 == hashlib.sha256(data).hexdigest()
    assert page.next_offset == 8


def test_default_policy_is_packaged_and_valid() -> None:
    assert default_policy_path().is_file()
    policy = load_policy()
    assert policy.file_read.max_read_bytes == 262144
    assert policy.file_read.mime_allowed("text/x-python")
    assert not policy.file_read.mime_allowed("application/x-executable")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("[file_read]\nmax_read_bytes = 'big'\n", "[file_read].max_read_bytes"),
        ("[file_read]\nmax_read_bytes = 0\n", "[file_read].max_read_bytes"),
        ("[file_read]\ncolour = 1\n", "[file_read].colour: unknown key"),
        ("[nonsense]\nx = 1\n", "[nonsense]: unknown key"),
        ("[file_read\n", "invalid TOML"),
    ],
)
def test_invalid_policy_names_the_bad_key(tmp_path: Path, body: str, fragment: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    assert fragment in str(info.value)


def test_user_policy_is_merged_over_the_default(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text("[file_read]\nmax_read_bytes = 10\n", encoding="utf-8")
    policy = load_policy(path)
    assert policy.file_read.max_read_bytes == 10
    assert policy.file_read.sniff_bytes == 8192


def test_audit_hashes_contents_and_redacts_env(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "a" / "audit.jsonl")
    record = AuditRecord("s", "t", {"path": "x", "content": "secret body", "env": {"TOKEN": "v"}})
    with log.call(record):
        pass
    log.close()
    entry = next(read_entries(tmp_path / "a" / "audit.jsonl", 5))
    assert entry["arguments"]["content"] == {"sha256": hashlib.sha256(b"secret body").hexdigest(), "bytes": 11}
    assert entry["arguments"]["env"] == {"keys": ["TOKEN"]}
    assert "secret body" not in json.dumps(entry)
    assert (tmp_path / "a" / "audit.jsonl").stat().st_mode & 0o777 == 0o600
    assert summarize_value("path", "p" * 300)["bytes"] == 300


def test_default_audit_log_is_never_inside_the_jail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "proj" / "state"))
    path = default_audit_path([str(tmp_path / "proj")])
    assert not str(path).startswith(str(tmp_path / "proj"))
    assert (
        default_audit_path([str(tmp_path / "elsewhere")]) == tmp_path / "proj" / "state" / "mcp-guard" / "audit.jsonl"
    )


def test_every_error_code_has_its_category_and_a_row_in_the_errors_doc() -> None:
    doc = ERRORS_DOC.read_text(encoding="utf-8")
    for code in ERROR_CODES:
        assert re.search(rf"\|\s*`{code}`\s*\|\s*{ERROR_CODES[code].value}\s*\|", doc), code


def test_every_error_code_the_code_raises_is_in_the_table() -> None:
    raised = re.compile(
        r"\b(?:ParamError|SecurityError|ResourceError|ExecutionError|HostError|GuardError|HistoryError)\(\s*\"([A-Z][A-Z0-9_]+)\""
    )
    root = Path(__file__).parents[1]
    found = {
        code
        for where in ("common/src", "servers")
        for source in (root / where).rglob("*.py")
        for code in raised.findall(source.read_text(encoding="utf-8"))
    }
    assert len(found) >= 40
    assert sorted(found - set(ERROR_CODES)) == []


def test_refusal_result_carries_the_structured_payload_and_text() -> None:
    result = SecurityError("PATH_OUTSIDE_JAIL", "m", "s").to_result()
    assert result.is_error
    assert result.structured_content is None
    assert result.meta is not None
    assert result.meta[ERROR_META_KEY] == {
        "code": "PATH_OUTSIDE_JAIL",
        "category": "SECURITY",
        "message": "m",
        "suggestion": "s",
    }
    assert isinstance(ParamError("INVALID_PATH", "m", "s"), GuardError)


def test_a_state_directory_another_user_made_first_is_never_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to make a directory owned by another user")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "proj" / "state"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # what $TMPDIR gives a fresh process
    squatted = tmp_path / "tmp" / f"mcp-guard-{os.getuid()}"
    (squatted / "history" / "calls").mkdir(parents=True)
    os.chown(squatted, 65534, 65534)
    with pytest.raises(OSError, match="not a private directory"):
        default_audit_path([str(tmp_path / "proj")])  # the state directory lies in the jail: the temp one is next
    os.chown(squatted, os.getuid(), os.getgid())
    squatted.chmod(0o777)  # ours, but anyone may write in it
    with pytest.raises(OSError, match="not a private directory"):
        default_audit_path([str(tmp_path / "proj")])
    squatted.chmod(0o700)
    assert default_audit_path([str(tmp_path / "proj")]) == squatted / "audit.jsonl"
