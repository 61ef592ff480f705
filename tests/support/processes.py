"""Finding the processes a test started, and bounded waiting."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import psutil


def marker() -> str:
    """A sleep duration unique to this test, to find its processes (and only them)."""
    return f"1000.{uuid.uuid4().int % 10**8}"


def processes_with(token: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if token in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def my_children_with(token: str) -> list[psutil.Process]:
    """This test's own descendants whose command line holds ``token`` (those that exit meanwhile skipped)."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if token in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


async def wait_until(predicate: Any, timeout: float = 15.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.05)
