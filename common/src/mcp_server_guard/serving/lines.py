"""JSON-RPC lines: one line of the wire into a message or a rejection, and the answers to bad lines.

Pure functions of bytes (no I/O): a line is parsed by pydantic-core (``from_json``: iterative limits on depth,
strict Unicode) and validated by the SDK's own ``jsonrpc_message_adapter``; a line it refuses is outlined without
recursion to find out what is wrong and which id to answer (JSON-RPC 2.0: ``-32700`` not JSON, ``-32600`` not a
valid request, ``-32602`` params that are not an object, nested too deeply or not valid Unicode). A line that is
JSON but for bytes that are not valid UTF-8 is answered to its requests' ids. :class:`Lines` splits the byte
stream into lines, a line longer than the limit kept only by its head and tail.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from pydantic_core import from_json

log = logging.getLogger("mcp_server_guard.serving.stdio")

_HEAD = 64 << 10  # of an oversized line, kept to find its id
_TAIL = 1 << 10

JsonId = int | str | float  # an id an error may echo: a float only when the client sent one (JSON-RPC 2.0 §5)


# -- one line -> a message or a rejection --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rejection:
    """A line the server cannot act on, the JSON-RPC error it earns, and whom to send that error to."""

    code: int
    message: str
    answer: tuple[JsonId | None, ...]  # each gets the error (None: "id": null); empty for notifications/responses


@dataclass(frozen=True, slots=True)
class _Undecodable:
    """A member of a line that pydantic-core refused (too deep, not valid Unicode)."""

    reason: str


_LOCATION = re.compile(r" at line \d+ column \d+$")


def _reason(error: Exception) -> str:
    text = _LOCATION.sub("", str(error))
    if "recursion limit" in text:
        return "nested too deeply"
    if "surrogate" in text or "hex escape" in text:
        return f"a string is not valid Unicode ({text})"
    return text


def _answer_id(value: object) -> JsonId | None:
    """The id to echo in an error: the client's own when it sent a usable one, else null (JSON-RPC 2.0 §5)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | str):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


def _is_request_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _is_response(m: Mapping[str, object]) -> bool:
    return "method" not in m and ("result" in m or "error" in m)


def _invalid(what: str, answer: tuple[JsonId | None, ...]) -> Rejection:
    return Rejection(INVALID_REQUEST, f"Invalid Request: {what}", answer)


def _check(m: Mapping[str, object]) -> Rejection | None:
    """What makes this object an invalid request, or None (then the SDK's own validation has the last word)."""
    if _is_response(m):
        return None  # the SDK validates it; a broken response is logged, never answered
    has_id = "id" in m
    reply = (_answer_id(m.get("id")),)
    if "method" not in m:
        return _invalid("no method", reply)
    for name, value in m.items():
        if name != "params" and isinstance(value, _Undecodable):
            return _invalid(f'"{name}": {value.reason}', reply)
    if m.get("jsonrpc") != "2.0":
        return _invalid('"jsonrpc" must be "2.0"', reply)
    if not isinstance(m["method"], str):
        return _invalid("the method must be a string", reply)
    if has_id and not _is_request_id(m["id"]):
        return _invalid("the id must be a string or an integer", reply)
    params = m.get("params")
    to = reply if has_id else ()  # a notification's params are its handler's business: never answered
    if isinstance(params, _Undecodable):
        return Rejection(INVALID_PARAMS, f"Invalid params: {params.reason}", to)
    if params is not None and not isinstance(params, dict):
        return Rejection(INVALID_PARAMS, "Invalid params: params must be an object", to)
    return None


def _batch(elements: Sequence[object]) -> Rejection:
    ids = tuple(
        rid for e in elements if isinstance(e, dict) and "method" in e and (rid := _answer_id(e.get("id"))) is not None
    )
    return _invalid("batches are not supported; send one message per line", ids or (None,))


def decode_line(line: bytes) -> SessionMessage | Rejection:
    """One line from the client as the message the server acts on, or the rejection it earns."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Rejection(PARSE_ERROR, f"Parse error: not valid UTF-8 at byte {exc.start}", _ids_despite_bad_bytes(line))
    if not text.strip(" \t\r\n"):
        return Rejection(PARSE_ERROR, "Parse error: empty line", (None,))
    try:
        value = from_json(text, allow_inf_nan=False)
    except ValueError as exc:
        return _diagnose(text, exc)
    if isinstance(value, list):
        return _batch(value)
    if not isinstance(value, dict):
        return _invalid("a message must be a JSON object", (None,))
    if (rejection := _check(value)) is not None:
        return rejection
    try:
        message = jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError as exc:
        if _is_response(value):
            return _invalid("not a valid response", ())
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return _invalid(f"{where}: {first['msg']}", (_answer_id(value.get("id")),))
    return SessionMessage(message)


_SURROGATE = re.compile("[\ud800-\udfff]")
_AMBIGUOUS = object()  # the id of an object that names more than one: none can be answered


def _members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if sum(name == "id" for name, _ in pairs) > 1:
        members["id"] = _AMBIGUOUS  # which one the client meant is anybody's guess: null, not a guess
    return members


def _sure_id(m: Mapping[str, object]) -> JsonId | None:
    """The id of a request read from a line with invalid bytes; None when there is none to name without doubt."""
    if _is_response(m):
        return None  # a response is never answered: an error under its id would answer a request of the client's
    rid = m.get("id")
    if isinstance(rid, str) and _SURROGATE.search(rid):
        return None  # invalid bytes (or a lone surrogate) inside the id itself: it cannot be echoed as sent
    return _answer_id(rid)


def _ids_despite_bad_bytes(line: bytes) -> tuple[JsonId | None, ...]:
    """Whom to answer for a line that is not valid UTF-8: the ids of its requests when the line is JSON but for
    those bytes, else null (JSON-RPC 2.0 §5). Without its id, a client waiting for it would wait forever.

    Each invalid byte becomes one lone surrogate (surrogateescape) and no valid byte changes - an ASCII byte is
    never swallowed by a broken sequence - so the line keeps its exact JSON structure: invalid bytes inside a
    string stay inside it, anywhere else the line is not JSON. A real parser reads it; only top-level members
    count, an object with two ids answers null, an id with invalid bytes in it too.
    """
    text = line.decode("utf-8", "surrogateescape")
    try:
        value = json.loads(text, object_pairs_hook=_members, parse_constant=_not_json)
    except RecursionError:
        return (_deep_id(text),)  # nested beyond the parser's reach: outlined without recursion instead
    except ValueError:  # not JSON (a number too long to read, too)
        return (None,)
    elements = value if isinstance(value, list) else [value]
    ids = tuple(rid for e in elements if isinstance(e, dict) and (rid := _sure_id(e)) is not None)
    return ids or (None,)


def _deep_id(text: str) -> JsonId | None:
    """The id of a request nested too deeply for ``json.loads`` (a batch that deep is answered null)."""
    outline = _outline(text)
    if outline is None or outline.kind != "object":
        return None
    ids = [text[start:end] for key, start, end in outline.members if key == "id"]
    if len(ids) != 1:
        return None
    try:
        rid = json.loads(ids[0], parse_constant=_not_json)
    except (ValueError, RecursionError):
        return None
    members: dict[str, object] = {key: None for key, _, _ in outline.members}  # only which names occur matters
    members["id"] = rid
    return _sure_id(members)


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _decode_fragment(fragment: str) -> object:
    try:
        return from_json(fragment, allow_inf_nan=False)
    except ValueError as exc:
        return _Undecodable(_reason(exc))


def _diagnose(text: str, error: ValueError) -> Rejection:
    """Why pydantic-core refused a line: not JSON at all (-32700), or JSON too deep / not valid Unicode somewhere."""
    outline = _outline(text)
    if outline is None or not outline.complete:
        return Rejection(PARSE_ERROR, f"Parse error: {_LOCATION.sub('', str(error))}", (None,))
    if outline.kind == "array":
        return _batch([_decode_fragment(text[start:end]) for _, start, end in outline.members])
    if outline.kind != "object":
        return _invalid("a message must be a JSON object", (None,))
    members = {key: _decode_fragment(text[start:end]) for key, start, end in outline.members}
    rejection = _check(members)
    if rejection is None:  # the refused part is not one _check names: still answer whoever can be named
        answer = () if _is_response(members) else (_answer_id(members.get("id")),)
        rejection = _invalid(_reason(error), answer)
    return rejection


_TRAILING_ID = re.compile(r'[,{][ \t\r]*"id"[ \t\r]*:[ \t\r]*(-?[0-9]+|"(?:[^"\\]|\\.)*+")[ \t\r]*\}[ \t\r]*\Z')


def decode_oversized(head: bytes, tail: bytes, size: int, limit: int) -> Rejection:
    """A line over the limit: answered -32600, to its id if the head (or, TypeScript-style, the tail) names it."""
    rid: JsonId | None = None
    text = head.decode("utf-8", "replace")
    outline = _outline(text, partial=True)
    if outline is not None and outline.kind == "object":
        for key, start, end in outline.members:
            if key == "id":
                rid = _answer_id(_decode_fragment(text[start:end]))
    if rid is None and (found := _TRAILING_ID.search(tail.decode("utf-8", "replace"))):
        rid = _answer_id(_decode_fragment(found.group(1)))
    return _invalid(f"the message is {size} bytes, over the limit of {limit}", (rid,))


# An outline of a JSON text: its top level without building anything deeper, so any nesting costs no recursion.
_TOKEN = re.compile(
    r'"(?:[^"\\\x00-\x1f]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+"'  # possessive: no backtracking on a cut-off string
    r"|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
    r"|true|false|null|[{}\[\]:,]"
)


_WS = re.compile(r"[ \t\n\r]*+")


def _skip_ws(text: str, pos: int) -> int:
    found = _WS.match(text, pos)
    return found.end() if found is not None else pos


@dataclass(slots=True)
class _Outline:
    kind: Literal["object", "array", "scalar"] | None = None
    members: list[tuple[str, int, int]] = field(default_factory=list)  # key ("" in an array), value span
    complete: bool = False


def _outline(text: str, *, partial: bool = False) -> _Outline | None:
    """The top-level members of a JSON text; None if it is not JSON (with ``partial``: what precedes the break)."""
    out = _Outline()
    stack: list[str] = []
    state = "value"  # value | value_or_close | key | key_or_close | colon | comma_or_close | done
    key, start = "", 0
    pos = _skip_ws(text, 0)

    def ended(end: int) -> str:
        if not stack:
            return "done"
        if len(stack) == 1:
            out.members.append((key, start, end))
        return "comma_or_close"

    while pos < len(text):
        token = _TOKEN.match(text, pos)
        if token is None or state == "done":
            return out if partial else None
        first, at, pos = token.group()[0], pos, _skip_ws(text, token.end())
        if state in ("value", "value_or_close"):
            if first in "{[":
                out.kind = out.kind or ("object" if first == "{" else "array")
                if len(stack) == 1:
                    start = at
                stack.append(first)
                state = "key_or_close" if first == "{" else "value_or_close"
            elif first == "]" and state == "value_or_close":
                stack.pop()
                state = ended(token.end())
            elif first not in "}]:,":
                out.kind = out.kind or "scalar"
                if len(stack) == 1:
                    start = at
                state = ended(token.end())
            else:
                return out if partial else None
        elif state in ("key", "key_or_close"):
            if first == '"':
                if len(stack) == 1:
                    key = json.loads(token.group())
                state = "colon"
            elif first == "}" and state == "key_or_close":
                stack.pop()
                state = ended(token.end())
            else:
                return out if partial else None
        elif state == "colon" and first == ":":
            state = "value"
        elif state == "comma_or_close" and first == ",":
            state = "key" if stack[-1] == "{" else "value"
        elif state == "comma_or_close" and first == ("}" if stack[-1] == "{" else "]"):
            stack.pop()
            state = ended(token.end())
        else:
            return out if partial else None
    out.complete = state == "done"
    return out if out.complete or partial else None


def error_line(rid: JsonId | None, code: int, message: str) -> bytes:
    error = {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
    return json.dumps(error, separators=(",", ":")).encode() + b"\n"


# -- blocking I/O off the event loop -------------------------------------------------------------------------


@dataclass(slots=True)
class Oversized:
    head: bytes
    tail: bytes
    size: int


class Lines:
    """Splits the byte stream into lines; one longer than the limit is skipped, keeping only its head and tail."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._over: Oversized | None = None

    def feed(self, chunk: bytes) -> Iterator[bytes | Oversized]:
        start = 0
        while (newline := chunk.find(b"\n", start)) >= 0:
            self._add(chunk[start:newline])
            start = newline + 1
            if self._over is not None:
                yield self._over
                self._over = None
            else:
                yield b"".join(self._parts)
            self._parts, self._size = [], 0
        if start < len(chunk):
            self._add(chunk[start:])

    def _add(self, piece: bytes) -> None:
        if self._over is not None:
            self._over.size += len(piece)
            self._over.tail = (self._over.tail + piece)[-_TAIL:]
            return
        self._parts.append(piece)
        self._size += len(piece)
        if self._size > self._limit:  # not joined: the parts alone are all the memory a line may take
            head, tail = bytearray(), bytearray()
            for part in self._parts:
                head += part[: _HEAD - len(head)]
            for part in reversed(self._parts):
                tail[:0] = part[max(0, len(part) - (_TAIL - len(tail))) :]
            self._over = Oversized(bytes(head), bytes(tail), self._size)
            self._parts, self._size = [], 0


__all__ = ["JsonId", "Lines", "Oversized", "Rejection", "decode_line", "decode_oversized", "error_line"]
