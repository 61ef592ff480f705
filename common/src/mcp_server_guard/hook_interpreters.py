"""The files an interpreter a hook runs finds by its own rules (``hook_runs``): its script operand as the interpreter
reads its command line (the options that take a value skipped, the words after the script its arguments), the files
it loads by an option, and a Python module's every file — its parent packages' ``__init__``, a compiled or extension
module — under each name Python would take (red teams 146, 149)."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import posixpath
import shlex

from mcp_server_guard.hook_configs import read_regular_bytes
from mcp_server_guard.hook_words import IDENTIFIER, runner, uncommented

__all__ = ["by_rules", "interpreter_files", "module_words", "package_main"]

_SHELL_PROGRAMS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "source", ".", "exec"})
# Options whose value is the next word (``node -r x``, ``python3 -W ignore``, ``java -cp dir``): not the script.
_VALUE_OPTIONS = frozenset(
    {"-W", "-X", "-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions", "--title",
     "--env-file", "--input-type", "-I", "-cp", "-classpath", "--class-path", "-p", "--module-path", "--add-modules",
     "-jar", "-f", "-l", "--preload", "-o", "+o", "-O", "+O", "--rcfile", "--init-file", "-x", "-M", "-i"}
)  # fmt: skip
# Of those, the ones whose value is a file the program runs or loads (``node --require ./setup``, ``java -jar x``).
_LOADING_OPTIONS = frozenset(
    {"-r", "--require", "--import", "--loader", "--experimental-loader", "-jar", "-f", "-l", "--preload"}
)
_CODE_OPTIONS = frozenset({"-c", "-e", "-E", "-p", "--eval", "--print", "-m"})  # code or a module: no script after


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
        index = at + 1
        while index < len(argv):
            given = argv[index]
            name, equals, value = given.partition("=")
            if given == "--":
                index += 1
            elif given.startswith(("-", "+")) and len(given) > 1:
                if (shell and "c" in given.lstrip("-+") and not given.startswith("--")) or (
                    not shell and name in _CODE_OPTIONS
                ):
                    break
                if name in _VALUE_OPTIONS and not equals and index + 1 < len(argv):
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
            scripts.append(given)
            if posixpath.basename(word) == "java" and "." in given and IDENTIFIER.fullmatch(given):
                scripts.append(given.replace(".", "/"))  # (``java -cp tools com.x.Check``: com/x/Check.class)
            break
    return list(dict.fromkeys([*loaded, *scripts])), list(dict.fromkeys(scripts))


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


def package_main(directory: str) -> str | None:
    """The file a directory's ``package.json`` names as its ``main`` (``node dir``, ``require('./dir')``: red team
    149 F6), relative to it; None without one. Read as any hook text is: a regular file, no link followed."""
    data = read_regular_bytes(None, os.path.join(directory, "package.json"), 64 << 10)
    if not data:
        return None
    with contextlib.suppress(ValueError, RecursionError):
        main = json.loads(data).get("main") if data.lstrip().startswith(b"{") else None
        return main if isinstance(main, str) and main and "\x00" not in main else None
    return None


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
    if (main := package_main(path)) is not None:
        paths.append(posixpath.normpath(posixpath.join(path, main)))
    return patterns, [], paths
