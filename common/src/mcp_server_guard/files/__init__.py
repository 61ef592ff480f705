"""File guards: the path jail (openat2 / O_NOFOLLOW walk), MIME sniffing, reading pages, atomic writing, the
history store and the temp-file journal.

What it guarantees: a path is reached beneath its root by the kernel's walk (openat2, or a no-follow walk by
descriptor), never through a link, and a FIFO or device is never opened; a write lands whole or not at all (a
temporary file renamed into place) after its pre-image is in the history; the history keeps within its bounds by
evicting whole calls, never part of one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_server_guard._lazy import lazy_exports

if TYPE_CHECKING:
    from mcp_server_guard.files.history import HistoryError, HistoryStore
    from mcp_server_guard.files.history_entries import HistoryEntry
    from mcp_server_guard.files.jail import Jail, Located, SymlinkMode
    from mcp_server_guard.files.journal import TempJournal, journal_dir, sweep_journals
    from mcp_server_guard.files.mime import Sniffed, mime_of, sniff
    from mcp_server_guard.files.reading import Page, read_page, sha256_fd
    from mcp_server_guard.files.writing import Writer, open_writer

_EXPORTS = {
    "HistoryEntry": "history_entries",
    "HistoryError": "history",
    "HistoryStore": "history",
    "Jail": "jail",
    "Located": "jail",
    "Page": "reading",
    "Sniffed": "mime",
    "SymlinkMode": "jail",
    "TempJournal": "journal",
    "Writer": "writing",
    "journal_dir": "journal",
    "mime_of": "mime",
    "open_writer": "writing",
    "read_page": "reading",
    "sha256_fd": "reading",
    "sniff": "mime",
    "sweep_journals": "journal",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "HistoryEntry",
    "HistoryError",
    "HistoryStore",
    "Jail",
    "Located",
    "Page",
    "Sniffed",
    "SymlinkMode",
    "TempJournal",
    "Writer",
    "journal_dir",
    "mime_of",
    "open_writer",
    "read_page",
    "sha256_fd",
    "sniff",
    "sweep_journals",
]
