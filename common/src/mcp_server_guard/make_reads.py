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

import posixpath
import re
import shlex
from collections.abc import Callable

from mcp_server_guard.make_expand import Expander, make_line, percent_stem
from mcp_server_guard.patterns import deferred

__all__ = ["RECIPE_FILES", "make_calls", "make_named", "make_read", "make_text"]

_Named = tuple[str, str, tuple[str, ...]]  # as hook_runs names files: a word, how it is read, the goals

_RULE = deferred(r"^([^\s:=#][^:=#]*?)\s*::?(?!=)(.*)$")
_VARIABLE = deferred(r"^\s*(?:override\s+|export\s+)?[A-Za-z_][\w.-]*\s*(?:\?|::?|\+|!)?=")
_DEFAULT_GOAL = deferred(r"^\s*\.DEFAULT_GOAL\s*:?=\s*(\S+)")


def _recipes(text: str, goals: tuple[str, ...], targets: Callable[[str], list[str]] = str.split) -> tuple[str, bool]:
    """The lines of a Makefile or justfile that run when ``goals`` are made (none named: the default goal, else the
    first rule's), their prerequisites' and the pattern rules' too; and every line make reads whatever the goal:
    variables, ``$(shell …)``, includes (red team 8 A4). A recipe line is an indented one under its rule, once for
    each target the rule's name stands for (``targets``: ``$(SUBDIRS)``'s words) where it says ``$@``. And whether
    a bound cut the reading (lines, targets, rules, words left unread: the reader then fails closed)."""
    rules: dict[str, tuple[list[str], list[str]]] = {}
    statics: dict[str, str] = {}  # a static pattern rule's target pattern (``$(CHECKS): %: scripts/lint-%.sh``)
    searched = [(found.group(1) or "", found.group(2).replace(":", " ").split()) for found in _VPATH.finditer(text)]
    order: list[str] = []
    current: list[str] = []
    kept: list[str] = []
    cut = [False]
    default = ""
    # (make takes ``$(eval TEXT)`` as a line of its own: red team 124)
    text = _EVAL.sub(lambda found: "\n" + found.group(1) + "\n", text)
    prefixes: tuple[str, ...] = ("\t", " ")
    for line in text.splitlines():
        if line[:1] in prefixes and current:
            for name in current:
                if len(rules[name][1]) < _RECIPE_MAX:  # (bounded: red team 133 F2)
                    rules[name][1].append(line)
                else:
                    cut[0] = True
            continue
        stripped = line.strip()
        if found := _DEFAULT_GOAL.match(line):
            default = found.group(1)
        if found := _RECIPE_PREFIX.match(line):  # (``.RECIPEPREFIX = >``: red team 131)
            prefixes = (*prefixes, found.group(1))
        if (
            _INCLUDE.match(line)
            or _LOAD.match(line)
            or stripped.startswith(("import ", "mod "))
            or _VARIABLE.match(line)
            or ("$(shell" in line or "${shell" in line)
        ):
            kept.append(stripped)
        match = None if _VARIABLE.match(line) else _RULE.match(line)
        # (``$(addprefix lint-,$(CHECKS)):``: a name is split at blanks outside its references: red team 133 F1)
        current = _words(match.group(1)) if match else []
        cut[0] = cut[0] or len(current) > _TARGETS_MAX
        current = current[:_TARGETS_MAX]
        for name in current:
            prerequisites, recipe = rules.setdefault(name, ([], []))
            after = match.group(2).split(";", 1) if match else [""]
            static, colon, needed = after[0].partition(":")
            if colon and not needed.startswith("="):
                statics[name] = static.strip()
            prerequisites.append(needed if colon and not needed.startswith("=") else after[0])  # (expanded at use)
            recipe += after[1:]
            order.append(name)
    todo = list(goals) or ([default] if default else [name for name in order if not name.startswith(".")][:1])
    patterns = [name for name in rules if "%" in name]
    # (``$(SUBDIRS):``: a rule for each word it expands to, expanded once: red team 133)
    named = {name: set(targets(name)) for name in rules if "$" in name}
    todo += patterns  # a pattern rule may make any of them
    seen: set[str] = set()
    while todo:
        if len(seen) >= _RULES_MAX:
            cut[0] = True
            break
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        # (a name no rule of its own makes: each pattern rule it matches, its stem ``$*``: red team 131)
        matched = [(name, "")] if name in rules else [(r, "") for r, words in named.items() if name in words]
        matched = matched or [(p, s) for p in patterns if (s := percent_stem(p, name))]
        for rule, stem in matched:
            # (``lint: $(addprefix lint-,$(LINTERS))``: expanded, then split: red team 132)
            given = [w for chunk in rules[rule][0] for w in (targets(chunk) if "$" in chunk else chunk.split())]
            needs = [n.replace("%", stem, 1) if stem else n for n in given]
            todo += needs
            made = name if stem or rule != name else rule

            def needs_of(
                target: str, rule: str = rule, stem: str = stem, needs: list[str] = needs, given: list[str] = given
            ) -> tuple[list[list[str]], str]:
                own = percent_stem(statics[rule], target) if rule in statics else None
                found = [n.replace("%", own, 1) for n in given] if own is not None else needs
                return [_on_vpath(n, searched, cut) for n in found], own if own is not None else stem

            made_as = targets(made) if "$" in made else [made]
            cut[0] = cut[0] or len(made_as) > 64 or len(kept) + len(rules[rule][1]) > _KEPT_MAX
            for line in rules[rule][1]:
                if len(kept) < _KEPT_MAX:
                    kept += _automatic(line, made_as[:64], needs_of)
    return "\n".join(kept), cut[0]


_RECIPE_MAX = 4096  # recipe lines of one rule read at most
_TARGETS_MAX = 256  # targets of one rule line at most
_KEPT_MAX = 65536  # lines a makefile is read for at most
_RULES_MAX = 1024  # rules followed from the goals at most


def _words(text: str) -> list[str]:
    """``text``'s words, split at blanks outside ``$(…)`` and ``${…}`` (as make splits a rule's targets)."""
    words: list[str] = []
    depth, start = 0, 0
    for index, char in enumerate(text):
        if char in "({" and index and text[index - 1] == "$":
            depth += 1
        elif char in ")}" and depth:
            depth -= 1
        elif char in " \t" and not depth:
            words.append(text[start:index])
            start = index + 1
    return [w for w in [*words, text[start:]] if w]


_AUTOMATIC = deferred(r"(?<!\$)\$(?:([@<^+*])|[({]([@<^+*])([DF]?)[)}])")
_VPATH = deferred(r"^\s*(?:vpath\s+(\S+)|VPATH\s*[:+?!]?=)\s*(.*)$", re.M)
_RECIPE_PREFIX = deferred(r"^\s*\.RECIPEPREFIX\s*:{0,2}=\s*(\S)")


def _automatic(line: str, targets: list[str], needs_of: Callable[[str], tuple[list[list[str]], str]]) -> list[str]:
    """A recipe line with make's automatic variables, once for each of ``targets``: ``$@`` the target, ``$<`` the
    first of what it needs, ``$^``/``$+`` all of them, ``$*`` the stem, ``$(<D)``/``$(<F)`` their directory or file
    part (red team 124: ``$(SUBDIRS): ; $(MAKE) -C $@``; 131: ``$<``, ``$*``; 132: static pattern rules, ``vpath``)."""
    if not _AUTOMATIC.search(line):
        return [line]

    def one(target: str) -> str:
        needs, stem = needs_of(target)  # (each with where vpath finds it: both named)
        every = " ".join(w for found in needs for w in found)
        values = {"@": target, "<": " ".join(needs[0]) if needs else "", "^": every, "+": every, "*": stem}

        def value(found: re.Match[str]) -> str:
            kind, part = found.group(1) or found.group(2), found.group(3) or ""
            words = values[kind].split() if kind in "^+" else [values[kind]]
            if part == "D":
                words = [posixpath.dirname(w) or "." for w in words]
            elif part == "F":
                words = [posixpath.basename(w) for w in words]
            return " ".join(words)

        return _AUTOMATIC.sub(value, line)

    return [one(target) for target in targets]


def _on_vpath(need: str, searched: list[tuple[str, list[str]]], cut: list[bool]) -> list[str]:
    """A prerequisite and where ``vpath``/``VPATH`` lets make find it (``vpath %.sh scripts``: ``scripts/x.sh``)."""
    if "/" in need or "$" in need:
        return [need]
    found = [f"{d.rstrip('/')}/{need}" for pattern, dirs in searched for d in dirs
             if not pattern or percent_stem(pattern, need) is not None]  # fmt: skip
    cut[0] = cut[0] or len(found) > 16
    return [need, *found[:16]]


_LOOP = deferred(r"\bfor\s+([A-Za-z_]\w*)\s+in\s+([^;]*?)\s*;\s*do\b(.*?)\bdone\b")


def _loops(text: str) -> tuple[str, bool]:
    """A recipe's shell loop over words, read once for each word (``for d in lib app; do $(MAKE) -C $$d; done``);
    and whether a loop had more words than are read."""
    cut = False

    def unrolled(found: re.Match[str]) -> str:
        nonlocal cut
        name, body, words = found.group(1), found.group(3).strip().rstrip(";"), found.group(2).split()
        used = re.compile(rf"\$\$?(?:{name}\b|\{{{name}\}})")
        cut = cut or len(words) > 64
        return "; ".join(used.sub(word.replace("\\", "\\\\"), body) for word in words[:64])

    return _LOOP.sub(unrolled, text), cut


_MAKE_ASSIGN = deferred(r"^\s*(?:override\s+|export\s+)?([A-Za-z_][\w.-]*)\s*(?:\?|::?|\+|!)?=\s*(.*?)\s*$", re.M)
_CONTINUED = deferred(r"\\\n[ \t]*")
_EVAL = deferred(r"\$[({]eval\s+([^)}]*)[)}]")
_DEFINE = deferred(r"^\s*define\s+([A-Za-z_][\w.-]*)\s*(?:[:+?!]?=)?\s*\n(.*?)\n\s*endef\b", re.M | re.S)
_EVAL_DEFINED = deferred(r"\$[({]eval\s+\$[({]([A-Za-z_][\w.-]*)[)}]\s*[)}]")
_TARGET_ASSIGN = deferred(
    r"^[^\s:=#][^:=#]*?:\s*(?:override\s+|export\s+|private\s+)*([A-Za-z_][\w.-]*)\s*(?:\?|::?|\+|!)?=\s*(.*?)\s*$",
    re.M,
)
_INCLUDE = deferred(r"^\s*(?:-|s)?include[ \t]+(.+)$")
_LOAD = deferred(r"^\s*-?load[ \t]+(.+)$")  # GNU make's ``load object.so(setup)``
_MAKE_WORD = deferred(r"\$[({]MAKE[)}]|\$\{?MAKE\b\}?")
_MAKE_CALL = deferred(r"(?:^|[\s;&|(/])[@+-]*g?make\b([^;&|]*)")
_MAKEFILES = deferred(r"(?:^|[\s;&|(])(?:export\s+)?MAKEFILES\s*[:+?]?=\s*(\"[^\"]*\"|'[^']*'|\S+)")


def make_text(text: str, goals: tuple[str, ...]) -> str:
    """``make_read``'s text."""
    return make_read(text, goals)[0]


def make_read(text: str, goals: tuple[str, ...]) -> tuple[str, bool]:
    """The lines of a Makefile (or justfile) that run when ``goals`` are made (``_recipes``; ``goals``: the words
    after ``make``, read as make reads them: ``make_expand.make_line``), expanded as make expands them
    (``make_expand.Expander``: every value a name is given, the command line's too; ``$(wildcard X)`` as the
    pattern X; a substitution ``$(SRCS:.c=.d)`` with no value known as ``$(SRCS).d``, any file of that suffix),
    ``$(MAKE)`` read as make, an include found through ``-I dir`` named there too. And whether a bound cut the
    reading (``hook_runs`` then takes all of the makefile's directory as what the hook runs: fail closed)."""
    # Every value a name is given, anywhere (``+=``, each branch of a conditional, each ``define``, a target's own):
    # the files an include names under any of them.
    text = _CONTINUED.sub(" ", text)  # (make joins a line ending in a backslash with the next: red team 124)
    line = make_line(list(goals))
    given: dict[str, str] = {}
    assigned = [*_MAKE_ASSIGN.findall(text), *_DEFINE.findall(text), *_TARGET_ASSIGN.findall(text)]
    for name, value in [*assigned, *line.variables.items()]:
        given[name] = f"{given[name]} {value}" if name in given else value
    expander = Expander(given)
    text = _EVAL_DEFINED.sub(lambda found: _evaluated_define(found, given), text)
    # A line that is one reference holding an ``$(eval …)`` (``$(foreach t,$(T),$(eval $(call RULE,$(t))))``): the
    # lines it makes, read as the makefile's own (red team 132).
    evaluating = Expander(given, evals=True)
    text = "\n".join(evaluating.text(x) if x.lstrip().startswith(("$(", "${")) and "eval" in x else x
                     for x in text.split("\n"))  # fmt: skip
    # A rule's name is expanded with steps of its own: names looked up for every goal (``$(SUBDIRS):``) never use
    # up the steps the makefile's own lines are expanded with (an ``include $(LOCAL)`` left as written names
    # nothing: red team 133's lead).
    naming = Expander(given)
    recipes, cut = _recipes(text, tuple(line.goals), lambda name: naming.text(name).split())
    read, looped = _loops(expander.text(recipes))
    cut = cut or looped or any(x.cut for x in (expander, naming, evaluating))
    if not line.include_dirs:
        return read, cut
    # An include make finds through ``-I dir`` (none there as named: make looks in each directory in turn).
    return "\n".join(_searched(x, line.include_dirs) if _INCLUDE.match(x) else x for x in read.splitlines()), cut


def _evaluated_define(found: re.Match[str], given: dict[str, str]) -> str:
    """``$(eval $(NAME))`` of a ``define``: its text as lines of the makefile (``$$`` read as ``$``: red team 131)."""
    body = given.get(found.group(1))
    return found.group(0) if body is None else "\n" + body.replace("$$", "$") + "\n"


def _searched(line: str, dirs: list[str]) -> str:
    found = _INCLUDE.match(line)
    assert found is not None
    words = found.group(1).split("#", 1)[0].split()
    more = [f"{d.rstrip('/')}/{w}" for w in words if not w.startswith(("/", "$")) for d in dirs]
    return f"{line.split('#', 1)[0]} {' '.join(more)}"


def make_calls(line: str) -> list[list[str]]:
    """The words after each make ``line`` runs (``make``, ``gmake``, ``/usr/bin/make``, ``$(MAKE)``, after a
    recipe's ``@``/``+``/``-``), up to the end of its command, as the shell splits them."""
    calls = []
    for call in _MAKE_CALL.finditer(_MAKE_WORD.sub("make", line)):
        try:
            calls.append(shlex.split(call.group(1)))
        except ValueError:
            calls.append(call.group(1).split())
    return calls


def make_named(line: str) -> list[_Named]:
    """The makefiles one line names: each word of an include (``include``: read whole — every line of it, recipes
    too, may run —, a glob as a pattern any file made later matches too), the files a make it runs reads for its
    goals (``make -f X``, ``-sf X``, ``-C dir``, ``$(MAKE)`` after a recipe's ``@``/``+``/``-``: red team 131) and
    those ``MAKEFILES`` names (read by every make it runs, as includes)."""
    named: list[_Named] = []
    if found := _INCLUDE.match(line):
        named += [(word, "include", ()) for word in found.group(1).split("#", 1)[0].split()]
    if found := _LOAD.match(line):  # (``load mk/ext.so``: make loads the object at every read: red team 153 F5)
        named += [(word.split("(", 1)[0], "", ()) for word in found.group(1).split("#", 1)[0].split()]
    for words in make_calls(line):
        read = make_line(words)
        files = read.files or (["GNUmakefile", "makefile", "Makefile"] if read.directory else [])
        named += [(posixpath.join(read.directory, f), "recipes", tuple(read.goals)) for f in files]
    for given in _MAKEFILES.findall(line):
        named += [(word, "include", ()) for word in given.strip("'\"").split()]
    return named


# The files a task runner a hook runs reads for what it runs (``hook_runs``): ``make lint`` the Makefile, ``pdm run
# lint`` the pyproject, … (read for the goals' recipes: make, just; the others' read whole).
RECIPE_FILES = {
    "make": ("GNUmakefile", "makefile", "Makefile"),
    "gmake": ("GNUmakefile", "makefile", "Makefile"),
    "just": ("justfile", "Justfile", ".justfile"),
    "task": ("Taskfile.yml", "Taskfile.yaml", "taskfile.yml", "taskfile.yaml"),
    "tox": ("tox.ini",),
    "nox": ("noxfile.py",),
    "invoke": ("tasks.py",),
    "inv": ("tasks.py",),
    "rake": ("Rakefile", "rakefile"),
    "deno": ("deno.json", "deno.jsonc"),
    "cargo": ("Makefile.toml",),
    "makers": ("Makefile.toml",),
    "composer": ("composer.json",),
    "poe": ("pyproject.toml",),
    "pdm": ("pyproject.toml", "pdm.toml"),  # (``pdm run lint``, ``hatch run``, ``pipenv run``: red team 155 F3)
    "hatch": ("pyproject.toml", "hatch.toml"),
    "pipenv": ("Pipfile",),
    "pixi": ("pixi.toml", "pyproject.toml"),
    "ninja": ("build.ninja",),  # (``ninja -C build lint``, ``cmake --build build``: red team 142 F2)
    "cmake": ("Makefile", "build.ninja"),
}
