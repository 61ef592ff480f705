"""Path containment, written once: is a path inside a directory, or inside any of several.

Whole components only (``/a/proj`` contains ``/a/proj/x`` but never ``/a/proj-evil``). These compare
strings: callers pass paths already made absolute and normalised (or real, for :func:`real_within_any`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "MOVING_COPY",
    "imports_only_from_code_dirs",
    "json_text",
    "moving_copy",
    "parent_set",
    "path_directories",
    "printable",
    "private_dirs",
    "readable",
    "real_within_any",
    "state_dir",
    "users_program_dir",
    "where_line",
    "within",
    "within_any",
    "within_set",
]


def state_dir() -> Path:
    """``$XDG_STATE_HOME/mcp-guard``: where the servers keep their state by default (see ``audit.state_dirs``)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "mcp-guard"


# The box's directory-move helper (``shell.sandbox.renames``) copies a tree under ``.<target>.mcp-guard-mv-<12 hex>``
# beside its target, then renames it into place: a name that never exists natively, so never a change of the
# command's (a look in the middle of the copy, or a command killed during it, must not land it).
MOVING_COPY = ".mcp-guard-mv-"
_MOVING_COPY = re.compile(r"\..+" + re.escape(MOVING_COPY) + r"[0-9a-f]{12}\Z", re.DOTALL)


def moving_copy(name: str, is_dir: bool = True) -> bool:
    """Whether ``name`` is the box's directory-move helper's copy in the making (a directory: the helper makes no
    other kind, so a command's file of such a name is its own)."""
    return is_dir and name.startswith(".") and bool(_MOVING_COPY.match(name))


def private_dirs(path: Path) -> None:
    """``path`` and every missing directory above it, each made 0700. Threat: ``mkdir(parents=True, mode=0o700)``
    gives that mode to the last one only; under umask 002 (user-private groups: Debian, Ubuntu, Fedora) the others
    were 0775, and the state directory's check then refused to start."""
    missing: list[Path] = []
    while not os.path.lexists(path) and path != path.parent:
        missing.append(path)
        path = path.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)


def where_line(roots: str, launch_dir: str) -> str:
    """The part of a server's instructions that names its directories (the start-up front keeps it as a template)."""
    return f"Allowed directories: {roots} (relative paths are taken from {launch_dir};"


def path_directories(home: str | None) -> tuple[str, ...]:
    """The directories the user's shell runs programs from by name: this process's PATH (absolute entries only: a
    relative one is wherever the user stands), each as given and as its real path (a link there re-pointed is
    the entry all the same), and the ones a login adds when they exist (``~/bin``, ``~/.local/bin``); not the
    system's."""
    entries = [*os.environ.get("PATH", "").split(os.pathsep), *([f"{home}/bin", f"{home}/.local/bin"] if home else [])]
    # ``~/tools`` written literally in PATH: bash expands it when it looks a program up.
    entries = [f"{home}{e[1:]}" if home and (e == "~" or e.startswith("~/")) else e for e in entries]
    found: list[str] = []
    for entry in (e for e in entries if e.startswith("/")):
        for path in (os.path.abspath(entry), os.path.realpath(entry)):
            if path not in found and path not in ("/", "/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin"):
                found.append(path)
    return tuple(found)


def users_program_dir(path: str, dirs: frozenset[str], roots: Iterable[str], home: str | None) -> bool:
    """Whether ``path`` lies in one of ``dirs`` (``path_directories``) that is the user's, not a project's: a
    directory on PATH inside an allowed root other than HOME or one above it (``node_modules/.bin``, a project's
    environment) is the project's own, written by its everyday installs."""
    if not within_set(path, dirs):
        return False
    return home is None or not any(within(path, r) for r in roots if r != home and not within(home, r))


def within(child: str, parent: str) -> bool:
    """True when ``child`` is ``parent`` or lies below it, by whole path components."""
    if parent == "/":
        return child.startswith("/")
    parent = parent.rstrip("/")
    return child == parent or child.startswith(parent + "/")


def within_any(child: str, parents: Iterable[str]) -> bool:
    """True when ``child`` is inside one of ``parents`` (``within`` for each, written out: judging a change set
    asks this of every path several times)."""
    for parent in parents:
        if parent == "/":
            if child.startswith("/"):
                return True
            continue
        trimmed = parent.rstrip("/")
        if child.startswith(trimmed) and (len(child) == len(trimmed) or child[len(trimmed)] == "/"):
            return True
    return False


_LONG = 256  # a path longer than this is compared with each parent (slicing each ancestor would cost more)


def parent_set(parents: Iterable[str]) -> frozenset[str]:
    """``parents`` made ready for :func:`within_set` (trailing slashes taken off; ``/`` stays ``/``)."""
    return frozenset(p.rstrip("/") or "/" for p in parents)


def within_set(child: str, parents: frozenset[str]) -> bool:
    """:func:`within_any` for many parents (:func:`parent_set`): each ancestor of ``child`` looked up once, not each
    parent compared (judging 150,000 paths against a hidden list of dozens) — but for a long path, or one deeper
    than there are parents, each parent compared (threat: paths 120 levels deep, each ancestor a slice of thousands
    of bytes, judged by the thousand while the tree lock is held)."""
    if len(child) > _LONG or child.count("/") > len(parents):
        return within_any(child, parents)
    if child in parents or ("/" in parents and child.startswith("/")):
        return True
    cut = child.find("/", 1)
    while cut != -1:
        if child[:cut] in parents:
            return True
        cut = child.find("/", cut + 1)
    return False


def real_within_any(path: str | os.PathLike[str], parents: Iterable[str]) -> bool:
    """Like :func:`within_any` for the real path of ``path`` (symlinks resolved, as far as it exists)."""
    return within_any(os.path.realpath(path), parents)


def readable(text: str) -> str:
    """Text for a person, line by line: :func:`printable` on each line (newlines and tabs kept; a carriage
    return, an ANSI or C1 escape, a bidi override shown as its escape).

    Threat: a command's output, a path or a model's argument that repaints a terminal, hides what follows it
    or reorders what a person reads (``\x1b[2K``, ``\r``, U+202E) in an error, a result or the audit log."""
    if text.isprintable():
        return text
    return "\n".join("\t".join(printable(part) for part in line.split("\t")) for line in text.split("\n"))


def json_text(value: object, *, indent: int | None = None) -> str:
    """JSON for a person's terminal: characters outside ASCII stay as they are when printable, the rest
    (controls, bidi overrides, unpaired surrogates) are ``\\uXXXX`` escapes — still the same JSON."""
    import json  # noqa: PLC0415 - the admin app's only

    text = json.dumps(value, ensure_ascii=False, indent=indent)
    if text.isprintable():
        return text
    out: list[str] = []
    for char in text:
        code = ord(char)
        if char.isprintable() or (char == "\n" and indent is not None):
            out.append(char)
        elif code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out)


def printable_lines(text: str, indent: str = "    ") -> str:
    """``printable`` line by line: a command's own line breaks kept, each later line indented by ``indent`` (a
    carriage return, an ANSI escape or a bidi control is shown as its escape: threat, a line that reads as another
    one in the question a person answers)."""
    return ("\n" + indent).join(printable(line) for line in text.split("\n"))


def printable(text: str) -> str:
    """A name as a person reads it and JSON carries it: a byte that was not UTF-8 (a surrogate escape) as
    ``\\xNN``, a control character (a newline, an ANSI escape) as its escape.

    Threat: a file name that fakes or buries text in the question a person answers ("…\\n\\nApply these
    changes? Only README.md is touched."), or that no encoder can send, stalling the question or the result."""
    if text.isprintable():
        return text
    out: list[str] = []
    for char in text:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char.isprintable():
            out.append(char)
        else:
            out.append(char.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def escape_log_records() -> None:
    """Every log record of this package has its message ``printable``: threat (red team 88 F4), a command's path in a
    log line (a step that failed: ``ESC[2J``, a terminal retitled, U+202E) acting on the terminal of the person who
    reads the server's stderr (agent CLIs show it). Once per process; records of other loggers are left as they are."""
    import logging  # noqa: PLC0415 - (loaded by every server before this)

    made = logging.getLogRecordFactory()
    if getattr(made, "escapes", False):
        return

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = made(*args, **kwargs)
        if record.name.startswith("mcp_server_guard") or record.name.startswith("mcp_server_"):
            message = record.getMessage()
            if not message.isprintable():
                record.msg, record.args = printable(message), None
        return record

    factory.escapes = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


SYSTEM_BIN = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def system_program(name: str) -> str | None:
    """``name`` where PATH finds it — the system's own copy when it has one (None when PATH finds none: the
    user's environment says it is not installed).

    Threat: a program the server runs itself (git to read a config, bubblewrap to build the box) found first in a
    directory a command may write (a project's ``.venv/bin`` or ``node_modules/.bin`` on the server's PATH): a
    planted ``git`` that prints nothing makes every config look harmless."""
    found = shutil.which(name)
    return None if found is None else shutil.which(name, path=SYSTEM_BIN) or found


def program_outside(name: str, roots: Iterable[str]) -> str | None:
    """``name`` as PATH finds it, skipping every PATH directory inside ``roots`` (threat: the box's own
    bubblewrap planted by a command in a project directory on the server's PATH, ``.venv/bin``: the next start
    would run commands in no box at all)."""
    inside = [os.path.realpath(root) for root in roots]
    kept = [d for d in os.environ.get("PATH", os.defpath).split(os.pathsep)
            if d and not any(within(os.path.realpath(d), root) for root in inside)]  # fmt: skip
    return shutil.which(name, path=os.pathsep.join(kept)) if kept else None


def code_dirs() -> list[str]:
    """Where this process's code comes from: its environment (a virtual environment's whole prefix: interpreter,
    site-packages, ``.pth`` files, console scripts), the interpreter's own installation, and every directory an
    import is found in (an editable install's sources) — never one that holds the working directory or HOME.

    Threat: a command or file_write rewriting the guard's own modules, a dependency or a ``.pth`` line where the
    servers are installed (``uv tool``, pipx, a project's ``.venv``): the next start runs them, outside any box."""
    found = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    found.update(entry for entry in sys.path if entry and os.path.isabs(entry))
    # The packaged policies and their parsed forms (``policy_files``), wherever they really lie: in a clone, the
    # package's ``policies`` is a link to the clone's own ``policies/`` (red team 129 F1: a parsed form rewritten
    # there was every later start's policy; ``readonly.toml`` the next ``--policy readonly``).
    found.add(os.path.join(os.path.dirname(os.path.abspath(__file__)), "policies"))
    held = _unprotected_places()
    real = {os.path.realpath(p) for p in found if os.path.isdir(p)}
    return sorted(p for p in real if p != "/" and not any(within(h, p) for h in held))


def _unprotected_places() -> list[str]:
    """HOME and the working directory: a directory that holds either is never protected as code (``code_dirs``)."""
    held = [os.path.realpath(os.environ.get("HOME") or "/")]
    with contextlib.suppress(OSError):  # (a working directory removed meanwhile holds nothing)
        held.append(os.path.realpath(os.getcwd()))
    return held


def imports_only_from_code_dirs() -> list[str]:
    """Take off ``sys.path`` the entries ``code_dirs`` does not protect — ``''`` and every directory that holds the
    working directory or HOME — and return them. A server calls it at its start.

    Threat (red team 182 F1): a server started with the project on ``sys.path`` (``python -m …`` from the project,
    ``PYTHONPATH=.``) looks a module it imports for the first time later — a standard one (``tomllib``, ``queue``)
    or a dependency (``magic``) — up in the project first, where nothing protects it: a ``tomllib.py`` a command or
    file_write made there ran in the server's own process, outside every box, at its next write."""
    held = _unprotected_places()
    taken = [e for e in sys.path if not e or any(within(h, os.path.realpath(e)) for h in held)]
    sys.path[:] = [e for e in sys.path if e not in taken]
    return taken
