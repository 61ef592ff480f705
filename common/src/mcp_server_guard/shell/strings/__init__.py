"""The string layer: what a command line says, judged before anything runs.

A line is parsed with tree-sitter-bash (``parsing``, ``walker``: valid bash it rejects is read in a form running the
same commands), expanded as bash would expand it where that is known beforehand (``expander``, with ``feeds``,
``words``, ``wrappers``, ``runners``, ``interpreters``, ``code_texts``, ``run_options``, ``writes``,
``unknown_programs``), and every command and finding is weighed against the policy's rules (``rules``,
``matching``); ``reading`` says whether the line only reads.

What it guarantees: every simple command a line can run — through pipelines, lists, substitutions, here-documents
fed to a shell, wrappers and ``sh -c`` strings — is judged, and what cannot be known beforehand is never allowed
by a rule it might match (it is undecidable: asked or denied). Without the box this layer is the only guard (string
checks are advisory: the box and the judgement of effects are the boundary). Its one entry point is
:class:`PolicyEngine` and the :class:`Verdict` it gives (with ``parse`` and ``check_examples`` for the tools that
show a parse or check a policy — and ``hook_words``, which reads a git hook's text with the same parser); nothing
outside this package imports its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_server_guard._lazy import lazy_exports

if TYPE_CHECKING:
    from mcp_server_guard.shell.strings.parsing import TooComplex, analysis_budget, parse, substitutes
    from mcp_server_guard.shell.strings.rules import PolicyEngine, Verdict, check_examples
    from mcp_server_guard.shell.strings.runners import INTERPRETERS, SHELLS

_EXPORTS = {
    "INTERPRETERS": "runners",
    "SHELLS": "runners",
    "PolicyEngine": "rules",
    "TooComplex": "parsing",
    "analysis_budget": "parsing",
    "Verdict": "rules",
    "check_examples": "rules",
    "parse": "parsing",
    "substitutes": "parsing",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "INTERPRETERS",
    "SHELLS",
    "PolicyEngine",
    "TooComplex",
    "Verdict",
    "analysis_budget",
    "check_examples",
    "parse",
    "substitutes",
]
