"""Kept outputs of shell_exec read in ranges: exact bytes, the next range named, clear refusals, bounded memory.

Through the real console script and a raw JSON-lines client (the answers are large; the raw client reads them
linearly); the range arithmetic (character boundaries, what was not kept, a stream still growing) on a spool.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from support import RawClient, console_script

SX = "mcp-server-shell-exec"
NEXT = re.compile(r"next range: (\S+)\]$")
SPAN = re.compile(r"bytes (\d+)-(\d+) of (\d+)")
# 25 bytes: ASCII, then characters of 2, 3 and 4 bytes, so that ranges meet characters at every position.
PATTERN = "0123456789abcd\u00e9\u2713\U0001d11e\n"
PATTERN_SOURCE = r"0123456789abcd\u00e9\u2713\U0001d11e\n"  # the same, as Python source in the command


def producing(count: int) -> str:
    """A command printing PATTERN ``count`` times."""
    return f"python3 -c \"import sys; sys.stdout.buffer.write(('{PATTERN_SOURCE}' * {count}).encode())\""


def start(workspace: Path, tmp_path: Path, *, modern: bool = False) -> RawClient:
    raw = RawClient([console_script(SX), "--audit-log", str(tmp_path / "a.jsonl")], workspace, modern=modern)
    raw.initialize()
    return raw


def run(raw: RawClient, rid: int, **arguments: Any) -> dict[str, Any]:
    answer = raw.request(rid, "tools/call", {"name": "shell_exec", "arguments": arguments})
    assert "structuredContent" in answer.get("result", {}), str(answer)[:2000]
    return dict(answer["result"])


def read(raw: RawClient, rid: int, uri: str) -> tuple[str, str]:
    """One answer: its first line, and the text it holds."""
    answer = raw.request(rid, "resources/read", {"uri": uri})
    assert "result" in answer, answer
    [content] = answer["result"]["contents"]
    assert content["uri"] == uri and content["mimeType"] == "text/plain"
    first, newline, text = content["text"].partition("\n")
    assert newline and first.startswith("[") and first.endswith("]"), first
    return first, text


def follow(raw: RawClient, uri: str, rid: int) -> tuple[bytes, list[str]]:
    """Every range from ``uri`` on, by the URI each answer names: the bytes they hold, and their first lines."""
    data = bytearray()
    firsts: list[str] = []
    while True:
        assert len(firsts) < 500, "the ranges never end"
        first, text = read(raw, rid + len(firsts), uri)
        firsts.append(first)
        data += text.encode()
        found = NEXT.search(first)
        if found is None:
            return bytes(data), firsts
        uri = found[1]


def escaped(text: str) -> int:
    """Bytes ``text`` takes inside a JSON string (what a range's length counts: a newline is 2)."""
    return len(json.dumps(text, ensure_ascii=False).encode()) - 2


def spans(firsts: list[str]) -> list[tuple[int, int, int]]:
    found = [SPAN.search(first) for first in firsts]
    assert all(found), firsts
    return [(int(m[1]), int(m[2]), int(m[3])) for m in found if m]


def refusal(raw: RawClient, rid: int, uri: str) -> dict[str, Any]:
    answer = raw.request(rid, "resources/read", {"uri": uri})
    assert "error" in answer, answer
    return dict(answer["error"])


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
def test_a_big_kept_output_read_in_ranges_reassembles_to_its_exact_bytes(
    workspace: Path, tmp_path: Path, modern: bool
) -> None:
    from mcp_server_guard.shell.spools import MAX_RANGE_BYTES, RANGE_BYTES

    count = (24 << 20) // len(PATTERN.encode())
    expected = (PATTERN * count).encode()
    raw = start(workspace, tmp_path, modern=modern)
    try:
        result = run(raw, 1, command=producing(count))
        out = result["structuredContent"]
        assert out["truncated"] is True and out["stdoutBytes"] == len(expected)
        [cut] = out["omitted"]
        [link] = [c for c in result["content"] if c["type"] == "resource_link"]
        assert link["uri"] == cut["resource"] == f"{cut['resource'].split('?')[0]}?offset={cut['start']}"
        assert f"read them: {cut['resource']}" in result["content"][0]["text"]  # the model sees where
        plain = cut["resource"].split("?")[0]

        # The plain URI answers the first range only, and says how big the whole is and where the next range is.
        first, text = read(raw, 2, plain)
        assert SPAN.search(first) and spans([first]) == [(0, len(text.encode()), len(expected))]
        # A text with characters beyond U+FFFF takes 4 bytes a character in the server: a quarter as many.
        assert RANGE_BYTES // 4 - 4 <= len(text.encode()) <= RANGE_BYTES // 4 and expected.startswith(text.encode())
        assert escaped(text) <= RANGE_BYTES  # and as JSON (a newline is 2 bytes there), within the length
        assert first.endswith(f"next range: {plain}?offset={len(text.encode())}]")

        # The result's URI reads from the first byte it left out (the first of its character).
        first, text = read(raw, 3, cut["resource"])
        at = spans([first])[0][0]
        assert cut["start"] - 3 <= at <= cut["start"] and expected[at:].startswith(text.encode())

        # A longer range is cut to the most one answer holds; its next URI keeps the length asked.
        asked = 64 << 20
        first, text = read(raw, 4, f"{plain}?offset=0&length={asked}")
        assert MAX_RANGE_BYTES // 4 - 4 <= len(text.encode()) <= MAX_RANGE_BYTES // 4
        assert f"&length={asked}]" in first

        # Followed to the end, the ranges meet exactly and hold the output's very bytes.
        data, firsts = follow(raw, f"{plain}?length={MAX_RANGE_BYTES}", 10)
        assert data == expected
        assert firsts[-1].endswith("; the end]")
        bounds = spans(firsts)
        assert bounds[0][0] == 0 and bounds[-1][1] == len(expected)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
        assert all(end - begin <= MAX_RANGE_BYTES for begin, end, _ in bounds)
    finally:
        raw.close()


def test_a_malformed_or_out_of_range_offset_is_refused_with_the_uri_to_use(workspace: Path, tmp_path: Path) -> None:
    raw = start(workspace, tmp_path)
    try:
        out = run(raw, 1, command=producing(400), maxOutputBytes=1024)["structuredContent"]
        total = out["stdoutBytes"]
        plain = out["omitted"][0]["resource"].split("?")[0]
        for rid, query, says in [
            (2, "offset=abc", "offset must be a whole number of bytes, 0 or more: got 'abc'"),
            (3, "offset=-5", "offset must be a whole number of bytes, 0 or more: got '-5'"),
            (4, "offset=1.5", "got '1.5'"),
            (5, "offset=", "got ''"),
            (6, "length=0", "length must be a whole number of bytes, 1 or more: got '0'"),
            (7, "offset=0&length=lots", "got 'lots'"),
            (8, f"offset={total + 1}", f"offset {total + 1} is past the end of stdout of "),
            (20, "offset=" + "9" * 5000, "is past the end of stdout of "),  # more digits than int() reads
        ]:
            error = refusal(raw, rid, f"{plain}?{query}")
            assert error["code"] == -32602, (query, error)
            assert says in error["message"] and f"the first one: {plain}" in error["message"], (query, error)
        assert f"({total} bytes)" in refusal(raw, 9, f"{plain}?offset={total + 1}")["message"]
        # At the very end: an empty range that says so; an output that is not kept: not found, as before.
        first, text = read(raw, 10, f"{plain}?offset={total}")
        assert (first, text) == (f"[stdout of {plain.split('/')[-2]}: bytes {total}-{total} of {total}; the end]", "")
        assert "not kept" in refusal(raw, 11, plain.replace("/stdout", "/stdin"))["message"]
        assert "not kept" in refusal(raw, 12, "shell-exec://output/0000000000000000/stdout?offset=0")["message"]
    finally:
        raw.close()


def _memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (the peak) of ``pid``, in bytes."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0]) * 1024
    return found


def test_reading_a_64_mib_output_in_ranges_keeps_the_servers_peak_memory_bounded(
    workspace: Path, tmp_path: Path
) -> None:
    from mcp_server_guard.shell.spools import MAX_RANGE_BYTES

    size = 64 << 20
    raw = start(workspace, tmp_path)
    try:
        command = f"python3 -c \"import sys; sys.stdout.write('0123456789abcdef' * {size // 16})\""
        out = run(raw, 1, command=command)["structuredContent"]
        plain = out["omitted"][0]["resource"].split("?")[0]
        # Warm: the first read of a resource sets up what every read uses, and the first answer of this size (a
        # first call the start-up front answered leaves the SDK's way no answer of size before this one).
        read(raw, 2, f"{plain}?length={MAX_RANGE_BYTES}")
        pid = raw.proc.pid
        # The peak so far (the command's run) is not this test's business: from the current size on. (Without
        # clear_refs, the peak so far is the idle figure, which only makes the bound looser.)
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/clear_refs").write_text("5", encoding="utf-8")
        idle = _memory(pid)["VmHWM"]
        data, firsts = follow(raw, f"{plain}?length={MAX_RANGE_BYTES}", 10)
        peak = _memory(pid)["VmHWM"]
    finally:
        raw.close()
    assert len(data) == size and len(firsts) == size // MAX_RANGE_BYTES
    # While it is sent, an answer is held about three times (its text, its JSON, the line written): +14 MiB
    # measured for 4 MiB answers. The whole output read at once cost 7 times the output (64 MiB: +440 MiB).
    bound = 3 * MAX_RANGE_BYTES + (8 << 20)
    assert peak - idle <= bound, f"peak {peak >> 20} MiB, idle {idle >> 20} MiB, bound +{bound >> 20} MiB"


def test_a_running_jobs_output_is_read_in_ranges_so_far(workspace: Path, tmp_path: Path) -> None:
    count = (3 << 20) // len(PATTERN.encode())
    raw = start(workspace, tmp_path)
    try:
        job = f"{producing(count)}; sleep 60"
        started = run(raw, 1, command=job, yieldAfterSeconds=2, maxOutputBytes=4096)["structuredContent"]
        assert started["status"] == "running" and started["jobId"] == "j1"
        [cut] = started["omitted"]
        assert cut["resource"] == f"shell-exec://output/j1/stdout?offset={cut['start']}"
        expected = (PATTERN * count).encode()
        for rid in range(2, 40):  # until the job printed it all (it then sleeps); bounded
            if started["stdoutBytes"] == len(expected):
                break
            started = run(raw, rid, command="", jobId="j1", yieldAfterSeconds=1)["structuredContent"]
        data, firsts = follow(raw, "shell-exec://output/j1/stdout", 50)
        assert data == expected
        total = len(data)
        assert re.match(rf"\[stdout of j1: bytes 0-\d+ of {total} so far; next range: shell-exec://", firsts[0])
        # The end of a running job's output so far names where to read more once it wrote more.
        assert firsts[-1].endswith(
            f"of {total} so far; the end so far; more comes while it runs: shell-exec://output/j1/stdout?offset={total}]"
        )
        run(raw, 100, command="", jobId="j1", signal="KILL")
    finally:
        raw.close()


# The range arithmetic, on a spool.


def _spool(tmp_path: Path, data: bytes, cap: int = 1 << 30) -> Any:
    from mcp_server_guard.shell.spools import Spool

    spool = Spool(tmp_path / "s.out", cap)
    spool.feed(data)
    return spool


def _ranges(spool: Any, length: int | None, *, growing: bool = False, offset: int = 0) -> list[tuple[str, str]]:
    from mcp_server_guard.shell.spools import read_output

    answers = []
    while True:
        first, _, text = read_output("x", "stdout", spool, offset, length, growing=growing).partition("\n")
        answers.append((first, text))
        found = re.search(r"\?offset=(\d+)", first)
        if found is None or "next range" not in first:
            return answers
        offset = int(found[1])


@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 7, 64, 4099, None])
def test_ranges_never_split_a_character_and_reassemble_exactly(tmp_path: Path, length: int | None) -> None:
    data = (PATTERN * 300).encode()
    answers = _ranges(_spool(tmp_path, data), length)
    assert "".join(text for _, text in answers).encode() == data
    assert "\ufffd" not in "".join(text for _, text in answers)  # no character was cut in two
    bounds = spans([first for first, _ in answers])
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
    assert all(end - begin <= max(length or 1 << 20, 4) for begin, end, _ in bounds)


def test_an_offset_inside_a_character_starts_at_its_first_byte(tmp_path: Path) -> None:
    from mcp_server_guard.shell.spools import read_output

    spool = _spool(tmp_path, "ab\U0001d11ecd".encode())  # the 4-byte character lies at bytes 2-6
    for offset in (3, 4, 5):
        first, _, text = read_output("x", "stdout", spool, offset, 100, growing=False).partition("\n")
        assert (first, text) == ("[stdout of x: bytes 2-8 of 8; the end]", "\U0001d11ecd")


def test_control_characters_count_as_escaped_in_a_ranges_size(tmp_path: Path) -> None:
    from mcp_server_guard.shell.spools import read_output

    # A NUL takes six bytes in the JSON answer: a range of NULs holds a sixth as many, so that a flood of them
    # costs the server and the client no more than a range of letters.
    first, _, text = read_output("x", "stdout", _spool(tmp_path, b"\0" * 6000), 0, 600, growing=False).partition("\n")
    assert text == "\0" * 100 and first.startswith("[stdout of x: bytes 0-100 of 6000; next range: ")


def test_a_range_of_wide_characters_holds_fewer_so_that_its_text_takes_no_more_memory(tmp_path: Path) -> None:
    # Python keeps a text at the width of its widest character: one emoji in a range of ASCII would make the
    # whole answer four times bigger in the server's memory. Such a range holds a quarter, or ends before it.
    data = ("a" * 10000 + "\U0001d11e" + "a" * 10000 + "\u2713" + "a" * 10000).encode()
    answers = _ranges(_spool(tmp_path, data), 8000)
    assert "".join(text for _, text in answers).encode() == data
    assert [len(text.encode()) for _, text in answers] == [8000, 2000, 2000, 8000, 4000, 6007]
    assert all(sys.getsizeof(text) <= 8000 + 100 for _, text in answers)


def test_what_was_not_kept_is_named_and_skipped(tmp_path: Path) -> None:
    from mcp_server_guard.shell.spools import TAIL_KEPT

    total = 1000 + (3 << 20)
    spool = _spool(tmp_path, b"x" * total, cap=1000)  # the first 1000 bytes and the last TAIL_KEPT are kept
    tail = total - TAIL_KEPT
    answers = _ranges(spool, 600)
    assert answers[1][0] == (
        f"[stdout of x: bytes 600-1000 of {total}; bytes 1000-{tail} were not kept; "
        f"next range: shell-exec://output/x/stdout?offset={tail}&length=600]"
    )
    assert sum(len(text) for _, text in answers) == 1000 + TAIL_KEPT
    gap = _ranges(spool, 600, offset=5000)[0]
    assert gap == (
        f"[stdout of x: bytes 5000-{tail} of {total} were not kept (only the first 1000 bytes and the last "
        f"{TAIL_KEPT} are); next range: shell-exec://output/x/stdout?offset={tail}&length=600]",
        "",
    )


def test_a_growing_streams_last_character_waits_until_it_is_whole(tmp_path: Path) -> None:
    from mcp_server_guard.shell.spools import read_output

    whole = "ab\u2713".encode()
    spool = _spool(tmp_path, whole[:-1])  # a job wrote 2 of the check mark's 3 bytes so far
    first, _, text = read_output("j1", "stdout", spool, 0, None, growing=True).partition("\n")
    assert text == "ab" and first.startswith("[stdout of j1: bytes 0-2 of 4 so far; next range: ")
    first, _, text = read_output("j1", "stdout", spool, 2, None, growing=True).partition("\n")
    assert text == "" and first.endswith(
        "the end so far; more comes while it runs: shell-exec://output/j1/stdout?offset=2]"
    )
    spool.feed(whole[-1:])
    assert read_output("j1", "stdout", spool, 2, None, growing=True).partition("\n")[2] == "\u2713"
