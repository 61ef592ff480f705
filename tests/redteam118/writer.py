"""Red team 118 F1's command: 9 MB to stdout and to stderr in 64 KiB writes (past the head a 16 MiB maxOutputBytes
keeps), then, for DURATION seconds, either one byte per write() to each stream, paced just below what the server
reads (``trickle``), or 64 KiB writes now and then (``bulk``, the control)."""

import os
import sys
import time

mode, duration = sys.argv[1], float(sys.argv[2])
for fd in (1, 2):
    left = 9_000_000
    while left > 0:
        left -= os.write(fd, b"z" * min(left, 65536))
end = time.monotonic() + duration
mono, write = time.monotonic, os.write
if mode == "bulk":
    while mono() < end:
        write(1, b"b" * 65536)
        write(2, b"b" * 65536)
        time.sleep(0.05)
else:
    n = 0
    while True:
        write(1, b"x")
        write(2, b"y")
        n += 1
        pause = mono() + 3e-6
        while mono() < pause:
            pass
        if n % 1000 == 0 and mono() > end:
            break
