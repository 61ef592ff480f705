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

import contextlib
import json
import os
import posixpath
import re
import shlex
import stat
from collections.abc import Iterable
from typing import Any

__all__ = [
    "MAX_PACKAGE_JSON",
    "UNREAD",
    "changed_hook_keys",
    "expand_path",
    "hook_texts",
    "hooked_texts",
    "judged_package_json",
    "program_words",
    "run_by_hooks",
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
_RUNS = re.compile(r"""(?<![\w./-])(npm|pnpm|yarn|bun|turbo|lerna|nx)(?![\w.-])([^;&|\n\\"'`(){}<>]*)""")
_RUNNER_WORDS = frozenset({"run", "run-script", "rum", "urn", "run-many", "affected", "exec", "workspaces", "workspace",
                           "foreach"})  # fmt: skip
_NPM_ALIASES = {"t": "test", "tst": "test"}
# husky before 1.0: an npm script named after the hook (without its dash), run by the hook it installed
_HOOKS = ("applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
          "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
          "pre-push", "pre-receive", "update", "post-receive", "post-update", "push-to-checkout", "pre-auto-gc",
          "post-rewrite", "sendemail-validate")  # fmt: skip
_SCRIPTS = frozenset({*_HOOKS, *(hook.replace("-", "") for hook in _HOOKS)})


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
_HOOK_FILES = ("lefthook.yml", ".lefthook.yml", "lefthook.yaml", ".lefthook.yaml", ".pre-commit-config.yaml")
_TEXT_MAX = 64 << 10  # bytes of one hook file read at most
_TEXTS_MAX = 64  # files read at most in one directory


def hook_texts(directory: int) -> list[str]:
    """The texts of the hook files beside a package.json (``directory``: its directory, open): each regular file of
    ``_HOOK_DIRS`` and ``_HOOK_FILES``, reached with no link followed, never a FIFO or device opened; bounded."""
    texts: list[str] = []
    places: list[tuple[int, str]] = [(directory, name) for name in _HOOK_FILES]
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
            if (text := _read_regular(at, name)) is not None:
                texts.append(text)
    finally:
        for fd in opened:
            os.close(fd)
    return texts


def hooked_texts(directory: int) -> list[str]:
    """What the hooks of the package.json in ``directory`` (open) run: its hook keys and the scripts its hooks run,
    as texts (a root package's ``"lint": "turbo run lint"`` runs each workspace's ``lint``: red team 6 L3); all of
    it where it cannot be read."""
    text = _read_regular(directory, "package.json", MAX_PACKAGE_JSON)
    if text is None:
        return []
    settings = _hook_settings(text.encode("utf-8", "surrogateescape"), hook_texts(directory))
    return [text] if settings is None else list(settings.values())


def _read_regular(directory: int | None, name: str, limit: int = _TEXT_MAX) -> str | None:
    """The text of a regular file (``limit`` bytes at most), never through a link at its last component, never a
    FIFO or a device opened (``directory`` None: ``name`` from the working directory, or absolute)."""
    try:
        if not stat.S_ISREG(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode):
            return None
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory)
    except OSError:
        return None
    try:
        return os.read(fd, limit).decode("utf-8", "replace") if stat.S_ISREG(os.fstat(fd).st_mode) else None
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
    _close(run, scripts if isinstance(scripts, dict) else {})
    for section, keys in (("scripts", _SCRIPTS | run), ("config", frozenset({"ghooks", "commitizen"}))):
        inner = parsed.get(section)
        if isinstance(inner, dict):
            found |= {f"{section}.{key}": inner[key] for key in keys if key in inner}
    return {key: json.dumps(value, sort_keys=True) for key, value in found.items()}


def changed_hook_keys(old: bytes | None, new: bytes | None, hooks: Iterable[str] = ()) -> list[str]:
    """The hook keys the new content of a package.json sets to another value than the old one had (a key taken
    out makes no hook run anything new); a new content that cannot be read counts as setting them. ``hooks``: the
    texts of the hook files beside it (``hook_texts``)."""
    hooks = list(hooks)
    before, after = _hook_settings(old, hooks), _hook_settings(new, hooks)
    if after is None:
        return [UNREAD]
    return sorted(key for key, value in after.items() if before is None or before.get(key) != value)


# What a git hook runs, to the files those run in turn (red team 5b F4, 6 L2–L4).
_HOOK_FILES_MAX = 64  # hook files read at most in one directory
_RUN_READ_MAX = 64  # files a hook runs read at most (to find what they run), all levels together
_RUN_DEPTH = 4  # levels followed: the hook, what it runs, what that runs, ...
_RUN_NAMED_MAX = 4096  # files named at most
# A package's program run from the project's node_modules/.bin (``npx --no lint-staged``, ``pnpm exec x``).
_NPX = re.compile(
    r"(?<![\w./-])(?:npx|bunx|(?:npm|pnpm|yarn)\s+(?:exec|dlx))(?:\s+-{1,2}[\w-]+(?:=\S*)?)*\s+([\w.@-]+)"
)
# A word naming a program by its file with no directory (``python3 check.py``, ``sh precommit.sh``, ``. env.sh``).
_SCRIPT_SUFFIXES = (".py", ".sh", ".bash", ".zsh", ".ksh", ".fish", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts",
                    ".rb", ".pl", ".php", ".lua", ".mk", ".ps1")  # fmt: skip
_SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh", ".mk")  # read in turn for what they run
# Programs that run what a file of the directory they run in says (``make lint`` reads the Makefile).
_RECIPE_FILES = {
    "make": ("GNUmakefile", "makefile", "Makefile"),
    "gmake": ("GNUmakefile", "makefile", "Makefile"),
    "just": ("justfile", "Justfile", ".justfile"),
    "task": ("Taskfile.yml", "Taskfile.yaml", "taskfile.yml", "taskfile.yaml"),
    "tox": ("tox.ini",),
    "nox": ("noxfile.py",),
    "invoke": ("tasks.py",),
    "inv": ("tasks.py",),
    "rake": ("Rakefile", "rakefile"),
}
_RECIPES_READ = ("make", "gmake", "just")  # their recipes are read for what they run (the others' files are code)


def expand_path(value: str, base: str, home: str | None) -> str:
    """A path as a program given it would take it: ``~`` (the user's, or ``~user``) expanded, a relative one from
    ``base``; links resolved, as the paths it is compared with (no file opened)."""
    if home and (value == "~" or value.startswith("~/")):
        value = home + value[1:]
    elif value.startswith("~"):
        value = os.path.expanduser(value)
    return os.path.realpath(os.path.join(base, value))


def program_words(command: str) -> list[str]:
    """The words of a command line (run through ``sh -c``) that may name a file: the program, and the files it is
    given (``python3 tools/clean.py``, ``'./my tools/clean'``: red team 5b F3). Split as the shell splits; past
    what that can split (``f() { ./x; }; f``), at blanks and shell punctuation. Options and assignments are not."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = re.split(r"[\s;&|(){}<>'\"`]+", command)
    words = [w.strip("(){};&|<>@") for w in words]
    return [w for w in words if w and not w.startswith(("-", "$")) and "=" not in w]


def run_by_hooks(directories: Iterable[str], work_tree: str, home: str | None) -> list[str]:
    """The files the git hooks in ``directories`` run (``%`` and the path, as ``git_dirs`` reads it), to the files
    those run in turn: named by a path, or by a script's name (``python3 check.py``), a recipe file a program
    reads (``make lint``: the Makefile, and what the recipes of ``lint`` and its prerequisites run), the
    ``node_modules/.bin`` entry of ``npx x`` (not the package's own files); from the hook files and from lefthook's
    and pre-commit's configs at the work tree's top. Relative names are taken from the work tree's top (where git
    runs hooks) and, in a file read in turn, from its own directory too.

    Threat: a hook ``exec ./scripts/pre-commit`` running ``python3 tools/check.py``, a hook ``make lint``, a
    lefthook ``run: ./scripts/lint.sh``: the hook is protected, the program it runs was an ordinary file —
    rewritten by a command, the user's next ``git commit`` runs it outside the box. Bounded: 4 levels, 64 files read
    (shell scripts and recipe files; a Python or Node program is protected, the modules it imports are not),
    regular files only, never through a link or a FIFO; ``*.sample`` hooks git never runs are not read."""
    texts: list[tuple[str, str, tuple[str, ...] | None]] = []  # (text, its directory, targets of a recipe file)
    for directory in directories:
        names: list[str] = []
        with contextlib.suppress(OSError), os.scandir(directory) as entries:
            names = sorted(e.name for e in entries if not e.name.endswith(".sample"))[:_HOOK_FILES_MAX]
        texts += [(_hook_text(os.path.join(directory, name)), work_tree, None) for name in names]
    texts += [(_hook_text(os.path.join(work_tree, name)), work_tree, None) for name in _HOOK_FILES]
    found: dict[str, None] = {}
    budget = [_RUN_READ_MAX]
    for _level in range(_RUN_DEPTH):
        texts = [more for text, base, targets in texts
                 for more in _runs(text, base, targets, work_tree, home, found, budget)]  # fmt: skip
        if not texts:
            break
    return ["%" + path for path in found][:_RUN_NAMED_MAX]


def _runs(text: str, base: str, targets: tuple[str, ...] | None, work_tree: str, home: str | None,
          found: dict[str, None], budget: list[int]) -> list[tuple[str, str, tuple[str, ...] | None]]:  # fmt: skip
    """Add to ``found`` the files one text runs; the texts of those to read in turn."""
    if targets is not None:
        text = _recipes(text, targets)
    bases = dict.fromkeys((work_tree, base))
    more: list[tuple[str, str, tuple[str, ...] | None]] = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        words = program_words(line)
        # (word, how: "run" read as shell if it is one, "recipes" read for the goals', "" not read, goals)
        named: list[tuple[str, str, tuple[str, ...]]] = [(f"node_modules/.bin/{x}", "", ()) for x in _NPX.findall(line)]
        for at, word in enumerate(words):
            if "/" in word or word.startswith("~") or word.endswith(_SCRIPT_SUFFIXES):
                named.append((word, "run", ()))
            elif (files := _RECIPE_FILES.get(word)) is not None:
                wanted = tuple(w for w in words[at + 1 :] if not w.endswith(_SCRIPT_SUFFIXES))
                named += [(name, "recipes" if word in _RECIPES_READ else "", wanted) for name in files]
        for word, how, goals in named:
            for where in bases:
                path = expand_path(word, where, home)
                if path in found or len(found) >= _RUN_NAMED_MAX:
                    continue
                found[path] = None
                if not how or budget[0] <= 0 or not (body := _hook_text(path)):
                    continue
                budget[0] -= 1
                if how == "recipes":
                    more.append((body, posixpath.dirname(path), goals))
                elif _shell_text(path, body):
                    more.append((body, posixpath.dirname(path), None))
    return more


def _shell_text(path: str, body: str) -> bool:
    """Whether a file a hook runs is read as shell (for what it runs in turn): by its suffix, or its first line."""
    if path.endswith(_SHELL_SUFFIXES):
        return True
    first = body.split("\n", 1)[0]
    return "." not in posixpath.basename(path) and (not first.startswith("#!") or first.rstrip().endswith("sh"))


_RULE = re.compile(r"^([^\s:=#][^:=#]*?)\s*::?(?!=)(.*)$")


def _recipes(text: str, goals: tuple[str, ...]) -> str:
    """The lines of a Makefile or justfile that run when ``goals`` are made (none named: the first rule's), their
    prerequisites' too; and its ``include`` lines. A recipe line is an indented one under its rule."""
    rules: dict[str, tuple[list[str], list[str]]] = {}
    order: list[str] = []
    current: list[str] = []
    kept: list[str] = []
    for line in text.splitlines():
        if line[:1] in ("\t", " ") and current:
            for name in current:
                rules[name][1].append(line)
            continue
        stripped = line.strip()
        if stripped.startswith(("include ", "-include ", "sinclude ", "import ", "mod ")):
            kept.append(stripped)
        match = _RULE.match(line)
        current = match.group(1).split() if match else []
        for name in current:
            prerequisites, recipe = rules.setdefault(name, ([], []))
            after = match.group(2).split(";", 1) if match else [""]
            prerequisites += after[0].split()
            recipe += after[1:]
            order.append(name)
    todo = list(goals) or [name for name in order if not name.startswith(".")][:1]
    seen: set[str] = set()
    while todo and len(seen) < 1024:
        name = todo.pop()
        if name in seen or name not in rules:
            continue
        seen.add(name)
        todo += rules[name][0]
        kept += rules[name][1]
    return "\n".join(kept)


def _hook_text(path: str) -> str:
    """A file's text (64 KiB at most), read as ``_read_regular`` reads one; "" if not."""
    return _read_regular(None, path) or ""
