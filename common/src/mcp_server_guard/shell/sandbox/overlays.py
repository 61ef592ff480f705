"""The copy a command works on: an overlay over each writable root, mounted by the call's init.

The command's writes land in a fresh upper directory in the root's area (``changes.area``: on the root's own
file system, so that applying a change is a rename); the server reads that upper layer once the call is over
(``changes.upper``) and judges it. Every area is masked in the call's view, so the command sees neither its own
upper layer nor another call's. ``probe_copy`` checks at the box's start that the kernel lets the box mount one.
When the copy is mounted (ahead of the call, by a ready init, or with it) is decided in ``call_init``;
directory renames on the copy are answered by ``renames``.

Standard library only: the supervisor imports this with no site-packages.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass

from mcp_server_guard import linux
from mcp_server_guard.shell.sandbox.wire import CallOptions, Overlay


@dataclass(frozen=True)
class MountedCopy:
    """One call's overlays: below ``<area>/<name>/`` for each writable root, ``u<i>`` takes its writes (the upper
    layer the server reads afterwards) and ``w<i>`` is overlayfs's own work directory."""

    name: str
    overlays: tuple[tuple[str, str], ...]  # (root, area)


def _escape(path: str) -> str:
    """A path as overlayfs reads it in its options (a comma ends an option, a colon separates lower layers)."""
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


def mount_copy(overlays: list[Overlay]) -> MountedCopy:
    """Mount an overlay over each writable root (its writes go to a fresh upper directory in the root's area, on
    the same file system), then hide every area: the command sees neither its own upper layer nor another's."""
    name = secrets.token_hex(8)
    pairs = tuple((o["root"], o["area"]) for o in overlays)
    for index, (root, area) in enumerate(pairs):
        base = os.path.join(area, name)
        os.makedirs(base, mode=0o700, exist_ok=True)
        upper, work = os.path.join(base, f"u{index}"), os.path.join(base, f"w{index}")
        os.mkdir(upper, 0o700)
        os.mkdir(work, 0o700)
        # The merged root shows the upper directory's own mode and times: those of the root itself.
        real = os.stat(root)
        os.chmod(upper, stat.S_IMODE(real.st_mode))
        os.utime(upper, ns=(real.st_atime_ns, real.st_mtime_ns))
        options = f"lowerdir={_escape(root)},upperdir={_escape(upper)},workdir={_escape(work)},userxattr,volatile"
        linux.mount("overlay", root, "overlay", linux.MS_NOSUID | linux.MS_NODEV, options)
    for area in dict.fromkeys(area for _, area in pairs):
        linux.mask(area)
    return MountedCopy(name, pairs)


def probe_copy(usual: CallOptions) -> str:
    """Whether the copy can be made here: mount it once in a throwaway mount namespace and write through it.
    Returns "" when it works, else why not (what the kernel said)."""
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    child = os.fork()
    if child == 0:
        code = 1
        try:
            os.close(read_end)
            linux.unshare(linux.CLONE_NEWNS)
            linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
            copy = mount_copy(usual["overlays"])
            os.write(write_end, f"name={copy.name}\n".encode())
            for root, _area in copy.overlays:
                probe = os.path.join(root, f".mcp-guard-probe-{copy.name}")
                os.mkdir(probe)
                os.rmdir(probe)
            code = 0
        except OSError as exc:
            os.write(write_end, f"why={exc.strerror or exc}\n".encode(errors="replace"))
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        said = dict(line.decode(errors="replace").partition("=")[::2] for line in pipe.read().splitlines())
    _pid, status = os.waitpid(child, 0)
    name = said.get("name", "")
    if name:
        for overlay in usual["overlays"]:
            remove_unused(os.path.join(overlay["area"], name))
    if os.waitstatus_to_exitcode(status) == 0:
        return ""
    return said.get("why") or f"the probe ended with status {status}"


def remove_unused(directory: str) -> None:
    """A copy no command ever saw (the probe's, a retired init's): its empty upper and work directories (overlayfs
    leaves its work directory without permissions)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            path = os.path.join(directory, name)
            with contextlib.suppress(OSError):
                for inner in os.listdir(path):
                    os.chmod(os.path.join(path, inner), 0o700)
                    os.rmdir(os.path.join(path, inner))
            os.rmdir(path)
        os.rmdir(directory)
