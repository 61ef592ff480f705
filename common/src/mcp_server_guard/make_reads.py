"""What GNU make reads, for ``hook_runs``: a Makefile's lines that run when goals are made, its variables expanded,
and the makefiles it names — includes by any name (``-include config.mak``, ``-include $(LOCAL)``, ``include
mk/*.mk``, the compiler's ``$(SRCS:.c=.d)``), ``make -f Makefile.ci``, recursive ``$(MAKE) -C sub``.

Red team 124: make's text functions (``$(patsubst …)``, ``$(addsuffix …)`` …) evaluated; variables the hook's
command line sets (``make lint LOCAL=site.conf``) taken with the makefile's own values; an include found through
``-I dir`` named there too; ``$@`` in a rule's recipe is its target (``$(SUBDIRS): ; $(MAKE) -C $@``), and a
recipe's ``for d in WORDS; do … $$d …; done`` is read once for each word.

Threat (red team 123): a pre-commit hook that runs ``make lint`` runs whatever the makefiles make reads say; one of
them named otherwise than the judge read it (an include not ending ``.mk``, a variable, ``-f``, ``$(MAKE)``) was
made or rewritten by a command unasked, its ``$(shell …)`` run at the user's next ``git commit``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

from mcp_server_guard.patterns import deferred

__all__ = ["make_named", "make_text"]

_Named = tuple[str, str, tuple[str, ...]]  # as hook_runs names files: a word, how it is read, the goals

_RULE = deferred(r"^([^\s:=#][^:=#]*?)\s*::?(?!=)(.*)$")
_VARIABLE = deferred(r"^\s*(?:override\s+|export\s+)?[A-Za-z_][\w.-]*\s*(?:\?|::?|\+|!)?=")
_DEFAULT_GOAL = deferred(r"^\s*\.DEFAULT_GOAL\s*:?=\s*(\S+)")


def _recipes(text: str, goals: tuple[str, ...], targets: Callable[[str], list[str]] = str.split) -> str:
    """The lines of a Makefile or justfile that run when ``goals`` are made (none named: the default goal, else the
    first rule's), their prerequisites' and the pattern rules' too; and every line make reads whatever the goal:
    variables, ``$(shell …)``, includes (red team 8 A4). A recipe line is an indented one under its rule, once for
    each target the rule's name stands for (``targets``: ``$(SUBDIRS)``'s words) where it says ``$@``."""
    rules: dict[str, tuple[list[str], list[str]]] = {}
    order: list[str] = []
    current: list[str] = []
    kept: list[str] = []
    default = ""
    # (make takes ``$(eval TEXT)`` as a line of its own: red team 124)
    text = _EVAL.sub(lambda found: "\n" + found.group(1) + "\n", text)
    for line in text.splitlines():
        if line[:1] in ("\t", " ") and current:
            for name in current:
                rules[name][1].append(line)
            continue
        stripped = line.strip()
        if found := _DEFAULT_GOAL.match(line):
            default = found.group(1)
        if (
            _INCLUDE.match(line)
            or stripped.startswith(("import ", "mod "))
            or _VARIABLE.match(line)
            or ("$(shell" in line or "${shell" in line)
        ):
            kept.append(stripped)
        match = None if _VARIABLE.match(line) else _RULE.match(line)
        current = match.group(1).split() if match else []
        for name in current:
            prerequisites, recipe = rules.setdefault(name, ([], []))
            after = match.group(2).split(";", 1) if match else [""]
            prerequisites += after[0].split()
            recipe += after[1:]
            order.append(name)
    todo = list(goals) or ([default] if default else [name for name in order if not name.startswith(".")][:1])
    todo += [name for name in rules if "%" in name]  # a pattern rule may make any of them
    seen: set[str] = set()
    while todo and len(seen) < 1024:
        name = todo.pop()
        if name in seen or name not in rules:
            continue
        seen.add(name)
        todo += rules[name][0]
        for line in rules[name][1]:  # ($@: this rule's target)
            kept += (
                [_TARGET.sub(t.replace("\\", "\\\\"), line) for t in targets(name)[:64]]
                if _TARGET.search(line)
                else [line]
            )
    return "\n".join(kept)


_TARGET = deferred(r"(?<!\$)\$(?:@|\(@\)|\{@\})")
_LOOP = deferred(r"\bfor\s+([A-Za-z_]\w*)\s+in\s+([^;]*?)\s*;\s*do\b(.*?)\bdone\b")
_FUNCTION = deferred(
    r"\$[({](patsubst|subst|addsuffix|addprefix|basename|notdir|dir|suffix|sort|strip|filter|filter-out|firstword"
    r"|lastword|join|words|word|wordlist)\s+([^$(){}]*)[)}]"
)
_ARITY = {"patsubst": 3, "subst": 3, "addsuffix": 2, "addprefix": 2, "filter": 2, "filter-out": 2, "join": 2,
          "word": 2, "wordlist": 3}  # fmt: skip


def _percent(pattern: str, word: str) -> str | None:
    """What ``%`` stands for when ``word`` matches make's ``pattern`` (None: no match)."""
    head, percent, tail = pattern.partition("%")
    if not percent:
        return "" if word == pattern else None
    fits = len(word) >= len(head) + len(tail) and word.startswith(head) and word.endswith(tail)
    return word[len(head) : len(word) - len(tail)] if fits else None


def _function(found: re.Match[str]) -> str:
    """One of make's text functions, on arguments with nothing left to expand."""
    name, given = found.group(1), found.group(2)
    args = given.split(",", _ARITY.get(name, 1) - 1) if name in _ARITY else [given]
    if len(args) < _ARITY.get(name, 1):
        return found.group(0)
    words = args[-1].split()
    if name == "subst":
        return args[2].replace(args[0], args[1])
    if name == "patsubst":
        stems = [(w, _percent(args[0].strip(), w)) for w in words]
        return " ".join(w if stem is None else args[1].strip().replace("%", stem, 1) for w, stem in stems)
    if name in ("addsuffix", "addprefix"):
        return " ".join(w + args[0] if name == "addsuffix" else args[0] + w for w in words)
    if name in ("filter", "filter-out"):
        patterns = args[0].split()
        return " ".join(w for w in words if any(_percent(p, w) is not None for p in patterns) == (name == "filter"))
    if name == "join":
        firsts = args[0].split()
        return " ".join(a + b for a, b in itertools.zip_longest(firsts, words, fillvalue=""))
    if name in ("basename", "notdir", "dir", "suffix"):
        return " ".join(filter(None, (_part(name, w) for w in words)))
    return " ".join(words)  # sort, strip, firstword, lastword, words, word, wordlist: every word (a superset)


def _part(name: str, word: str) -> str:
    """``$(basename …)``, ``$(notdir …)``, ``$(dir …)``, ``$(suffix …)`` of one word."""
    head, _, last = word.rpartition("/")
    _, dot, suffix = last.rpartition(".")
    if name == "notdir":
        return last
    if name == "dir":
        return f"{head}/" if "/" in word else "./"
    if name == "suffix":
        return f".{suffix}" if dot else ""
    return word[: len(word) - len(suffix) - 1] if dot else word


def _evaluated(text: str) -> str:
    """``text`` with its text functions evaluated, innermost first."""
    for _ in range(16):
        done = _FUNCTION.sub(_function, text)
        if done == text:
            break
        text = done
    return text


def _loops(text: str) -> str:
    """A recipe's shell loop over words, read once for each word (``for d in lib app; do $(MAKE) -C $$d; done``)."""

    def unrolled(found: re.Match[str]) -> str:
        name, body = found.group(1), found.group(3).strip().rstrip(";")
        used = re.compile(rf"\$\$?(?:{name}\b|\{{{name}\}})")
        return "; ".join(used.sub(word.replace("\\", "\\\\"), body) for word in found.group(2).split()[:64])

    return _LOOP.sub(unrolled, text)


def _options(goals: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, str], list[str]]:
    """The goals of a make command line, the variables it sets (``NAME=value``) and its include directories
    (``-I dir``, ``-Idir``, ``--include-dir=dir``)."""
    kept: list[str] = []
    given: dict[str, str] = {}
    dirs: list[str] = []
    words = iter(goals)
    for word in words:
        if word in ("-I", "--include-dir"):
            dirs.append(next(words, ""))
        elif word.startswith(("-I", "--include-dir=")) and not word.startswith("-I-"):
            dirs.append(word.removeprefix("--include-dir=").removeprefix("-I"))
        elif (found := _COMMAND_VARIABLE.match(word)) is not None:
            given[found.group(1)] = found.group(2)
        else:
            kept.append(word)
    return tuple(kept), given, [d for d in dirs if d]


_COMMAND_VARIABLE = deferred(r"^([A-Za-z_][\w.-]*)\s*(?:::?|\?|\+|!)?=(.*)$")
_MAKE_ASSIGN = deferred(r"^\s*(?:override\s+|export\s+)?([A-Za-z_][\w.-]*)\s*(?:\?|::?|\+|!)?=\s*(.*?)\s*$", re.M)
_MAKE_REF = deferred(r"\$[({]([A-Za-z_][\w.-]*)(?::([^=)}]*)=([^)}]*))?[)}]")
_CONTINUED = deferred(r"\\\n[ \t]*")
_EVAL = deferred(r"\$[({]eval\s+([^)}]*)[)}]")
_DEFINE = deferred(r"^\s*define\s+([A-Za-z_][\w.-]*)\s*(?:[:+?!]?=)?\s*\n(.*?)\n\s*endef\b", re.M | re.S)
_WILDCARD = deferred(r"\$[({]wildcard\s+([^)}]*)[)}]")
_INCLUDE = deferred(r"^\s*(?:-|s)?include[ \t]+(.+)$")
_MAKE_WORD = deferred(r"\$[({]MAKE[)}]|\$\{?MAKE\b\}?")
_MAKE_FILE = deferred(r"(?:^|[\s;&|(])(?:g?make|\$[({]MAKE[)}])\b[^;&|]*?\s(?:-f\s*|--file[= ]|--makefile[= ])(\S+)")


def make_text(text: str, goals: tuple[str, ...]) -> str:
    """The lines of a Makefile (or justfile) that run when ``goals`` are made (``_recipes``), its ``$(NAME)`` and
    ``${NAME}`` expanded where its text gives NAME a value (values expanded in turn; ``$(wildcard X)`` as the pattern
    X; a substitution ``$(SRCS:.c=.d)`` on each word, or as ``$(SRCS).d`` where SRCS has no value: any file of that
    suffix), ``$(MAKE)`` read as make."""
    # Every value a name is given, anywhere (``+=``, each branch of a conditional, each ``define``): the files an
    # include names under any of them.
    text = _CONTINUED.sub(" ", text)  # (make joins a line ending in a backslash with the next: red team 124)
    goals, commanded, dirs = _options(goals)
    given: dict[str, str] = {}
    for name, value in [*_MAKE_ASSIGN.findall(text), *_DEFINE.findall(text), *commanded.items()]:
        given[name] = f"{given[name]} {value}" if name in given else value
    values: dict[str, str] = {}

    def expand(found: re.Match[str], depth: int = 0) -> str:
        name, old, new = found.group(1), found.group(2), found.group(3)
        if name == "MAKE":
            return "make"
        if name not in values and name in given and depth < 8:
            values[name] = ""  # (a value naming itself stays empty)
            expanded = _MAKE_REF.sub(lambda m: expand(m, depth + 1), given[name])
            values[name] = _evaluated(_WILDCARD.sub(r"\1", expanded))
        value = values.get(name)
        if value is None or "$" in value:
            return f"$({name}){new}" if old is not None else found.group(0)
        if old is None:
            return value
        old, new = old.removeprefix("%"), new.removeprefix("%")  # (``$(SRCS:%.c=%.d)``: the same substitution)
        return " ".join(w[: -len(old)] + new if old and w.endswith(old) else w for w in value.split())

    def targets(name: str) -> list[str]:
        return _evaluated(_WILDCARD.sub(r"\1", _MAKE_REF.sub(expand, name))).split() or [name]

    read = _loops(_evaluated(_WILDCARD.sub(r"\1", _MAKE_REF.sub(expand, _recipes(text, goals, targets)))))
    if not dirs:
        return read
    # An include make finds through ``-I dir`` (none there as named: make looks in each directory in turn).
    return "\n".join(_searched(line, dirs) if _INCLUDE.match(line) else line for line in read.splitlines())


def _searched(line: str, dirs: list[str]) -> str:
    found = _INCLUDE.match(line)
    assert found is not None
    words = found.group(1).split("#", 1)[0].split()
    more = [f"{d.rstrip('/')}/{w}" for w in words if not w.startswith(("/", "$")) for d in dirs]
    return f"{line.split('#', 1)[0]} {' '.join(more)}"


def make_named(line: str) -> list[_Named]:
    """The makefiles one line names: each word of an include (``include``: read whole — every line of it, recipes
    too, may run —, a glob as a pattern any file made later matches too), and the file ``make -f X`` reads (for the
    goals after it)."""
    named: list[_Named] = []
    if found := _INCLUDE.match(line):
        named += [(word, "include", ()) for word in found.group(1).split("#", 1)[0].split()]
    for given in _MAKE_FILE.findall(_MAKE_WORD.sub("make", line)):
        goals = tuple(w for w in line.split(given, 1)[1].split() if not w.startswith("-") and "=" not in w)
        named.append((given.strip("'\""), "recipes", goals))
    return named
