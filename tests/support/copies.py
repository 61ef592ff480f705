"""A root and an upper layer made by running shell on an overlay of it, in a private user and mount namespace
(``unshare -Urm``), as the box does for every command: for the change pipeline's tests."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from mcp_server_guard.changes.apply import now_ns
from mcp_server_guard.changes.changeset import ChangeSet, Mounted
from mcp_server_guard.changes.upper import read_upper


def overlays_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    done = subprocess.run(["unshare", "-Urm", "true"], capture_output=True, timeout=30, check=False)
    return done.returncode == 0


class Copy:
    """A root, and an upper layer made by running shell on an overlay of it."""

    def __init__(self, base: Path) -> None:
        self.root = base / "root"
        self.upper = base / "upper"
        self.work = base / "work"
        for d in (self.root, self.upper, self.work):
            d.mkdir(parents=True, exist_ok=True)
        self.started = 0
        self.mounted: Mounted | None = None

    def run(self, script: str) -> ChangeSet:
        self.started = now_ns()
        # As the box mounts a copy: the upper root takes the root's mode, time and user.* attributes, so the
        # command's own show.
        real = os.stat(self.root)
        os.chmod(self.upper, stat.S_IMODE(real.st_mode))
        shown = [(n, os.getxattr(self.root, n)) for n in os.listxattr(self.root)
                 if n.startswith("user.") and not n.startswith("user.overlay.")]  # fmt: skip
        for name, value in shown:
            os.setxattr(self.upper, name, value)
        os.utime(self.upper, ns=(real.st_atime_ns, real.st_mtime_ns))
        self.mounted = Mounted(stat.S_IMODE(real.st_mode), real.st_mtime_ns, tuple(sorted(shown)))
        mount = (
            f"mount -t overlay overlay -o lowerdir={self.root},upperdir={self.upper},workdir={self.work},userxattr "
            f"{self.root} && cd {self.root} && {script}"
        )
        done = subprocess.run(["unshare", "-Urm", "sh", "-ec", mount], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return self.read()

    def read(self) -> ChangeSet:
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            return read_upper(str(self.upper), fd, str(self.root), mounted=self.mounted)
        finally:
            os.close(fd)
