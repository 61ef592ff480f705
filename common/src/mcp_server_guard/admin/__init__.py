"""``mcp-guard``, the companion CLI: the app, readable formats of records, the demo.

What it guarantees: what it prints of a command, a path or a model is escaped; ``undo`` says success only when the
tree is back as it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_server_guard._lazy import lazy_exports

if TYPE_CHECKING:
    from mcp_server_guard.admin.app import main
    from mcp_server_guard.admin.demo import run_demo
    from mcp_server_guard.admin.format import format_entry

_EXPORTS = {
    "format_entry": "format",
    "main": "app",
    "run_demo": "demo",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "format_entry",
    "main",
    "run_demo",
]
