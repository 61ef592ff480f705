"""The kept head and tail of a command's output: bounded by bytes *and* by objects (red team 118 F1: a command
writing one byte at a time made every kept byte of the tail a Python object — 131 MiB for a 16 MiB tail)."""

from __future__ import annotations

import tracemalloc

from mcp_server_guard.shell.output import OutputBuffer


def test_attack_output_in_one_byte_reads_costs_no_more_than_the_bytes_kept() -> None:
    limit = 256 << 10
    buffer = OutputBuffer(limit)
    tracemalloc.start()
    try:
        for _ in range(3 * limit):
            buffer.feed(b"x")
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert buffer.total == 3 * limit
    assert len(buffer.tail) <= 4, len(buffer.tail)  # pieces of tens of KiB, not of bytes
    assert peak < 4 * limit, f"{peak} bytes held for a {limit}-byte limit"


def test_the_head_and_tail_read_back_whole_whatever_the_reads() -> None:
    data = bytes(range(256)) * 4096  # 1 MiB of every byte value
    for size in (1, 7, 4096, 70_000):
        buffer = OutputBuffer(64 << 10)
        for at in range(0, len(data), size):
            buffer.feed(data[at : at + size])
        tail = b"".join(buffer.tail)
        assert bytes(buffer.head) == data[: 32 << 10]
        assert data.endswith(tail) and len(tail) >= 32 << 10, size
