"""What a project's mise configuration does when the user's shell enters the project (``hook_runs``): the files its
``[env]`` sources (``_.source``, ``_.file``), the commands its ``[hooks]`` run, and the directories it puts first on
PATH (``_.path``, ``_.python.venv``) — read with a TOML parser, as mise reads them, so that every spelling TOML has
for one key counts (red team 146 F5: ``env._.source = …``, ``_ = { source = … }``, ``[env._]``, an array over
lines: a line reader saw only ``_.source =`` under ``[env]``)."""

from __future__ import annotations

import glob
import os
import re
import shlex
import tomllib
from collections.abc import Iterator
from typing import Any

from mcp_server_guard.patterns import deferred

__all__ = ["MISE_FILES", "MISE_PLACES", "mise_files", "mise_path_dirs", "mise_runs", "strings_in"]

# Every file mise reads in a project directory (as the protected list names them: policies/default.toml), and its
# environment variants (``mise.ci.toml``) and ``conf.d`` directories, matched as patterns.
MISE_FILES = (".mise.toml", "mise.toml", ".config/mise.toml", "mise.local.toml", ".mise.local.toml",
              ".config/mise/config.toml", ".config/mise/config.local.toml", "mise/config.toml",
              ".mise/config.toml")  # fmt: skip
_MISE_PATTERNS = ("mise.*.toml", ".mise.*.toml", ".config/mise.*.toml", ".config/mise/conf.d/*.toml",
                  "mise/conf.d/*.toml", ".mise/conf.d/*.toml", ".config/mise/config.*.toml")  # fmt: skip
# What makes a directory one mise reads a config in (``git_dirs``: with no repository there too).
MISE_PLACES = (*MISE_FILES, ".config/mise/conf.d", "mise/conf.d", ".mise/conf.d")
_PATTERN_MAX = 16  # files one pattern names at most (past them, the reader counts the directory whole: hook_runs)
_TASK_DIRS = ("mise-tasks", ".mise-tasks", ".mise/tasks", ".config/mise/tasks", "mise/tasks")
_EXEC = deferred(r"""\bexec\(\s*command\s*=\s*(['"])(.*?)\1""")
_CONFIG_ROOT = deferred(r"\{\{\s*config_root\s*\}\}/?")
# The line reader's spellings, for a file TOML cannot parse (mise refuses it too, but a half-written file is read).
_SECTION = deferred(r"^\s*\[\s*([^\]]+?)\s*\]")
_RUNS_LINE = deferred(r"^\s*_\.(?:source|file)\s*=")
_QUOTED = re.compile(r"['\"]([^'\"]+)['\"]")


def mise_files(work_tree: str) -> tuple[list[str], bool]:
    """The mise config files there are at ``work_tree`` (relative), and whether a pattern matched more than
    ``_PATTERN_MAX`` (the caller then counts the directory whole)."""
    names = [name for name in MISE_FILES if os.path.lexists(os.path.join(work_tree, name))]
    more = False
    for pattern in _MISE_PATTERNS:
        matched = sorted(glob.glob(pattern, root_dir=work_tree, include_hidden=True))
        more = more or len(matched) > _PATTERN_MAX
        names += [m for m in matched[:_PATTERN_MAX] if m not in names]
    return names, more


def _parsed(text: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return None


def _tables(value: object) -> Iterator[dict[str, Any]]:
    """A table, or each table of an array of tables (``[[env]]``)."""
    if isinstance(value, dict):
        yield value
    elif isinstance(value, list):
        yield from (item for item in value if isinstance(item, dict))


def strings_in(value: object, depth: int = 0) -> Iterator[str]:
    """Every string in ``value`` (a string, an array, a table: ``{ path = "x.sh", redact = true }``)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list) and depth < 8:
        for item in value:
            yield from strings_in(item, depth + 1)
    elif isinstance(value, dict) and depth < 8:
        for item in value.values():
            yield from strings_in(item, depth + 1)


def _directives(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Each ``_`` table of ``[env]`` (mise's directives: ``source``, ``file``, ``path``, ``python``)."""
    for env in _tables(data.get("env")):
        yield from _tables(env.get("_"))
    yield from _tables(data.get("_"))  # (a top-level ``[_]``: an extension table, not read — but never trusted)


def _path(value: str) -> str:
    return _CONFIG_ROOT.sub("./", value)


def mise_runs(text: str) -> str:
    """What of a mise config runs when the user's shell enters the project, as shell lines the hook reader reads:
    ``source 'x'`` for each file ``[env]`` sources or loads (``_.source``, ``_.file``), and each ``[hooks]``
    command — not ``[tasks]``, which run only on ``mise run`` (red team 51 F5: editing a task's script is everyday
    work). A file TOML cannot parse is read line by line."""
    data = _parsed(text)
    if data is None:
        return _lines(text)
    lines: list[str] = []
    for table in _directives(data):
        for key in ("source", "file"):
            lines += [f"source {shlex.quote(_path(name))}" for name in strings_in(table.get(key))]
    lines += [_path(command) for command in strings_in(data.get("hooks"))]
    # A task a hook runs (``enter = { task = "setup" }``): its commands, or its file in a task directory.
    tasks = data.get("tasks") if isinstance(data.get("tasks"), dict) else {}
    for name in [v for hook in _tables_in(data.get("hooks")) for v in strings_in(hook.get("task"))][:64]:
        lines += [_path(command) for command in strings_in(tasks.get(name) if isinstance(tasks, dict) else None)]
        lines += [f"sh {shlex.quote(d + '/' + name.replace(':', '/'))}" for d in _TASK_DIRS]
    # A template's ``exec(command=…)`` runs at every prompt, in an ``[env]`` value or any other (not a task's).
    values = [v for key, value in data.items() if key != "tasks" for v in strings_in(value)]
    lines += [command for value in values for _q, command in _EXEC.findall(value)]
    return "\n".join(lines)


def _tables_in(value: object, depth: int = 0) -> Iterator[dict[str, Any]]:
    """Every table in ``value``, at any depth."""
    if isinstance(value, dict):
        yield value
    if isinstance(value, dict | list) and depth < 8:
        for item in value.values() if isinstance(value, dict) else value:
            yield from _tables_in(item, depth + 1)


def mise_path_dirs(text: str) -> list[str]:
    """The directories a mise config puts first on PATH: ``_.path`` entries, and ``_.python.venv``'s ``bin``."""
    data = _parsed(text)
    if data is None:
        return [found for line in text.splitlines() if "_.path" in line or "venv" in line
                for found in _QUOTED.findall(line)]  # fmt: skip
    found: list[str] = []
    for table in _directives(data):
        found += [_path(name) for name in strings_in(table.get("path"))]
        for python in _tables(table.get("python")):
            venv = python.get("venv")
            names = [venv] if isinstance(venv, str) else [str(v.get("path", "")) for v in _tables(venv)]
            found += [f"{_path(name)}/bin" for name in names if name]
    return found


def _lines(text: str) -> str:
    """The line reader (a file TOML cannot parse): ``[hooks]`` lines, and ``_.source``/``_.file`` lines in ``[env]``."""
    kept: list[str] = []
    section = ""
    for line in text.splitlines():
        if header := _SECTION.match(line):
            section = header.group(1).strip().lower()
            continue
        if section == "hooks" or section.startswith("hooks.") or (section.startswith("env") and _RUNS_LINE.match(line)):
            kept.append(line)
        elif "source" in line or "file" in line:
            kept += [f"source {shlex.quote(name)}" for name in _QUOTED.findall(line)]
    return "\n".join(kept)
