"""The box's socket framing: how the server and the supervisor (and a ready init) pass messages and fds.

A message is one length-prefixed JSON frame on a UNIX stream socket; the fds it carries (a call's stdio and
status pipes, a ready init's socket) ride with it as SCM_RIGHTS, and its ``fds`` key says how many are its own.
What a frame says is typed in ``wire``; this module only moves frames. Both sides import it: the server's
``box`` and ``in_box``, and the in-box ``supervisor`` and ``call_init``.

Standard library only: the supervisor imports this with no site-packages.
"""

from __future__ import annotations

import array
import errno
import json
import socket
import struct
from collections.abc import Mapping
from typing import Any

_MAX_FRAME = 8 << 20
MAX_FDS = 4  # the fds one frame may carry: a call's stdin, stdout, stderr and status pipe


def rights(fds: list[int]) -> list[tuple[int, int, array.array[int]]]:
    """The ancillary data that passes ``fds`` over a UNIX socket (SCM_RIGHTS)."""
    return [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []


def received_fds(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    """The fds that came with a ``recvmsg`` (SCM_RIGHTS)."""
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return list(fds)


def send_frame(sock: socket.socket, message: Mapping[str, Any], fds: list[int] | None = None) -> None:
    """Send ``message`` as one frame, with ``fds`` (SCM_RIGHTS); refuse one over the limit the reader keeps to."""
    body = json.dumps(message, separators=(",", ":")).encode("utf-8", "surrogateescape")
    if len(body) > _MAX_FRAME:
        # The reader would refuse it and stop reading the channel: never send one (the call fails, the box stays).
        raise OSError(errno.E2BIG, f"a request of {len(body)} bytes is over the box's limit of {_MAX_FRAME}")
    data = struct.pack(">I", len(body)) + body
    sent = sock.sendmsg([data], rights(fds or []))
    if sent < len(data):
        sock.sendall(data[sent:])


class FrameReader:
    """Reassembles frames from a stream socket, keeping the fds that came with each."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""
        self.fds: list[int] = []

    def read(self, flags: int = 0) -> bool:
        """Read what is available; False at EOF (``flags``: e.g. MSG_DONTWAIT, which raises BlockingIOError)."""
        data, ancillary, _flags, _addr = self.sock.recvmsg(
            1 << 16, socket.CMSG_SPACE(MAX_FDS * array.array("i").itemsize), socket.MSG_CMSG_CLOEXEC | flags
        )
        self.fds.extend(received_fds(ancillary))
        self.buffer += data
        return bool(data)

    def frames(self) -> list[tuple[dict[str, Any], list[int]]]:
        out: list[tuple[dict[str, Any], list[int]]] = []
        while len(self.buffer) >= 4:
            (size,) = struct.unpack(">I", self.buffer[:4])
            if size > _MAX_FRAME:
                raise ValueError(f"frame of {size} bytes")
            if len(self.buffer) < 4 + size:
                break
            body, self.buffer = self.buffer[4 : 4 + size], self.buffer[4 + size :]
            message = json.loads(body.decode("utf-8", "surrogateescape"))
            count = int(message.get("fds", 0)) if isinstance(message, dict) else 0
            fds, self.fds = self.fds[:count], self.fds[count:]
            out.append((message if isinstance(message, dict) else {}, fds))
        return out
