"""Where a project's packages come from, wherever its manifests say it (``hook_configs.installer_hook_keys``).

Threat (the installer-sources class of red teams 99, 101, 113, 114; red team 116 F2, F3): a manifest edited so that
the user's next install or build fetches a package from a place the model chose — a url, a repository, an archive
it made — whose build or install code then runs outside the box: pnpm's ``overrides`` and ``packageExtensions``,
bun's catalogs, a Cargo ``git`` dependency or ``[patch]``, Composer ``repositories``, a Gemfile ``source``, Poetry,
uv, PDM, pixi and Pipenv entries ``{ git = … }``, ``setup.cfg``'s ``install_requires``. One rule reads them all:
every string of the parsed manifest (JSON, TOML) that names such a place (:data:`FETCHED`) is kept with where it
stands, outside the tables that only describe the project (homepage, repository, urls, authors …: a link there
fetches nothing); a string the call adds or moves is asked (shell_exec), refused (file_write). Manifests that are
programs or line formats (Gemfile, ``setup.cfg``) are read by line for the words that name a source; pip's
requirements files (by name, or any ``.txt``/``.in`` in a ``requirements/`` directory) as pip reads them.

A manifest in another encoding than the one its reader takes (pip follows a UTF-16/32 byte-order mark and a PEP 263
``coding:`` line — ``# -*- coding: utf-7 -*-`` then ``+AC0ALQ-index-url``: red team 116 F3), or holding NUL bytes,
is not read here: it counts as changing every source (:func:`other_encoding`).
"""

from __future__ import annotations

import codecs
import json
import re
import tomllib
from collections.abc import Callable
from typing import Any

from mcp_server_guard.patterns import deferred

__all__ = [
    "ARCHIVE",
    "DIRECT",
    "FETCHED",
    "LINE_MANIFESTS",
    "PROPERTIES_MANIFESTS",
    "SOURCE_MANIFESTS",
    "fetched_strings",
    "other_encoding",
    "package_json_fetched",
    "requirements_file",
    "requirements_sources",
    "running_properties",
    "source_lines",
]

# An archive by its name: pip's every archive suffix (.tar.lzma too: red team 120 F3), npm's (``.tgz``, ``.tar`` in
# any case), and the other ecosystems' packages.
_ARCHIVE_SUFFIX = (
    r"\.(?:tar(?:\.(?:gz|bz2|xz|lz|lzma|zst|z))?|tgz|tbz2?|tb2|txz|tlz|tzst|taz|zip|whl|egg|gem|crate|jar|nupkg|7z"
    r"|lzma|xz|bz2|gz|zst)"
)
ARCHIVE = deferred(_ARCHIVE_SUFFIX + "$", re.I)
# A string that fetches from elsewhere than the package manager's registry: any url (``scheme://``, ``file:``), a
# repository (``git+…``, ``git@host:…``, scp-like ``user@host:path``, ``github:``/``gitlab:``… shorthands), a PEP 508
# direct reference (``name @ url``), an archive or wheel by its path (its own build and install code is never
# judged: a wheel's .pth runs at every start of that Python).
FETCHED = deferred(
    r"[A-Za-z][A-Za-z0-9+.-]*://|\bfile:|(?:^|[\s@])git\+|^\s*git@|^\s*[\w.-]+@[\w.-]+:(?!\d)"
    r"|^\s*(?:github|gitlab|bitbucket|gist|sourcehut):"
    rf"|^[^*?\[\]]*{_ARCHIVE_SUFFIX}\s*$",  # (an archive, not a glob of them)
    re.I,
)
# Keys whose tables only describe the project: a link there fetches nothing.
_DESCRIBING = frozenset(
    {"homepage", "repository", "documentation", "urls", "url-metadata", "authors", "maintainers", "contributors",
     "author", "description", "readme", "license", "license-file", "keywords", "classifiers", "categories", "badges",
     "support", "funding", "bugs", "metadata", "changelog", "issues", "funding_url", "project-urls"}
)  # fmt: skip
# The tables whose describing keys describe the project (the document's top, Cargo's ``[package]``, ``[project]``,
# ``[workspace]``, ``[tool.poetry]``), not a dependency that bears such a name.
_DESCRIBED = frozenset({"", "package", "project", "workspace", "poetry"})
# pyproject.toml: the tables an installer or a build reads for what to fetch (other tools' tables hold links to
# issues and docs: a towncrier template is no source).
_PYPROJECT_TABLES = ("project", "build-system", "dependency-groups", "tool.uv", "tool.poetry", "tool.pdm",
                     "tool.pixi", "tool.hatch", "tool.rye", "tool.conda-lock", "tool.setuptools", "tool.flit",
                     "tool.maturin", "tool.scikit-build", "tool.pipenv")  # fmt: skip
# Manifests read whole as TOML or JSON (by name), and the ones read by line.
SOURCE_MANIFESTS = ("Cargo.toml", "composer.json", "pyproject.toml", "uv.toml", "hatch.toml", "pdm.toml", "Pipfile",
                    "pixi.toml", "rye.toml", "vcpkg.json", "vcpkg-configuration.json")  # fmt: skip
# (read whole: a vcpkg registry's ``repository`` is where its ports come from, red team 119 F3)
_WHOLE = frozenset({"vcpkg.json", "vcpkg-configuration.json"})
LINE_MANIFESTS = ("Gemfile", "gems.rb", "setup.cfg", "pubspec.yaml", "pubspec_overrides.yaml")
_MAX = 4 << 20  # bytes of a manifest read at most (as MAX_PACKAGE_JSON)
_STRINGS_MAX = 65_536  # strings looked at in one manifest at most; past it the file counts as unread

# Byte-order marks of the encodings a reader follows that are not UTF-8 (pip's ``auto_decode``, YAML, uv).
_OTHER_BOMS = (codecs.BOM_UTF32_BE, codecs.BOM_UTF32_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE)
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")  # (PEP 263, as pip finds it on line 1 or 2)
_SAME_AS_UTF8 = frozenset({"utf-8", "utf8", "utf_8", "ascii", "us-ascii", "utf-8-sig", "latin-1", "latin1"})


def other_encoding(data: bytes | None) -> bool:
    """Whether a manifest's bytes may read otherwise to its reader than as UTF-8: a UTF-16/32 byte-order mark, a
    NUL byte, or a ``coding:`` comment on one of its first two lines naming another encoding."""
    if not data:
        return False
    if data.startswith(_OTHER_BOMS) or b"\0" in data:
        return True
    for line in data.split(b"\n", 2)[:2]:
        if (found := _CODING.match(line)) and found.group(1).decode("ascii", "replace").lower() not in _SAME_AS_UTF8:
            return True
    return False


def fetched_strings(name: str, data: bytes | None) -> dict[str, str] | None:
    """Each place a manifest (``SOURCE_MANIFESTS``, by file name) names as a source, as ``key path`` → canonical
    JSON of the strings there; None where it cannot be read as its package manager reads it."""
    if not data:
        return {} if data is not None else None
    if len(data) >= _MAX or other_encoding(data):
        return None
    try:
        text = data.decode("utf-8")
        parsed: Any = json.loads(text.removeprefix("\ufeff")) if name.endswith(".json") else tomllib.loads(text)
    except (ValueError, RecursionError):  # (UnicodeDecodeError, JSONDecodeError and TOMLDecodeError are ValueErrors)
        return None
    roots: list[tuple[str, Any]] = [("", parsed)]
    if name == "pyproject.toml" and isinstance(parsed, dict):
        roots = [(key, _at(parsed, key)) for key in _PYPROJECT_TABLES]
    found: dict[str, list[str]] = {}
    budget = [_STRINGS_MAX]
    for prefix, value in roots:
        if not _walk(value, prefix, found, budget, whole=name in _WHOLE):
            return None
    return {key: json.dumps(sorted(values)) for key, values in found.items()}


def package_json_fetched(parsed: dict[str, Any], fetched: Callable[[object], bool]) -> dict[str, Any]:
    """A package.json's dependency specs that ``fetched`` (``hook_configs._fetched_spec``) takes as fetched from
    elsewhere, in any table of specs at any depth (``dependencies`` of every kind, ``overrides``, ``resolutions``,
    pnpm's ``overrides`` and ``packageExtensions``, catalogs: red team 116 F2), by key path."""
    found: dict[str, Any] = {}
    stack: list[tuple[str, Any, bool]] = [("", parsed, False)]
    seen = 0
    while stack and seen < _STRINGS_MAX:
        path, value, specs = stack.pop()
        seen += 1
        if isinstance(value, dict):
            for key, inner in value.items():
                inside = specs or bool(_SPEC_TABLES.search(str(key)))
                stack.append((f"{path}.{key}" if path else str(key), inner, inside))
        elif isinstance(value, list):
            stack += [(f"{path}[{at}]", item, specs) for at, item in enumerate(value)]
        elif specs and fetched(value):
            found[f"{path} (fetched)"] = value
    if stack:
        found["(past what is read here)"] = len(stack)
    return found


_SPEC_TABLES = deferred(r"dependencies$|^overrides$|^resolutions$|^catalogs?$|^packageextensions$", re.I)


def _at(parsed: dict[str, Any], dotted: str) -> Any:
    value: Any = parsed
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _walk(value: Any, path: str, found: dict[str, list[str]], budget: list[int], *, whole: bool = False) -> bool:
    """Add to ``found`` the fetching strings below ``value``; False past the budget (the file counts as unread)."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        budget[0] -= 1
        if budget[0] < 0:
            return False
        where, item = stack.pop()
        if isinstance(item, dict):
            # (a describing key only where it describes: in the document's top or a table of the project itself —
            # ``[dependencies] metadata = { git = … }`` is a dependency named so, red team 120 F5)
            describes = not whole and where.rpartition(".")[2].lower() in _DESCRIBED
            stack += [(f"{where}.{key}" if where else str(key), inner) for key, inner in item.items()
                      if not (describes and str(key).lower() in _DESCRIBING)]  # fmt: skip
        elif isinstance(item, list):
            stack += [(where, inner) for inner in item]
        elif isinstance(item, str) and FETCHED.search(item):
            found.setdefault(where, []).append(item)
    return True


# Gemfile: a source (``source``, ``git_source``), a gem's ``git:``/``github:``/``path:`` (by key or ``=>``);
# setup.cfg: a requirement or a link that fetches, in the sections setuptools installs from.
_GEM_SOURCE = deferred(r"^\s*(?:source|git_source|git|github|path)\b|\b(?:source|git|github|gist|bitbucket|path)\s*:"
                         r"|:(?:source|git|github|gist|bitbucket|path)\s*=>")  # fmt: skip
_SECTION = deferred(r"^\s*\[([^\]]*)\]")


def source_lines(name: str, data: bytes | None) -> dict[str, str] | None:
    """The lines of a manifest read by line (``LINE_MANIFESTS``) that name a source, as one canonical JSON list;
    None where it cannot be read so."""
    if not data:
        return {} if data is not None else None
    if len(data) >= _MAX or other_encoding(data):
        return None
    text = data.decode("utf-8", "replace").removeprefix("\ufeff")
    lines: set[str] = set()
    section = ""
    for line in re.split(r"\r\n|[\r\n]", text):  # (Ruby and configparser end lines at LF, CR LF and CR alike)
        if name == "setup.cfg":
            if header := _SECTION.match(line):
                section = header.group(1).strip().lower()
            elif (section.startswith("options") or section == "easy_install") and FETCHED.search(line):
                lines.add(" ".join(line.split()))
        elif name.startswith("pubspec"):
            # Dart's ``git: url:``/``hosted:`` sources (red team 119 F3), read without a YAML parser: every line that
            # names a url, or holds an escape (``"https\x3a//…"``), but the keys that only describe the package
            key = line.split(":", 1)[0].strip().lower()
            if (
                key not in _DESCRIBING
                and key not in ("issue_tracker", "screenshots")
                and (FETCHED.search(line) or "\\" in line)
            ):
                lines.add(" ".join(line.split()))
        elif _GEM_SOURCE.search(line.split("#", 1)[0]) or FETCHED.search(line.split("#", 1)[0]):
            lines.add(" ".join(line.split()))
    return {"sources": json.dumps(sorted(lines))} if lines else {}


# pip's files by name (``requirements.txt``, ``dev-requirements.txt``, ``requirements-dev.in``) or by place (any
# ``.txt``/``.in`` in a ``requirements/`` directory: red team 116 F2)
_REQUIREMENTS = deferred(r"[\w.-]*(?:requirements|constraints)[\w.-]*\.(?:txt|in)", re.I)
_REQUIREMENTS_DIR = deferred(r"[\w.-]*(?:requirements|constraints)[\w.-]*|reqs", re.I)


def requirements_file(parts: list[str]) -> bool:
    """Whether a path (its parts) is one pip's requirements files are kept as (``_REQUIREMENTS``)."""
    return bool(_REQUIREMENTS.fullmatch(parts[-1])) or (
        len(parts) > 1 and bool(_REQUIREMENTS_DIR.fullmatch(parts[-2])) and parts[-1].endswith((".txt", ".in"))
    )


# pip's option lines in a requirements file: where every package of it (and of ``pip install -r``) comes from. Read
# as pip reads them (red team 113 F1): a line ending in a backslash goes on on the next, and any unique prefix of a
# long option is that option (optparse): ``--index`` is ``--index-url``.
_PIP_LONG = ("index-url", "extra-index-url", "no-index", "constraint", "requirement", "editable", "find-links",
             "no-binary", "only-binary", "prefer-binary", "require-hashes", "pre", "trusted-host", "use-feature",
             "config-settings", "global-option", "hash")  # fmt: skip
_PIP_SHORT = {"-i": "index-url", "-f": "find-links", "-r": "requirement", "-c": "constraint", "-e": "editable"}
_PIP_SOURCES = frozenset({"index-url", "extra-index-url", "find-links", "trusted-host"})
# A requirement fetched from a repository or an archive (PEP 508 ``name @ url``, a bare url, ``git+…``): its build
# backend runs at the next install (red team 113 F2).
DIRECT = deferred(r"(?:^|@\s*|\s)(?:[A-Za-z][A-Za-z0-9+.-]*://|git\+|file:)", re.I)


def _pip_option(word: str) -> tuple[str, str] | None:
    """(the long option's name, a value given with it) of a requirements line's first word; None: no option pip
    reads so (or one of several prefixes: pip refuses it)."""
    if word[:2] in _PIP_SHORT:
        return _PIP_SHORT[word[:2]], word[2:].lstrip("=")
    if not word.startswith("--"):
        return None
    name, _, value = word[2:].partition("=")
    named = [option for option in _PIP_LONG if option == name] or [o for o in _PIP_LONG if o.startswith(name)]
    return (named[0], value) if name and len(named) == 1 else None


def requirements_sources(data: bytes | None) -> dict[str, str] | None:
    """A requirements file's options that say where its packages come from, its includes of files not judged
    themselves, and its requirements from urls, as canonical JSON lists; None where it is not read."""
    if data is None or len(data) >= _MAX or other_encoding(data):
        return None
    found: dict[str, list[str]] = {}
    for line in _pip_lines(data.decode("utf-8", "replace")):
        words = line.split("#", 1)[0].split() if not line.lstrip().startswith("#") else []
        if not words:
            continue
        option = _pip_option(words[0])
        value = (option[1] or (words[1] if len(words) > 1 else "")) if option else ""
        if option is not None and option[0] in _PIP_SOURCES:
            found.setdefault(option[0], []).append(value)
        elif option is not None and option[0] in ("requirement", "constraint"):
            # Threat: ``-r deps.list`` includes a file of another name, whose sources pip reads and nothing judges
            # (a ``requirements*.txt`` or ``constraints*`` file is judged itself when it changes).
            if not requirements_file(value.split("/")):
                found.setdefault(option[0], []).append(value)
        elif DIRECT.search(" ".join(words)):
            found.setdefault("a requirement from a url", []).append(" ".join(words))
        elif ARCHIVE.search(re.sub(r"\[[^\]]*\]$", "", words[0].split(";", 1)[0])):
            # Threat (red team 119 F2): ``vendor/x-1.0-py3-none-any.whl`` — pip installs an archive by its path, and
            # what is inside it (a wheel's .pth, an sdist's setup.py) is never judged.
            found.setdefault("a requirement from an archive", []).append(" ".join(words))
    return {option: json.dumps(sorted(values)) for option, values in found.items()}


def _pip_lines(text: str) -> list[str]:
    """A requirements file's logical lines as pip makes them: split at every line end Python knows (``splitlines``:
    CR, form feed, U+2028 too), then a line ending in a backslash joined with the next (red team 114 F2)."""
    lines: list[str] = []
    pending = ""
    for line in text.splitlines():
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    return [*lines, pending] if pending else lines


# Gradle's project settings (``gradle.properties``, read as Java reads a properties file): the keys that start a
# program — the JVMs' options (``-javaagent:x.jar``, ``-XX:OnOutOfMemoryError=cmd``), the JDK or a tool binary by its
# path — or send every download elsewhere (``systemProp.*``: proxies, trust stores). Threat (red team 117 F3's
# class): ``org.gradle.jvmargs=-javaagent:tools/a.jar`` runs the model's jar at the user's next ``gradle build``.
PROPERTIES_MANIFESTS = ("gradle.properties",)
_RUNNING_KEYS = deferred(
    r"org\.gradle\.(?:jvmargs|java\.home|java\.installations\..*)|kotlin\.daemon\.jvmargs|systemprop\..*"
    r"|android\.aapt2frommavenoverride|org\.gradle\.(?:jvm\.toolchain|toolchains?)\..*",
    re.I,
)


def running_properties(data: bytes | None) -> dict[str, str] | None:
    """The keys of a properties file that start a program or move where downloads come from, with their values;
    None where it cannot be read so."""
    if data is None:
        return None
    if len(data) >= _MAX or other_encoding(data):
        return None
    found: dict[str, str] = {}
    for key, value in _properties(data.decode("latin-1" if not _utf8(data) else "utf-8")):
        if _RUNNING_KEYS.fullmatch(key):
            found[key] = value
    return found


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _properties(text: str) -> list[tuple[str, str]]:
    """(key, value) pairs as ``java.util.Properties.load`` reads them: lines end at LF, CR LF or CR; a line ending
    in an odd number of backslashes goes on (the next line's leading blanks dropped); ``#``/``!`` comments; the key
    ends at an unescaped ``=``, ``:`` or blank; ``\\uXXXX`` and other escapes read."""
    pairs: list[tuple[str, str]] = []
    logical = ""
    for raw in re.split(r"\r\n|[\r\n]", text):
        line = raw.lstrip(" \t\f") if logical else raw
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            logical += line[:-1]
            continue
        logical += line
        stripped = logical.lstrip(" \t\f")
        logical = ""
        if not stripped or stripped[0] in "#!":
            continue
        at = 0
        while at < len(stripped) and stripped[at] not in "=: \t\f":
            at += 2 if stripped[at] == "\\" else 1
        key, rest = stripped[:at], stripped[at:].lstrip(" \t\f")
        rest = rest[1:].lstrip(" \t\f") if rest[:1] in ("=", ":") else rest
        pairs.append((_unescape(key), _unescape(rest)))
    return pairs


def _unescape(text: str) -> str:
    def one(found: re.Match[str]) -> str:
        escaped = found.group(1)
        if escaped.startswith("u") and re.fullmatch(r"u[0-9a-fA-F]{4}", escaped):
            return chr(int(escaped[1:], 16))
        return {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(escaped[:1], escaped[:1]) + escaped[1:]

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", one, text, flags=re.S)
