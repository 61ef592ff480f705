"""Driver for red team 183 F1 (run as a separate interpreter, possibly under -O): one dataclasses-style text, whose
code depends on the interpreter's optimize level, made through the installed compiled-code cache, compared with
what the builtin compiles for it in this very process. argv[1]: "keep" (keep the cache after) or "read".

The text is harmless: a function whose body is ``assert __debug__ and False``. Natively, without -O, calling it
raises AssertionError; compiled under -O (or -OO) the assert is gone and it returns None."""

from __future__ import annotations

import dataclasses
import json
import sys
import types

from mcp_server_guard.serving import code_cache

TEXT = "def __create_fn__():\n def __init__(self):\n  assert __debug__ and False, 'checked'\n return __init__"


def _behaviour(code_or_text: str | types.CodeType) -> str:
    ns: dict[str, object] = {}
    if isinstance(code_or_text, str):
        dataclasses.exec(code_or_text, {}, ns)  # type: ignore[attr-defined]  # (the cache's exec once installed)
    else:
        exec(code_or_text, {}, ns)
    try:
        ns["__create_fn__"]()(None)  # type: ignore[operator]
    except AssertionError:
        return "asserts"
    return "does not assert"


def main() -> None:
    role = sys.argv[1]
    code_cache.install(True)
    read_back = "exec\n" + TEXT in code_cache._codes
    cached = _behaviour(TEXT)
    native = _behaviour(compile(TEXT, "<string>", "exec", dont_inherit=True))
    if role == "keep":
        code_cache.keep()
    print(json.dumps({"optimize": sys.flags.optimize, "read_back": read_back, "cached": cached, "native": native}))


if __name__ == "__main__":
    main()
