"""A history "on another file system" for library-level tests: every link or rename between the history directory
and anything outside it fails with EXDEV, as it does where the state directory and the project lie on two file
systems (a pre-image is then copied into the history, and copied back by an undo)."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_server_guard import linux

__all__ = ["history_elsewhere"]


def history_elsewhere(monkeypatch: pytest.MonkeyPatch, top: Path, name: str = "history") -> None:
    """Make every directory called ``name`` below ``top`` act as if it lay on another file system than everything
    else, for this test."""

    def inside(path: object) -> bool:
        text = str(path)
        return text.startswith(f"{top}/") and f"/{name}/" in f"{text[len(str(top)) :]}/"

    def crossing(src: object, dst: object) -> bool:
        return inside(src) != inside(dst)

    def refuse(real: Callable[..., object]) -> Callable[..., object]:
        def call(src: object, dst: object, *args: object, **kwargs: object) -> object:
            if crossing(src, dst):
                raise OSError(errno.EXDEV, "Invalid cross-device link")
            return real(src, dst, *args, **kwargs)

        return call

    real_renameat2 = linux.renameat2

    def renameat2(old_dir: int, old: str, new_dir: int, new: str, flags: int) -> None:
        if crossing(old, new):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real_renameat2(old_dir, old, new_dir, new, flags)

    monkeypatch.setattr(os, "link", refuse(os.link))
    monkeypatch.setattr(os, "rename", refuse(os.rename))
    monkeypatch.setattr(linux, "renameat2", renameat2)
