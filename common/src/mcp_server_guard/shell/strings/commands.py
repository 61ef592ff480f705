"""What a parsed command line is made of: its simple commands (``Command``) with their words (``Word``), its
redirects and its findings, gathered in ``Parsed``: the facts the policy decides on.

Plain data. Building it from the syntax tree is the walker's (``walker``), a word's value the resolver's (``words``),
and the parse itself, with its bounds, ``parsing``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})


@dataclass(frozen=True)
class Word:
    """One shell word: its static value, or ``None`` when only run time can tell."""

    value: str | None
    raw: str
    glob: bool = False  # unquoted glob or brace expansion: the word may become several
    prompt_expansion: bool = False  # ${var@P}: the value is itself expanded like a prompt
    split: bool = False  # an unquoted variable whose known value bash splits into several words
    filled: bool = False  # part of it is filled in at run time by a wrapper (xargs -I{} sh -c 'x {}')

    @property
    def static(self) -> str | None:
        return None if self.glob else self.value


@dataclass
class Command:
    """A simple command: argv words (assignments removed), where it sits, and what feeds its stdin."""

    words: list[Word]
    text: str
    piped: bool = False  # reads a pipe from a previous command
    stdin_text: str | None = None  # a here-doc or here-string body, when static
    stdin_dynamic: bool = False  # a here-doc/here-string whose body has expansions
    stdin_file: bool = False  # `< file`: stdin is a file's content
    upstream: Command | None = None  # the command before it in a pipeline (what it reads)
    assignments: list[tuple[str, Word]] = field(default_factory=list)  # NAME=value words before the program


@dataclass(frozen=True)
class Redirect:
    op: str
    target: Word
    fd: str | None

    @property
    def writes(self) -> bool:
        return self.op in _WRITE_OPS


@dataclass(frozen=True)
class Finding:
    """Something about the line as a whole that the policy must weigh (e.g. ``fork-bomb``)."""

    kind: str
    detail: str


@dataclass
class Parsed:
    source: str
    commands: list[Command] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # Variables that bash evaluates as arithmetic (or as a variable's name) but the line never sets: their
    # value comes from the environment, which the engine checks.
    evaluated_from_env: set[str] = field(default_factory=set)
    evaluated_code: list[str] = field(default_factory=list)  # static values bash will evaluate (their $(…) runs)
    # Threat: `read n; echo $((n))`, `(( $(cat) ))`, `let "$(cat)"`, `declare -i n; read n`, `printf -v "$l" x`,
    # `[[ -v $l ]]`: bash evaluates, as arithmetic or as a name, a value that may hold what the line read, and
    # arithmetic runs the $(…) of an array subscript in it (`a[$(shutdown -h now)]`). The engine then judges the
    # substitutions in the line's stdin as command lines.
    evaluates_run_time: bool = False
    # Every variable the line assigns, as ``words.Known.assigned`` (None: a value only run time knows).
    assigned: dict[str, list[Word | None]] = field(default_factory=dict)
