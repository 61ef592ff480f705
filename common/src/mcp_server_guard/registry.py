"""The user's servers as each server sees the others: which state directories are in use, and which roots are
served right now.

A server keeps state that its commands must never reach (copies, history, audit log, approvals). It hides its own
from its tools and its box; but two servers of the user may run with different state directories (another
``XDG_STATE_HOME``, an explicit ``--history-dir``), and one's state may lie inside the other's root. The registry
makes that detectable. It is a private directory (0700, this user's, never a symlink), ``$MCP_GUARD_RUNTIME_DIR``
or else ``~/.local/state/mcp-guard-servers`` in the account's own home (``pwd``, whatever ``$HOME`` or
``$XDG_STATE_HOME`` a server was given: every server of the user finds the same one), holding:

* ``state-<sha256>``: the real path of a state directory a server of the user has used. Kept (a few bytes each,
  across reboots: a directory in ``/tmp`` was emptied at boot, and the state of a server not yet started again was
  then in every other server's sight), so that every such directory is hidden from every server's tools and
  commands while it exists, whether its server runs or not (``protected.Protection.hidden_paths``). An entry
  whose directory is gone is removed by the next server that starts while there are ``_PRUNE_AT`` entries or more
  (servers run with a state directory per session leave one each): nothing is there to hide, and the server that
  makes it again registers it as it starts. Past ``_MAX_ENTRIES`` entries, the rest are not read (said on stderr);
* ``live-<pid>-<random>.json``: a running server's roots, under an exclusive ``flock`` it holds for as long as it
  lives (the kernel drops it however the server dies; an entry whose lock can be taken is a dead server's, and is
  removed by whoever finds it), and whether it can change files there. A server refuses to start when one of its
  state directories lies inside a root another live server serves and can write (``serving.launch``): that
  server's commands could forge what is in it.

Threat: another user making the directory first, to feed a server state directories to hide (a nuisance) or to
hide none (in ``/tmp`` anyone could: red team 42q M): it lies in the user's own home, and must be a private
directory of this user, or nothing is read from it (and nothing registered).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import pwd
import secrets
import stat
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_server_guard.paths import private_dirs, within

log = logging.getLogger("mcp_server_guard")

__all__ = [
    "ENV",
    "Live",
    "Registration",
    "directory",
    "inside_served",
    "live_servers",
    "private_key",
    "register",
    "sealing_key",
    "state_paths",
    "usable",
    "user_key",
]

ENV = "MCP_GUARD_RUNTIME_DIR"
_MAX_ENTRIES = 4096  # entries read at most (a directory stuffed with entries costs a bounded time)
_PRUNE_AT = 512  # entries from which a starting server removes those of state directories that are gone
_MAX_BYTES = 64 << 10  # one entry's bytes read at most
_NO_FOLLOW = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def directory() -> Path:
    given = os.environ.get(ENV)
    if given:
        return Path(given)
    # One place every server of the user finds whatever its HOME, TMPDIR or XDG_STATE_HOME; made private and
    # checked (_private).
    try:
        home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:  # an account with no entry (a container's arbitrary uid): its HOME, else the temp dir
        home = os.environ.get("HOME") or f"/tmp/mcp-guard-{os.getuid()}"  # noqa: S108
    return Path(home) / ".local" / "state" / "mcp-guard-servers"


def usable(path: Path) -> bool:
    """Whether ``path`` (the registry, made if missing) is this user's private directory, never a link."""
    return _private(path, make=True)


def _private(path: Path, *, make: bool) -> bool:
    if make:
        with contextlib.suppress(OSError):
            private_dirs(path)
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077


@dataclass(frozen=True)
class Live:
    """A running server of the user, other than this one."""

    pid: int
    roots: tuple[str, ...]
    writes: bool = True  # it can change files in its roots (file_write, shell_exec not read-only)


class Registration:
    """This server in the registry: its live entry, locked for as long as it lives."""

    def __init__(self, where: Path, fd: int, path: Path) -> None:
        self.where, self.fd, self.path = where, fd, path

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()
        with contextlib.suppress(OSError):
            os.close(self.fd)


def _add_state(where: Path, paths: Iterable[str | Path]) -> None:
    for raw in paths:
        real = os.path.realpath(raw)
        name = "state-" + hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:32]
        if os.path.lexists(where / name):
            continue
        temp = where / f".{name}.{os.getpid()}.tmp"
        try:
            temp.write_bytes(real.encode("utf-8", "surrogateescape"))
            os.rename(temp, where / name)
        except OSError as exc:
            log.warning("cannot register the state directory %s: %s", real, exc.strerror or exc)
            with contextlib.suppress(OSError):
                temp.unlink()
    _cache.clear()


def register(roots: Sequence[str], state: Iterable[str | Path], *, writes: bool = True) -> Registration | None:
    """Register this server: its roots (live, locked) and its state directories (kept). None when the registry
    cannot be used (said on stderr): the server then hides only its own state."""
    where = directory()
    if not _private(where, make=True):
        log.warning("%s is not a private directory of this user: other servers' state is not hidden", where)
        return None
    _add_state(where, state)
    _prune(where)
    name = f"live-{os.getpid()}-{secrets.token_hex(4)}.json"
    temp = where / f".{name}.tmp"
    try:
        fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        log.warning("cannot register this server in %s: %s", where, exc.strerror or exc)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # before it has its name: a reader never finds it unlocked while alive
        body = {"pid": os.getpid(), "roots": [os.path.realpath(r) for r in roots], "writes": writes}
        os.write(fd, json.dumps(body).encode("utf-8", "surrogateescape"))
        os.rename(temp, where / name)
    except OSError as exc:
        log.warning("cannot register this server in %s: %s", where, exc.strerror or exc)
        os.close(fd)
        with contextlib.suppress(OSError):
            temp.unlink()
        return None
    return Registration(where, fd, where / name)


_cache: dict[str, tuple[tuple[int, int, int], tuple[str, ...]]] = {}
_cache_lock = threading.Lock()


def state_paths() -> tuple[str, ...]:
    """The state directories of the user's servers (registered, whether they run or not). Cached while the
    registry directory does not change (one ``stat`` per look)."""
    where = directory()
    try:
        st = os.lstat(where)
    except OSError:
        return ()
    key = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    with _cache_lock:
        cached = _cache.get(str(where))
        if cached is not None and cached[0] == key:
            return cached[1]
    if not _private(where, make=False):
        return ()
    found: list[str] = []
    for name in _names(where):
        if name.startswith("state-"):
            text = _read(where, name)
            if text is not None and text.startswith("/") and "\x00" not in text:
                found.append(text)
    paths = tuple(sorted(set(found)))
    with _cache_lock:
        _cache[str(where)] = (key, paths)
    return paths


def live_servers() -> list[Live]:
    """The other servers of the user running now, with their roots; the entries of dead ones are removed."""
    where = directory()
    if not _private(where, make=False):
        return []
    found: list[Live] = []
    for name in _names(where):
        if not (name.startswith("live-") and name.endswith(".json")):
            continue
        try:
            fd = os.open(where / name, _NO_FOLLOW)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                body = json.loads(os.read(fd, _MAX_BYTES) or b"{}")
                pid = int(body.get("pid", 0))
                if pid != os.getpid():
                    roots = tuple(str(r) for r in body.get("roots", []) if str(r).startswith("/"))
                    found.append(Live(pid, roots, body.get("writes") is not False))
                continue
            with contextlib.suppress(OSError):
                os.unlink(where / name)  # its server is dead
        except (OSError, ValueError, TypeError, AttributeError):
            continue
        finally:
            os.close(fd)
    return found


def _prune(where: Path) -> None:
    """Remove the entries of state directories that are gone, when there are ``_PRUNE_AT`` entries or more."""
    names = _names(where)
    if len(names) < _PRUNE_AT:
        return
    for name in names:
        if name.startswith("state-"):
            text = _read(where, name)
            if text is not None and text.startswith("/") and "\x00" not in text and _gone(text):
                with contextlib.suppress(OSError):
                    os.unlink(where / name)
    _cache.clear()


def _gone(path: str) -> bool:
    """Whether ``path`` is not there for sure: the kernel says so of the path as it stands. Threat (red team 96 F5):
    a directory above it a command made unsearchable (``chmod 000 sessions``) fails the look with EACCES, which
    ``os.path.lexists`` takes for "gone": the entry removed, that server's state was in every command's reach."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def _names(where: Path) -> list[str]:
    names: list[str] = []
    with contextlib.suppress(OSError), os.scandir(where) as entries:
        for entry in entries:
            names.append(entry.name)
            if len(names) >= _MAX_ENTRIES:
                log.warning("%s holds more than %d entries: the rest are not read", where, _MAX_ENTRIES)
                break
    return names


def _read(where: Path, name: str) -> str | None:
    try:
        fd = os.open(where / name, _NO_FOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, _MAX_BYTES).decode("utf-8", "surrogateescape")
    except OSError:
        return None
    finally:
        os.close(fd)


def inside_served(paths: Iterable[str | Path]) -> tuple[str, Live] | None:
    """The first of ``paths`` that lies inside a root another live server serves and can write (a reader's tools
    and commands are kept out of every registered state directory: ``state_paths``), with that server; None when
    none does."""
    servers = [server for server in live_servers() if server.writes]
    for raw in paths:
        real = os.path.realpath(raw)
        for server in servers:
            if any(within(real, root) for root in server.roots):
                return real, server
    return None


_KEY_BYTES = 32


def user_key() -> bytes | None:
    """The user's key (``journal.key`` in the registry, made once, 0600): what seals every server's apply journals
    and start-up records, out of every tool's and command's reach (the registry is hidden from all of them, there or
    not). None where the registry cannot be made. Threat (red teams 95 F1, 96 F1): a key kept beside what it seals,
    in a state directory a command could make while it was gone, and the journal or start-up record of its choosing
    taken for the server's own."""
    where = directory()
    return private_key(where, "journal.key") if usable(where) else None


def sealing_key(fallback: Path) -> bytes:
    """The key that seals what a history store keeps (apply journals, call records): the user's (``user_key``),
    never one kept beside what it seals; ``fallback/.key`` only where the registry cannot be made (said once)."""
    key = user_key()
    if key is not None:
        return key
    if fallback not in _said_fallback:
        _said_fallback.add(fallback)
        log.warning("the servers' registry %s cannot be made: what %s keeps is sealed with a key kept there",
                    directory(), fallback)  # fmt: skip
    return private_key(fallback, ".key")


_said_fallback: set[Path] = set()


def private_key(where: Path, name: str) -> bytes:
    """The key ``where/name``: made once (random, 0600, never over one another process made meanwhile), read never
    through a link, and only a private regular file of this user's of the right size."""
    path = where / name
    for _ in range(3):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            private_dirs(where)
            temp = where / f".{name}.{os.getpid()}.tmp"
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                if os.write(fd, secrets.token_bytes(_KEY_BYTES)) != _KEY_BYTES:
                    raise OSError(errno.EIO, f"cannot write {temp}") from None
                os.fsync(fd)
            finally:
                os.close(fd)
            with contextlib.suppress(FileExistsError):
                os.link(temp, path)  # never over a key another server made meanwhile
                dir_fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
            temp.unlink(missing_ok=True)
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
                raise OSError(errno.EPERM, f"{path} is not a private file of this user")
            key = os.read(fd, _KEY_BYTES + 1)
        finally:
            os.close(fd)
        if len(key) != _KEY_BYTES:
            raise OSError(errno.EINVAL, f"{path} is not a key")
        return key
    raise OSError(errno.EAGAIN, f"cannot make {path}")
