"""Start-up time: the MCP SDK's package ``__init__`` imports its client (about a fifth of a server's start-up),
which a server never uses.

:func:`defer_sdk_client` registers the ``mcp`` package without running that ``__init__``: submodules
(``mcp.server``, ``mcp.types`` …) import as usual, and the first use of a name the ``__init__`` defines
(``from mcp import Client``) runs it then, so nothing that needs it breaks.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any

__all__ = ["defer_sdk_client"]


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
