"""What the user's shell rc files source, judged as the rc file that sources it (``protected``): a file ``~/.bashrc``
sources runs at every shell the user starts, outside any box.

Read apart from ``hook_runs``' readers: every start needs this, and only a change to judge needs those."""

from __future__ import annotations

import os
import re
import stat

from mcp_server_guard.patterns import deferred

__all__ = ["sourced_by_rc"]

_RC_FILES = (".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv", ".zlogin")
_RC_BYTES = 256 << 10  # an rc file read at most this far
_RC_SOURCED = 64  # files taken as sourced at most, in all
_RC_SOURCE = deferred(r"""(?:^|[;&|({]\s*|\bthen\s+|\bdo\s+)(?:source|\\?\.)\s+(["']?)([^\s"';|&)]+)\1""", re.M)
_RC_VARIABLE = deferred(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
_RC_ASSIGN = deferred(r"""^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(["']?)([^"'\s;]*)\2\s*(?:;|$)""", re.M)


def sourced_by_rc(home: str) -> list[tuple[str, str]]:
    """(the rc file, the real path of a file it sources), for HOME's shell rc files and, one level down, what they
    source: ``source X`` and ``. X`` lines whose path is static — ``~``, ``$HOME`` and variables the same file
    assigns expanded; relative to HOME (where a login shell starts). Read through links, as the shell reads them."""
    found: list[tuple[str, str]] = []
    todo = [(os.path.join(home, name), os.path.join(home, name), 0) for name in _RC_FILES]
    while todo and len(found) < _RC_SOURCED:
        path, rc, depth = todo.pop(0)
        try:  # never blocks on a FIFO, never reads a device: a regular file or nothing
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            data = os.read(fd, _RC_BYTES) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
            text = data.decode("utf-8", "surrogateescape")  # (a name as its bytes: red team 155 F2)
        except OSError:
            text = ""
        finally:
            os.close(fd)
        names = {"HOME": home} | {m[1]: m[3] for m in _RC_ASSIGN.finditer(text)}
        for match in _RC_SOURCE.finditer(text):
            value = match[2]
            for _ in range(3):  # variables naming variables ($NVM_DIR -> $HOME/.nvm), a few deep
                value = _RC_VARIABLE.sub(lambda m, names=names: names.get(m[1], m[0]), value)
            if value.startswith("~/") or value == "~":
                value = home + value[1:]
            if "$" in value or "`" in value or not value:
                continue
            real = os.path.realpath(os.path.join(home, value))
            if len(found) < _RC_SOURCED and (rc, real) not in found:
                found.append((rc, real))
                if depth < 1:
                    todo.append((real, rc, depth + 1))
    return found
