"""A line that is not valid UTF-8: a parse error (-32700) naming the first bad byte, answered to the request's id
when the rest of the line is JSON and that id reads without doubt, else to null.

Unit tests of the line handling (``decode_line``), and through the real console script the start-up front's path:
such a line gets exactly one answer whether the front or the transport reads it first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.serving.lines import Rejection, decode_line
from support import RawClient, console_script
from support.records import read_record, write_record

PARSE_ERROR = -32700
NULL: Any = None


def rejection(line: bytes) -> Rejection:
    outcome = decode_line(line)
    assert isinstance(outcome, Rejection), outcome
    return outcome


# (what, line, the ids answered): each answered -32700 "not valid UTF-8 at byte N".
READABLE: list[tuple[str, bytes, tuple[Any, ...]]] = [
    ("in a params string", b'{"jsonrpc":"2.0","id":18,"method":"ping","params":{"x":"\xff\xfe"}}', (18,)),
    ("in the method", b'{"jsonrpc":"2.0","id":"m-1","method":"pi\xffng"}', ("m-1",)),
    ("in a member name", b'{"jsonrpc":"2.0","id":2,"method":"ping","\xc0\xa2":1}', (2,)),
    ("in jsonrpc", b'{"jsonrpc":"2.\xe2\x80","id":3,"method":"ping"}', (3,)),
    ("an encoded surrogate", b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":"\xed\xa0\x80"}}', (4,)),
    ("the id last", b'{"jsonrpc":"2.0","method":"pi\x80ng","id":"last"}', ("last",)),
    ("the id written with escapes", b'{"jsonrpc":"2.0","\\u0069d":5,"method":"\xff"}', (5,)),
    ("an id in params as well", b'{"jsonrpc":"2.0","id":6,"method":"\xff","params":{"id":99}}', (6,)),
    ("a UTF-8 id", '{"jsonrpc":"2.0","id":"é-7","method":"'.encode() + b'\xff"}', ("é-7",)),
    ("no jsonrpc member", b'{"id":8,"method":"\xff"}', (8,)),
    ("no method", b'{"jsonrpc":"2.0","id":9,"x":"\xff"}', (9,)),
    ("a batch", b'[{"jsonrpc":"2.0","id":10,"method":"\xff"},{"jsonrpc":"2.0","id":"b","method":"ping"}]', (10, "b")),
    (
        "params nested 5000 deep",
        b'{"jsonrpc":"2.0","id":11,"method":"\xff","params":{"x":' + b"[" * 5000 + b"]" * 5000 + b"}}",
        (11,),
    ),
]

# (what, line): answered -32700 to null, as every other line that is not JSON.
UNREADABLE: list[tuple[str, bytes]] = [
    ("the invalid bytes inside the id", b'{"jsonrpc":"2.0","id":"a\xffb","method":"ping"}'),
    ("two ids", b'{"jsonrpc":"2.0","id":1,"method":"\xff","id":2}'),
    ("two ids, the same", b'{"jsonrpc":"2.0","id":1,"method":"\xff","id":1}'),
    ("an id only in params", b'{"jsonrpc":"2.0","method":"\xff","params":{"id":3}}'),
    ("a notification", b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":"\xff"}}'),
    ("a response", b'{"jsonrpc":"2.0","id":4,"result":{"x":"\xff"}}'),
    ("an error response", b'{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"\xff"}}'),
    ("the bytes outside any string", b'{"jsonrpc":"2.0","id":6,"method":"ping"\xff}'),
    ("the bytes after the object", b'{"jsonrpc":"2.0","id":7,"method":"ping"}\xff'),
    ("the bytes escaped by a backslash", b'{"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":"\\\xff"}}'),
    ("an unfinished object", b'{"jsonrpc":"2.0","id":9,"method":"\xff'),
    ("NaN elsewhere", b'{"jsonrpc":"2.0","id":10,"method":"\xff","params":{"x":NaN}}'),
    ("a boolean id", b'{"jsonrpc":"2.0","id":true,"method":"\xff"}'),
    ("a null id", b'{"jsonrpc":"2.0","id":null,"method":"\xff"}'),
    ("an object id", b'{"jsonrpc":"2.0","id":{"n":1},"method":"\xff"}'),
    ("an id with a lone surrogate escape", b'{"jsonrpc":"2.0","id":"\\ud800","method":"\xff"}'),
    ("a bare string", b'"\xff"'),
    ("a batch of notifications", b'[{"jsonrpc":"2.0","method":"\xff"}]'),
    ("two ids, nested 5000 deep", b'{"id":1,"method":"\xff","p":' + b"[" * 5000 + b"]" * 5000 + b',"id":2}'),
    ("not JSON, nested 5000 deep", b'{"id":1,"method":"\xff","p":' + b"[" * 5000 + b"]" * 4999 + b"}"),
]


@pytest.mark.parametrize(("what", "line", "ids"), READABLE, ids=[case[0] for case in READABLE])
def test_a_line_with_invalid_utf8_is_answered_to_the_id_it_names(what: str, line: bytes, ids: tuple[Any, ...]) -> None:
    got = rejection(line)
    offset = len(line.decode("utf-8", "replace").split("\ufffd")[0].encode())
    assert (got.code, got.message, got.answer) == (PARSE_ERROR, f"Parse error: not valid UTF-8 at byte {offset}", ids)


@pytest.mark.parametrize(("what", "line"), UNREADABLE, ids=[case[0] for case in UNREADABLE])
def test_a_line_with_invalid_utf8_and_no_id_beyond_doubt_is_answered_to_null(what: str, line: bytes) -> None:
    got = rejection(line)
    assert got.code == PARSE_ERROR and got.message.startswith("Parse error: not valid UTF-8 at byte ")
    assert got.answer == (NULL,)


def test_the_first_invalid_byte_is_named() -> None:
    line = b'{"jsonrpc":"2.0","id":1,"method":"\xc3\xa9\xe2\x82\xac\xff\xfe"}'
    assert rejection(line).message == "Parse error: not valid UTF-8 at byte 39"  # after é (2 bytes) and € (3)
    assert rejection(b"\x80").message == "Parse error: not valid UTF-8 at byte 0"


def test_a_float_id_is_echoed_as_for_every_other_bad_request() -> None:
    assert rejection(b'{"jsonrpc":"2.0","id":1.5,"method":"\xff"}').answer == (1.5,)


def test_a_line_with_invalid_utf8_is_never_accepted_whatever_it_holds() -> None:
    # The bytes could hide anything (an overlong '"' is 0xC0 0xA2): the line is refused, never acted on.
    for line in [*(case[1] for case in READABLE), *(case[1] for case in UNREADABLE)]:
        assert isinstance(decode_line(line), Rejection)


# -- through the start-up front ----------------------------------------------------------------------------

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "utf8-test", "version": "1"}}
# A request the front leaves to the real server: the SDK loads and keeps its record of the handshake.
SDK_LINE = b'{"jsonrpc":"2.0","id":9,"method":"resources/list"}\n'


def _records(home: Path) -> list[Path]:
    return sorted((home / ".local" / "state" / "mcp-guard" / "front").glob("*.json"))


def _all_answers(workspace: Path, data: bytes, last: int) -> list[dict[str, Any]]:
    """Spawn file_read, write ``data`` at once, wait for the answer to ``last``, close stdin: every line written."""
    client = RawClient(
        [console_script("mcp-server-file-read"), "--audit-log", str(workspace.parent / "audit.jsonl")], workspace
    )
    try:
        client.send_raw(data)
        seen = client.until(last, timeout=60)
        assert client.proc.stdin is not None
        client.proc.stdin.close()
        rest = client.read_to_eof(timeout=60)  # nothing more: no second answer to any request
    finally:
        client.close()
    return seen + [json.loads(line) for line in rest.splitlines()]


def test_a_line_with_invalid_utf8_read_by_the_start_up_front_gets_exactly_one_answer_to_its_id(
    workspace: Path, isolated_home: Path
) -> None:
    handshake = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    head = b"".join(json.dumps(m).encode() + b"\n" for m in handshake)
    _all_answers(workspace, head + SDK_LINE, 9)  # records the answers
    [record] = _records(isolated_home)
    kept = read_record(record)
    next(v for v in kept.values() if "serverInfo" in v)["instructions"] = "FROM-THE-FRONT"
    write_record(record, kept)  # proof below that the front answered the handshake
    bad = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"file_read","arguments":{"path":"a\xff"}}}'
    out = _all_answers(workspace, head + bad + b'\n{"jsonrpc":"2.0","id":4,"method":"ping"}\n', 4)
    assert sorted(m["id"] for m in out) == [1, 2, 3, 4], out  # each request answered exactly once
    by_id = {m["id"]: m for m in out}
    assert by_id[1]["result"]["instructions"] == "FROM-THE-FRONT"
    offset = bad.index(b"\xff")
    assert by_id[3]["error"] == {"code": PARSE_ERROR, "message": f"Parse error: not valid UTF-8 at byte {offset}"}
    assert by_id[4]["result"] == {}


def test_a_line_with_invalid_utf8_as_the_very_first_line_gets_one_answer_to_its_id(
    workspace: Path, isolated_home: Path
) -> None:
    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).encode() + b"\n"
    _all_answers(workspace, initialize + SDK_LINE, 9)
    assert _records(isolated_home)  # the next start has a front, which leaves this line to the transport
    first = b'{"jsonrpc":"2.0","id":"x","method":"initialize","params":{"clientInfo":{"name":"\xff"}}}\n'
    out = _all_answers(workspace, first + initialize, 1)
    assert [(m["id"], m.get("error", {}).get("code")) for m in out] == [("x", PARSE_ERROR), (1, None)], out
