"""A small disk of a test's own (red team 73): a tmpfs mounted in a temp dir (root only; a machine that refuses
the mount skips the test), filled up on demand, unmounted afterwards."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_disk(size: str = "24m") -> Iterator[Path]:
    top = Path(tempfile.mkdtemp(prefix="rt73-disk-"))
    mnt = top / "m"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True,
                          timeout=30, check=False)  # fmt: skip
    if done.returncode != 0:
        shutil.rmtree(top, ignore_errors=True)
        pytest.skip(f"no tmpfs of our own here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False, timeout=30)
        shutil.rmtree(top, ignore_errors=True)


def fill(disk: Path) -> Path:
    """Take every free page of ``disk`` (the file doing it is returned)."""
    hog = disk / "hog"
    fd = os.open(hog, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for chunk in (1 << 20, 1 << 12, 1 << 9, 1):
            while True:
                try:
                    os.write(fd, b"\0" * chunk)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return hog


def fill_leaving(disk: Path, free: int) -> None:
    """Take the disk's free space down to about ``free`` bytes."""
    st = os.statvfs(disk)
    take = st.f_bavail * st.f_frsize - free
    fd = os.open(disk / "hog", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while take > 0:
            try:
                take -= os.write(fd, b"\0" * min(take, 1 << 20))
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
    finally:
        os.close(fd)


def files(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` with its bytes."""
    return {os.path.relpath(os.path.join(d, f), root): Path(d, f).read_bytes()
            for d, _dirs, names in os.walk(root) for f in names}  # fmt: skip


@contextlib.contextmanager
def filled_at(disk: Path, n: int, labels: list[str]) -> Iterator[None]:
    """The server's fault points counted (their labels into ``labels``) while inside: at the ``n``-th (0: never)
    every free page of ``disk`` is taken."""
    from mcp_server_guard import faults

    count = 0
    real = faults.point

    def point(label: str) -> None:
        nonlocal count
        count += 1
        labels.append(label)
        if count == n:
            fill(disk)
        real(label)

    faults.point = point
    try:
        yield
    finally:
        faults.point = real
