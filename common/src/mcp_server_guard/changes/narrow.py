"""JSON read back (an apply's journal, a call's record), narrowed to the types the typed values hold.

What ``json.loads`` returns is taken as ``object`` and checked here: a value of another shape than the one our code
writes raises ``TypeError`` (or ``KeyError``, for a field that must be there), which the readers (``changes.journal``,
``changes.recovery``) take for a journal that is not ours to finish. ``number`` and ``text`` convert as ``int()``
and ``str()`` do, where the converters always converted; ``exact`` and ``flag`` take only a value of that very type,
where the value was taken as it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

__all__ = ["exact", "flag", "items", "mapping", "number", "optional_text", "text"]

T = TypeVar("T", str, int)


def mapping(value: object) -> Mapping[str, object]:
    """A JSON object."""
    if not isinstance(value, dict):
        raise TypeError(f"not a JSON object: {type(value).__name__}")
    return value


def items(value: object) -> Sequence[object]:
    """A JSON array; nothing (``null``, absent, empty) is an empty one."""
    if not value:
        return ()
    if not isinstance(value, list):
        raise TypeError(f"not a JSON array: {type(value).__name__}")
    return value


def number(value: object) -> int:
    """``int(value)``, of a value JSON can hold (``TypeError`` for another, as ``int()`` raises for most)."""
    if isinstance(value, (bool, int, float, str)):
        return int(value)
    raise TypeError(f"not a number: {type(value).__name__}")


def text(value: object) -> str:
    """``str(value)``: what the converters always made of a text field."""
    return str(value)


def optional_text(value: object) -> str | None:
    """A text field that may be absent (``None``), taken as it is."""
    return None if value is None else exact(value, str)


def exact(value: object, kind: type[T]) -> T:
    """``value`` when it is a ``kind`` (a ``bool`` is no ``int`` here), else ``TypeError``."""
    if isinstance(value, kind) and not isinstance(value, bool):
        return value
    raise TypeError(f"not a {kind.__name__}: {type(value).__name__}")


def flag(value: object) -> bool:
    """A ``bool`` field, taken as it is."""
    if isinstance(value, bool):
        return value
    raise TypeError(f"not a boolean: {type(value).__name__}")
