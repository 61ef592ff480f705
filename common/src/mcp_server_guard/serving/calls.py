"""Call shapes a small model can use: flat schemas out, lenient-where-unambiguous arguments in.

Published schemas (:func:`flat_schema`): every property has exactly one JSON ``type`` (an optional field is
one that is not in ``required``; no ``anyOf``/``oneOf``/type arrays/``null``), arrays have ``items``,
objects have ``properties`` or a typed ``additionalProperties``, ``required`` is always present, and there
is no ``$schema``/``$defs``/``$ref``/``title`` noise. Ollama's tool format (one ``type`` string per
property) and the small models behind it take these as they are.

Arguments (:func:`normalize_arguments`): values whose meaning is unambiguous are taken in the schema's type
(``"10"`` for an integer, ``"true"`` for a boolean, ``null`` for an omitted optional field, a JSON array or
object sent as a string); anything else is a PARAM error that names the offending key, the closest valid
name, and ends with a corrected example call built from the caller's own arguments, so that sending the
example as it is works. An unknown key is always an error: a model that believes it set ``timeout`` must
learn that it did not.

An example is only ever a call that does what the caller meant. Threat: a small model sends an example back
as it is. So a call missing a required argument gets no example (a ``<path>`` placeholder sent back to
file_write creates a file named ``<path>``); nor does a call whose value had to be left out (``"signal":
"HUP"`` dropped turns a stop into a look) — the suggestion says in words what to send instead. And a value
that is a placeholder of that kind (``<path>``, ``<content>``, ``<command>``: an argument's name in angle
brackets) is refused, never used.
"""

from __future__ import annotations

import copy
import json
import math
import re
import shlex
from collections.abc import Mapping
from typing import Any

from mcp_server_guard.errors import ParamError

__all__ = ["example_call", "flat_schema", "normalize_arguments"]

# Keys models reach for instead of ours, from the tools they were trained on (reference filesystem server,
# Desktop Commander, OpenAI/Anthropic examples). Checked before spelling distance: `file_path` is `path`.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "path": ("file_path", "filepath", "filename", "file_name", "file", "fname", "target", "target_file", "uri"),
    "content": ("contents", "text", "data", "body", "file_content", "new_content", "file_text", "value"),
    "overwrite": ("force", "replace", "clobber", "overwrite_existing"),
    "createDirs": ("mkdir", "parents", "make_dirs", "makedirs", "create_parents", "create_directories"),
    "expectedSha256": ("sha256", "expected_hash", "hash", "checksum", "if_match"),
    "offset": ("start", "start_line", "line", "from_line", "line_start", "skip", "first_line"),
    "limit": ("lines", "max_lines", "count", "num_lines", "n", "length", "line_count", "head"),
    "command": ("cmd", "script", "shell", "commandline", "command_line", "bash", "run", "exec", "program"),
    "args": ("arguments", "argv", "params", "parameters", "arg", "flags"),
    "cwd": ("dir", "directory", "workdir", "working_dir", "working_directory", "path", "folder", "cd", "chdir"),
    "stdin": ("input", "stdin_text", "input_text", "pipe"),
    "env": ("environment", "env_vars", "envs", "environ", "variables"),
    "timeoutSeconds": ("timeout", "timeout_s", "timeout_sec", "timeout_secs", "time_limit", "seconds"),
    "maxOutputBytes": ("max_output", "max_bytes", "output_limit", "max_output_size", "limit_bytes"),
}
# Keys under which a model sometimes nests the whole call.
_WRAPPERS = ("arguments", "input", "params", "parameters", "kwargs", "args", "tool_input")
_TRUE = frozenset({"true", "yes", "on", "1", "y"})
_FALSE = frozenset({"false", "no", "off", "0", "n"})
_INT_RE = re.compile(r"^\s*[+-]?\d+\s*$")
_SCHEMA_NOISE = ("title", "$schema", "$defs", "definitions")


# -- published schemas ------------------------------------------------------------------------------


def _inline(node: Any, defs: Mapping[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = copy.deepcopy(defs[ref.rsplit("/", 1)[1]])
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return _inline(merged, defs)
        return {k: _inline(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def _flatten_property(name: str, prop: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """One property with a single ``type``; and whether it was nullable (so it must stay optional)."""
    nullable = False
    for key in ("anyOf", "oneOf"):
        options = prop.get(key)
        if isinstance(options, list):
            kept = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
            nullable = nullable or len(kept) < len(options)
            if len(kept) != 1:
                raise ValueError(f"property {name!r} has {len(kept)} non-null types; publish exactly one")
            rest = {k: v for k, v in prop.items() if k != key}
            prop = {**kept[0], **rest}
    kind = prop.get("type")
    if isinstance(kind, list):
        kept_types = [t for t in kind if t != "null"]
        nullable = nullable or len(kept_types) < len(kind)
        if len(kept_types) != 1:
            raise ValueError(f"property {name!r} has types {kind}; publish exactly one")
        prop = {**prop, "type": kept_types[0]}
    if prop.get("default", 0) is None:
        prop = {k: v for k, v in prop.items() if k != "default"}
    if "enum" in prop and "type" not in prop:
        values = prop["enum"]
        prop = {**prop, "type": "string" if all(isinstance(v, str) for v in values) else "integer"}
    if not isinstance(prop.get("type"), str):
        raise ValueError(f"property {name!r} has no single JSON type")
    if prop["type"] == "array" and "items" not in prop:
        raise ValueError(f"array property {name!r} has no items")
    if prop["type"] == "object" and "properties" not in prop and "additionalProperties" not in prop:
        raise ValueError(f"object property {name!r} has neither properties nor additionalProperties")
    return {k: v for k, v in prop.items() if k not in _SCHEMA_NOISE}, nullable


def flat_schema(schema: Mapping[str, Any], *, output: bool = False, last: tuple[str, ...] = ()) -> dict[str, Any]:
    """A pydantic JSON schema made flat (see the module doc). Raises ``ValueError`` for a shape with no flat form.

    For an output schema, every property that is never null is required, and the ``last`` properties are
    listed after the others (the tool's own fields come first, the contract's after them).
    """
    defs = schema.get("$defs", {})
    inlined = _inline({k: v for k, v in schema.items() if k not in _SCHEMA_NOISE}, defs)
    properties: dict[str, Any] = {}
    nullable: set[str] = set()
    for name, prop in inlined.get("properties", {}).items():
        properties[name], was_null = _flatten_property(name, prop)
        if output:
            properties[name].pop("default", None)  # a result always states its value
        if was_null:
            nullable.add(name)
    order = [n for n in properties if n not in last] + [n for n in last if n in properties]
    properties = {n: properties[n] for n in order}
    if output:
        required = [n for n in properties if n not in nullable]
    else:
        required = [n for n in inlined.get("required", []) if n in properties]
    flat: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    if not output:
        flat["additionalProperties"] = False
    return flat


# -- arguments --------------------------------------------------------------------------------------


def _camel(key: str) -> str:
    head, *rest = key.strip().replace("-", "_").split("_")
    return head[:1].lower() + head[1:] + "".join(p[:1].upper() + p[1:] for p in rest)


def closest_name(key: str, valid: list[str], taken: Mapping[str, Any] = {}) -> str | None:
    """The valid argument name a caller most likely meant by ``key`` (never one it already passed)."""
    free = [v for v in valid if v not in taken]
    lowered = {v.lower(): v for v in free}
    for spelled in (key, _camel(key)):
        if spelled.lower() in lowered:
            return lowered[spelled.lower()]
    for name in free:
        if key.lower() in SYNONYMS.get(name, ()):
            return name
    import difflib  # noqa: PLC0415 - only for a misspelt name, not on the way to a first result (issue 44)

    near = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[near[0]] if near else None


def example_call(tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": tool, "arguments": dict(arguments)}


def _render(tool: str, arguments: Mapping[str, Any]) -> str:
    return json.dumps(example_call(tool, arguments), ensure_ascii=False)


class _Problems:
    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.messages: list[str] = []
        self.unsure: list[str] = []  # what to send, in words, where no example can say what the caller meant

    def add(self, message: str) -> None:
        self.messages.append(message)

    def raise_with(self, fixed: Mapping[str, Any], hint: str = "") -> None:
        if not self.messages:
            return
        first, more = self.messages[0], len(self.messages) - 1
        also = f" (and {more} more problem{'s' if more > 1 else ''}: {'; '.join(self.messages[1:])})" if more else ""
        if self.unsure:
            raise ParamError(
                "INVALID_ARGUMENT",
                f"{first}{also}",
                f"{hint}Send the call again with {'; '.join(self.unsure)}. (No example call: only you know the "
                "values you meant.)",
            )
        raise ParamError(
            "INVALID_ARGUMENT",
            f"{first}{also}",
            f"{hint}Call it like this: {_render(self.tool, fixed)}",
            example=example_call(self.tool, fixed),
        )


def _json_of(value: str) -> Any:
    text = value.strip()
    if not text or text[0] not in "[{":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _coerce(key: str, value: Any, prop: Mapping[str, Any], problems: _Problems) -> Any:
    """The value in the property's type; or, with a problem added, the fix for the example (``_DROP``: leave out)."""
    kind = prop.get("type")
    choices = prop.get("enum")
    if kind == "string" and isinstance(value, str) and isinstance(choices, list) and value not in choices:
        # "term" or "SIGTERM" for TERM: one choice matches ignoring case (or ends the value): unambiguous.
        meant = [c for c in choices if isinstance(c, str) and value.strip().upper().endswith(c.upper())]
        if len(meant) == 1:
            return meant[0]
        problems.add(f"'{key}' must be one of {', '.join(map(str, choices))}, not {json.dumps(value)}")
        problems.unsure.append(f"'{key}' set to one of {', '.join(map(str, choices))}")
        return _DROP
    if kind == "string":
        return _coerce_string(key, value, problems)
    if kind == "integer":
        return _coerce_integer(key, value, problems)
    if kind == "number":
        return _coerce_number(key, value, problems)
    if kind == "boolean":
        return _coerce_boolean(key, value, problems)
    if kind == "array":
        return _coerce_array(key, value, problems)
    if kind == "object":
        return _coerce_object(key, value, problems)
    return value


def _coerce_string(key: str, value: Any, problems: _Problems) -> Any:
    """``_coerce`` for a property of type string: the value as a string, or the fix for the example."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        problems.add(f"'{key}' must be a string, not a boolean")
        return str(value).lower()
    if isinstance(value, int | float):
        return str(value)  # 5 for "5": unambiguous
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        problems.add(f"'{key}' must be one string, not a list")
        return shlex.join(str(v) for v in value) if key == "command" else "\n".join(map(str, value))
    problems.add(f"'{key}' must be a string, not {_kind(value)}")
    return json.dumps(value, ensure_ascii=False, indent=2)


def _coerce_integer(key: str, value: Any, problems: _Problems) -> Any:
    """``_coerce`` for a property of type integer: the value as an integer, or the fix for the example."""
    if isinstance(value, bool):
        problems.add(f"'{key}' must be an integer, not a boolean")
        return _DROP
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INT_RE.match(value):
        return int(value)
    digits = re.search(r"\d+", value) if isinstance(value, str) else None
    problems.add(f"'{key}' must be an integer, not {_kind(value)} {json.dumps(value, ensure_ascii=False)}")
    if isinstance(value, float) and math.isfinite(value):
        return max(round(value), 1)
    return int(digits.group()) if digits else _DROP


def _coerce_number(key: str, value: Any, problems: _Problems) -> Any:
    """``_coerce`` for a property of type number: the value as a number, or the fix for the example."""
    if isinstance(value, bool):
        problems.add(f"'{key}' must be a number, not a boolean")
        return _DROP
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if math.isfinite(number):
            return number
    digits = re.search(r"\d+(\.\d+)?", value) if isinstance(value, str) else None
    problems.add(f"'{key}' must be a number, not {_kind(value)} {json.dumps(value, ensure_ascii=False)}")
    return float(digits.group()) if digits else _DROP


def _coerce_boolean(key: str, value: Any, problems: _Problems) -> Any:
    """``_coerce`` for a property of type boolean: the value as true or false, or the fix for the example."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    problems.add(f"'{key}' must be true or false, not {json.dumps(value, ensure_ascii=False)}")
    return _DROP


def _coerce_array(key: str, value: Any, problems: _Problems) -> Any:
    """``_coerce`` for a property of type array: the value as an array of strings, or the fix for the example."""
    if isinstance(value, str):
        parsed = _json_of(value)
        if isinstance(parsed, list):
            value = parsed  # a JSON array sent as a string: unambiguous
        else:
            problems.add(f"'{key}' must be an array of strings, not one string")
            try:
                return shlex.split(value)
            except ValueError:
                return [value]
    if isinstance(value, list):
        if all(isinstance(v, str) for v in value):
            return value
        if all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in value):
            return [str(v) for v in value]
        problems.add(f"'{key}' must be an array of strings")
        return [v if isinstance(v, str) else json.dumps(v) for v in value]
    problems.add(f"'{key}' must be an array of strings, not {_kind(value)}")
    return [str(value)]


def _coerce_object(key: str, value: Any, problems: _Problems) -> Any:
    """``_coerce`` for a property of type object: the value as an object of strings, or the fix for the example."""
    if isinstance(value, str):
        parsed = _json_of(value)
        if isinstance(parsed, dict):
            value = parsed
        else:
            pairs = dict(p.split("=", 1) for p in value.split() if "=" in p)
            problems.add(f"'{key}' must be an object of NAME: value strings, not one string")
            return pairs or _DROP
    if isinstance(value, dict):
        if all(isinstance(v, str) for v in value.values()):
            return value
        if all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in value.values()):
            return {k: str(v) for k, v in value.items()}
        problems.add(f"'{key}' values must be strings")
        return {k: v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}
    problems.add(f"'{key}' must be an object, not {_kind(value)}")
    return _DROP


class _Drop:
    def __repr__(self) -> str:
        return "<drop>"


_DROP: Any = _Drop()


def _kind(value: Any) -> str:
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "an object",
    }.get(type(value), "null")


def _bounds(key: str, value: Any, prop: Mapping[str, Any], problems: _Problems) -> Any:
    """The value within the schema's bounds and pattern, or the fix for the example."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        low = prop.get("minimum")
        if isinstance(low, int | float) and value < low:
            problems.add(f"'{key}' must be at least {low}, not {value}")
            return low
        low_x = prop.get("exclusiveMinimum")
        if isinstance(low_x, int | float) and value <= low_x:
            problems.add(f"'{key}' must be more than {low_x}, not {value}")
            return _DROP
    if isinstance(value, str) and isinstance(prop.get("pattern"), str) and not re.search(prop["pattern"], value):
        problems.add(f"'{key}' does not have the expected form ({prop.get('description', prop['pattern'])})")
        return _DROP
    return value


def normalize_arguments(
    tool: str,
    schema: Mapping[str, Any],
    arguments: Mapping[str, Any],
    implied: Mapping[str, tuple[str, ...]] | None = None,
) -> dict[str, Any]:
    """The caller's arguments in the schema's types, or a ParamError that shows the corrected call.

    ``implied``: a required string argument that is "" when one of the named arguments is given (shell_exec's
    ``command`` in a call about a job): left out then, it is taken as meant."""
    properties: dict[str, Any] = dict(schema.get("properties", {}))
    required: list[str] = list(schema.get("required", []))
    valid = list(properties)
    problems = _Problems(tool)
    hint = ""

    args = dict(arguments)
    # The whole call nested under one key ({"input": {...}}), or sent as one JSON string.
    if len(args) == 1:
        ((only, inner),) = args.items()
        if isinstance(inner, str):
            inner = _json_of(inner) if (only not in properties or properties[only].get("type") == "string") else None
        nested = isinstance(inner, dict) and inner and set(inner) <= set(valid)
        if nested and (only in _WRAPPERS or only in valid) and properties.get(only, {}).get("type") != "object":
            problems.add(f"the arguments are nested inside '{only}'; pass them at the top level")
            args = dict(inner)

    fixed: dict[str, Any] = {}
    for key, value in args.items():
        if key in properties:
            continue
        target = closest_name(key, valid, args)
        if target is not None and target not in fixed:
            problems.add(f"unknown argument '{key}' for {tool}: did you mean '{target}'?")
            fixed[target] = value
        else:
            problems.add(f"unknown argument '{key}' for {tool} (valid: {', '.join(valid)})")

    result: dict[str, Any] = {}
    pending = {k: v for k, v in args.items() if k in properties}
    renamed = {k: v for k, v in fixed.items() if k not in pending}
    for key, value in {**pending, **renamed}.items():
        if value is None:
            continue  # null for an optional field: omitted (a null required field is reported missing below)
        coerced = _coerce(key, value, properties[key], problems)
        if coerced is _DROP:
            continue
        bounded = _bounds(key, coerced, properties[key], problems)
        if bounded is not _DROP:
            result[key] = bounded
    for key, givers in (implied or {}).items():
        if key not in result and any(result.get(g) not in (None, False, "") for g in givers):
            result[key] = ""
    for key in required:
        if key not in result:
            problems.add(f"missing required argument '{key}'")
            problems.unsure.append(f"'{key}' ({_described(properties[key])})")
            hint = f"Required: {', '.join(required)}. "
    for key, value in result.items():
        if isinstance(value, str) and _is_placeholder(value, valid):
            problems.add(f"'{key}' is {json.dumps(value)}, a placeholder from an example, not a value")
            problems.unsure.append(f"'{key}' set to the real value ({_described(properties[key])})")
    problems.raise_with(_ordered(result, valid), hint)
    return result


def _described(prop: Mapping[str, Any]) -> str:
    text = str(prop.get("description") or prop.get("type") or "a value")
    return text.split(". ", maxsplit=1)[0].rstrip(".")


_MARKUP = frozenset({"body", "data", "text", "input", "output", "param", "source", "title", "head", "link", "file"})


def _is_placeholder(value: str, names: list[str]) -> bool:
    """``<path>``, ``<file_path>``, ``<the content>``: an argument's name (or a name models use for it) in angle
    brackets — what an example shows, never a value anyone means. (``<div>`` or ``<br>`` are not names of ours.)"""
    text = value.strip()
    if not (text.startswith("<") and text.endswith(">")) or len(text) > 48:
        return False
    words = text[1:-1].strip().lower().replace("-", " ").replace("_", " ").split()
    if not words:
        return False
    known = {n.lower() for n in names} | {s for n in names for s in SYNONYMS.get(n, ())}
    known |= {"file path", "your content", "your command", "value"}
    known -= _MARKUP  # a whole content of "<body>" is odd, but it is markup, not a placeholder
    spelled = " ".join(w for w in words if w not in ("the", "a", "your", "new", "here"))
    return (
        spelled in known
        or spelled.replace(" ", "") in {k.replace("_", "") for k in known}
        or (" ".join(words) in known)
    )


def _ordered(arguments: Mapping[str, Any], valid: list[str]) -> dict[str, Any]:
    return {k: arguments[k] for k in valid if k in arguments}
