"""What GNU make reads, for ``hook_runs``: a Makefile's lines that run when goals are made, its variables expanded,
and the makefiles it names — includes by any name (``-include config.mak``, ``-include $(LOCAL)``, ``include
mk/*.mk``, the compiler's ``$(SRCS:.c=.d)``), ``make -f Makefile.ci``, recursive ``$(MAKE) -C sub``.

Threat (red team 123): a pre-commit hook that runs ``make lint`` runs whatever the makefiles make reads say; one of
them named otherwise than the judge read it (an include not ending ``.mk``, a variable, ``-f``, ``$(MAKE)``) was
made or rewritten by a command unasked, its ``$(shell …)`` run at the user's next ``git commit``.
"""

from __future__ import annotations

import re

from mcp_server_guard.patterns import deferred

__all__ = ["make_named", "make_text"]

_Named = tuple[str, str, tuple[str, ...]]  # as hook_runs names files: a word, how it is read, the goals

_RULE = deferred(r"^([^\s:=#][^:=#]*?)\s*::?(?!=)(.*)$")
_VARIABLE = deferred(r"^\s*(?:override\s+|export\s+)?[A-Za-z_][\w.-]*\s*(?:\?|::?|\+|!)?=")
_DEFAULT_GOAL = deferred(r"^\s*\.DEFAULT_GOAL\s*:?=\s*(\S+)")


def _recipes(text: str, goals: tuple[str, ...]) -> str:
    """The lines of a Makefile or justfile that run when ``goals`` are made (none named: the default goal, else the
    first rule's), their prerequisites' and the pattern rules' too; and every line make reads whatever the goal:
    variables, ``$(shell …)``, includes (red team 8 A4). A recipe line is an indented one under its rule."""
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
        kept += rules[name][1]
    return "\n".join(kept)


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
    given: dict[str, str] = {}
    for name, value in [*_MAKE_ASSIGN.findall(text), *_DEFINE.findall(text)]:
        given[name] = f"{given[name]} {value}" if name in given else value
    values: dict[str, str] = {}

    def expand(found: re.Match[str], depth: int = 0) -> str:
        name, old, new = found.group(1), found.group(2), found.group(3)
        if name == "MAKE":
            return "make"
        if name not in values and name in given and depth < 8:
            values[name] = ""  # (a value naming itself stays empty)
            values[name] = _WILDCARD.sub(r"\1", _MAKE_REF.sub(lambda m: expand(m, depth + 1), given[name]))
        value = values.get(name)
        if value is None or "$" in value:
            return f"$({name}){new}" if old is not None else found.group(0)
        if old is None:
            return value
        old, new = old.removeprefix("%"), new.removeprefix("%")  # (``$(SRCS:%.c=%.d)``: the same substitution)
        return " ".join(w[: -len(old)] + new if old and w.endswith(old) else w for w in value.split())

    return _WILDCARD.sub(r"\1", _MAKE_REF.sub(expand, _recipes(text, goals)))


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
