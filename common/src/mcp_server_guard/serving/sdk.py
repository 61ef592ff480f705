"""Start-up time and memory: the MCP SDK loads much that a stdio server never uses.

* Its package ``__init__`` imports its client (about a fifth of a server's start-up). :func:`defer_sdk_client`
  registers the ``mcp`` package without running that ``__init__``: submodules (``mcp.server``, ``mcp.types`` …)
  import as usual, and the first use of a name the ``__init__`` defines (``from mcp import Client``) runs it then.
* Its server modules import the web transports (starlette, uvicorn, sse-starlette, httpx2, the OAuth routes) at
  module level. :func:`import_sdk` imports the server with those standing in (``WEB_ONLY``) until something really
  uses one; should a later SDK need one while loading, it imports the plain way instead.

Nothing that needs a deferred module breaks: it loads on first use.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import importlib.util
import logging
import sys
import threading
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import importlib.abc

__all__ = ["defer_sdk_client", "defer_web_transports", "import_sdk", "loaded_web_transports"]


def defer_sdk_client() -> None:
    """Make ``import mcp.<submodule>`` skip ``mcp/__init__.py`` until one of its own names is used."""
    if "mcp" in sys.modules:
        return
    spec = importlib.util.find_spec("mcp")
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    package = types.ModuleType("mcp")
    package.__spec__ = spec
    package.__path__ = list(spec.submodule_search_locations)
    package.__file__ = spec.origin
    package.__package__ = "mcp"
    loaded = False

    def __getattr__(name: str) -> Any:
        nonlocal loaded
        if name.startswith("__") or loaded:
            raise AttributeError(name)
        loaded = True
        assert spec.loader is not None
        spec.loader.exec_module(package)  # the real __init__, in the package's own namespace
        return getattr(package, name)

    package.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules["mcp"] = package


# -- the web transports: imported by the SDK's server modules at module level, used only by HTTP and SSE -------------

# Threat to start-up and memory, not to safety: ``mcp.server.mcpserver`` imports starlette, uvicorn, sse-starlette,
# httpx2, the OAuth routes and the SSE transport for ``sse_app``/``streamable_http_app``, which a stdio server never
# calls (~8.5 MiB and ~200 ms per server here). Each root below is imported as a stand-in: a module whose names are
# placeholders that import the real module on first real use (called, subclassed, subscripted, an attribute read,
# an isinstance check; a constant, ALL_CAPS, at once), so nothing that needs one breaks; it only loads later. The
# streamable-HTTP modules themselves stay real (the SDK uses their constants as default arguments); what they
# import from the roots below stands in.
WEB_ONLY = (
    "starlette",
    "uvicorn",
    "sse_starlette",
    "httpx2",
    "python_multipart",
    "mcp.server.auth.middleware",
    "mcp.server.auth.provider",
    "mcp.server.auth.routes",
    "mcp.server.auth.handlers",
    "mcp.shared.auth",
    "mcp.server.sse",
    "mcp.server._streamable_http_modern",
)

_lock = threading.RLock()
_deferred: set[str] = set()  # roots still standing in
_loaded: list[str] = []  # roots a real use loaded (tests and the log read it)


def _root_of(fullname: str) -> str | None:
    return next((r for r in _deferred if fullname == r or fullname.startswith(r + ".")), None)


def _load(fullname: str) -> types.ModuleType:
    """The real module behind a stand-in: its root stops standing in (every stand-in under it leaves
    ``sys.modules``; objects that hold one forward to the real module), then the real module is imported."""
    with _lock:
        root = _root_of(fullname)
        if root is not None:
            _deferred.discard(root)
            _loaded.append(root)
            logging.getLogger(__name__).debug("the deferred %s is loaded: %s is used", root, fullname)
            for name in [n for n in sys.modules if n == root or n.startswith(root + ".")]:
                if isinstance(sys.modules[name], _StandIn):
                    del sys.modules[name]
    return importlib.import_module(fullname)  # outside the lock: the import system has locks of its own


def _attribute(module: str, name: str) -> Any:
    real = _load(module)
    try:
        return getattr(real, name)
    except AttributeError:
        return importlib.import_module(f"{module}.{name}")  # a submodule named in `from x import y`


def _real(value: Any) -> Any:
    return value.real() if isinstance(value, _Later) else value


class _Later:
    """A name imported from a stand-in module (or an annotation made of one, such as ``Response | None`` in a
    signature evaluated at definition time): the real object, made on first real use."""

    __slots__ = ("_label", "_make")

    def __init__(self, make: Callable[[], Any], label: str) -> None:
        self._make = make
        self._label = label

    def real(self) -> Any:
        return self._make()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.real()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # protocols probed by introspection: not a reason to load
        return getattr(self.real(), name)

    def __getitem__(self, item: Any) -> Any:
        return _Later(lambda: self.real()[_real(item)], f"{self._label}[{item!r}]")

    def __or__(self, other: Any) -> Any:
        return _Later(lambda: self.real() | _real(other), f"{self._label} | {other!r}")

    def __ror__(self, other: Any) -> Any:
        return _Later(lambda: _real(other) | self.real(), f"{other!r} | {self._label}")

    def __instancecheck__(self, instance: Any) -> bool:
        return isinstance(instance, self.real())

    def __subclasscheck__(self, subclass: type) -> bool:
        return issubclass(subclass, self.real())

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[Any, ...]:
        return (self.real(),)  # `class X(Later)`: the real base

    def __repr__(self) -> str:
        return f"<deferred {self._label}>"


class _StandIn(types.ModuleType):
    """A deferred module: its names are placeholders until its root is loaded, then the real module's."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        with _lock:
            loaded = _root_of(self.__name__) is None
        if loaded:  # its root was loaded since: this module forwards to the real one
            return getattr(importlib.import_module(self.__name__), name)
        if name.isupper():
            # A constant (``DEFAULT_MAX_SESSIONS``) may become a default argument or be compared with: no stand-in
            # can be a number or a string, so the real module is loaded now.
            return getattr(_load(self.__name__), name)
        module = self.__name__
        return _Later(lambda: _attribute(module, name), f"{module}.{name}")


class _Finder:
    """The meta path finder and loader of the stand-ins (no ``importlib.abc`` base: importing it imports
    ``importlib.resources``, a start-up's cost for nothing)."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        with _lock:
            if _root_of(fullname) is None:
                return None
        return importlib.machinery.ModuleSpec(fullname, cast("importlib.abc.Loader", self), is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _StandIn(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []


_finder = _Finder()


def defer_web_transports() -> None:
    """Stand in for the web transports until something really uses them (see ``WEB_ONLY``)."""
    with _lock:
        _deferred.update(r for r in WEB_ONLY if r not in sys.modules)
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)


def undefer_web_transports() -> None:
    """Back to plain imports: no stand-in is made any more, and those made leave ``sys.modules``."""
    with _lock:
        for root in list(_deferred):
            _deferred.discard(root)
            for name in [n for n in sys.modules if n == root or n.startswith(root + ".")]:
                if isinstance(sys.modules[name], _StandIn):
                    del sys.modules[name]
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(_finder)


def loaded_web_transports() -> list[str]:
    """The deferred roots that a real use has loaded since start-up (for tests and the log)."""
    return list(_loaded)


def import_sdk() -> None:
    """Import the SDK's server with the web transports deferred; should the SDK use one of them while loading in a
    way a stand-in cannot serve, import it again the plain way (slower, never broken)."""
    defer_web_transports()
    try:
        importlib.import_module("mcp.server.mcpserver")
    except Exception:  # noqa: BLE001 - any failure: the plain import decides
        undefer_web_transports()
        for name in [n for n in sys.modules if n == "mcp" or n.startswith("mcp.")]:
            del sys.modules[name]
        defer_sdk_client()
        importlib.import_module("mcp.server.mcpserver")
