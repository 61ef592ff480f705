"""Regular expressions compiled when first used: a module's patterns cost its import nothing (issue 44: the
shell's parsers and the hook readers compile many that a first call never uses; compiling them took a tenth of a
shell_exec start). ``deferred(pattern, flags)`` stands for ``re.compile(pattern, flags)``: every attribute of the
pattern (``search``, ``finditer``, ``sub``, ``pattern`` …) is the compiled pattern's, compiled at the first use."""

from __future__ import annotations

import re
from typing import Any, cast

__all__ = ["deferred"]


class _Deferred:
    def __init__(self, pattern: str, flags: int) -> None:
        self._pattern, self._flags = pattern, flags
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        compiled = self._compiled
        if compiled is None:  # (two threads may both compile it: the same pattern either way)
            compiled = self._compiled = re.compile(self._pattern, self._flags)
        found = getattr(compiled, name)
        # Kept as this object's own attribute: the next ``.search`` is a plain lookup, not a call of this method (a
        # hook reader's loop looks its patterns up a million times in the worst makefile: red team 133 F2's).
        setattr(self, name, found)
        return found

    def __repr__(self) -> str:
        return repr(re.compile(self._pattern, self._flags))


def deferred(pattern: str, flags: int | re.RegexFlag = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, compiled when first used."""
    return cast("re.Pattern[str]", _Deferred(pattern, int(flags)))
