"""The files an interpreter a hook runs finds by its own rules (``hook_runs``): its script operand as the interpreter
reads its command line (the options that take a value skipped, the words after the script its arguments), the files
it loads by an option, and a Python module's every file — its parent packages' ``__init__``, a compiled or extension
module — under each name Python would take (red teams 146, 149)."""

from __future__ import annotations

import contextlib
import functools
import glob
import itertools
import json
import os
import posixpath
import re
import shlex
import shutil

from mcp_server_guard.git_config import git_config_entries
from mcp_server_guard.hook_configs import read_regular_bytes
from mcp_server_guard.hook_words import (
    IDENTIFIER,
    PATTERN,
    SHELL_VALUE_OPTIONS,
    SHELLS,
    OnPath,
    assigned_values,
    loaded_by_option,
    python_modules,
    runner,
    search_files,
    uncommented,
)
from mcp_server_guard.mise_config import strings_in
from mcp_server_guard.patterns import deferred
from mcp_server_guard.shell_words import inlined

__all__ = [
    "INCLUDED",
    "PART_READ",
    "PATTERN",
    "SOURCED",
    "Named",
    "by_rules",
    "files_in",
    "found_by_rules",
    "interpreted",
    "interpreter_files",
    "make_sources",
    "manager_lines",
    "module_words",
    "more_lines",
    "more_places",
    "operands",
    "options_lines",
    "package_main",
    "package_scripts",
    "script_name",
    "scripts_read",
    "search_found",
    "shebang_lines",
    "shebang_program",
    "shell_text",
]

# Marks a directory all of which counts: a text of it that a hook runs was read only in part — cut at its size, past
# the budget, the levels or the make reader's bounds. Threat (red team 135 F1): what a bound left unread was
# never judged (a Makefile's ``lint:`` past its first 64 KiB); a bound now names more, never less.
PART_READ = "&"
Named = tuple[str, str, tuple[str, ...]]  # a word, how it is read, the goals (``hook_runs._named``)

_SHELL_PROGRAMS = SHELLS | {"source", ".", "exec"}
# Options whose value is the next word (``node -r x``, ``python3 -W ignore``, ``java -cp dir``): not the script.
_VALUE_OPTIONS = frozenset(
    {"-W", "-X", "-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions", "--title",
     "--env-file", "--input-type", "-I", "-cp", "-classpath", "--class-path", "--module-path", "--add-modules",
     "-jar", "-f", "-l", "--preload"}
)  # fmt: skip
# Of those, the ones whose value is a file the program runs or loads (``node --require ./setup``, ``java -jar x``).
_LOADING_OPTIONS = frozenset(
    {"-r", "--require", "--import", "--loader", "--experimental-loader", "-jar", "-f", "-l", "--preload"}
)
_CODE_OPTIONS = frozenset({"-c", "-e", "-E", "-p", "--eval", "--print", "-m"})  # code or a module: no script after
_NOT_NODE_CODE = _CODE_OPTIONS - {"-p", "--print"}


def _argv(line: str) -> list[str]:
    try:
        return shlex.split(uncommented(line))
    except ValueError:
        return line.split()


def interpreter_files(line: str) -> tuple[list[str], list[str]]:
    """(every word an interpreter on ``line`` finds a file by, the script operands among them): the first word that
    is not an option or an option's value (``node -r ./setup scripts/check``: ``scripts/check``; ``python3 -W
    ignore check``: ``check``), and the values of the options that load a file (``./setup``). Not the script's own
    arguments (``node scripts/check.js lib``: ``lib`` is data — red team 149 F8), nor past code given inline."""
    argv = _argv(line)
    loaded: list[str] = []
    scripts: list[str] = []
    for at, word in enumerate(argv[:64]):
        if not runner(word):
            continue
        shell = posixpath.basename(word) in _SHELL_PROGRAMS
        # (``-p`` prints code in node, loops in perl)
        code = _CODE_OPTIONS if posixpath.basename(word).rstrip("0123456789.") in _NODE_PROGRAMS else _NOT_NODE_CODE
        index = at + 1
        while index < len(argv):
            given = argv[index]
            name, equals, value = given.partition("=")
            if given == "--":
                index += 1
            elif given.startswith(("-", "+")) and len(given) > 1:
                if (shell and "c" in given.lstrip("-+") and not given.startswith("--")) or (not shell and name in code):
                    break
                if name in (SHELL_VALUE_OPTIONS if shell else _VALUE_OPTIONS) and not equals and index + 1 < len(argv):
                    if name in _LOADING_OPTIONS:
                        loaded.append(argv[index + 1])
                    index += 2
                    continue
                if equals and name in _LOADING_OPTIONS:
                    loaded.append(value)
                index += 1
                continue
            if runner(given) or ("=" in given and not given.startswith(("/", "."))):
                break  # (another interpreter: its own turn; an assignment to the program's environment)
            # (a subcommand, no script: ``swift package …`` in lefthook's own hook, ``bun test``, ``deno fmt``; ``node
            # --test test/`` runs the project's tests — red team 178 F1, F2; ``dart run x``: ``x`` is the script)
            program = posixpath.basename(word).rstrip("0123456789.")
            if given == "run" and program in _SUBCOMMANDS and program != "swift":
                index += 1
                continue
            if given in _SUBCOMMANDS.get(program, ()) or "--test" in argv[at + 1 : index]:
                break
            scripts.append(given)
            if posixpath.basename(word) == "java" and "." in given and IDENTIFIER.fullmatch(given):
                scripts.append(given.replace(".", "/"))  # (``java -cp tools com.x.Check``: com/x/Check.class)
            break
    # (a bare package a node program loads, ``node -r dotenv/config``, ``--import tsx``: from node_modules — red team
    # 151 F3; it lies in a build directory, so its change is asked, not refused)
    node = any(posixpath.basename(w).rstrip("0123456789.") in _NODE_PROGRAMS for w in argv[:8])
    loaded += [f"node_modules/{name}" for name in loaded if node and _BARE.fullmatch(name)]
    return list(dict.fromkeys([*loaded, *scripts])), list(dict.fromkeys(scripts))


_NODE_PROGRAMS = frozenset({"node", "nodejs", "bun", "deno", "tsx", "ts-node", "esno", "vite-node"})
_SUBCOMMANDS = {
    "swift": frozenset({"package", "build", "run", "test", "repl", "sdk", "format"}),
    "dart": frozenset({"test", "compile", "pub", "analyze", "format", "fix", "doc", "create", "info"}),
    "bun": frozenset({"test", "install", "i", "add", "remove", "x", "create", "upgrade", "pm", "build", "link"}),
    "deno": frozenset({"test", "fmt", "lint", "task", "check", "compile", "install", "bench", "doc", "info", "cache",
                       "coverage", "upgrade", "publish"}),
}  # fmt: skip
_BARE = deferred(r"(?:@[\w.-]+/)?[\w][\w.-]*(?:/[\w.-]+)*")  # a package's name (and a path in it), not ./x or /x

# An interpreter's options given in its environment (``export NODE_OPTIONS="--require ./tools/setup"``,
# ``PERL5OPT=-MCheck``, ``RUBYOPT=-rx``, ``JAVA_TOOL_OPTIONS=-javaagent:x.jar``): read as its own command line
# (red team 151 F1, F2).
_OPTIONS_GIVEN = deferred(
    r"""(?:^|[\s;&|(])(?:export\s+)?(NODE_OPTIONS|PERL5OPT|RUBYOPT|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS)"""
    r"""\+?=("[^"\n]*"|'[^'\n]*'|[^\s;&|]*)"""
)
_OPTIONS_OF = {"NODE_OPTIONS": "node", "PERL5OPT": "perl", "RUBYOPT": "ruby"}


def options_lines(text: str) -> list[str]:
    """The command lines an interpreter's options given in the environment amount to (``_OPTIONS_GIVEN``)."""
    return [f"{_OPTIONS_OF.get(name, 'java')} {value.strip(chr(34) + chr(39))}"
            for name, value in _OPTIONS_GIVEN.findall(text)][:16]  # fmt: skip


def module_words(module: str) -> list[str]:
    """Every file Python may take for ``module`` and the packages it lies in (relative names; ``*`` a pattern):
    each package's ``__init__`` (imported first: red team 149 F2), a module as source, as a sourceless compiled file
    or as an extension module (which Python takes before the source: F3), and a package's ``__main__``."""
    parts = module.split(".")
    words: list[str] = []
    for end in range(1, len(parts) + 1):
        base = "/".join(parts[:end])
        words += [f"{base}.py", f"{base}.pyc", f"{base}.*so", f"{base}/__init__.py", f"{base}/__init__.*so"]
    return [*words, f"{'/'.join(parts)}/__main__.py"]


def package_main(directory: str) -> list[str]:
    """The files a directory's ``package.json`` names as what it runs (``node dir``, ``require('./dir')``: red team
    149 F6), relative to it. Read as any hook text is: a regular file, no link followed."""
    data = read_regular_bytes(None, os.path.join(directory, "package.json"), 64 << 10)
    if not data:
        return []
    with contextlib.suppress(ValueError, RecursionError):
        manifest = json.loads(data) if data.lstrip().startswith(b"{") else {}
        # (its ``main``, or what its ``exports`` give for any condition: ``"exports": {".": "./dist/loader.mjs"}``,
        # ``--import tsx``: red team 151 F3)
        found = [v for v in strings_in([manifest.get("main"), manifest.get("exports")]) if v and "\x00" not in v]
        return found[:32]
    return []


# A package manager running a package.json script (``npm test``, ``npm run lint``, ``yarn lint``, ``pnpm -C sub lint``):
# what the script's text runs, and its ``pre``/``post`` scripts' (red team 174 F1).
_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun"})
_MANAGER_WORD = deferred(r"(?<![\w.-])(?:npm|pnpm|yarn|bun)(?![\w.-])")
_PREFIXES = frozenset({"--prefix", "-C", "--dir", "--cwd", "-w", "--workspace", "--filter", "-F"})
_ALL = frozenset({"--workspaces", "--ws", "-ws", "-r", "--recursive", "--all"})  # (every workspace's)
_NPM_SCRIPTS = {"test": "test", "t": "test", "tst": "test", "start": "start", "stop": "stop"}
# What a package manager's own commands run of the package's scripts (npm's lifecycle: red team 176 F3).
_LIFECYCLE = {
    **dict.fromkeys(("install", "i", "ci", "add", "isntall"), ("preinstall", "install", "postinstall", "prepare")),
    **dict.fromkeys(("it", "install-test", "cit", "install-ci-test"),
                    ("preinstall", "install", "postinstall", "prepare", "test")),
    "restart": ("restart", "stop", "start"), "pack": ("prepack", "prepare", "postpack"),
    "publish": ("prepublishOnly", "prepack", "prepare", "postpack", "publish", "postpublish"),
    "version": ("preversion", "version", "postversion"), "rebuild": ("preinstall", "install", "postinstall"),
}  # fmt: skip
_OWN = frozenset({"remove", "rm", "exec", "dlx", "x", "create", "init", "link", "unlink", "update", "up", "upgrade",
                  "outdated", "audit", "config", "set", "get", "why", "ls", "list", "info", "view", "login",
                  "logout", "cache", "help"})  # fmt: skip


def package_scripts(line: str, places: list[str]) -> list[tuple[str, str]]:
    """The package.json scripts ``line`` runs through a package manager, each (its text, the package's directory):
    a script by name (``npm run lint``, ``npm test``, ``yarn lint``) with its ``pre`` and ``post`` scripts, or what
    the manager's own command runs (``npm install``: ``prepare``, ``postinstall`` …), in the directory an option names
    anywhere on the line (``--prefix``/``-C``/``--dir``/``--cwd``/``-w``), in every workspace (``--workspaces``,
    ``-r``), or in each of ``places`` — read as lines of the hook (red teams 174 F1, 176 F1–F3). 16 at most."""
    if not _MANAGER_WORD.search(line):
        return []
    words = _argv(line)
    found: list[tuple[str, str]] = []
    for at, word in enumerate(words[:64]):
        if posixpath.basename(word) not in _MANAGERS:
            continue
        rest, dirs, every, plain = words[at + 1 : at + 24], [], False, []
        while rest and rest[0] not in ("&&", "||", ";", "|"):
            option, _, value = rest.pop(0).partition("=")
            if option in _PREFIXES and (value or rest):
                dirs.append(value or rest.pop(0))
            elif option in _ALL:
                every = True
            elif not option.startswith("-"):
                plain.append(option)
        command = plain[0] if plain else "install"  # (``npm``/``yarn`` alone: yarn installs)
        if command in ("run", "run-script", "rum", "urn"):
            names = _around(plain[1]) if len(plain) > 1 else ()
        elif command in _LIFECYCLE:
            names = _LIFECYCLE[command]
        elif posixpath.basename(word) == "npm":
            names = _around(_NPM_SCRIPTS[command]) if command in _NPM_SCRIPTS else ()
        else:
            names = _around(command) if command not in _OWN else ()
        wheres = [os.path.join(p, d) for d in dirs for p in places] or places
        wheres += [w for p in places for w in _workspaces(p)] if every else []
        for where in dict.fromkeys(os.path.normpath(w) for w in wheres[:32]):
            found += [(text, where) for text in _scripts(where, names)]
    return found[:16]


def scripts_read(
    line: str, places: list[str], bins: OnPath, budget: list[int], found: dict[str, None]
) -> list[tuple[str, str, tuple[str, ...] | None]]:
    """The package.json scripts ``line`` runs (``package_scripts``) as texts the hook reader reads in turn, each once,
    with the package's ``node_modules/.bin`` first on the hooks' PATH (``bins``) — within the reader's ``budget``;
    past it, the package's directory counts whole (``found``)."""
    texts: list[tuple[str, str, tuple[str, ...] | None]] = []
    for body, where in package_scripts(line, places):
        bins.dirs += [b for b in [posixpath.join(where, "node_modules/.bin")] if b not in bins.dirs][
            : 16 - len(bins.dirs)
        ]
        if (key := f"{where}\0{body}") in bins.shell_read:
            continue
        bins.shell_read.add(key)
        if min(budget) <= 0:
            found[PART_READ + where] = None
            continue
        texts.append((body, where, None))
        budget[0], budget[1] = budget[0] - 1, budget[1] - len(body)
    return texts


def _around(name: str) -> tuple[str, ...]:
    return (f"pre{name}", name, f"post{name}")


def _workspaces(directory: str) -> list[str]:
    """The workspaces ``directory``'s package.json names (``"workspaces": ["packages/*"]``), 32 at most — only those
    below it as its real path lies (a ``../`` pattern, or a link to elsewhere, is not read: the server reads nothing
    outside the tree a command could have pointed it at)."""
    data = read_regular_bytes(None, os.path.join(directory, "package.json"), 1 << 20)
    with contextlib.suppress(ValueError, RecursionError, AttributeError):
        given = json.loads(data).get("workspaces") if data and data.lstrip().startswith(b"{") else None
        patterns = given.get("packages") if isinstance(given, dict) else given
        if isinstance(patterns, list):
            top = os.path.realpath(directory)
            found = [m for p in patterns[:32] if isinstance(p, str) for m in sorted(glob.glob(os.path.join(top, p)))]
            return [m for m in found if os.path.realpath(m).startswith(top + os.sep)][:32]
    return []


def _scripts(directory: str, names: tuple[str, ...]) -> list[str]:
    """The texts of the scripts ``names`` in ``directory``'s package.json."""
    data = read_regular_bytes(None, os.path.join(directory, "package.json"), 1 << 20) if names else None
    with contextlib.suppress(ValueError, RecursionError, AttributeError):
        scripts = json.loads(data).get("scripts") if data and data.lstrip().startswith(b"{") else None
        if isinstance(scripts, dict):
            return [v for k in names if isinstance(v := scripts.get(k), str)]
    return []


_ENTRIES = ("__main__.py", "index.js", "index.mjs", "index.cjs", "package.json")  # a directory's entry, run as it


def by_rules(path: str, direct: bool) -> tuple[list[str], list[str], list[str]]:
    """What an interpreter may take for ``path`` (a word it finds a file by: ``interpreter_files``; ``direct``: its
    script operand) when no file is there: (patterns, directories all of whose files count, paths) — a suffix added
    (``node scripts/check``: ``scripts/check.js``), a directory's entry (``index.js``, ``__main__.py``, what
    ``package.json`` names as ``main``), made later too (red teams 146 F1, 149 F6); a directory given as the script
    counts whole (``python3 tools``: any module there)."""
    if os.path.isfile(path):
        return [], [], []
    patterns = [glob.escape(path) + ".*"]
    if direct:
        return [*patterns, glob.escape(path) + "/*"], [path] if os.path.isdir(path) else [], []
    paths = [posixpath.join(path, entry) for entry in _ENTRIES]
    paths += [posixpath.normpath(posixpath.join(path, main)) for main in package_main(path)]
    return patterns, [], paths


def interpreted(line: str, words: list[str]) -> tuple[list[Named], set[str], set[str]]:
    """What an interpreter on ``line`` loads by its own rules (``hook_interpreters``; ``words``: the line's
    ``program_words``): the names to add (a module an option loads, ``node_modules/dotenv/config``), every word it
    finds a file by, and its script operands (``node scripts/check``: red team 146 F1)."""
    loaded = loaded_by_option(line, words)
    found, scripts = interpreter_files(line)
    named: list[Named] = [(name, "run", ()) for name in dict.fromkeys([*loaded, *found]) if name not in words]
    return named, {*found, *loaded}, set(scripts)


def found_by_rules(path: str, flags: tuple[bool, bool], rules: tuple[bool, bool, bool], found: dict[str, None]) -> None:
    """What else a word naming ``path`` runs (``hook_interpreters.by_rules``; a path no file is at, written with a
    ``/``, any suffix a program may add: ``require(path.resolve('tools/check'))`` in a hook of any language, red team
    151 F4); every file of a directory a line runs whole (``flags[0]``: ``run-parts dir``, ``find dir -exec sh {} ;``,
    ``ls dir | xargs``: red team 136 F1); what make may remake it from (``flags[1]``: a file make reads or makes)."""
    runs_all, made = flags
    if path.startswith(PATTERN):
        return  # (a pattern: named as one, no file to complete)
    if made:
        found.update(dict.fromkeys(PATTERN + p for p in make_sources(path)))
    patterns, wholes, paths = by_rules(path, rules[1]) if rules[0] else ([], [], [])
    if rules[2] and not rules[0] and not os.path.lexists(path):
        patterns = [glob.escape(path) + ".*"]
    found.update(dict.fromkeys([*(PATTERN + p for p in patterns), *(PART_READ + w for w in wholes), *paths]))
    if runs_all and os.path.isdir(path) and path not in found:
        found[PART_READ + path] = None


_SHEBANG = deferred(r"#!\s*(?:\S*/)?(?:env\s+(?:-\S+\s+)*)?(python|pypy|perl)[\d.]*\b")
_PERL_USES = deferred(r"^\s*(?:use|require)\s+([A-Za-z_]\w*(?:::\w+)*)", re.M)


def shebang_lines(text: str) -> list[str]:
    """The modules a hook written in Python or Perl loads (its shebang names the interpreter), as the command lines
    that load them (``python3 -m x``, ``perl -Mx``): its imports by any spelling, a quoted module name
    (``[sys.executable, "-m", "tools.check"]``: red team 153 F4)."""
    lines = _shebang_command(text)
    found = _SHEBANG.match(text)
    if found is None:
        return lines
    if found.group(1) == "perl":
        return lines + [f"perl -M{name}" for name in dict.fromkeys(_PERL_USES.findall(text[: 256 << 10]))][:64]
    return lines + [f"python3 -m {name}" for name in python_modules(text[: 256 << 10], "python3")]


_ENV_VALUE_OPTIONS = frozenset({"-u", "--unset", "-C", "--chdir", "-P", "--path"})  # (``-S``'s value is split)


def _shebang_command(text: str) -> list[str]:
    """A text's ``#!`` line as the command line it starts (``#!/usr/bin/env -S node --require ./tools/setup.js``:
    ``node --require ./tools/setup.js``; ``#!/usr/bin/python3 -mtools.check``), read as any line of the text is —
    the reader skips it as a comment (red team 155 F1). ``env``'s own options and assignments dropped."""
    if not text.startswith("#!"):
        return []
    words = _argv(text[2:].split("\n", 1)[0].replace("\\", " "))
    if words and posixpath.basename(words[0]) == "env":
        words = words[1:]
        while words and (words[0].startswith("-") or "=" in words[0]):
            words = words[2:] if words[0] in _ENV_VALUE_OPTIONS else words[1:]
    return [shlex.join(words)] if words else []


# A script named by a suffix past the reader's lists (``cmake -P lint.cmake``, ``ctest -S x.cmake``, ``bats t.bats``,
# ``runghc x.hs``: a program's script, made later too — red team 163 F3), shaped as a file's name.
_FILE_NAME = deferred(r"[\w@+-][\w@+.-]*\.[A-Za-z]\w{0,9}")
_DATA_SUFFIXES = (".json", ".jsonc", ".json5", ".yaml", ".yml", ".xml", ".txt", ".md", ".rst", ".csv", ".tsv", ".lock",
                  ".toml", ".ini", ".cfg", ".conf", ".html", ".htm", ".css", ".scss", ".log", ".out", ".svg", ".png",
                  ".jpg", ".jpeg", ".gif", ".ico", ".pdf", ".map", ".snap", ".patch", ".diff", ".sarif", ".lcov",
                  ".info", ".tgz", ".gz", ".zip", ".tar", ".com", ".org", ".io", ".net", ".dev")  # fmt: skip


def script_name(word: str, at: int, program: str) -> bool:
    """Whether ``word``, the ``at``-th word of its line (``program`` the first), is a script by its name alone (made
    later too): the first operand of an installed program, shaped as a file's name with a suffix that is not data's —
    not a dotted name of code in another language read as shell (``call module.attribute``)."""
    return (at == 1 and _FILE_NAME.fullmatch(word) is not None and not word.lower().endswith(_DATA_SUFFIXES)
            and _installed(program))  # fmt: skip


@functools.lru_cache(maxsize=1024)
def _installed(program: str) -> bool:
    """Whether ``program`` is a file named by its path, or one on the server's PATH."""
    return "/" in program or shutil.which(program) is not None


# What a hook hands to another program, never read as shell: another language's code, a structured format.
_NOT_SHELL = (".py", ".pyw", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx", ".rb", ".pl", ".pm", ".php",
              ".lua", ".ps1", ".psm1", ".tcl", ".exp", ".awk", ".sed", ".r", ".jl", ".ex", ".exs", ".groovy", ".gradle",
              ".kts", ".java", ".go", ".rs", ".c", ".h", ".cc", ".cpp", ".swift", ".dart", ".scm", ".rkt", ".clj",
              ".bb", ".coffee", ".applescript", ".scpt", ".cmake", ".json", ".jsonc", ".json5", ".yaml", ".yml",
              ".toml", ".xml", ".md", ".rst", ".html", ".htm", ".css", ".scss", ".csv", ".tsv", ".lock", ".log",
              ".svg")  # fmt: skip


def shell_text(path: str, body: str) -> bool:
    """Whether a file a hook runs is read as shell (for what it runs in turn): by its ``#!`` line's program (``#!/bin/
    bash -e``: red team 165 F1), else unless its suffix is another language's or a structured format's (a file a
    hook sources or evals by any spelling, ``hooks.conf``, ``pre-commit.v2``: red team 168 F2); never a binary (a NUL
    in it: red team 132 F1)."""
    if "\x00" in body:
        return False
    if body.startswith("#!"):
        return shebang_program(body) in SHELLS
    return not path.lower().endswith(_NOT_SHELL)


def files_in(directory: str) -> list[str]:
    """The files a line that runs a directory whole runs (``run-parts d``, ``find d -exec {} ;``), read for what they
    run in turn (red team 168 F1): 64 at most (the directory counts whole: ``found_by_rules``)."""
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        return sorted(e.path for e in itertools.islice(entries, 4096) if e.is_file())[:64]
    return []


# A quoted name in any language (``subprocess.call(['./scripts/lint'])``), an option's attached value (``awk
# -fcheck.awk``), what a test expects may be there (``[ -f local.tcl ] && tclsh local.tcl``).
# (the option's run of name characters taken whole, possessively, then cut at its last ``.suffix``: a regex that gave
# it back a character at a time from every ``-`` took quadratic time on ``-c.-c.…`` — red team 163 E1)
_OPERANDS = deferred(r"""(['"])([^'"\s]+)\1|(?<![\w-])-([a-zA-Z][\w./:-]*+)""")
_SUFFIXED_TAIL = deferred(r"(.*\.\w+)", re.S)


def operands(line: str) -> list[str]:
    """The names a line may run that splitting it at blanks glues or drops (``_OPERANDS``): a quoted name, each tail
    of an option with its value attached (``-nfcheck.sed``: ``check.sed`` among them)."""
    found: list[str] = []
    for _q, quoted, run in _OPERANDS.findall(line):
        tail = cut[1] if not quoted and (cut := _SUFFIXED_TAIL.match(run[:4096])) else ""
        found += [quoted] if quoted else [tail[i:] for i in range(min(len(tail), 16))]  # (option letters glued on)
        if len(found) >= 256:
            break
    return [w for w in found if w][:256]


def shebang_program(text: str) -> str:
    """The program a text's ``#!`` line runs it with (``bash`` for ``#!/usr/bin/env -S bash -e``), "" for none."""
    lines = _shebang_command(text)
    words = _argv(lines[0]) if lines else []
    return posixpath.basename(words[0]) if words else ""


def more_places(more: list[str], places: list[str], found: dict[str, None], limit: int) -> None:
    """Add to ``places`` the directories ``more`` names, ``limit`` at most: past them, all of each counts."""
    for place in [p for p in more if p not in places]:
        if len(places) < limit:
            places.append(place)
        else:
            found[PART_READ + place] = None


def search_found(text: str, base: str, work_tree: str) -> list[str]:
    """What a text's search paths name for the hook reader, marked: the archives on them (a pattern for ``dir/*``)
    and the directories Python reads compiled modules from, whole (``hook_words.search_files``)."""
    archives, caches = search_files(text, base, work_tree)
    return [*(PATTERN + a if "*" in a else a for a in archives), *(PART_READ + c for c in caches)]


# The files GNU make's built-in rules remake a file from (``make -p -f /dev/null``): ``%: %.sh`` copies ``x.sh`` over
# ``x``, ``%: %.c`` compiles it, chains through ``%.c: %.y``, …; ``%.o: %.c`` makes ``x.o`` from ``x.c``. Before it
# makes a goal, make remakes every makefile it read and every prerequisite: a new ``Makefile.sh`` or
# ``scripts/check.c`` runs (red team 157 F1). (Not the version-control rules' ``RCS/x,v``, ``SCCS/s.x``: they need
# ``co`` or ``get``.)
_MADE_SUFFIXES = (".o", ".a", ".out", ".ln", ".elc", ".sym", ".dvi", ".info")


def make_sources(path: str) -> list[str]:
    """The patterns (globs) of the files make's built-in rules may remake ``path`` from: its name with anything
    after it (``x.sh``, ``x.c``, ``x,v``), and for a made suffix its stem's (``x.o``: ``x.c``)."""
    stem, suffix = posixpath.splitext(path)
    return [glob.escape(path) + "?*", *([glob.escape(stem) + ".*"] if suffix in _MADE_SUFFIXES else [])]


# A hook manager's config that takes in other files (lefthook's ``extends:``, globs too) or runs the scripts of a
# directory it names (``source_dir:``, ``source_dir_local:``): read as lines the reader takes in turn (red team 158).
_INCLUDING = deferred(r"""^(["']?)(extends|source_dir|source_dir_local)\1\s*[:=]\s*(.*)$""", re.M)
_LISTED = deferred(r"""^\s+-\s*(.+)$""")
INCLUDED, SOURCED = "hook-config-extends", "hook-config-source-dir"  # (the lines' first words: ``hook_runs._named``)


def manager_lines(text: str) -> list[str]:
    """``hook-config-extends x.yml`` for each file a hook manager's config takes in, ``hook-config-source-dir d`` for
    each directory whose scripts it runs — in YAML (a list over lines too), TOML or JSON spellings."""
    lines: list[str] = []
    for found in _INCLUDING.finditer(text[: 256 << 10]):
        values = [found.group(3)]
        for line in text[found.end() :].split("\n")[1:64]:
            if not (listed := _LISTED.match(line)):
                break
            values.append(listed.group(1))
        names = [n for v in values for n in re.split(r"[\s,\[\]]+", v.split(" #", 1)[0]) if n.strip("'\"")]
        word = INCLUDED if found.group(2) == "extends" else SOURCED
        lines += [f"{word} {shlex.quote(name.strip(chr(34) + chr(39)))}" for name in names[:64]]
    return lines


# A program a ``git -c`` setting runs (``git -c 'alias.chk=!./lint-check' chk``, ``-c core.fsmonitor=tools/x``): its
# command line read as a line of the text (red team 162 F3).
# (a key's name bounded and taken possessively: ``-c.-c.…`` took quadratic time — red team 163 E1)
# A setting written anywhere as ``key=value`` counts as one (``GIT_CONFIG_PARAMETERS="'alias.chk=!tools/x'"``: red
# team 163 F2), where the key is one that runs a program.
_GIT_SETTING = deferred(r"""(?:(?<![\w-])-c\s*|(?<![\w.-]))["']?([\w.-]{1,256}+)=(![^"'\n]+|[^\s"'\n]+)["']?""", re.I)
# A text that is a git config (``GIT_CONFIG_GLOBAL=tools/gitconfig``, ``-c include.path=…``: what git reads as
# settings): its first line a section's.
_CONFIG_TEXT = deferred(r"""^(?:\s*(?:[#;][^\n]*)?\n)*\s*\[[A-Za-z][\w.-]*(?:\s+"[^"\n]*")?\]""")
_RUNNING_KEYS = deferred(
    r"(?i)^(?:alias\..+|core\.(?:fsmonitor|pager|editor|sshcommand|hookspath|askpass)|diff\.external|sequence\.editor"
    r"|.*\.(?:textconv|command|cmd|clean|smudge|process|driver|helper|program|path))$"
)


# A file a shell or ``eval`` is handed anywhere in a text, a code string too (``eval "$(cat local-checks)"``, awk's
# ``system("sh local-checks")``, ``os.system('sh x')``): named, made later too (red team 176 F5).
_HANDED = deferred(
    r"(?<![\w./-])(sh|bash|zsh|dash|ksh|source|cat|\.)[ \t]++(?:-[a-zA-Z]+[ \t]++)*['\"]?([\w@%+=:,./-]*\w)"
)


_EVALUATED = deferred(r"(?<![\w.-])(?:eval|source|\.)\s|<\(|\|\s*(?:ba|z|da|k)?sh\b")


def handed_lines(text: str) -> list[str]:
    """``_HANDED``'s names as lines the reader reads: ``sh x`` for a shell's, ``exec x`` for what ``cat`` gives where
    the line evaluates it (``eval``, ``source <(…)``, ``| sh``: run if it is there, read as shell by what it is)."""
    found: dict[tuple[str, str], None] = {}
    for line in text[: 256 << 10].splitlines():
        evaluated = bool(_EVALUATED.search(line))  # (``cat`` a data file's: ``V=$(cat VERSION)`` — red team 178 F3)
        found |= dict.fromkeys(
            (b, n) for b, n in _HANDED.findall(line) if not n.startswith("-") and (evaluated or b != "cat")
        )
    return [f"{'exec' if by == 'cat' else 'sh'} {shlex.quote(name)}" for by, name in list(found)[:64]]


def more_lines(text: str) -> list[str]:
    """The command lines a text amounts to besides its own lines: an interpreter's options given in its environment
    (``options_lines``), its ``#!`` line and a Python or Perl hook's modules (``shebang_lines``), what a hook
    manager's config takes in (``manager_lines``), and what a ``git -c`` setting runs."""
    settings = [value.lstrip("!") for key, value in _GIT_SETTING.findall(text) if _RUNNING_KEYS.match(key)]
    if _CONFIG_TEXT.match(text[:4096]):
        entries = git_config_entries(text.encode("utf-8", "surrogateescape")) or []
        settings += [value.lstrip("!") for key, value in entries if _RUNNING_KEYS.match(key)]
    values = assigned_values(text)  # (a program given a variable's value in its environment: red team 163 F1)
    # (what positional parameters make: ``set -- a b``, a function's body as each call gives it — red team 172 F1)
    lines = [*options_lines(text), *shebang_lines(text), *manager_lines(text), *settings[:64], *values]
    return [*lines, *inlined(text), *handed_lines(text)]
