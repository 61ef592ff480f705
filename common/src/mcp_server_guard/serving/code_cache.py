"""Start-up time: code Python compiles from text at every start, compiled once (issue 44).

Python makes a dataclass's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` and a frozen one's ``__setattr__`` and
``__delattr__`` from source text, each with ``exec``: some 0.5-1 ms of compiling per class, and a server creates
over a hundred of them (ours, pydantic's, annotated_types', anyio's) before its first result. Pydantic resolves
every string annotation of a model (``from __future__ import annotations``) through ``typing.ForwardRef``, which
compiles it: some nine hundred more. Together about a fifth of a server's start. The code depends only on the text,
and compiling the same text gives the same code. So ``install`` gives ``dataclasses`` an ``exec`` and ``typing`` a
``compile`` of their own that compile each text once and keep the code under the exact text (and mode); ``keep``
writes what this start compiled anew into the state directory, where the next start of any server of the user
reads it back. What runs is what the builtins would have run: the code compiled from the very text passed, with
the same flags (none: neither module has a ``from __future__``), under the same file name; a text never seen is
compiled as before, and any other use of ``compile`` goes to the builtin.

Threat: the file holds code the server runs, outside the box. It is read as the front's records are
(``front_records.read_sealed``): a private regular file of the user's, reached without a link, sealed with the
user's key (the registry's, out of every tool's and command's reach) under a label of its own, and never when the
state directory lies inside an allowed root (``Front.usable``); anything else in it than text -> code is not used.
One file per interpreter build and way of compiling (``cache_path``: marshalled code is for the build that made it,
and ``-O`` or ``-W error`` compile otherwise), whose name the seal covers (a file copied under another build's name
is not read). Standard library only (loaded before anything heavy).
"""

from __future__ import annotations

import atexit
import builtins
import dataclasses
import hashlib
import logging
import marshal
import sys
import threading
import types
import typing
from pathlib import Path
from typing import Any

from mcp_server_guard.paths import state_dir
from mcp_server_guard.serving.front_records import keep_sealed, read_sealed

__all__ = ["cache_path", "install", "installed", "keep"]

log = logging.getLogger("mcp_server_guard.front")

_LABEL = b"mcp-guard compiled code"
_LIMIT = 8 << 20  # a cache larger than this is not kept (or read)
_ENTRIES = 8192  # texts kept at most (a server compiles about two thousand, its SDK loaded)
_lock = threading.Lock()
_codes: dict[str, types.CodeType] = {}  # text -> its code: read back, or compiled by this process
_new = False  # compiled anew since the last keep
_usable = False  # read and kept only when the state directory is outside every allowed root


def cache_path() -> Path:
    """This interpreter build's file, in the state directory's ``compiled``, for the way this process compiles (red
    team 183 F1: ``-O`` drops asserts, ``-W error`` makes a warning a SyntaxError, ``-X`` options change code: a
    process started otherwise compiles otherwise, and has a file of its own)."""
    how = [
        sys.implementation.cache_tag,
        sys.version,
        sys.flags.optimize,
        sys.warnoptions,
        sorted(sys._xoptions.items()),
    ]
    build = hashlib.sha256(repr(how).encode()).hexdigest()[:16]
    return state_dir() / "compiled" / f"{build}.bin"


def _code(source: str, mode: str) -> types.CodeType:
    """``source``'s code, compiled once: with no ``from __future__`` flag (``dont_inherit``: as from ``dataclasses``'
    and ``typing``'s own code, which have none), under the builtins' file name."""
    global _new  # noqa: PLW0603 - one cache per process
    key = f"{mode}\n{source}"
    code = _codes.get(key)
    if code is None:
        code = compile(source, "<string>", mode, dont_inherit=True)
        with _lock:
            if len(_codes) < _ENTRIES:
                _codes[key] = code
                _new = True
    return code


def _exec(source: Any, globals: Any = None, locals: Any = None, /, **options: Any) -> None:
    """``dataclasses``' ``exec``: each class's methods, from their text."""
    code = _code(source, "exec") if isinstance(source, str) else source
    builtins.exec(code, globals, locals, **options)  # noqa: S102 - dataclasses' own exec, of its own text


def _compile(source: Any, filename: Any, mode: Any, flags: int = 0, _inherit: bool = False, optimize: int = -1,
             **options: Any) -> Any:  # fmt: skip
    """``typing``'s ``compile``: a string annotation's expression (``ForwardRef``: pydantic resolves each of a
    model's), in the one shape ``typing`` asks for; anything else as the builtin compiles it."""
    if isinstance(source, str) and (filename, mode, flags, optimize) == ("<string>", "eval", 0, -1) and not options:
        return _code(source, "eval")
    return builtins.compile(source, filename, mode, flags, True, optimize, **options)  # (typing has no __future__)


def install(usable: bool) -> None:
    """Give ``dataclasses`` and ``typing`` the compiling-once ``exec`` and ``compile`` (CPython only) and, when
    ``usable``, read back what earlier starts kept."""
    global _usable  # noqa: PLW0603
    if sys.implementation.name != "cpython" or installed():
        return
    _usable = usable
    if usable:
        _codes.update(_read())
        atexit.register(keep)  # (what loaded after the first answer: the SDK's, a first change's)
    dataclasses.exec = _exec  # type: ignore[attr-defined]  # (a module's global is found before the builtin)
    typing.compile = _compile  # type: ignore[attr-defined]


def installed() -> bool:
    return getattr(dataclasses, "exec", None) is _exec


def _read() -> dict[str, types.CodeType]:
    """The kept texts and their code (none if the file is not sealed and ours, or holds anything else)."""
    data = read_sealed(cache_path(), _LABEL, _LIMIT)
    if data is None:
        return {}
    try:
        codes = marshal.loads(data)  # noqa: S302 - sealed with the user's key: see the module's threat
    except (ValueError, EOFError, TypeError):
        return {}
    if not isinstance(codes, dict) or len(codes) > _ENTRIES:
        return {}
    if not all(isinstance(k, str) and isinstance(v, types.CodeType) for k, v in codes.items()):
        return {}
    return codes


def keep() -> None:
    """Keep what this process compiled anew, with what it read (best effort; nothing when not ``usable``). Another
    server keeping its own meanwhile may win: its texts are compiled again at a next start, and kept then."""
    global _new  # noqa: PLW0603
    with _lock:
        if not (_new and _usable):
            return
        _new = False
        codes = dict(_codes)
    keep_sealed(cache_path(), _LABEL, marshal.dumps(codes), _LIMIT)
    log.debug("the code of %d texts kept for the next start", len(codes))
