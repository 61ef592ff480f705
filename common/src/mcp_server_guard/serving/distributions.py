"""Start-up time: what a server reads of the installed distributions, without importing ``importlib.metadata``.

A start needs two things from the distributions' metadata: the server's version (``initialize`` names it) and
whether any distribution gives pydantic a plugin (pydantic asks at its first model,
``pydantic.plugin._loader.get_plugins``). ``importlib.metadata`` answers both, but importing it imports ``email``,
``zipfile``, ``csv`` and ``importlib.resources`` too: about a tenth of a server's first answer. Here both are read
from the ``*.dist-info`` directories on ``sys.path``, found as ``importlib.metadata`` finds them; wherever this
reading is not sure to give the same answer (a zip or an egg on the path, a finder of distributions of its own, a
second candidate, a header it does not parse plainly) it asks ``importlib.metadata`` instead. Either way the answer
is the one ``importlib.metadata`` gives.

* :func:`version_of`: ``importlib.metadata.version``, or None where not sure.
* :func:`defer_plugin_search`: before pydantic is imported, a loader of this module's stands in for pydantic's; its
  ``get_plugins`` answers "none" when no distribution's ``entry_points.txt`` mentions the group ``pydantic``, and
  hands everything else (and any other name) to the real loader, imported then.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import threading
import types
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["defer_plugin_search", "plugins_declared", "version_of"]

LOADER = "pydantic.plugin._loader"
_GROUP = b"pydantic"  # the entry-point group pydantic reads (PYDANTIC_ENTRY_POINT_GROUP)
_DISABLED = ("__all__", "1", "true")  # PYDANTIC_DISABLE_PLUGINS values that turn every plugin off
_INFOS = (".dist-info", ".egg-info")
_HEADER = re.compile(r"[\041-\071\073-\176]+:")  # a header line as the email parser takes it (name, colon)
_VERSION = re.compile(r"[0-9A-Za-z.+!_-]+")
_lock = threading.Lock()


class _NotSure(Exception):
    """This reading may differ from ``importlib.metadata``'s: ask it."""


def _infos() -> Iterator[tuple[str, list[str]]]:
    """Each ``sys.path`` directory with the names of the metadata directories in it, in the order
    ``importlib.metadata`` searches them; ``_NotSure`` where it would search something else too."""
    from importlib.machinery import PathFinder  # noqa: PLC0415 - loaded with the interpreter

    for finder in sys.meta_path:
        if finder is not PathFinder and callable(getattr(finder, "find_distributions", None)):
            raise _NotSure  # a finder of distributions of its own
    for entry in list(sys.path):
        if not isinstance(entry, str):
            raise _NotSure
        root = entry or "."
        try:
            names = os.listdir(root)
        except NotADirectoryError:
            raise _NotSure from None  # a zip on the path: importlib.metadata reads the distributions inside it
        except OSError:
            continue  # (importlib.metadata finds no distribution in a path it cannot list)
        if os.path.basename(root).lower().endswith(".egg"):
            raise _NotSure  # an egg directory's own metadata
        yield root, [name for name in names if name.lower().endswith(_INFOS)]


def _normalized(name: str) -> str:
    """A distribution's name as ``importlib.metadata`` compares it (``Prepared.normalize``)."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def version_of(distribution: str) -> str | None:
    """``importlib.metadata.version(distribution)``, read from the first matching ``*.dist-info``; None when this
    reading is not sure to give what it gives (not found here either: it says so itself)."""
    wanted = _normalized(distribution)
    try:
        for root, infos in _infos():
            found = [n for n in infos if _normalized(n.lower().rpartition(".")[0].partition("-")[0]) == wanted]
            if found:
                if len(found) > 1 or not found[0].lower().endswith(".dist-info"):
                    return None  # (which one comes first is the directory listing's order)
                return _metadata_version(os.path.join(root, found[0], "METADATA"))
    except _NotSure:
        return None
    return None


def _metadata_version(path: str) -> str | None:
    """The ``Version`` header of a METADATA file as the email parser gives it, when it is a plain one."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeError):
        return None
    lines = text.split("\n")  # (read with universal newlines: every line ends so)
    for i, line in enumerate(lines):
        if line.startswith(("From ", " ", "\t")) or not _HEADER.match(line):
            return None  # the headers' end (a blank line), or a line not read plainly here, before any Version
        name, value = line.split(":", 1)
        if name.lower() == "version":
            value = value.lstrip(" \t")
            folded = i + 1 < len(lines) and lines[i + 1].startswith((" ", "\t"))
            return value if _VERSION.fullmatch(value) and not folded else None
    return None


def plugins_declared() -> bool:
    """Whether a distribution may declare an entry point of the group ``pydantic`` (any mention of it in its
    ``entry_points.txt``), or the search is not one this reading covers: True means "ask importlib.metadata"."""
    try:
        return any(_names_group(os.path.join(root, name)) for root, infos in _infos() for name in infos)
    except _NotSure:
        return True


def _names_group(info: str) -> bool:
    try:
        with open(os.path.join(info, "entry_points.txt"), "rb") as f:
            return _GROUP in f.read().lower()
    except (FileNotFoundError, NotADirectoryError):
        return False  # (an .egg-info that is a file declares no entry points)
    except OSError:
        return True  # (unreadable here: the real loader decides)


class _Loader(types.ModuleType):
    """Stands in for ``pydantic.plugin._loader``: ``get_plugins`` answers "none" when no distribution can declare
    one; anything else (or any other name) is the real loader's, imported in its place on first need."""

    def __init__(self) -> None:
        super().__init__(LOADER)
        self._real: types.ModuleType | None = None
        self._none: bool | None = None  # whether the search found nothing (decided once, as the real loader caches)

    def get_plugins(self) -> Iterable[Any]:
        if os.getenv("PYDANTIC_DISABLE_PLUGINS") in _DISABLED:
            return ()
        with _lock:
            if self._none is None and self._real is None:
                self._none = not plugins_declared()
        if self._none and self._real is None:
            return ()
        return self.real().get_plugins()  # type: ignore[no-any-return]

    def real(self) -> types.ModuleType:
        with _lock:
            if self._real is None:
                if sys.modules.get(LOADER) is self:
                    del sys.modules[LOADER]
                self._real = importlib.import_module(LOADER)
                parent = sys.modules.get("pydantic.plugin")
                if parent is not None and getattr(parent, "_loader", None) is self:
                    parent._loader = self._real  # type: ignore[attr-defined]
            return self._real

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(self.real(), name)


def defer_plugin_search() -> None:
    """Put the stand-in loader in place, before pydantic is imported (nothing is done once it is)."""
    if LOADER not in sys.modules and "pydantic" not in sys.modules:
        sys.modules[LOADER] = _Loader()
