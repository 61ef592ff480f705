"""Ordinary calls stay quick while others load the server (issue 28): the pieces on their own.

A command's stdin is written on the event loop as the command reads it, never by a worker thread that a command
which never reads could hold for its whole run (forty of them held every thread of anyio's pool).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import anyio
import anyio.to_thread
import pytest

from mcp_server_guard.shell import run
from mcp_server_guard.shell.process import write_stdin

pytestmark = pytest.mark.anyio


@pytest.fixture
async def no_worker_thread() -> AsyncIterator[None]:
    """Every token of anyio's default thread pool taken: anything that needs a worker thread waits."""
    limiter = anyio.to_thread.current_default_thread_limiter()
    total = limiter.total_tokens
    holder = object()
    limiter.total_tokens = 1
    await limiter.acquire_on_behalf_of(holder)
    try:
        yield
    finally:
        limiter.release_on_behalf_of(holder)
        limiter.total_tokens = total


async def _read_all(fd: int) -> bytes:
    os.set_blocking(fd, False)
    data = bytearray()
    while True:
        await anyio.wait_readable(fd)
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            continue
        if not chunk:
            return bytes(data)
        data += chunk


async def test_stdin_larger_than_a_pipe_is_written_whole_with_no_worker_thread(no_worker_thread: None) -> None:
    data = os.urandom(3 << 20)
    r, w = os.pipe()
    received = b""

    async def reader() -> None:
        nonlocal received
        received = await _read_all(r)

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(reader)
                await write_stdin(w, data)
                os.close(w)
                w = -1
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    assert received == data


async def test_writing_stdin_returns_when_the_command_closes_it_unread() -> None:
    r, w = os.pipe()
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(write_stdin, w, b"x" * (1 << 20))  # more than the pipe holds: it waits
                await anyio.sleep(0.05)
                os.close(r)  # the command ends without reading
                r = -1
    finally:
        os.close(w)
        if r >= 0:
            os.close(r)


async def test_a_cancelled_write_lets_go_of_the_pipe_before_it_is_closed() -> None:
    # The caller closes the fd once the write is cancelled: the loop must no longer be watching that number.
    r, w = os.pipe()
    try:
        with anyio.move_on_after(0.1):
            await write_stdin(w, b"x" * (1 << 20))
        r2, w2 = os.pipe()
        os.close(w)
        os.dup2(w2, w)  # another pipe's write end under the old number: waiting on it works at once
        try:
            with anyio.fail_after(5):
                await anyio.wait_writable(w)
        finally:
            for fd in (r2, w2, w):
                os.close(fd)
    finally:
        os.close(r)


async def test_an_unboxed_command_that_never_reads_its_stdin_needs_no_worker_thread(no_worker_thread: None) -> None:
    with anyio.fail_after(20):
        result = await run(
            ["/bin/sh", "-c", "sleep 0.2; echo done"],
            cwd="/",
            env={"PATH": "/usr/bin:/bin"},
            stdin=b"x" * (1 << 20),
            timeout=15,
            max_output=1 << 16,
        )
    assert (result.exit_code, result.stdout) == (0, "done\n")


async def test_an_unboxed_command_reads_all_of_its_stdin(no_worker_thread: None) -> None:
    data = b"line\n" * 300_000  # 1.5 MB
    with anyio.fail_after(20):
        result = await run(
            ["/bin/sh", "-c", "wc -c"],
            cwd="/",
            env={"PATH": "/usr/bin:/bin"},
            stdin=data,
            timeout=15,
            max_output=1 << 16,
        )
    assert (result.exit_code, result.stdout.strip()) == (0, str(len(data)))
