"""What a write leaves besides the file: the previous content kept in the history store (refused when keeping it
would push out the only copy of earlier work) and the call's record that ``mcp-guard undo`` reads, written pending
before the new content takes the name and completed after. ``files.writing.Writer`` inherits these.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import posixpath
import stat
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mcp_server_guard import audit, linux
from mcp_server_guard.errors import GuardError, HostError, ResourceError
from mcp_server_guard.files.calls import CALLS
from mcp_server_guard.files.history import HistoryStore
from mcp_server_guard.files.history_entries import HistoryEntry, NoRoom
from mcp_server_guard.files.jail import Jail, Located, oserror_to_guard
from mcp_server_guard.files.planted import kept, planted
from mcp_server_guard.paths import printable

log = logging.getLogger("mcp_server_guard")


@dataclass(frozen=True)
class WrittenDirs:
    """What a write did to directories besides its file: the ones ``createDirs`` made (absolute, the topmost first)
    and the directory whose time it moved (``top``: the parent of the first made, else the file's own), with that
    time before."""

    made: list[str]
    top: str
    top_mtime_ns: int


class WriteRecords:
    """The history copy and the call record of a write (mixed into ``Writer``, which holds these attributes)."""

    jail: Jail
    history: HistoryStore
    _landed: dict[str, tuple[int, ...]]
    _dirs: dict[str, WrittenDirs]

    @staticmethod
    def _write_error(exc: OSError, located: Located) -> GuardError:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return ResourceError(
                "DISK_FULL",
                f"No space left to write '{located.given}'; the previous content is untouched.",
                "Free some space or write less.",
            )
        if exc.errno == errno.EFBIG:
            return ResourceError("CONTENT_TOO_LARGE", "The file system refused a file this large.", "Write less.")
        return oserror_to_guard(exc, located.given)

    def _record(
        self, located: Located, dirfd: int, temp: str, name: str, action: str, before: str, digest: str,
        only: bool = False, replaced: os.stat_result | None = None,
    ) -> tuple[str, dict[str, Any]] | None:  # fmt: skip
        """The call's record, written (``pending``) before the new content takes the name, so that a write killed
        at any point leaves one ``mcp-guard undo`` finds: it undoes the write only where the name holds what
        ``after`` says (the temp file's inode, which the rename or link keeps)."""
        record = audit.current()
        if record is None:
            return None
        st = os.stat(temp, dir_fd=dirfd, follow_symlinks=False)
        path = posixpath.join(self.jail.real_path_of(dirfd), name)
        # (the mode and attributes it leaves: an undo's check that nobody changed them since, red team 96 F3)
        change = {"path": path, "action": action, "kind": "file", "before": before, "sha256": digest,
                  "after": [st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size], "tree": False,
                  "mode": stat.S_IMODE(st.st_mode), "attrs": linux.attributes_digest(dirfd, temp),
                  "links": st.st_nlink}  # fmt: skip
        if replaced is not None:
            # What it replaced (kept as a copy: another inode): an earlier call's undo finds that copy put back by
            # this one's undo as the file it left (red team 109 F3); a file with other names comes back as one of
            # them (its group: the undo links it to a name that still holds it, red team 109 F1).
            change["replaced"] = [replaced.st_dev, replaced.st_ino, replaced.st_mtime_ns, replaced.st_size]
            if replaced.st_nlink > 1:
                change["group"] = [replaced.st_dev, replaced.st_ino]
        # The directory's time before the temp file moved it, kept from the start: a write killed after landing,
        # before its record is completed, is undone with it too (red team 115 F3; an undo puts it back unchecked).
        timed = _time_records(dirs) if (dirs := self._dirs.get(record.audit_id)) is not None else []
        manifest = {"audit_id": record.audit_id, "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
                    "applied_ns": time.time_ns(), "roots": [located.root.path], "tool": record.tool, "command": path,
                    "changes": [change, *timed], "conflicts": [], "pending": True}  # fmt: skip
        manifest |= {"only_copies": [path]} if only else {}  # what it replaced: git has no copy (HistoryStore.evicting)
        try:
            planted().add([kept(path)])  # (a cache marker: for every server's judgements)
            self.history.calls.write(record.audit_id, manifest)
        except OSError as exc:
            raise self._write_error(exc, located) from None
        return record.audit_id, manifest

    def _complete_record(self, written: tuple[str, dict[str, Any]] | None) -> None:
        """The write landed: its record says so (best effort: a pending record is checked against the file)."""
        if written is None:
            return
        audit_id, manifest = written
        for change in manifest["changes"]:
            if change.get("action") == "times":
                continue
            self._landed.pop(change["path"], None)
            self._landed[change["path"]] = tuple(change["after"])
            while len(self._landed) > 100_000:
                del self._landed[next(iter(self._landed))]
        manifest.pop("pending", None)
        # (after the rename, which moved the kept file's status-change time: a pre-image kept whole is checked by
        # that time against the record's, HistoryStore.changed_since)
        manifest["applied_ns"] = time.time_ns()
        if (dirs := self._dirs.get(audit_id)) is not None:
            own = [change for change in manifest["changes"] if change.get("action") != "times"]
            manifest["changes"] = [*_made_records(dirs), *own, *_time_records(dirs)]
        try:
            self.history.calls.write(audit_id, manifest, durable=False)
        except OSError as exc:
            log.warning("could not complete the record of call %s: %s", audit_id, exc)

    def _drop_record(self, written: tuple[str, dict[str, Any]] | None) -> None:
        """The write did not land: no record of it."""
        if written is not None:
            with contextlib.suppress(OSError):
                (self.history.directory / CALLS / f"{written[0]}.json").unlink()

    def _save_previous(
        self, old: int, located: Located, dirfd: int, name: str, st: os.stat_result, entry_id: str, *, link: bool
    ) -> HistoryEntry:
        """Keep the file a write replaces: ``link``: the very file, a new name of it in the history (the caller holds
        the tree lock and the file's: the name is about to be replaced by a rename) — its undo puts back that file,
        every other name of it one file with it again (red team 110 F3); else a copy of its bytes (a history on
        another file system, or a file with other names: its bytes could change through them)."""
        record = audit.current()
        # Threat: a flood of writes pushing out of the history the one copy of work an earlier call replaced.
        calls = self.history.evicting(1, st.st_size, record.audit_id if record is not None else "")
        gone = sorted({path for paths in calls.values() for path in paths})
        if gone:
            raise ResourceError(
                "HISTORY_FULL",
                f"Keeping the previous content of '{located.given}' would push out of the history the only copy of "
                f"earlier work git has none of ({', '.join(printable(g) for g in gone[:3])}"
                f"{', …' if len(gone) > 3 else ''}); nothing was written, the file is untouched.",
                "Ask the user to commit that work or raise history_max_bytes in the [file_write] section of the "
                "policy (`mcp-guard history list` shows what the history keeps).",
            )
        path = posixpath.join(self.jail.real_path_of(dirfd), name)
        audit_id = record.audit_id if record is not None else ""
        try:
            if link:
                if why := self.history.room(1, st.st_size):
                    raise NoRoom(why)
                return self.history.keep(dirfd, name, path, audit_id, move=False, entry_id=entry_id)
            return self.history.save(old, path, st.st_mode, audit_id=audit_id, entry_id=entry_id)
        except NoRoom as exc:
            raise ResourceError(
                "HISTORY_FULL",
                f"The previous content of '{located.given}' cannot be kept in the history store "
                f"({self.history.directory}): {exc}; nothing was written, the file is untouched.",
                "Ask the user to raise history_max_bytes in the [file_write] section of the policy, or to free space "
                "on the history store's disk (`mcp-guard history list` shows what it keeps); or write a smaller "
                "file.",
            ) from None
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise ResourceError(
                    "HISTORY_FULL",
                    f"The history store ({self.history.directory}) has no space left to keep the previous content "
                    f"of '{located.given}', so nothing was written; the file is untouched.",
                    "Ask the user to free space on the history store's disk, or to lower history_max_bytes / "
                    "history_max_entries in the [file_write] section of the policy and restart the server (the "
                    "oldest versions go first); `mcp-guard history list` shows what it keeps.",
                ) from None
            raise HostError(
                "HISTORY_UNAVAILABLE",
                f"The previous content of '{located.given}' could not be saved in the history store "
                f"({self.history.directory}: {exc.strerror}); nothing was written.",
                "Ask the user to check the history store (see --history-dir and `mcp-guard history list`).",
            ) from None


def _made_records(dirs: WrittenDirs) -> list[dict[str, Any]]:
    """The records of the directories ``createDirs`` made, the topmost first (undone after the file, deepest first:
    red team 109 F2 — an undo that said "back exactly" left them), each as it is now that the file landed (looked at
    with no link followed: a directory changed since is not taken away)."""
    found: list[dict[str, Any]] = []
    for path in dirs.made:
        try:
            st = os.lstat(path)
        except OSError:
            break
        if not stat.S_ISDIR(st.st_mode):
            break
        found.append({"path": path, "action": "create", "kind": "dir", "before": "", "tree": False,
                      "after": [st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size]})  # fmt: skip
    return found


def _time_records(dirs: WrittenDirs) -> list[dict[str, Any]]:
    """The time of the directory the write changed (or the topmost one it made in), put back by its undo."""
    try:
        now = os.lstat(dirs.top).st_mtime_ns if dirs.top else 0
    except OSError:
        return []
    if not now or now == dirs.top_mtime_ns:
        return []
    return [{"path": dirs.top, "action": "times", "kind": "dir", "old_mtime_ns": dirs.top_mtime_ns, "mtime_ns": now}]
