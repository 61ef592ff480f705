"""Guarded, atomic, durable file writes that never lose the previous content.

A write is decided against the jail (race-free parent directory), the executable rules (extension,
content, existing exec bit), the protected paths, and the file's current state; then the content
goes to a temp file in the same directory, is fsynced, and lands in one atomic step:

* new file:  ``link(temp, name)`` — fails with EEXIST if anything (even a dangling symlink) is
  there, so ``overwrite: false`` has no check-then-create window;
* replace:   the old file is locked (flock), re-checked to still be the file at that name, hashed
  against ``expectedSha256``, copied to the history store, and ``rename(temp, name)`` replaces it.

The directory is fsynced afterwards. A reader sees the old file or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import posixpath
import re
import secrets
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mcp_server_guard.errors import GuardError, ResourceError, SecurityError, SystemError_
from mcp_server_guard.history import HistoryStore
from mcp_server_guard.jail import Jail, Located, check_regular, oserror_to_guard
from mcp_server_guard.mime import mime_of
from mcp_server_guard.policy import FileWritePolicy
from mcp_server_guard.textfile import sha256_fd

_EXEC_BITS = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
_LOCK_WAIT_S = 10.0
_ATTEMPTS = 3
# Bytes that never occur in text a model writes; their presence earns the full libmagic check.
_BINARY_BYTES = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _glob_regex(pattern: str) -> str:
    out = []
    i = 0
    p = pattern.strip("/")
    while i < len(p):
        if p.startswith("**", i):
            out.append(".*")
            i += 2
        elif p[i] == "*":
            out.append("[^/]*")
            i += 1
        elif p[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(p[i]))
            i += 1
    # A pattern matches a whole path suffix at any depth: ".git/config" matches "a/.git/config".
    return r"(?:^|/)" + "".join(out) + r"$"


class ProtectedPaths:
    """Paths never written: policy globs, plus the server's own policy files, audit log and history."""

    def __init__(self, patterns: Iterable[str], files: Iterable[Path] = (), dirs: Iterable[Path] = ()) -> None:
        self.patterns = tuple(patterns)
        self._regex = re.compile("|".join(f"(?:{_glob_regex(p)})" for p in self.patterns) or r"(?!)", re.IGNORECASE)
        self._files = {os.path.realpath(f) for f in files}
        self._dirs = tuple(os.path.realpath(d) for d in dirs)
        self._inodes: set[tuple[int, int]] = set()
        for f in self._files:
            with contextlib.suppress(OSError):
                st = os.stat(f)
                self._inodes.add((st.st_dev, st.st_ino))

    def match(self, candidates: Iterable[str], existing: os.stat_result | None) -> str | None:
        """The rule that protects one of ``candidates`` (paths of the target), or None."""
        for path in candidates:
            if not path:
                continue
            found = self._regex.search(path)
            if found:
                return next(p for p in self.patterns if re.search(_glob_regex(p), path, re.IGNORECASE))
            if path in self._files:
                return "the server's own policy or audit file"
            if any(path == d or path.startswith(d + "/") for d in self._dirs):
                return "the history store"
        if existing is not None and (existing.st_dev, existing.st_ino) in self._inodes:
            return "the server's own policy or audit file (hard link)"
        return None


@dataclass(frozen=True)
class WriteOutcome:
    path: str
    bytes_written: int
    sha256: str
    created: bool
    backup: str | None


def check_executable_content(name: str, data: bytes, policy: FileWritePolicy) -> None:
    """Refuse content that would make an executable: by extension, shebang or libmagic MIME type."""
    lower = name.lower()
    for ext in policy.denied_extensions:
        if lower.endswith(ext):
            raise SecurityError(
                "EXECUTABLE_EXTENSION",
                f"Files named '*{ext}' are executables and are not written here.",
                "Write source or data files instead; running things is shell_exec's job, under its own policy.",
            )
    if data.startswith(b"#!"):
        line = data[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
        words = [w for w in line if not w.startswith("-") and "=" not in w]
        interp = posixpath.basename(words[0]) if words else ""
        if interp == "env" and len(words) > 1:
            interp = posixpath.basename(words[1])
        if interp in policy.shebang_interpreters:
            raise SecurityError(
                "EXECUTABLE_CONTENT",
                f"The content starts with a '#!' line naming the shell '{interp}'.",
                "Shell scripts are not written here; put the commands in a non-executable file or run them "
                "with shell_exec.",
            )
    head = data[:8192]
    # Defense in depth: text is checked with libmagic's built-in tests; anything binary-looking gets all of them.
    mime = mime_of(head, full=bool(_BINARY_BYTES.search(head)))
    if mime in policy.denied_mime_types:
        raise SecurityError(
            "EXECUTABLE_CONTENT",
            f"The content is an executable ({mime}).",
            "Executables are never written; write source code or data instead.",
        )


class Writer:
    """Everything file_write (and ``mcp-guard history restore``) does, behind the guards."""

    def __init__(self, jail: Jail, policy: FileWritePolicy, protected: ProtectedPaths, history: HistoryStore) -> None:
        self.jail = jail
        self.policy = policy
        self.protected = protected
        self.history = history
        self._new_mode = 0o666 & ~_current_umask() & ~_EXEC_BITS

    def write(
        self, given: str, data: bytes, *, overwrite: bool, expected_sha256: str | None = None, create_dirs: bool = False
    ) -> WriteOutcome:
        if len(data) > self.policy.max_write_bytes:
            raise ResourceError(
                "CONTENT_TOO_LARGE",
                f"The content is {len(data)} bytes; the limit is {self.policy.max_write_bytes}.",
                "Write a smaller file, or split the content over several files.",
            )
        located = self.jail.locate(given)
        check_executable_content(posixpath.basename(located.rel), data, self.policy)
        self._check_protected(located, [located.rel, located.absolute], None)  # before createDirs makes anything
        located, dirfd, name = self.jail.open_parent(located, create_dirs=create_dirs)
        try:
            for _ in range(_ATTEMPTS):
                existing = self._existing(located, dirfd, name)
                if existing is None:
                    if expected_sha256 is not None:
                        raise ResourceError(
                            "CONFLICT",
                            f"'{given}' does not exist, but expectedSha256 says it should.",
                            "Re-read the directory; create the file without expectedSha256.",
                        )
                    outcome = self._create(located, dirfd, name, data)
                else:
                    if not overwrite:
                        raise ResourceError(
                            "FILE_EXISTS",
                            f"'{given}' already exists.",
                            "Pass overwrite: true to replace it (its previous content is kept in the history).",
                        )
                    outcome = self._replace(located, dirfd, name, data, expected_sha256)
                if outcome is not None:
                    return outcome
            raise ResourceError(
                "FILE_BUSY", f"'{given}' kept changing while it was being written.", "Try again in a moment."
            )
        finally:
            os.close(dirfd)

    # -- checks ---------------------------------------------------------------------------------

    def _existing(self, located: Located, dirfd: int, name: str) -> os.stat_result | None:
        try:
            st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise oserror_to_guard(exc, located.given) from None
        real_dir = self.jail.real_path_of(dirfd)
        real = posixpath.join(real_dir, name) if real_dir else ""
        self._check_protected(located, [located.rel, located.absolute, real], st)
        if st is None:
            return None
        if stat.S_ISLNK(st.st_mode):
            # Defense in depth: writing "through" a symlink (dangling ones included) is the classic escape.
            raise SecurityError(
                "SYMLINK_TARGET",
                f"'{located.given}' is a symlink; file_write never writes through one.",
                "Write to the real file's path instead.",
            )
        check_regular(st, located.given)
        self._check_not_executable(st, located.given)
        return st

    def _check_protected(self, located: Located, candidates: list[str], st: os.stat_result | None) -> None:
        rule = self.protected.match(candidates, st)
        if rule is not None:
            raise SecurityError(
                "PROTECTED_PATH",
                f"'{located.given}' is protected ({rule}).",
                "This file controls tools, shells or the guards themselves; ask the user to change it by hand.",
            )

    @staticmethod
    def _check_not_executable(st: os.stat_result, given: str) -> None:
        if st.st_mode & _EXEC_BITS:
            raise SecurityError(
                "EXECUTABLE_TARGET",
                f"'{given}' is executable (it has an exec bit).",
                "Executables are never replaced; ask the user to change it by hand.",
            )

    # -- the two atomic paths -------------------------------------------------------------------

    def _temp(self, located: Located, dirfd: int, data: bytes, mode: int) -> str:
        """Write ``data`` durably to a fresh temp file in the target's directory; return its name."""
        for _ in range(8):
            tmp = f".mcp-guard-{secrets.token_hex(6)}.tmp"
            try:
                fd = os.open(
                    tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dirfd
                )
                break
            except FileExistsError:
                continue
            except OSError as exc:
                raise self._write_error(exc, located) from None
        else:
            raise SystemError_("IO_ERROR", "Could not create a temporary file.", "Try again.")
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dirfd)
            raise self._write_error(exc, located) from None
        os.close(fd)
        return tmp

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

    def _create(self, located: Located, dirfd: int, name: str, data: bytes) -> WriteOutcome | None:
        tmp = self._temp(located, dirfd, data, self._new_mode)
        try:
            # link() never replaces: an existing name (file, dir, or dangling symlink) fails with EEXIST.
            os.link(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd, follow_symlinks=False)
        except FileExistsError:
            return None  # someone created it meanwhile: decide again
        except OSError as exc:
            raise self._write_error(exc, located) from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dirfd)
        os.fsync(dirfd)
        return WriteOutcome(self.jail.display(located), len(data), hashlib.sha256(data).hexdigest(), True, None)

    def _lock(self, fd: int, located: Located) -> None:
        deadline = time.monotonic() + _LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ResourceError(
                        "FILE_BUSY", f"'{located.given}' is locked by another writer.", "Try again in a moment."
                    ) from None
                time.sleep(0.002)

    def _replace(
        self, located: Located, dirfd: int, name: str, data: bytes, expected_sha256: str | None
    ) -> WriteOutcome | None:
        try:
            old = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return None  # became a symlink: _existing refuses it on the next attempt
            raise oserror_to_guard(exc, located.given) from None
        try:
            self._lock(old, located)
            st = os.fstat(old)
            try:
                now = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
            except FileNotFoundError:
                now = None
            if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                # Replaced between our open and our lock: its content is not what we locked.
                if expected_sha256 is not None:
                    raise self._conflict(located, None)
                return None
            check_regular(st, located.given)
            self._check_not_executable(st, located.given)
            if expected_sha256 is not None:
                current = sha256_fd(old)
                if current != expected_sha256.lower():
                    raise self._conflict(located, current)
            try:
                backup = self.history.save(old, posixpath.join(self.jail.real_path_of(dirfd), name), st.st_mode)
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                    raise self._write_error(exc, located) from None
                raise SystemError_(
                    "HISTORY_UNAVAILABLE",
                    f"The previous content of '{located.given}' could not be saved ({exc.strerror}); nothing written.",
                    "Check the history directory (see --history-dir).",
                ) from None
            tmp = self._temp(located, dirfd, data, st.st_mode & 0o0666)
            try:
                os.rename(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dirfd)
                raise self._write_error(exc, located) from None
            os.fsync(dirfd)
        finally:
            os.close(old)
        return WriteOutcome(self.jail.display(located), len(data), hashlib.sha256(data).hexdigest(), False, backup.id)

    @staticmethod
    def _conflict(located: Located, current: str | None) -> ResourceError:
        now = f" (its sha256 is now {current})" if current else ""
        return ResourceError(
            "CONFLICT",
            f"'{located.given}' changed since it was read{now}; nothing was written.",
            "Read the file again, merge your change into its current content, and retry with the new sha256.",
        )


__all__ = ["ProtectedPaths", "WriteOutcome", "Writer", "check_executable_content"]
