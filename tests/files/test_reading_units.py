"""The paged reader: pages read from where they start agree with a full decoding pass, and paging a whole file
costs one pass plus its pages, never a pass per page; a changed file is never answered from what was learned."""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_server_guard.files import reading
from mcp_server_guard.files.reading import Page, _read_page_decoded, forget_remembered, read_page

OLD = 1_000_000_000  # an mtime long settled (2001)


@pytest.fixture(autouse=True)
def _fresh_memory() -> Iterator[None]:
    forget_remembered()
    yield
    forget_remembered()


@pytest.fixture
def settled_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test cannot set a file's ctime back: count any file as settled (the clock-tick tests do not use this)."""
    monkeypatch.setattr(reading, "_SETTLED_NS", 0)


def _after_tick(tmp_path: Path, ctime_ns: int) -> None:
    """Wait (bounded) until the file clock has moved past ``ctime_ns``: timestamps are coarse."""
    probe = tmp_path / ".tick"
    for _ in range(100_000):
        probe.write_bytes(b"")
        if probe.stat().st_ctime_ns > ctime_ns:
            return
    raise AssertionError("the file clock did not move")


def _random_text(rng: random.Random, encoding: str) -> bytes:
    words = ["a", "bb", "ccc", "ü", "日本語", "x" * 300, "", "\t", "é" * 40, "\r"]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(0, 400))]
    text = "\n".join(lines) + rng.choice(["", "\n"])
    return text.encode(encoding, "replace")


def _facts(page: Page) -> tuple[object, ...]:
    return (page.content, page.total_lines, page.end_line, page.next_offset, page.truncated, page.line_cut, page.sha256)


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_pages_from_where_they_start_match_a_full_decoding_pass(tmp_path: Path, encoding: str) -> None:
    rng = random.Random(f"pages-{encoding}")
    for case in range(40):
        data = _random_text(rng, encoding)
        bom = 0
        if encoding == "utf-8" and case % 5 == 0:
            data, bom = b"\xef\xbb\xbf" + data, 3
        if case % 7 == 0:
            data += b"\xff\xfe bad bytes\n"
        path = tmp_path / f"f{case}"
        path.write_bytes(data)
        os.utime(path, ns=(OLD, OLD))
        fd = os.open(path, os.O_RDONLY)
        try:
            st = os.fstat(fd)
            total = max(data.count(b"\n") + 1, 2)
            for _ in range(12):
                offset = rng.randint(1, total)
                limit = rng.choice([None, 1, 3, 50])
                cap = rng.choice([1, 7, 64, 500, 4096, 1 << 20])
                args = {"encoding": encoding, "bom": bom, "offset": offset, "limit": limit, "max_bytes": cap}
                want = _read_page_decoded(fd, **args)  # type: ignore[arg-type]
                assert _facts(read_page(fd, **args)) == _facts(want), (case, args)  # type: ignore[arg-type]
                assert _facts(read_page(fd, st=st, **args)) == _facts(want), (case, args)  # type: ignore[arg-type]
        finally:
            os.close(fd)


def _bytes_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    counted = [0]
    real = os.pread

    def pread(fd: int, n: int, pos: int) -> bytes:
        data = real(fd, n, pos)
        counted[0] += len(data)
        return data

    monkeypatch.setattr(os, "pread", pread)
    return counted


def _page_through(path: Path, cap: int) -> tuple[list[Page], str]:
    fd = os.open(path, os.O_RDONLY)
    pages: list[Page] = []
    try:
        offset: int | None = 1
        while offset is not None:
            page = read_page(fd, encoding="utf-8", bom=0, offset=offset, limit=None, max_bytes=cap, st=os.fstat(fd))
            pages.append(page)
            offset = page.next_offset
    finally:
        os.close(fd)
    return pages, "".join(p.content for p in pages)


@pytest.mark.usefixtures("settled_now")
def test_paging_a_whole_file_costs_one_pass_plus_its_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"".join(b"line %d of the file, with some words\n" % i for i in range(120_000))  # ~4.3 MiB
    path = tmp_path / "big.txt"
    path.write_bytes(data)
    os.utime(path, ns=(OLD, OLD))
    counted = _bytes_read(monkeypatch)
    pages, text = _page_through(path, 64 << 10)
    assert text.encode() == data
    assert len(pages) > 60
    assert {p.sha256 for p in pages} == {hashlib.sha256(data).hexdigest()}
    assert counted[0] <= 2.2 * len(data)  # a pass per page would be ~70 times the file


@pytest.mark.usefixtures("settled_now")
def test_a_random_page_reads_from_the_nearest_known_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"".join(b"%08d\n" % i for i in range(500_000))  # 4.5 MB, 9 bytes a line
    path = tmp_path / "numbers.txt"
    path.write_bytes(data)
    os.utime(path, ns=(OLD, OLD))
    fd = os.open(path, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        read_page(fd, encoding="utf-8", bom=0, offset=1, limit=1, max_bytes=1 << 10, st=st)  # the one pass
        counted = _bytes_read(monkeypatch)
        page = read_page(fd, encoding="utf-8", bom=0, offset=400_001, limit=2, max_bytes=1 << 10, st=st)
    finally:
        os.close(fd)
    assert page.content == "00400000\n00400001\n"
    assert counted[0] <= 2 * reading.MARK_EVERY + (1 << 10)  # from a mark at most 64 KiB before, not the start


@pytest.mark.usefixtures("settled_now")
def test_file_rewritten_with_same_size_and_mtime_is_not_served_from_memory(tmp_path: Path) -> None:
    # The attack: learn a file, rewrite it in place with the same size and put its mtime back, hoping the
    # old hash (and line index) is reused and a later write's expectedSha256 check is fooled.
    path = tmp_path / "f.txt"
    path.write_bytes(b"one\ntwo\n")
    os.utime(path, ns=(OLD, OLD))
    first, _ = _page_through(path, 1 << 20)
    _after_tick(tmp_path, path.stat().st_ctime_ns)  # (within one tick, the settled rule is what protects)
    path.write_bytes(b"uno\ndos\n")
    os.utime(path, ns=(OLD, OLD))  # ctime still moves: utime cannot set it
    again, text = _page_through(path, 1 << 20)
    assert text == "uno\ndos\n"
    assert again[0].sha256 == hashlib.sha256(b"uno\ndos\n").hexdigest() != first[0].sha256


def test_a_file_changed_just_now_is_not_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Timestamps are coarse: a file modified in the same tick as the pass could change without a new
    # identity, so a fresh file is hashed again on every read.
    path = tmp_path / "fresh.txt"
    data = b"x\n" * 50_000
    path.write_bytes(data)
    counted = _bytes_read(monkeypatch)
    _page_through(path, 1 << 20)
    _page_through(path, 1 << 20)
    assert counted[0] >= 4 * len(data)  # two passes, two pages


@pytest.mark.usefixtures("settled_now")
def test_pages_read_by_many_threads_at_once_are_each_their_own(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    lines = [b"%07d %s\n" % (i, b"y" * (i % 97)) for i in range(60_000)]
    path = tmp_path / "shared.txt"
    path.write_bytes(b"".join(lines))
    os.utime(path, ns=(OLD, OLD))

    def page(seed: int) -> None:
        rng = random.Random(seed)
        fd = os.open(path, os.O_RDONLY)
        try:
            for _ in range(40):
                offset, limit = rng.randint(1, len(lines)), rng.randint(1, 300)
                got = read_page(
                    fd, encoding="utf-8", bom=0, offset=offset, limit=limit, max_bytes=1 << 16, st=os.fstat(fd)
                )
                want = b"".join(lines[offset - 1 : offset - 1 + got.end_line - offset + 1]).decode()
                assert got.content == want and got.end_line >= offset
        finally:
            os.close(fd)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(page, range(16)))


def test_attack_a_utf16_line_longer_than_a_page_is_read_in_bounded_memory(tmp_path: Path) -> None:
    # Threat (red team 125 F1): one UTF-16 line of many MiB was kept whole and copied at every chunk while the page
    # was read: memory and time grew with the file, not the page.
    import tracemalloc

    path = tmp_path / "wide.txt"
    path.write_bytes("\ufeff".encode("utf-16-le") + ("x" * (8 << 20)).encode("utf-16-le"))
    fd = os.open(path, os.O_RDONLY)
    try:
        tracemalloc.start()
        page = _read_page_decoded(fd, encoding="utf-16-le", bom=2, offset=1, limit=1, max_bytes=64 << 10)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        os.close(fd)
    assert page.line_cut and page.content_bytes == 64 << 10
    assert peak < 16 << 20, peak
