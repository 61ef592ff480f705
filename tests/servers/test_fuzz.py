"""A small, seeded fuzzer: malformed JSON-RPC lines and random arguments never kill a server or lose a call.

Every request whose id can be read gets exactly one well-formed answer (a result or a JSON-RPC error), in
both protocol eras, and a valid call still works afterwards.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from support import MODES, RawClient, console_script

SERVERS = {
    "mcp-server-file-read": ("file_read", ["path", "offset", "limit"], []),
    "mcp-server-file-write": ("file_write", ["path", "content", "overwrite", "expectedSha256", "createDirs"], []),
    # Only the read-only allow-list runs, so random lines cannot do anything but look.
    "mcp-server-shell-exec": (
        "shell_exec",
        ["command", "args", "cwd", "stdin", "env", "timeoutSeconds", "maxOutputBytes"],
        ["--policy", "readonly"],
    ),
}


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 2 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**31, 2**63, -(2**63), 7])
    if kind == 3:
        return rng.choice([0.5, -1e308, 1e308, 3.0])
    if kind in (4, 5):
        alphabet = "ab./\\\x00\n~$*{}[]'\"é😀 -" + "\udcff"[:0]
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
    if kind == 6:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(["a", "path", "x"]): random_value(rng, depth + 1) for _ in range(rng.randrange(3))}


def malformed_lines(rng: random.Random) -> list[bytes]:
    return [
        b"not json at all",
        b"{",
        b"",
        b"[]",
        b"null",
        b'{"jsonrpc": "2.0"}',
        b'{"jsonrpc": "1.0", "id": "m-1", "method": "tools/call"}',
        bytes(rng.randrange(256) for _ in range(64)).replace(b"\n", b" "),
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}}',
        json.dumps({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": 5}}).encode(),
        b'{"jsonrpc": "2.0", "id": "m-2", "method": "tools/call", "params": {"name": "x", "arguments": '
        + b"[" * 3000
        + b"]" * 3000
        + b"}}",
        b'[{"jsonrpc": "2.0", "id": "m-3", "method": "tools/list"}]',
    ]


ENVELOPE_MEMBERS = ["jsonrpc", "id", "method", "params"]


def mutated_request(rng: random.Random, id_: str, raw: RawClient) -> dict[str, Any]:
    """A tools/list request with one or two members dropped or replaced by random values."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": "tools/list", "params": raw.envelope({})}
    for member in rng.sample(ENVELOPE_MEMBERS, rng.randrange(1, 3)):
        if member == "id":
            continue  # the id stays readable, so its answer can be counted
        if rng.random() < 0.3:
            message.pop(member)
        else:
            message[member] = random_value(rng)
    return message


def owed(line: bytes) -> str | None:
    """The id a line must be answered with (exactly once), when it is a request whose id can be read."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        # A request too deep to parse still has its id read.
        return "m-2" if line.startswith(b'{"jsonrpc": "2.0", "id": "m-2"') else None
    if isinstance(message, list):
        return next((m["id"] for m in message if isinstance(m, dict) and isinstance(m.get("id"), str)), None)
    if isinstance(message, dict) and isinstance(message.get("id"), str) and "result" not in message:
        return str(message["id"])
    return None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("script", sorted(SERVERS))
def test_random_arguments_and_malformed_lines_never_kill_the_server_nor_lose_a_request(
    script: str, mode: str, workspace: Path
) -> None:
    tool, fields, extra = SERVERS[script]
    rng = random.Random(f"{script}-{mode}-20261121")
    raw = RawClient(
        [console_script(script), "--audit-log", str(workspace.parent / "fuzz.jsonl"), *extra],
        workspace,
        modern=mode == "auto",
    )
    debts: Counter[Any] = Counter()  # answers each id is owed
    received: list[dict[str, Any]] = []
    try:
        raw.initialize()
        lines = malformed_lines(rng) + [json.dumps(mutated_request(rng, f"x-{n}", raw)).encode() for n in range(60)]
        for line in lines:
            raw.send_raw(line + b"\n")
            if (id_ := owed(line)) is not None:
                debts[id_] += 1
        for number in range(1, 151):
            arguments: Any
            if rng.random() < 0.1:
                arguments = random_value(rng)  # not even an object
            else:
                arguments = {name: random_value(rng) for name in rng.sample(fields, rng.randrange(len(fields) + 1))}
                if rng.random() < 0.2:
                    arguments[rng.choice(["bogus", "__proto__", ""])] = random_value(rng)
            params: dict[str, Any] = {"name": tool if rng.random() < 0.9 else "nope", "arguments": arguments}
            if script.endswith("shell-exec") and isinstance(arguments, dict):
                arguments["timeoutSeconds"] = 2
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": number, "method": "tools/call"}
            message["params"] = raw.envelope(params)
            raw.send(message)
            debts[number] += 1
            seen = raw.until(number, timeout=30)
            received += seen
            answer = seen[-1]
            assert answer["jsonrpc"] == "2.0" and ("result" in answer or "error" in answer), answer
            if "result" in answer and answer["result"].get("isError"):
                assert answer["result"]["_meta"]["mcp-guard/error"]["code"]
        probe = {
            "file_read": {"path": "hello.txt"},
            "file_write": {"path": "fuzz-ok.txt", "content": "ok"},
            "shell_exec": {"command": "cat hello.txt"},
        }[tool]
        raw.send(
            {
                "jsonrpc": "2.0",
                "id": 999,
                "method": "tools/call",
                "params": raw.envelope({"name": tool, "arguments": probe}),
            }
        )
        received += raw.until(999)
        final = received[-1]
        assert final.get("result", {}).get("isError") is False, final
    finally:
        raw.close()
    assert raw.proc.returncode == 0  # it ended because stdin closed, not because it crashed
    answers = Counter(m["id"] for m in received if "method" not in m and m.get("id") is not None)
    debts[999] += 1
    assert answers == debts, f"owed {debts - answers}, unexpected {answers - debts}"
    for m in received:
        if "method" not in m:
            assert m["jsonrpc"] == "2.0" and ("result" in m) != ("error" in m), m


# -- lines that are not valid UTF-8 (or not JSON) but for a byte or two -------------------------------------

INVALID_UTF8 = [b"\xff", b"\xfe\xff", b"\x80", b"\xc0\xa2", b"\xc3", b"\xe2\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]
FLIPS = b'\x80\xbf\xc2\xe2\xf0\xff"\\{}[],: 0a'  # bytes a flip writes: mostly not UTF-8, some JSON structure


def readable_id(line: bytes) -> Any:
    """The id a line must be answered with, exactly once: its request's id when a JSON parser reads it beyond
    doubt (the invalid bytes taken as opaque characters), else None. An independent statement of the contract."""
    text = line.decode("utf-8", "surrogateescape")
    ids: list[int] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        ids.append(sum(name == "id" for name, _ in pairs))  # the top-level object is built last
        return dict(pairs)

    def no_constant(name: str) -> Any:
        raise ValueError(name)

    try:
        message = json.loads(text, object_pairs_hook=pairs_hook, parse_constant=no_constant)
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(message, dict)
        or ids[-1] != 1
        or ("method" not in message and message.keys() & {"result", "error"})
    ):
        return None
    rid = message["id"]
    if isinstance(rid, str):
        return rid if not any("\ud800" <= c <= "\udfff" for c in rid) else None
    if isinstance(rid, int) and not isinstance(rid, bool):
        return rid
    return rid if isinstance(rid, float) and math.isfinite(rid) else None  # echoed as every bad request's is


def string_spans(line: bytes) -> list[tuple[int, int]]:
    """Where the JSON strings of a (valid, escape-free) line lie: insides only, between the quotes."""
    quotes = [i for i, byte in enumerate(line) if byte == ord('"')]
    return list(zip(quotes[::2], quotes[1::2], strict=True))


def broken_variants(rng: random.Random, line: bytes) -> list[bytes]:
    """Malformed variants of one valid request: invalid UTF-8 inside a string (the id, the method, a params value,
    a member name), anywhere at all, random byte flips, a truncation."""
    start, end = rng.choice(string_spans(line))
    inside = rng.randrange(start + 1, end + 1)
    anywhere = rng.randrange(len(line) + 1)
    flipped = bytearray(line)
    for _ in range(rng.randrange(1, 4)):
        flipped[rng.randrange(len(line))] = rng.choice(FLIPS)
    cut = rng.randrange(1, len(line))
    variants = [
        line[:inside] + rng.choice(INVALID_UTF8) + line[inside:],
        line[:anywhere] + rng.choice(INVALID_UTF8) + line[anywhere:],
        bytes(flipped),
        line[:cut] + rng.choice([b"", *INVALID_UTF8]),
    ]
    return [variant.replace(b"\n", b" ") for variant in variants]  # one line each


def count(answered: Counter[Any], messages: list[dict[str, Any]]) -> Counter[Any]:
    """``answered`` plus the answers among ``messages``, each checked to be one well-formed answer."""
    total = Counter(answered)
    for m in messages:
        if "method" not in m:
            assert m["jsonrpc"] == "2.0" and ("result" in m) != ("error" in m), m
            total[m.get("id")] += 1
    return total


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("script", sorted(SERVERS))
def test_every_broken_line_whose_id_can_be_read_is_answered_once_with_that_id(
    script: str, mode: str, workspace: Path
) -> None:
    tool, _, extra = SERVERS[script]
    rng = random.Random(f"utf8-{script}-{mode}-20261126")
    raw = RawClient(
        [console_script(script), "--audit-log", str(workspace.parent / "fuzz.jsonl"), *extra],
        workspace,
        modern=mode == "auto",
    )
    arguments = {
        "file_read": {"path": "hello.txt"},
        "file_write": {"path": "fuzz-ok.txt", "content": "ok", "overwrite": True},
        "shell_exec": {"command": "cat hello.txt", "timeoutSeconds": 2},
    }[tool]
    owed: Counter[Any] = Counter()  # answers each id is owed
    answered: Counter[Any] = Counter()
    lines, unowed = 0, 0
    try:
        raw.initialize()
        for n in range(75):
            valid: list[dict[str, Any]] = [
                {"method": "ping", "params": raw.envelope({})},
                {"method": "tools/list", "params": raw.envelope({})},
                {"method": "tools/call", "params": raw.envelope({"name": tool, "arguments": arguments})},
            ]
            id_: Any = f"f-{n}" if n % 2 else 1000 + n
            line = json.dumps({"jsonrpc": "2.0", "id": id_, **valid[n % 3]}, separators=(",", ":")).encode()
            for variant in broken_variants(rng, line):
                lines += 1
                raw.send_raw(variant + b"\n")
                if (rid := readable_id(variant)) is not None:
                    owed[rid] += 1
                else:
                    unowed += 1
                barrier = f"barrier-{lines}"
                raw.send({"jsonrpc": "2.0", "id": barrier, "method": "ping", "params": raw.envelope({})})
                seen = raw.until(barrier, timeout=30)
                while rid is not None and count(answered, seen)[rid] < owed[rid]:  # a call may end after the barrier
                    seen.append(raw.recv(timeout=30))
                answered = count(answered, seen)
    finally:
        raw.close()
    barriers = Counter(f"barrier-{n}" for n in range(1, lines + 1))
    nulls = answered.pop(None, 0)
    assert answered == owed + barriers, f"owed {owed + barriers - answered}, unexpected {answered - owed - barriers}"
    assert nulls <= unowed
    assert sum(owed.values()) > lines // 4 and unowed > lines // 4  # both kinds of line were exercised
