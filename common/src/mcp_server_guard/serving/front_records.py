"""The front's records (``serving.front``): this start's key (the server, its command line, environment, code and
policy files, and the directories as the jail computes them: ``where``), each request's key, and the records kept
in the state directory under that key, read back only when private and ours and never when the state directory
lies inside an allowed root. The directories are kept as a template (``initialize``'s instructions), filled in for
the start that reads them.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import stat
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_server_guard import registry
from mcp_server_guard.paths import private_dirs, state_dir, where_line

if TYPE_CHECKING:
    from mcp_server_guard.serving.front import Front

__all__ = [
    "deeper_than", "keep_sealed", "no_constant", "read_sealed", "record", "record_key", "request_key", "sealed_as",
    "state_within_roots", "where",
]  # fmt: skip

log = logging.getLogger("mcp_server_guard.front")

_LIMIT = 1 << 20  # a record larger than this is not kept (or read)
_PACKAGES = ("mcp_server_guard", "mcp", "mcp_types", "pydantic", "pydantic_core")
_ROOT_FLAGS = ("--launch-dir", "--allow-path")
_ROOTS, _LAUNCH = "\x00roots\x00", "\x00launch\x00"  # a path never holds NUL: no real text is taken for them


def flag_values(argv: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """``argv`` with every directory a root flag names replaced by ``<dir>`` (as ``--flag X`` or ``--flag=X``), and
    those directories by flag, in order."""
    shape: list[str] = []
    values: dict[str, list[str]] = {flag: [] for flag in _ROOT_FLAGS}
    taking = ""
    for arg in argv:
        flag, eq, value = arg.partition("=")
        if taking:
            values[taking].append(arg)
            shape.append("<dir>")
            taking = ""
        elif arg in _ROOT_FLAGS:
            taking = arg
            shape.append(arg)
        elif eq and flag in _ROOT_FLAGS:
            values[flag].append(value)
            shape.append(f"{flag}=<dir>")
        else:
            shape.append(arg)
    return shape, values


def where(argv: list[str]) -> tuple[str, str] | None:
    """The allowed directories and the launch directory as this start's server will name them (``Jail``: real
    paths, the launch directory first, each once), or None when one is not a directory (it refuses to start)."""
    _, values = flag_values(argv)
    launched = values["--launch-dir"][-1] if values["--launch-dir"] else os.getcwd()
    roots: list[str] = []
    for path in (launched, *values["--allow-path"]):
        real = os.path.realpath(os.path.abspath(path))
        if not path or "\x00" in path or not os.path.isdir(real):
            return None
        if real not in roots:
            roots.append(real)
    return ", ".join(roots), roots[0]


def filled(records: dict[str, Any], argv: list[str]) -> dict[str, Any]:
    """Records as kept (a template where they named directories) for this start (none if it has no ``where``)."""
    place = where(argv)
    if place is None:
        return {}
    text = json.dumps(records).replace(json.dumps(_ROOTS)[1:-1], json.dumps(place[0])[1:-1])
    filled = json.loads(text.replace(json.dumps(_LAUNCH)[1:-1], json.dumps(place[1])[1:-1]))
    return filled if isinstance(filled, dict) else {}


def template(records: dict[str, Any], argv: list[str]) -> dict[str, Any] | None:
    """Records to keep: this start's directories in ``initialize``'s instructions made the template; None when
    an answer does not say them as ``where`` does (not kept: another start would be told the wrong ones)."""
    place = where(argv)
    if place is None:
        return None
    said, template = where_line(*place), where_line(_ROOTS, _LAUNCH)
    kept: dict[str, Any] = {}
    for key, answer in records.items():
        result = answer
        if isinstance(answer, dict) and "serverInfo" in answer:
            instructions = answer.get("instructions")
            if not isinstance(instructions, str) or instructions.count(said) != 1:
                return None
            result = {**answer, "instructions": instructions.replace(said, template)}
        if place[0] in json.dumps(result, ensure_ascii=False):
            return None  # a directory named anywhere else: not an answer to give in another directory
        kept[key] = result
    return kept


def code_stamp(server_package: str) -> list[Any]:
    """Every source file of the server and of what shapes its answers: names, sizes, times (a change = new key)."""
    stamp: list[Any] = [sys.version, sys.executable]
    for name in (server_package, *_PACKAGES):
        for entry in sys.path:
            top = os.path.join(entry or ".", name)
            if os.path.isdir(top):
                for directory, dirs, files in os.walk(top):
                    dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                    # (in a clone the package's ``policies`` is a link to the clone's own: followed, that one only)
                    files += [f"policies/{f}" for f in _linked_policies(directory) if directory == top]
                    for file in sorted(files):
                        if file.endswith((".py", ".so", ".toml", ".json")):
                            with contextlib.suppress(OSError):
                                info = os.stat(os.path.join(directory, file))
                                stamp.append([directory[len(top) :], file, info.st_size, info.st_mtime_ns])
                break
    return stamp


def _linked_policies(directory: str) -> list[str]:
    """The files of ``directory``'s ``policies`` where it is a link to a directory (none otherwise)."""
    linked = os.path.join(directory, "policies")
    if not os.path.islink(linked) or not os.path.isdir(linked):
        return []
    with contextlib.suppress(OSError):
        return sorted(os.listdir(linked))
    return []


def file_stamps(argv: list[str]) -> list[Any]:
    """The policy files the command line names: their sizes and times (not the audit log's: it grows)."""
    stamps: list[Any] = []
    for i, arg in enumerate(argv):
        value = argv[i + 1] if arg == "--policy" and i + 1 < len(argv) else arg.partition("=")[2]
        if arg == "--policy" or arg.startswith("--policy="):
            with contextlib.suppress(OSError, ValueError):
                info = os.stat(value)
                stamps.append([os.path.abspath(value), info.st_size, info.st_mtime_ns])
    return stamps


def record_key(server_package: str, argv: list[str]) -> str:
    """The key of this start: the same key, the same answers. The directories are part of it (``where``): a record
    kept under one set of allowed directories is never used for another."""
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(("MCP_GUARD", "XDG_")) or k in ("HOME", "PATH"))
    shape, _ = flag_values(argv)
    material = [server_package, shape, where(argv), env, code_stamp(server_package), file_stamps(argv)]
    return hashlib.sha256(json.dumps(material, default=str).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def request_key(method: str, params: Any, handshake: str) -> str:
    """A request's key: its method and exact params, and the handshake it follows (the client's capabilities)."""
    text = json.dumps([method, params, handshake], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def records_path(key: str) -> Path:
    return state_dir() / "front" / f"{key}.json"


def roots_of(argv: list[str]) -> list[str]:
    """The directories a command of this server may write: the launch directory (the working directory only when
    no --launch-dir names one, as ``launch`` takes it) and every --allow-path. Every one a root flag names counts,
    not only the last --launch-dir: this decides where records are never read."""
    _, values = flag_values(argv)
    named = [*values["--launch-dir"], *values["--allow-path"]]
    roots = named if values["--launch-dir"] else [os.getcwd(), *named]
    return [os.path.realpath(os.path.abspath(root)) for root in roots if root]


def state_within_roots(argv: list[str]) -> bool:
    """Threat: a command renaming a parent of the (hidden) state directory inside an allowed root and planting
    a record there: the next start would show the model its tool descriptions. No record is read or kept then."""
    state = os.path.realpath(state_dir())
    return any(state == root or state.startswith(root.rstrip("/") + "/") for root in roots_of(argv))


def _seal(key: bytes, label: bytes, data: bytes) -> bytes:
    return hmac.new(key, label + b"\n" + data, hashlib.sha256).hexdigest().encode()


_RECORD = b"mcp-guard start-up record"


def read_records(path: Path) -> dict[str, Any]:
    """The records, if the file is ours, private, not a link and sealed with the user's key (else none: a start as
    if there were none). Threat (red team 96 F1): a record planted where another server's state directory was (a
    command made it while it was gone, with the key of a start it can compute): its instructions and tool
    descriptions answered as the server's own."""
    data = read_sealed(path, _RECORD, _LIMIT)
    try:
        records = json.loads(data) if data is not None else {}
    except ValueError:
        return {}
    return records if isinstance(records, dict) else {}


def sealed_as(label: bytes, path: Path) -> bytes:
    """What a file's seal covers beside its data: what it is for (``label``: a seal made for one kind of file never
    passes for another) and its name (red team 183 F2: the name says which start's record it is, which interpreter
    build's code: a sealed file copied under another name is not that one)."""
    return label + b"\n" + os.fsencode(path.name)


def read_sealed(path: Path, label: bytes, limit: int) -> bytes | None:
    """What ``keep_sealed`` kept at ``path`` under ``label`` (``sealed_as``), if the file is ours, private, a regular
    file reached without a link, no larger than ``limit`` and sealed with the user's key; else None."""
    try:
        key = registry.user_key()
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if key is None or not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return None
        if info.st_size > limit + 65:
            return None
        seal, _, data = os.read(fd, limit + 66).partition(b"\n")
        return data if hmac.compare_digest(seal, _seal(key, sealed_as(label, path), data)) else None
    except OSError:
        return None
    finally:
        os.close(fd)


def record(front: Front, records: dict[str, Any]) -> None:
    """Keep this start's answers for the next start with the same key (best effort, private, atomic)."""
    kept = template(records, front.argv) if front.usable else None
    if kept is not None:
        keep_sealed(records_path(front.key), _RECORD, json.dumps(kept).encode(), _LIMIT)


def keep_sealed(path: Path, label: bytes, data: bytes, limit: int) -> None:
    """Keep ``data`` at ``path`` (a file of a private directory of the state directory's), sealed with the user's key
    under ``label``, for ``read_sealed`` (best effort: nothing when larger than ``limit`` or without a key; atomic)."""
    directory, name = path.parent, path.name
    try:
        private_dirs(directory)
        info = os.lstat(directory)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return
        key = registry.user_key()
        if key is None or len(data) > limit:
            return  # (nothing to seal it with: never read back)
        temp = directory / f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(_seal(key, sealed_as(label, path), data) + b"\n" + data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(temp, directory / name)
    except OSError as exc:
        log.debug("%s was not kept: %s", name, exc)


def deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests arrays and objects more than ``limit`` deep (walked without recursion)."""
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            todo.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def no_constant(name: str) -> Any:
    """``json.loads``'s ``parse_constant``: NaN and Infinity are not JSON (the real transport refuses them)."""
    raise ValueError(f"{name} is not JSON")
