"""Git hooks configured in a ``package.json``: what the hook managers of Node projects run at the user's next
``git commit`` or ``git push``, outside any box.

Husky 4 runs ``husky.hooks``; lint-staged and nano-staged run the commands of their key on the staged files (from
a hook husky, simple-git-hooks or lefthook installed); simple-git-hooks, yorkie (``gitHooks``), ghooks
(``config.ghooks``), ``pre-commit``/``pre-push`` (the npm packages: the scripts named there) and husky before 1.0
(``scripts.precommit`` …) name what a hook runs. The npm scripts a hook runs are judged too (red team 5b F1): those
the keys above or the hook files beside the package.json (``.husky/*``, ``.git/hooks/*``, lefthook's and pre-commit's
configs: ``hook_texts``) name as ``npm test``, ``npm run X``, ``yarn X``, ``pnpm X``, ``bun run X`` (``test`` where
the npm ``pre-commit`` package's key names none), with the ``pre``/``post`` scripts npm runs around each and the
scripts each runs in turn (6 L1); so are the scripts a package manager runs unnamed (``postinstall``,
``prepare``: the user's next ``npm install`` runs them, F2), ``packageManager`` (corepack fetches and runs what it
names) and commitizen's adapter (``config.commitizen``). Threat: a command or a write adding ``"lint-staged": {"*":
"curl … | sh"}`` to a project whose hooks run lint-staged — the user's own next commit runs it. The hook files
and these tools' own config files are protected paths (``policies/default.toml``); these keys live in a file
every project edits, so a change of them is judged by what it changes: shell_exec asks, file_write (which cannot
ask) refuses. The file is read as JSON the way Node reads it (the last of two equal keys wins); one that cannot be
read so here counts as setting every hook (see ``_hook_settings``).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import stat
import tomllib
from collections.abc import Callable, Iterable
from typing import Any

from mcp_server_guard.package_locks import LOCK_FILES, MAX_LOCK, lock_places
from mcp_server_guard.package_sources import (
    DIRECT,
    LINE_MANIFESTS,
    PROPERTIES_MANIFESTS,
    SOURCE_MANIFESTS,
    fetched_strings,
    other_encoding,
    package_json_fetched,
    requirements_file,
    requirements_sources,
    running_properties,
    source_lines,
)
from mcp_server_guard.patterns import deferred

__all__ = [
    "HOOK_CONFIG_FILES",
    "MAX_PACKAGE_JSON",
    "UNREAD",
    "attribute_conversions",
    "attributes_file",
    "changed_hook_keys",
    "hook_texts",
    "hooked_texts",
    "installer_hook_keys",
    "installer_limit",
    "installer_manifest",
    "judged_manifest",
    "judged_package_json",
    "manifest_hooks",
    "read_regular",
    "read_regular_bytes",
]

MAX_PACKAGE_JSON = 4 << 20  # bytes of a package.json read at most; one this large counts as not read
_TOP = frozenset(
    {
        "husky", "lint-staged", "nano-staged", "simple-git-hooks", "gitHooks", "ghooks", "git-hooks", "pre-commit",
        "precommit", "pre-push", "prepush", "post-merge", "post-commit", "lefthook", "commitlint", "packageManager",
    }
)  # fmt: skip
# What npm, pnpm, yarn and bun run without the script being named: at install, pack, publish, version.
_LIFECYCLE = ("preinstall", "install", "postinstall", "preprepare", "prepare", "postprepare", "prepublish",
              "prepublishOnly", "prepack", "postpack", "preversion", "version", "postversion", "dependencies",
              "preuninstall", "uninstall", "postuninstall", "pnpm:devPreinstall")  # fmt: skip
# The npm packages pre-commit and pre-push: their key lists the scripts the hook runs (``test`` when it is absent).
_SCRIPT_LISTS = ("pre-commit", "precommit", "pre-push", "prepush")
# A package manager or a monorepo runner running scripts by name: ``npm test``, ``npm run lint``, ``yarn lint``,
# ``pnpm -r lint``, ``pnpm --filter web lint``, ``turbo run lint``, ``lerna run lint``, ``nx run-many -t lint``. Every
# word up to the end of that command may be a script's name (an option's value too: taken wide).
_RUNS = deferred(
    r"""(?<![\w./-])(npm|pnpm|yarn|bun|turbo|lerna|nx|npm-run-all2?|run-p|run-s)(?![\w.-])([^;&|\n\\"'`(){}<>]*)"""
)
_RUNNER_WORDS = frozenset({"run", "run-script", "rum", "urn", "run-many", "affected", "exec", "workspaces", "workspace",
                           "foreach"})  # fmt: skip
_NPM_ALIASES = {"t": "test", "tst": "test"}
# husky before 1.0: an npm script named after the hook (without its dash), run by the hook it installed
_HOOKS = ("applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
          "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
          "pre-push", "pre-receive", "update", "post-receive", "post-update", "push-to-checkout", "pre-auto-gc",
          "post-rewrite", "sendemail-validate")  # fmt: skip
_SCRIPTS = frozenset({*_HOOKS, *(hook.replace("-", "") for hook in _HOOKS)})


# package.yaml / package.yml / package.json5 (pnpm, and the hook tools reading them like package.json): a key of
# _TOP, ``scripts`` or ``config`` anywhere in the text counts as setting hooks (no YAML or JSON5 reader here). Red team
# 8 FA3: hpack's package.yaml (Haskell) has none of them and is ordinary work.
_MANIFESTS = ("package.yaml", "package.yml", "package.json5")
_KEYS = "|".join(re.escape(k) for k in sorted(_TOP))
_MANIFEST_KEYS = deferred(rf"""(?:^|[{{,])[ \t]*["']?(?:{_KEYS}|scripts|config)["']?[ \t]*:""", re.MULTILINE)


def judged_manifest(path: str) -> bool:
    """Whether ``path`` is a package.yaml/yml/json5 of the project (not under ``node_modules``)."""
    return path.rsplit("/", 1)[-1] in _MANIFESTS and "node_modules" not in path.split("/")


def manifest_hooks(data: bytes | None) -> bool:
    """Whether a package.yaml/yml/json5's text holds git hook or script settings (then judged whole); an unread
    one counts as holding them."""
    return data is None or bool(_MANIFEST_KEYS.search(data.decode("utf-8", "replace")))


def judged_package_json(path: str) -> bool:
    """Whether ``path`` is a ``package.json`` whose hook keys are judged: one of the project's, not an installed
    package's (under ``node_modules``: npm rewrites those, and no hook manager reads them)."""
    parts = path.split("/")
    return parts[-1] == "package.json" and "node_modules" not in parts


UNREAD = "(the whole file: it could not be read as JSON here)"


def _close(run: set[str], scripts: dict[str, Any]) -> None:
    """Add to ``run`` what npm also runs with each: its ``pre``/``post`` scripts, and the scripts its own text runs
    by name (``"test": "npm run lint"``), to the end (red team 6 L1)."""
    todo = [(name, True) for name in run]
    while todo and len(run) < 10_000:
        name, wrapped = todo.pop()
        value = scripts.get(name)
        named = scripts_run_by([value]) if isinstance(value, str) else set()
        named |= {n for n in scripts if any(fnmatch.fnmatchcase(n, p) for p in named if any(c in p for c in "*?["))}
        todo += [(n, True) for n in sorted(named - run)]
        run |= named
        if wrapped:  # npm runs prelint/postlint around lint, not preprelint around those
            around = {f"pre{name}", f"post{name}"} - run
            todo += [(n, False) for n in sorted(around)]
            run |= around


def scripts_run_by(texts: Iterable[str]) -> set[str]:
    """The npm scripts the texts run by name (``npm test``, ``npm run lint``, ``yarn lint``, ``turbo run lint`` …):
    every word after the tool that is not an option, and the values of options given with ``=``."""
    found: set[str] = set()
    for text in texts:
        for tool, rest in _RUNS.findall(text):
            for word in rest.split():
                value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
                for name in value.split(","):
                    if name and not name.startswith("-") and name not in _RUNNER_WORDS:
                        found.add(_NPM_ALIASES.get(name, name) if tool == "npm" else name)
    return found


_HOOK_DIRS = (".husky", ".git/hooks")  # beside a package.json: hook files whose text may run its scripts
HOOK_CONFIG_FILES = ("lefthook.yml", ".lefthook.yml", "lefthook.yaml", ".lefthook.yaml", ".pre-commit-config.yaml")
_TEXT_MAX = 64 << 10  # bytes of one hook file read at most
_TEXTS_MAX = 64  # files read at most in one directory


def hook_texts(directory: int) -> list[str]:
    """The texts of the hook files beside a package.json (``directory``: its directory, open): each regular file of
    ``_HOOK_DIRS`` and ``_HOOK_FILES``, reached with no link followed, never a FIFO or device opened; bounded."""
    texts: list[str] = []
    places: list[tuple[int, str]] = [(directory, name) for name in HOOK_CONFIG_FILES]
    opened: list[int] = []
    try:
        for rel in _HOOK_DIRS:
            fd = directory
            try:
                for part in rel.split("/"):
                    fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                    opened.append(fd)
                places += [(fd, name) for name in sorted(os.listdir(fd))[:_TEXTS_MAX]]
            except OSError:
                continue
        for at, name in places:
            if (text := read_regular(at, name)) is not None:
                texts.append(text)
    finally:
        for fd in opened:
            os.close(fd)
    return texts


def hooked_texts(directory: int) -> list[str]:
    """What the hooks of the package.json in ``directory`` (open) run: its hook keys and the scripts its hooks run,
    as texts (a root package's ``"lint": "turbo run lint"`` runs each workspace's ``lint``: red team 6 L3); all of
    it where it cannot be read."""
    text = read_regular(directory, "package.json", MAX_PACKAGE_JSON)
    if text is None:
        return []
    settings = _hook_settings(text.encode("utf-8", "surrogateescape"), hook_texts(directory))
    return [text] if settings is None else list(settings.values())


def read_regular(directory: int | None, name: str, limit: int = _TEXT_MAX) -> str | None:
    """The text of a regular file (``limit`` bytes at most), never through a link at its last component, never a
    FIFO or a device opened (``directory`` None: ``name`` from the working directory, or absolute)."""
    data = read_regular_bytes(directory, name, limit)
    return None if data is None else data.decode("utf-8", "surrogateescape")  # (names as their bytes: red team 155)


def read_regular_bytes(directory: int | None, name: str, limit: int) -> bytes | None:
    """``read_regular``'s bytes."""
    try:
        if not stat.S_ISREG(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode):
            return None
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory)
    except OSError:
        return None
    try:
        return os.read(fd, limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _hook_settings(data: bytes | None, hooks: Iterable[str] = ()) -> dict[str, str] | None:
    """Each hook key the file sets, with its value as canonical JSON; None where it cannot be read as Node reads it.

    Threat: a file Node reads and this reader does not (an integer of 5,000 digits, nesting 2,000 deep, bytes
    that are not UTF-8, a file past what is read) taken for one that sets no hook (red team 3 F1): such a file is
    judged as setting them all. Read as Node reads it: invalid UTF-8 replaced, a BOM dropped, numbers kept as
    their text (no conversion limit)."""
    if not data:
        return {}
    if len(data) >= MAX_PACKAGE_JSON:
        return None
    try:
        parsed: Any = json.loads(data.decode("utf-8", "replace").removeprefix("\ufeff"), parse_int=str,
                                 parse_float=str, parse_constant=str)  # fmt: skip
    except (ValueError, RecursionError):
        return None
    if not isinstance(parsed, dict):
        return {}
    found = {key: parsed[key] for key in _TOP if key in parsed}
    run = {*_LIFECYCLE, *scripts_run_by([*hooks, json.dumps(found)])}
    for key in _SCRIPT_LISTS:
        if key in parsed:  # the npm pre-commit/pre-push packages: the scripts listed, `test` where none is
            listed = parsed[key]
            named = [x for x in (listed if isinstance(listed, list) else [listed]) if isinstance(x, str)]
            run.update(named or ["test"])
    scripts = parsed.get("scripts")
    scripts = scripts if isinstance(scripts, dict) else {}
    # ``run-p lint:*`` (npm-run-all): every script the pattern matches, a new one too (red team 8 B4).
    patterns = [name for name in run if any(c in name for c in "*?[")]
    run |= {name for name in scripts if any(fnmatch.fnmatchcase(name, p) for p in patterns)}
    _close(run, scripts)
    for section, keys in (("scripts", _SCRIPTS | run), ("config", frozenset({"ghooks", "commitizen"}))):
        inner = parsed.get(section)
        if isinstance(inner, dict):
            found |= {f"{section}.{key}": inner[key] for key in keys if key in inner}
    # A dependency fetched from a url, a repository or a GitHub shorthand: its install scripts run at the next npm
    # install (red team 113 F3), in any table of specs (pnpm's overrides, catalogs: red team 116 F2); a registry's
    # version range is the registry's (.npmrc is judged).
    found |= package_json_fetched(parsed, _fetched_spec)
    return {key: json.dumps(value, sort_keys=True) for key, value in found.items()}


# url, git+, github:, ``a/b``, ``git@host:a/b`` (scp-like), and a tarball by its path (``file:x.tgz``, ``./x.tgz``,
# ``/abs/x.tgz``: its own package.json, inside the archive, is never judged; red team 114 F4)
_NPM_FETCHED = deferred(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:(?!\d)|[\w.-]+/[\w.-]+(?:#.*)?$|[\w.-]+@[\w.-]+:)")
_NPM_TARBALL = deferred(r"^(?:file:|\.{0,2}/|~/).*\.(?:tgz|tar|tar\.gz|tar\.bz2|tar\.xz)$", re.I)


def _fetched_spec(spec: object) -> bool:
    """Whether an npm dependency's spec fetches it from elsewhere than the registry (an override may nest)."""
    if isinstance(spec, dict):
        return any(_fetched_spec(v) for v in spec.values())
    if not isinstance(spec, str):
        return False
    if _NPM_TARBALL.match(spec.strip()):
        return True
    return bool(_NPM_FETCHED.match(spec.strip())) and not spec.startswith(
        ("file:", "npm:", "workspace:", "link:", "portal:")
    )


def changed_hook_keys(old: bytes | None, new: bytes | None, hooks: Iterable[str] = ()) -> list[str]:
    """The hook keys the new content of a package.json sets to another value than the old one had (a key taken
    out makes no hook run anything new); a new content that cannot be read counts as setting them. ``hooks``: the
    texts of the hook files beside it (``hook_texts``)."""
    hooks = list(hooks)
    before, after = _hook_settings(old, hooks), _hook_settings(new, hooks)
    if after is None:
        return [UNREAD]
    return sorted(key for key, value in after.items() if before is None or before.get(key) != value)


# What other package managers run at install without the script being named (red team 99 F1): Composer's event
# scripts (``post-install-cmd``, ``post-autoload-dump`` …), PDM's hooks (``post_install``, ``pre_lock`` …) and Hatch's
# environment install commands. Where a manifest has such a hook (before or after), its whole script table counts: a
# hook may run the others by name (``"@build"``, a composite).
_COMPOSER_EVENT = deferred(r"^(?:pre|post)-|^(?:init|command)$")
_PDM_HOOK = deferred(r"^(?:pre|post)_")
_INSTALLED = frozenset({"node_modules", "vendor", "site-packages", "dist-packages"})  # installed packages' own


_OTHER_INSTALLERS = ("composer.json", "pyproject.toml", "uv.toml", "hatch.toml", "pdm.toml", "Pipfile", "pixi.toml",
                     "environment.yml", "environment.yaml")  # fmt: skip


def installer_manifest(path: str) -> bool:
    """Whether ``path`` is a project's manifest, lock file or settings an installer or a build reads (composer,
    pyproject, uv, hatch, pdm, Pipenv, pixi, conda, pip requirements, Cargo, Gemfile, setup.cfg, Dart, vcpkg,
    gradle.properties, the lock files: not an installed package's)."""
    parts = path.split("/")
    names = (*_OTHER_INSTALLERS, *SOURCE_MANIFESTS, *LINE_MANIFESTS, *LOCK_FILES, *PROPERTIES_MANIFESTS)
    return (parts[-1] in names or requirements_file(parts)) and not _INSTALLED & set(parts)


def installer_limit(path: str) -> int:
    """Bytes of an installer's file read at most (a lock file runs larger than a manifest)."""
    return MAX_LOCK if path.rsplit("/", 1)[-1] in LOCK_FILES else MAX_PACKAGE_JSON


def installer_hook_keys(path: str, old: bytes | None, new: bytes | None) -> list[str]:
    """The install hooks (and the script tables they may call) a new content of ``path`` sets to another value than
    the old one had; the whole file where the new content cannot be read as the package manager reads it."""
    name = path.rsplit("/", 1)[-1]
    if name in LOCK_FILES:  # (the places its next install fetches from that it did not: package_sources)
        before_places, after_places = lock_places(name, old) or set(), lock_places(name, new)
        if after_places is None:
            return ["(the whole file: it could not be read here)"]
        return [f"fetches from {place}" for place in sorted(after_places - before_places)]
    readers: list[Callable[[bytes | None], dict[str, str] | None]] = []
    if specific := {"composer.json": _composer_hooks, "uv.toml": _uv_toml_hooks, "pyproject.toml": _pyproject_hooks,
                    "hatch.toml": _hatch_toml_hooks, "pdm.toml": _pdm_toml_hooks, "Pipfile": _pipfile_sources,
                    "pixi.toml": _pixi_channels, "environment.yml": _conda_channels,
                    "environment.yaml": _conda_channels}.get(name):  # fmt: skip
        readers.append(specific)
    if name in SOURCE_MANIFESTS:  # (every string that names a source, wherever it stands: package_sources)
        readers.append(lambda data: fetched_strings(name, data))
    elif name in LINE_MANIFESTS:
        readers.append(lambda data: source_lines(name, data))
    elif name in PROPERTIES_MANIFESTS:
        readers.append(running_properties)
    elif not readers:
        readers.append(requirements_sources)
    # (a file in another encoding than its reader may take — a UTF-16 mark, a ``coding:`` line — is not read here:
    # red team 116 F3)
    if other_encoding(new):
        return ["(the whole file: it could not be read here)"]
    keys: set[str] = set()
    for read in readers:
        before, after = read(old), read(new)
        if after is None:
            return ["(the whole file: it could not be read here)"]
        keys |= {key for key, value in after.items() if before is None or before.get(key) != value}
    # (a key inside one already named is not named again: ``tool.uv.sources``, not its ``tool.uv.sources.app.git``)
    return sorted(key for key in keys if not any(key.startswith(f"{other}.") for other in keys))


def _composer_hooks(data: bytes | None) -> dict[str, str] | None:
    if not data:
        return {} if data is not None else None
    if len(data) >= MAX_PACKAGE_JSON:
        return None
    try:
        parsed: Any = json.loads(data.decode("utf-8", "replace").removeprefix("\ufeff"))
    except (ValueError, RecursionError):
        return None
    scripts = parsed.get("scripts") if isinstance(parsed, dict) else None
    if not isinstance(scripts, dict) or not any(_COMPOSER_EVENT.search(str(name)) for name in scripts):
        return {}
    return {"scripts": json.dumps(scripts, sort_keys=True)}


def _toml(data: bytes | None) -> dict[str, Any] | None:
    if not data:
        return {} if data is not None else None
    if len(data) >= MAX_PACKAGE_JSON:
        return None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # (UnicodeDecodeError and TOMLDecodeError are ValueErrors)
        return None


# Where uv installs from (its settings in uv.toml, or pyproject.toml's [tool.uv]): a package of the same name from
# another index builds and runs its code at the next ``uv sync``, outside the box.
# So is a dependency taken from a repository or an archive (``sources`` with ``git``/``url``, an override naming a URL)
# and the mirror uv downloads the interpreters it runs from (red team 101 C). A ``path`` source is the project's own.
_UV_INDEX_KEYS = ("index", "index-url", "extra-index-url", "find-links", "index-strategy", "python-install-mirror",
                  "pypy-install-mirror")  # fmt: skip
_UV_URL_LISTS = ("override-dependencies", "constraint-dependencies")


def _index_keys(table: object, prefix: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for where, inner in ((prefix, table), (f"{prefix}pip.", table.get("pip") if isinstance(table, dict) else None)):
        for key in _UV_INDEX_KEYS:
            if isinstance(inner, dict) and key in inner:
                found[f"{where}{key}"] = json.dumps(inner[key], sort_keys=True, default=str)
    if not isinstance(table, dict):
        return found
    sources = table.get("sources")
    fetched = {name: given for name, given in sources.items() if _fetched(given)} if isinstance(sources, dict) else {}
    if fetched:
        found[f"{prefix}sources"] = json.dumps(fetched, sort_keys=True, default=str)
    for key in _UV_URL_LISTS:
        named = [str(item) for item in table.get(key) or [] if "@" in str(item) or "://" in str(item)]
        if isinstance(table.get(key), list) and named:
            found[f"{prefix}{key}"] = json.dumps(sorted(named))
    return found


def _fetched(given: object) -> bool:
    """Whether a uv source (or a list of them) takes a package from a repository or an archive."""
    if isinstance(given, list):
        return any(_fetched(item) for item in given)
    return isinstance(given, dict) and any(key in given for key in ("git", "url"))


def _hatch_keys(hatch: dict[str, Any], prefix: str) -> dict[str, str]:
    """Hatch's install commands of each environment and the plugins it installs (``[env] requires``, which it runs:
    red team 113 F4), in pyproject's ``[tool.hatch]`` or in ``hatch.toml``."""
    found: dict[str, str] = {}
    envs = hatch.get("envs")
    for name, env in envs.items() if isinstance(envs, dict) else ():
        for key in ("pre-install-commands", "post-install-commands"):
            if isinstance(env, dict) and key in env:
                found[f"{prefix}envs.{name}.{key}"] = json.dumps(env[key], sort_keys=True, default=str)
    env = hatch.get("env")
    if isinstance(env, dict) and "requires" in env:
        found[f"{prefix}env.requires"] = json.dumps(env["requires"], sort_keys=True, default=str)
    return found


def _hatch_toml_hooks(data: bytes | None) -> dict[str, str] | None:
    parsed = _toml(data)
    return None if parsed is None else _hatch_keys(parsed, "")


def _tables(data: bytes | None, *keys: str) -> dict[str, str] | None:
    """The values of top-level (or dotted) ``keys`` of a TOML file, as canonical JSON."""
    parsed = _toml(data)
    if parsed is None:
        return None
    found: dict[str, str] = {}
    for key in keys:
        value: Any = parsed
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            found[key] = json.dumps(value, sort_keys=True, default=str)
    return found


def _pdm_toml_hooks(data: bytes | None) -> dict[str, str] | None:
    return _tables(data, "pypi", "scripts")  # (PDM's index, as [[tool.pdm.source]]; its hooks, as [tool.pdm.scripts])


def _pipfile_sources(data: bytes | None) -> dict[str, str] | None:
    return _tables(data, "source")  # (pipenv's indexes: red team 113 F3)


def _pixi_channels(data: bytes | None) -> dict[str, str] | None:
    return _tables(data, "workspace.channels", "project.channels", "pypi-options")


# What in a conda environment file may name where packages come from, read without a YAML parser (none is at hand):
# a channels key in any spelling, ``channel::pkg``, a url, an option line of its pip section (``- --extra-index-url``,
# ``- -i …``), a flow mapping or list (``{…}``, ``[…]``: read whole) (red team 114 F3).
_CONDA_SOURCE = deferred(r"channel|::|://|^\s*-\s+-|[{\[]", re.I)


def _conda_channels(data: bytes | None) -> dict[str, str] | None:
    """A conda environment file's lines that may name a source (``conda env update`` fetches packages whose scripts
    it runs, and hands its pip section to pip)."""
    if data is None:
        return None
    if len(data) >= MAX_PACKAGE_JSON:
        return None
    lines = sorted({" ".join(line.split()) for line in re.split(r"[\r\n]", data.decode("utf-8", "replace"))
                    if _CONDA_SOURCE.search(line)})  # fmt: skip
    return {"sources": json.dumps(lines)} if lines else {}


def _direct_references(parsed: dict[str, Any]) -> dict[str, str]:
    """A pyproject's own dependency lists' requirements taken from a repository or an archive (red team 113 F2)."""
    project: dict[str, Any] = parsed["project"] if isinstance(parsed.get("project"), dict) else {}
    build: dict[str, Any] = parsed["build-system"] if isinstance(parsed.get("build-system"), dict) else {}
    lists: dict[str, object] = {"project.dependencies": project.get("dependencies"),
                                "build-system.requires": build.get("requires")}  # fmt: skip
    for table, prefix in ((project.get("optional-dependencies"), "project.optional-dependencies."),
                          (parsed.get("dependency-groups"), "dependency-groups.")):  # fmt: skip
        for name, items in table.items() if isinstance(table, dict) else ():
            lists[f"{prefix}{name}"] = items
    found: dict[str, str] = {}
    for key, items in lists.items():
        named = sorted(i for i in items if isinstance(i, str) and DIRECT.search(i)) if isinstance(items, list) else []
        if named:
            found[key] = json.dumps(named)
    return found


# Attributes that make git convert a file's bytes as it stores or writes it (red team 113 F5: ``*.png text`` added
# to .gitattributes, and the user's next ``git stash`` keeps their binary edit with its CRLFs turned to LF, the work
# tree reset: the bytes survive nowhere). A filter's program is git config's (judged there); git-lfs's is the store.
_CONVERTING = deferred(r"^(?:text|eol|crlf|ident|working-tree-encoding|filter)(?:=|$)")


def attributes_file(path: str) -> bool:
    """Whether ``path`` is a ``.gitattributes`` of the project (not an installed package's)."""
    parts = path.split("/")
    return parts[-1] == ".gitattributes" and not _INSTALLED & set(parts)


def attribute_conversions(old: bytes | None, new: bytes | None) -> list[str]:
    """The lines of a ``.gitattributes`` ``new`` holds, and ``old`` did not, that make git convert bytes (macros
    defined with such attributes count as them); all of it past what is read."""
    if new is not None and len(new) >= MAX_PACKAGE_JSON:
        return ["(the whole file: it could not be read here)"]

    def converting(data: bytes | None) -> set[str]:
        macros: set[str] = set()
        found: set[str] = set()
        # (as git reads it: lines end at LF only, fields part at space, tab and CR: red team 114 F1)
        for line in (data or b"").decode("utf-8", "replace").split("\n"):
            words = [w for w in re.split(r"[ \t\r]+", line) if w]
            if not words or words[0].startswith("#"):
                continue
            attrs = [w for w in words[1:] if not w.startswith(("-", "!")) and w != "filter=lfs"]
            if any(_CONVERTING.match(a) or a in macros for a in attrs):
                if words[0].startswith("[attr]"):
                    macros.add(words[0][len("[attr]") :])
                found.add(" ".join(words))
        return found

    return sorted(converting(new) - converting(old))


def _uv_toml_hooks(data: bytes | None) -> dict[str, str] | None:
    parsed = _toml(data)
    return None if parsed is None else _index_keys(parsed, "")


def _pyproject_hooks(data: bytes | None) -> dict[str, str] | None:
    parsed = _toml(data)
    if parsed is None:
        return None
    tool = parsed.get("tool")
    tool = tool if isinstance(tool, dict) else {}
    found: dict[str, str] = {}
    pdm = tool.get("pdm")
    scripts = pdm.get("scripts") if isinstance(pdm, dict) else None
    if isinstance(scripts, dict) and any(_PDM_HOOK.search(str(name)) for name in scripts):
        found["tool.pdm.scripts"] = json.dumps(scripts, sort_keys=True, default=str)
    hatch = tool.get("hatch")
    found |= _hatch_keys(hatch if isinstance(hatch, dict) else {}, "tool.hatch.")
    poetry = tool.get("poetry")  # (Poetry 2 installs the plugins a project requires, and runs them, unasked)
    for owner, key in (("poetry", "requires-plugins"), ("poetry", "source"), ("pdm", "source")):
        table = poetry if owner == "poetry" else pdm  # (their package indexes: red team 101 C)
        if isinstance(table, dict) and key in table:
            found[f"tool.{owner}.{key}"] = json.dumps(table[key], sort_keys=True, default=str)
    return {**found, **_index_keys(tool.get("uv"), "tool.uv."), **_direct_references(parsed)}
