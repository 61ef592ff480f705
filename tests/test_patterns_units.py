"""``patterns.deferred``: a pattern compiled at its first use, answering as ``re.compile`` would (issue 44)."""

from __future__ import annotations

import re

from mcp_server_guard.patterns import deferred
from mcp_server_guard.shell.strings import code_texts


def test_a_deferred_pattern_answers_as_the_compiled_one() -> None:
    for source, flags in ((r"a(b)+", re.IGNORECASE), (r"^x.$", re.M | re.DOTALL), (r"\bqx\s*/", 0)):
        lazy, compiled = deferred(source, flags), re.compile(source, flags)
        assert lazy._compiled is None  # type: ignore[attr-defined]
        for text in ("xABb ab", "x\n\nx\ny", "qx /", ""):
            assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in compiled.finditer(text)]
            assert lazy.sub("-", text) == compiled.sub("-", text)
            assert bool(lazy.search(text)) == bool(compiled.search(text))
        assert (lazy.pattern, lazy.flags, lazy.groups) == (compiled.pattern, compiled.flags, compiled.groups)
        assert repr(lazy) == repr(compiled)


def test_the_code_text_patterns_are_deferred() -> None:
    pending = [v for v in vars(code_texts).values() if type(v).__name__ == "_Deferred"]
    assert len(pending) >= 20
