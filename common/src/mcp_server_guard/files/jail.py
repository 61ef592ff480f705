"""The path jail: allowed roots, race-free resolution beneath them, symlink policy.

Allowed roots are the launch directory plus every ``--allow-path``; MCP roots sent by the client can
only narrow that set. A path is located lexically (whole components) to pick its root, then opened
*by the kernel* beneath that root's directory fd: ``openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)``
on Linux, or a component-by-component ``O_NOFOLLOW`` walk elsewhere (and for the symlink cases
openat2 cannot judge alone). Nothing here checks a path string and then opens the same string.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import os
import posixpath
import stat
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from mcp_server_guard.errors import GuardError, HostError, ParamError, ResourceError, SecurityError
from mcp_server_guard.files import openat2 as _openat2
from mcp_server_guard.paths import within

_MAX_SYMLINK_HOPS = 40
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


class SymlinkMode(enum.StrEnum):
    FOLLOW = "follow"  # follow a symlink only while its target stays inside the jail
    REJECT = "reject"  # refuse any symlink component


@dataclass
class Root:
    """An allowed directory, held open so later resolution never re-reads its path."""

    path: str  # realpath, absolute
    fd: int
    aliases: tuple[str, ...] = field(default=())  # other absolute spellings of the same directory

    def spellings(self) -> tuple[str, ...]:
        return (self.path, *self.aliases)


@dataclass(frozen=True)
class Located:
    """Where a caller's path points: the root it falls under and the path relative to it."""

    given: str
    root: Root
    rel: str  # normalized, no leading slash, "" for the root itself

    @property
    def absolute(self) -> str:
        return posixpath.join(self.root.path, self.rel) if self.rel else self.root.path


def _normalize(path: str) -> str:
    norm = posixpath.normpath(path)
    return "/" + norm.lstrip("/") if norm.startswith("//") else norm


def validate_path_string(path: str) -> None:
    """Refuse path strings no file system would resolve the way the caller meant."""
    if not path or not path.strip():
        raise ParamError("INVALID_PATH", "The path is empty.", "Pass a file path relative to the launch directory.")
    if "\x00" in path:
        # Defense in depth: a NUL would truncate the path in C and open a different file than was checked.
        raise ParamError("INVALID_PATH", "The path contains a NUL byte.", "Remove the NUL byte from the path.")


def oserror_to_guard(exc: OSError, given: str) -> GuardError:
    """Translate an OSError into a refusal that names only what the caller sent."""
    code = exc.errno
    if code == errno.ENOENT:
        return ResourceError("NOT_FOUND", f"'{given}' does not exist.", "Check the path; list the directory first.")
    if code in (errno.EACCES, errno.EPERM):
        return HostError("PERMISSION_DENIED", f"Permission denied for '{given}'.", "Choose a file you can access.")
    if code == errno.EISDIR:
        return ResourceError("IS_DIRECTORY", f"'{given}' is a directory.", "Pass the path of a file inside it.")
    if code == errno.ENOTDIR:
        return ResourceError(
            "NOT_A_DIRECTORY", f"A component of '{given}' is not a directory.", "Check the path components."
        )
    if code == errno.EXDEV:
        return SecurityError(
            "SYMLINK_ESCAPE",
            f"'{given}' leads outside the allowed directories through a symlink.",
            "Use the real location of the file inside the allowed directories.",
        )
    if code == errno.ELOOP:
        return SecurityError(
            "SYMLINK_REJECTED",
            f"'{given}' goes through a symlink, and symlinks are not followed here.",
            "Use the real path of the file (the server runs with --symlinks reject).",
        )
    if code == errno.ENAMETOOLONG:
        return ParamError("INVALID_PATH", f"'{given[:80]}…' is too long.", "Use a shorter path.")
    if code == errno.ENXIO:
        return SecurityError("NOT_REGULAR_FILE", f"'{given}' is not a regular file.", "Only regular files are served.")
    return HostError("IO_ERROR", f"Could not open '{given}': {os.strerror(code or 0)}.", "Try again or another file.")


def _open_root(path: str) -> Root:
    real = os.path.realpath(path)
    fd = os.open(real, _DIR_FLAGS)
    aliases = tuple(p for p in {_normalize(os.path.abspath(path))} if p != real)
    return Root(path=real, fd=fd, aliases=aliases)


class Jail:
    """Allowed roots plus the resolution rules; shared by every guarded server."""

    def __init__(self, launch_dir: str, allow_paths: Sequence[str] = (), symlinks: SymlinkMode = SymlinkMode.FOLLOW):
        self.launch_dir = os.path.realpath(launch_dir)
        self.symlinks = symlinks
        allowed: list[Root] = []
        for path in (launch_dir, *allow_paths):
            root = _open_root(path)
            if any(r.path == root.path for r in allowed):
                os.close(root.fd)
                continue
            allowed.append(root)
        self.allowed: tuple[Root, ...] = tuple(allowed)
        self._effective: tuple[Root, ...] = self.allowed
        self._narrowed: tuple[Root, ...] = ()  # fds opened for client roots, owned here

    # -- roots ------------------------------------------------------------------------------

    @property
    def roots(self) -> tuple[Root, ...]:
        return self._effective

    def narrow(self, client_roots: Iterable[str] | None) -> None:
        """Apply the client's MCP roots: the jail becomes allowed ∩ roots. ``None`` lifts narrowing.

        Roots can only narrow: a client root outside every allowed root contributes nothing.
        """
        old = self._narrowed
        if client_roots is None:
            self._effective, self._narrowed = self.allowed, ()
        else:
            effective: list[Root] = []
            opened: list[Root] = []
            for raw in client_roots:
                client = _normalize(os.path.realpath(raw)) if raw else ""
                if not client.startswith("/"):
                    continue
                for allowed in self.allowed:
                    if within(allowed.path, client) and allowed not in effective:
                        effective.append(allowed)
                    elif within(client, allowed.path) and client != allowed.path:
                        rel = client[len(allowed.path) :].lstrip("/")
                        try:
                            fd = self._resolve(Located(raw, allowed, rel), _DIR_FLAGS)
                        except GuardError:
                            continue
                        root = Root(path=client, fd=fd)
                        effective.append(root)
                        opened.append(root)
            self._effective, self._narrowed = tuple(effective), tuple(opened)
        for root in old:
            os.close(root.fd)

    def describe_roots(self) -> str:
        return ", ".join(self.display_root(r) for r in self._effective) or "(none)"

    def display_root(self, root: Root) -> str:
        if root.path == self.launch_dir:
            return ". (launch directory)"
        return root.path

    # -- locating ---------------------------------------------------------------------------

    def _root_for(self, absolute: str) -> tuple[Root, str] | None:
        best: tuple[Root, str] | None = None
        best_len = -1
        for root in self._effective:
            for spelling in root.spellings():
                if within(absolute, spelling) and len(spelling) > best_len:
                    best_len = len(spelling)
                    best = (root, absolute[len(spelling) :].lstrip("/"))
        return best

    def locate(self, given: str) -> Located:
        """Pick the root a caller's path falls under (lexically, whole components) or refuse."""
        validate_path_string(given)
        if not self._effective:
            raise SecurityError(
                "NO_ALLOWED_ROOTS",
                "No directory is allowed: the client's roots do not overlap the server's allowed paths.",
                "Ask the user to add a root that lies inside the server's --allow-path directories.",
            )
        if given == "~" or given.startswith("~/"):
            # A model's ~ means the user's home, never a directory named "~" (which createDirs would make).
            return self._locate_home(given)
        absolute = _normalize(posixpath.join(self.launch_dir, given))
        found = self._root_for(absolute)
        if found is None:
            # Defense in depth: ../ traversal, absolute paths elsewhere and sibling prefixes all end here.
            raise SecurityError(
                "PATH_OUTSIDE_JAIL",
                f"'{given}' is outside the allowed directories.",
                f"Use a path inside the allowed directories: {self.describe_roots()}.",
            )
        root, rel = found
        return Located(given, root, rel)

    def _locate_home(self, given: str) -> Located:
        home = os.path.expanduser("~")
        for base in dict.fromkeys((home, os.path.realpath(home))):
            found = self._root_for(_normalize(base + given[1:]))
            if found is not None:
                return Located(given, *found)
        raise SecurityError(
            "PATH_OUTSIDE_JAIL",
            f"'{given}' is in the home directory, outside the allowed directories.",
            f"Use a path inside the allowed directories: {self.describe_roots()}.",
        )

    # -- helping a caller that missed -------------------------------------------------------

    def _kind(self, candidate: str) -> str | None:
        """'file', 'dir' or None (missing, or not reachable through the jail's own rules)."""
        try:
            _, fd = self.open(candidate, os.O_PATH)
        except GuardError:
            return None
        try:
            mode = os.fstat(fd).st_mode
        finally:
            os.close(fd)
        return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else None

    def suggest(self, given: str, want: str) -> str | None:
        """An existing path inside the jail the caller most likely meant by ``given``, or None.

        ``want``: "file" (an existing file), "dir" (an existing directory) or "new" (a file to create: its
        directory must exist). Tried in order: Windows separators and drive letters, a ``cd`` prefix, an
        absolute or over-long path whose tail exists under an allowed root, a near spelling of the last name.
        Only what the jail itself would open is ever suggested.
        """
        text = given.strip().replace("\\", "/")
        text = text[3:] if text.startswith("cd ") else text
        if len(text) > 2 and text[1] == ":" and text[0].isalpha():
            text = text[2:]
        parts = [p for p in text.split("/") if p not in ("", ".")]
        if not parts or ".." in parts:
            return None

        def fits(candidate: str) -> bool:
            if want == "new":
                parent = posixpath.dirname(candidate)
                return self._kind(parent or ".") == "dir" and self._kind(candidate) in (None, "file")
            return self._kind(candidate) == want

        for i in range(len(parts)):
            candidate = "/".join(parts[i:])
            if candidate != given and fits(candidate):
                return candidate
            for root in self._effective:
                if root.path != self.launch_dir:
                    absolute = posixpath.join(root.path, candidate)
                    if absolute != given and fits(absolute):
                        return self.display(Located(absolute, root, candidate))
        if want == "dir" and len(parts) > 1 and self._kind("/".join(parts)) == "file":
            return "/".join(parts[:-1])  # a file where a directory was meant: the directory that holds it
        return self._near_name(parts, want)

    def _near_name(self, parts: list[str], want: str) -> str | None:
        parent = "/".join(parts[:-1]) or "."
        names = self.list_dir(parent, limit=2000)[0] if self._kind(parent) == "dir" else []
        bare = {n.rstrip("/"): n for n in names}
        lowered = {n.lower(): n for n in bare}
        name = parts[-1]
        match = lowered.get(name.lower())
        if match is None:
            import difflib  # noqa: PLC0415 - only for a misspelt name (issue 44: not loaded at every start)

            near = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
            match = lowered[near[0]] if near else None
        if match is None or (want == "dir") != bare[match].endswith("/") or want == "new":
            return None
        return posixpath.normpath(posixpath.join(parent, match))

    def list_dir(self, given: str, limit: int = 30) -> tuple[list[str], int]:
        """The first ``limit`` entries of a directory inside the jail (directories end with /), sorted; and the
        total count."""
        _, fd = self.open(given, os.O_RDONLY | os.O_DIRECTORY)
        try:
            names: list[str] = []
            with os.scandir(fd) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    names.append(entry.name + ("/" if is_dir else ""))
        finally:
            os.close(fd)
        names.sort(key=lambda n: (not n.endswith("/"), n.lower()))
        return names[:limit], len(names)

    def display(self, located: Located) -> str:
        """The path as the caller should see it: relative to the launch dir when inside it."""
        return self.display_path(located.absolute)

    def display_path(self, absolute: str) -> str:
        """An absolute path as the caller should see it: relative to the launch dir when inside it."""
        if within(absolute, self.launch_dir):
            rel = absolute[len(self.launch_dir) :].lstrip("/")
            return rel or "."
        return absolute

    # -- opening ----------------------------------------------------------------------------

    def open(self, given: str, flags: int) -> tuple[Located, int]:
        """Locate ``given`` and open it beneath its root with ``flags``. Returns (location, fd)."""
        located = self.locate(given)
        return located, self._resolve(located, flags)

    def open_file(self, given: str, flags: int = os.O_RDONLY) -> tuple[Located, int, os.stat_result]:
        """Open a regular file without ever blocking; FIFOs, sockets, devices and dirs are refused."""
        located, fd = self.open(given, flags | os.O_NONBLOCK | os.O_NOCTTY)
        try:
            st = os.fstat(fd)
            check_regular(st, given)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return located, fd, st

    def open_dir(self, given: str) -> tuple[Located, int]:
        """Open a directory inside the jail as an O_PATH fd (for cwd and parent-directory use)."""
        return self.open(given, _DIR_FLAGS)

    def open_parent(self, target: str | Located, *, create_dirs: bool = False) -> tuple[Located, int, str]:
        """Open the directory that holds ``given`` (race-free) for *at() operations on its last name.

        Returns (location, directory fd opened O_RDONLY|O_DIRECTORY, final name). With
        ``create_dirs`` missing directories are created one component at a time beneath the root,
        each re-opened with O_NOFOLLOW, so a symlink raced in mid-way is refused, not followed.
        """
        located = self.locate(target) if isinstance(target, str) else target
        given = located.given
        parent, _, name = located.rel.rpartition("/")
        if name in ("", ".", "..") or given.endswith("/"):
            raise ParamError("INVALID_PATH", f"'{given}' does not name a file.", "Pass a file path, not a directory.")
        try:
            fd = self._resolve(Located(given, located.root, parent), os.O_RDONLY | os.O_DIRECTORY)
        except ResourceError as exc:
            if not (create_dirs and exc.code == "NOT_FOUND"):
                if exc.code == "NOT_FOUND":
                    raise ResourceError(
                        "NOT_FOUND",
                        f"The directory of '{given}' does not exist.",
                        "Pass createDirs: true to create it, or write into an existing directory.",
                    ) from None
                raise
            fd = self._make_dirs(Located(given, located.root, parent))
        return located, fd, name

    def _make_dirs(self, located: Located) -> int:
        parts = [p for p in located.rel.split("/") if p not in ("", ".")]
        fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=located.root.fd)
        try:
            for i, part in enumerate(parts):
                if part == "..":
                    raise oserror_to_guard(OSError(errno.EXDEV, ""), located.given)
                try:
                    # Existing components go through the full resolver (in-jail symlinks allowed).
                    nxt = self._resolve(
                        Located(located.given, located.root, "/".join(parts[: i + 1])), os.O_RDONLY | os.O_DIRECTORY
                    )
                except ResourceError as exc:
                    if exc.code != "NOT_FOUND":
                        raise
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                    except OSError as mk_exc:
                        raise oserror_to_guard(mk_exc, located.given) from None
                    try:
                        nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                    except OSError as op_exc:
                        raise oserror_to_guard(op_exc, located.given) from None
                os.close(fd)
                fd = nxt
        except BaseException:
            os.close(fd)
            raise
        return fd

    def real_path_of(self, fd: int) -> str:
        """Where an open directory actually is (for protected-path checks after symlinks)."""
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return ""

    def _resolve(self, located: Located, flags: int) -> int:
        flags |= os.O_CLOEXEC
        resolve = _openat2.RESOLVE_BENEATH | _openat2.RESOLVE_NO_MAGICLINKS
        if self.symlinks is SymlinkMode.REJECT:
            resolve |= _openat2.RESOLVE_NO_SYMLINKS
        if _openat2.available():
            try:
                return _openat2.openat2(located.root.fd, located.rel or ".", flags, resolve)
            except OSError as exc:
                # EXDEV under FOLLOW: an absolute or cross-root symlink; the walk decides whether it stays inside.
                retry = exc.errno == errno.ENOSYS or (exc.errno == errno.EXDEV and self.symlinks is SymlinkMode.FOLLOW)
                if not retry:
                    raise oserror_to_guard(exc, located.given) from None
        return self._walk(located, flags)

    def _walk(self, located: Located, flags: int) -> int:
        """Resolve one component at a time with O_NOFOLLOW, judging every symlink against the jail."""
        given = located.given
        root = located.root
        parts = deque(p for p in located.rel.split("/") if p not in ("", "."))
        stack: list[int] = []
        hops = 0
        try:
            while parts:
                name = parts.popleft()
                dirfd = stack[-1] if stack else root.fd
                if name == "..":
                    if stack:
                        os.close(stack.pop())
                        continue
                    raise oserror_to_guard(OSError(errno.EXDEV, "escape"), given)
                last = not parts
                try:
                    fd = os.open(name, (flags if last else _DIR_FLAGS) | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                        raise oserror_to_guard(exc, given) from None
                    try:
                        target = os.readlink(name, dir_fd=dirfd)
                    except OSError as link_exc:
                        code = errno.ENOTDIR if link_exc.errno == errno.EINVAL else link_exc.errno
                        raise oserror_to_guard(OSError(code, ""), given) from None
                    if self.symlinks is SymlinkMode.REJECT:
                        raise oserror_to_guard(OSError(errno.ELOOP, ""), given) from None
                    hops += 1
                    if hops > _MAX_SYMLINK_HOPS:
                        raise ParamError(
                            "INVALID_PATH", f"'{given}' has too many levels of symlinks.", "Use the real path."
                        ) from None
                    if target.startswith("/"):
                        found = self._root_for(_normalize(target))
                        if found is None:
                            # Defense in depth: a symlink whose target leaves the jail is never followed.
                            raise oserror_to_guard(OSError(errno.EXDEV, ""), given) from None
                        while stack:
                            os.close(stack.pop())
                        root, rel = found
                        parts.extendleft(reversed([p for p in rel.split("/") if p not in ("", ".")]))
                    else:
                        parts.extendleft(reversed([p for p in target.split("/") if p not in ("", ".")]))
                    continue
                if last:
                    return fd
                stack.append(fd)
            try:
                return os.open(".", flags, dir_fd=stack[-1] if stack else root.fd)
            except OSError as exc:
                raise oserror_to_guard(exc, given) from None
        finally:
            for fd in stack:
                os.close(fd)

    def close(self) -> None:
        for root in (*self.allowed, *self._narrowed):
            with contextlib.suppress(OSError):
                os.close(root.fd)
        self._narrowed = ()


def check_regular(st: os.stat_result, given: str) -> None:
    """Only regular files are served: a FIFO, socket or device could block or have side effects."""
    if stat.S_ISREG(st.st_mode):
        return
    if stat.S_ISDIR(st.st_mode):
        raise ResourceError("IS_DIRECTORY", f"'{given}' is a directory.", "Pass the path of a file inside it.")
    raise SecurityError(
        "NOT_REGULAR_FILE",
        f"'{given}' is not a regular file (FIFO, socket or device).",
        "Only regular files can be used; read the data another way.",
    )
