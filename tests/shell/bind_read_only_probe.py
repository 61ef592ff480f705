"""Run in a new user and mount namespace by tests/shell/test_sandbox_units.py: a directory with a bind mount below
it made read-only by ``linux.bind_read_only`` (``recursive``: as the kernel offers; else the one-remount-each
fallback), then a write tried in the mount below. Prints what the write met."""

import errno
import os
import sys

from mcp_server_guard import linux

top, recursive = sys.argv[1], sys.argv[2] == "recursive"
below = os.path.join(top, "pinned")
linux.mount(below, below, None, linux.MS_BIND)  # as _pin_ancestors pins a directory above a hidden path
if not recursive:
    linux._read_only_recursively = lambda path: False
linux.bind_read_only(top)
try:
    os.chmod(below, 0o777)
except OSError as exc:
    print("EROFS" if exc.errno == errno.EROFS else f"errno {exc.errno}")
else:
    print("written")
