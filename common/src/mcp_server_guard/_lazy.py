"""Package exports that resolve on first use.

A package's ``__init__`` names its public surface without importing it: importing one module of a
package must not import its siblings (the file servers never load the shell parser; the in-box
supervisor imports ``shell.sandbox`` with no site-packages, so no MCP SDK and no pydantic).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package`` that imports ``package.<exports[name]>`` on first access."""

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__
