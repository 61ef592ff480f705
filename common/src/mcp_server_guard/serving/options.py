"""A server's options declared without typer, and the everyday command line read without it (issue 44: typer is a
tenth of a server's start, and a host starts a server with the same few well-formed flags every time).

``option(...)`` takes what ``typer.Option`` takes and keeps it; ``as_typer`` turns such an annotation into typer's
own, for the command line typer reads (``--help``, ``--version``, and every line ``fast_arguments`` does not take).
``fast_arguments`` reads a command line only when every word of it is a known option with a value it takes as it
is — a member of the option's choices spelled exactly, a path, a directory the option's parser takes — and gives
what typer would give the command for it; anything else (a help or version flag, an unknown option, a value that
starts with ``-`` or is empty, a choice in another case, a positional word) is typer's, which answers it — or
refuses it — as it always did. Standard library only.
"""

from __future__ import annotations

import enum
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

__all__ = ["Option", "as_typer", "fast_arguments", "option", "takes_as_is"]


@dataclass(frozen=True)
class Option:
    """The arguments of a ``typer.Option``, kept until typer is needed."""

    decls: tuple[str, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)


def option(*decls: str, **kwargs: Any) -> Any:
    """``typer.Option(*decls, **kwargs)``, without typer (see ``as_typer``)."""
    return Option(decls, kwargs)


def _split(annotation: Any) -> tuple[Any, Option | None]:
    """(the type, the Option) of ``Annotated[type, Option(...)]``; (annotation, None) for anything else."""
    if typing.get_origin(annotation) is Annotated:
        kind, *extras = typing.get_args(annotation)
        for extra in extras:
            if isinstance(extra, Option):
                return kind, extra
    return annotation, None


def as_typer(annotation: Any) -> Any:
    """``Annotated[type, Option(...)]`` as typer takes it: ``Annotated[type, typer.Option(...)]``."""
    kind, opt = _split(annotation)
    if opt is None:
        return annotation
    import typer  # noqa: PLC0415 - only for the command lines typer reads

    return Annotated[kind, typer.Option(*opt.decls, **opt.kwargs)]


def _optional(kind: Any) -> Any:
    """``X`` of ``X | None`` (and ``X`` itself)."""
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        rest = [a for a in typing.get_args(kind) if a is not type(None)]
        return rest[0] if len(rest) == 1 else None
    return kind


@dataclass(frozen=True)
class _Taken:
    """One option ``fast_arguments`` reads: its parameter, how a value becomes what the command gets, repeatable."""

    name: str
    convert: Callable[[str], Any | None]  # None: a value typer must judge
    multiple: bool


def _converter(kind: Any, opt: Option) -> Callable[[str], Any | None] | None:
    """How a value becomes what typer gives the command (None: a value typer must judge); None for an option of a
    kind typer must read."""
    parser = opt.kwargs.get("parser")
    if parser is not None:
        check = _TAKEN_AS_IS.get(parser)
        if kind is not Path or check is None:
            return None
        return lambda value: parser(value) if check(value) else None
    if kind is Path:
        return Path
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return {str(m.value): m for m in kind}.get  # spelled exactly (another case: typer's)
    return None


def _table(params: Sequence[inspect.Parameter]) -> dict[str, _Taken] | None:
    """The long option names ``fast_arguments`` takes; None when one of the options is of a kind it leaves to typer
    (it then takes no command line)."""
    table: dict[str, _Taken] = {}
    for param in params:
        kind, opt = _split(param.annotation)
        if opt is not None and opt.kwargs.get("is_eager"):
            continue  # --version: typer's (every word not in the table is)
        if opt is None or not set(opt.kwargs) <= {"help", "show_default", "metavar", "parser", "case_sensitive"}:
            return None
        kind = _optional(kind)
        multiple = typing.get_origin(kind) is list
        if multiple:
            (kind,) = typing.get_args(kind)
        convert = _converter(kind, opt)
        if convert is None or not all(d.startswith("--") and "=" not in d for d in opt.decls):
            return None
        for decl in opt.decls:
            table[decl] = _Taken(param.name, convert, multiple)
    return table


_TAKEN_AS_IS: dict[Callable[..., Any], Callable[[str], bool]] = {}


def takes_as_is(parser: Callable[..., Any], check: Callable[[str], bool]) -> None:
    """``parser`` turns every value ``check`` passes into what typer would give (it refuses none of them); the
    others are typer's to refuse, with its own message."""
    _TAKEN_AS_IS[parser] = check


def fast_arguments(params: Sequence[inspect.Parameter], argv: Sequence[str]) -> dict[str, Any] | None:
    """The keyword arguments typer gives the command for ``argv``, or None when typer must read it (see above)."""
    table = _table(params)
    if table is None:
        return None
    values: dict[str, Any] = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
    for param in params:  # an eager option's callback runs on every line, given or not: its value is what it returns
        callback = _split(param.annotation)[1]
        if callback is not None and callback.kwargs.get("is_eager") and "callback" in callback.kwargs:
            values[param.name] = callback.kwargs["callback"](param.default)
    given: dict[str, list[Any]] = {}
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        name, eq, value = word.partition("=")
        taken = table.get(name)
        if taken is None:
            return None
        if not eq:
            if i + 1 >= len(words):
                return None
            i += 1
            value = words[i]
        i += 1
        if not value or value.startswith("-"):
            return None
        converted = taken.convert(value)
        if converted is None:
            return None
        given.setdefault(taken.name, []).append(converted)
    for name, found in given.items():
        multiple = any(t.multiple for t in table.values() if t.name == name)
        values[name] = found if multiple else found[-1]
    return values
