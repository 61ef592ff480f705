"""What a git hook runs, to the files those run in turn: project files the user's next ``git commit`` runs outside
any box, protected like the hook itself (``git_dirs`` marks each ``%``). Read from the hook files, the hook managers'
configs at the top (lefthook, pre-commit, hk, CaptainHook, rusty-hook, GrumPHP, overcommit) and ``.envrc``; each text
line by line and with bash's grammar (``hook_words``): a file named by a path (one built at run time from the top or
the script's place too), any word naming a file there is, what a runner or interpreter is given, a module (``-m``),
the recipe file a program reads (``make lint``: ``make_reads``; ``just``, ``task``, ``tox``, ``ninja`` …: read whole),
``npx x``'s entry, a program named alone on a PATH a text sets. Relative names from the top, the text's directory and
every directory it changes to. Texts read in turn (6 levels, 96 files, 512 KiB); past any bound the directory counts
whole (``PART_READ``). A Python or Node program is protected with its compiled copy, not the modules it imports: a
hook that runs the project's tests runs the project's code (docs/security.md).

Threat: a hook ``exec ./scripts/pre-commit`` running ``python3 tools/check.py``, ``make lint``, lefthook's ``run:
./scripts/lint.sh``: the program a protected hook runs, rewritten, runs at the next ``git commit`` (red teams 5b F4,
6, 8, 135–142). Regular files only (a link read as what it leads to), never ``*.sample`` hooks.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import posixpath
import re
import shlex
import stat
import sys
from collections.abc import Iterable

from mcp_server_guard.hook_configs import HOOK_CONFIG_FILES, read_regular_bytes
from mcp_server_guard.hook_interpreters import (
    INCLUDED,
    PART_READ,
    SOURCED,
    files_in,
    module_words,
    more_lines,
    more_places,
    operands,
    script_name,
    scripts_read,
    search_found,
    shebang_program,
    shell_text,
)
from mcp_server_guard.hook_interpreters import (
    PATTERN as _PATTERN,
)
from mcp_server_guard.hook_interpreters import (
    Named as _Named,
)
from mcp_server_guard.hook_interpreters import (
    found_by_rules as _found_by_rules,
)
from mcp_server_guard.hook_interpreters import (
    interpreted as _interpreted,
)
from mcp_server_guard.hook_words import (
    ANYWHERE,
    GIT_DIR_WORD,
    HERE_WORD,
    PARAMETER_DEFAULT,
    READ_FROM,
    RUNS_A_DIRECTORY,
    SHELLS,
    TOP_WORD,
    OnPath,
    assigned,
    code_strings,
    git_commands,
    in_place,
    is_file,
    on_path,
    parsed_lines,
    path_like,
    program_words,
    put_on_path,
    runner,
    search_dirs,
    static_values,
)
from mcp_server_guard.make_reads import RECIPE_FILES, make_calls, make_named, make_read
from mcp_server_guard.mise_config import MISE_PLACES, mise_files, mise_path_dirs, mise_runs
from mcp_server_guard.patterns import deferred
from mcp_server_guard.python_startup import ENV_MARKERS, venv_entry

__all__ = [
    "ENV_CONFIGS",
    "HOOK_MANAGER_FILES",
    "PART_READ",
    "expand_path",
    "hook_modules",
    "hook_names",
    "new_budget",
    "path_dirs",
    "run_by_hooks",
]

_HOOK_FILES_MAX = 64  # hook files read at most in one directory
_RUN_READ_MAX = 96  # files a hook runs read at most (to find what they run), all levels together
_RUN_BYTES_MAX = 512 << 10  # and their bytes at most (a hook sourcing 96 files of 64 KiB took 19 s: red team 51 F4)
_READ_MAX = 256 << 10  # bytes of one file read at most
_RUN_DEPTH = 6  # levels followed: the hook, what it runs, what that runs, ...
_RUN_NAMED_MAX = 4096  # files named at most
_GLOB_MAX = 64  # files an ``include mk/*.mk`` names at most (and the pattern, which names the rest)
_PLACES_MAX = 32  # directories one text's relative names are looked for in
# Hook managers' configs at the top of the work tree (protected whole, policies/default.toml): what they name runs.
_LEFTHOOK_FILES = tuple(
    f"{d}lefthook{local}.{ext}"
    for d in ("", ".", ".config/")
    for local in ("", "-local")
    for ext in ("yml", "yaml", "toml", "json")
)  # (every file lefthook reads: red team 158)
HOOK_MANAGER_FILES = tuple(dict.fromkeys((*HOOK_CONFIG_FILES, "hk.pkl", "captainhook.json", ".rusty-hook.toml",
                                          "rusty-hook.toml", "grumphp.yml", "grumphp.yml.dist", "grumphp.dist.yml",
                                          ".overcommit.yml", ".envrc", *_LEFTHOOK_FILES)))  # fmt: skip
# A package's program run from the project's node_modules/.bin (``npx --no lint-staged``, ``pnpm exec x``).
_NPX = deferred(r"(?<![\w./-])(?:npx|bunx|(?:npm|pnpm|yarn)\s+(?:exec|dlx))(?:\s+-{1,2}[\w-]+(?:=\S*)?)*\s+([\w.@-]+)")
# A word naming a program by its file with no directory (``python3 check.py``, ``sh precommit.sh``, ``. env.sh``).
# (named there or not: a hook that runs one if it is there runs one made later — ``tclsh x.tcl 2>/dev/null || true``,
# ``[ ! -f x.tcl ] || tclsh x.tcl``: red team 146 F3)
_SCRIPT_SUFFIXES = (".py", ".pyw", ".sh", ".bash", ".zsh", ".ksh", ".fish", ".csh", ".nu", ".js", ".mjs", ".cjs",
                    ".jsx", ".ts", ".mts", ".cts", ".tsx", ".rb", ".pl", ".pm", ".php", ".lua", ".mk", ".ps1",
                    ".psm1", ".just", ".tcl", ".exp", ".awk", ".sed", ".r", ".R", ".jl", ".ex", ".exs", ".groovy",
                    ".gradle", ".kts", ".java", ".go", ".swift", ".dart", ".scm", ".rkt", ".clj", ".bb",
                    ".coffee", ".applescript", ".scpt")  # fmt: skip
_SOURCING = SHELLS | {".", "source"}  # (what runs the file it is given as shell)
# (blanks taken possessively: ``^\s*-?\s*`` split a line's 60 KB of leading blanks every way — red team 165 E1)
_ENTRY = deferred(r"""^\s*+(?:-\s*+)?(?:entry|run|script)\s*+:\s*+["']?([\w@%+=,.-][^\s"'|&;]*)""")
_GLOB = deferred(r"[*?[]")
_LOOP_LIST = deferred(r"(?:^|[\s;&|(])for\s+(\w+)\s+in\s+([^;\n]*)")
_HELD_DIR = deferred(r"^\$\{?(\w+)\}?(/.*)?$")
_EXECDIR = deferred(r"(?:^|[\s;&|(])find\s+((?:[^\s;&|()!-][^\s;&|()]*\s+)*)[^;&|\n]*?-execdir\s")
_CDPATH = deferred(r"(?:^|[\s;&|(])(?:export\s+)?CDPATH=[\"']?([^\s\"';&|]+)")
_LOOPS = deferred(r"\s*(?:for|select)\s")  # (``for f in scripts/*.sh; do sh "$f"; done``: what it runs is in its list)
_TESTED = deferred(r"(?:\[\[?|\btest)\s+(?:!\s+)?-[fxersLh]\s+([^\s;&|\]]+)")
_CONFIG = deferred(r"\A(?:\s*(?:#[^!].*)?\n)*\s*(?:[\w.-]+:(?:\s|$)|\[|\{|-\s)")  # YAML, TOML, JSON: not shell
_RECIPE_PREFIX = deferred(r"^[ \t]*[@+-]*", re.M)  # a make recipe line's tab and @, +, - (not the shell's)
# A directory the rest runs from: ``cd tools``, ``make -C sub``, lefthook's ``root:``.
_CHANGES_DIR = deferred(
    r"(?:^|[\s;&|(])[@+-]*(?:cd|pushd)(?:\s+-[-LPe@]*)*\s+(?:'([^']*)'|\"([^\"]*)\"|([^\s;&|)]+))"
    r"|\s(?:-C|--directory|--chdir|--build)[ =]?(\S+)"
    r"|^\s*(?:root|working-directory|workdir):\s*(\S+)",
    re.MULTILINE,
)
_MODULES = deferred(
    r"(?<![\w.-])-[bBdEhiIOqsSuvxR]*m\s*([A-Za-z_][\w.]*)"
)  # ``-m tools.check``, pre-commit's ``-mpre_commit``
# A variable or command substitution left in a path (``node_modules/lefthook-${osArch}-${cpuArch}/bin/lefthook``):
# any name there.
_LEFT = deferred(r"\$\{[^}]*\}|\$\((?:[^()]|\([^()]*\))*\)|\$\w+")
# An interpreter of an environment (``.venv/bin/python3``): a module it runs (``-m x``) is looked for in its
# site-packages too.
_INTERPRETER = deferred(r"/bin/python[\d.]*$")
_RECIPES_READ = ("make", "gmake", "just")  # their recipes are read for the goals'; the others' files whole
# direnv's words whose operand is a directory put on a path (read by ``path_dirs``), never a program run.
_DIRECTORY_WORDS = frozenset({"PATH_add", "path_add", "MANPATH_add", "PATH_rm", "path_rm", "load_prefix"})
# A path built at run time from a place the shell knows: ``$(git rev-parse --show-toplevel)/x``, ``$ROOT/x``.
_BUILT = deferred(r"^(?:\$\((?:[^()]|\([^()]*\))*\)|\$\{[^}]*\}|\$\w+)+/+(.+)$")

_Text = tuple[str, str, tuple[str, ...] | None]  # a text, its directory, the goals of a recipe file (None: shell)


def expand_path(value: str, base: str, home: str | None) -> str:
    """A path as a program given it would take it: ``~`` (the user's, or ``~user``) expanded, a relative one from
    ``base``; links resolved, as the paths it is compared with (no file opened)."""
    if home and (value == "~" or value.startswith("~/")):
        value = home + value[1:]
    elif value.startswith("~"):
        value = os.path.expanduser(value)
    return os.path.realpath(os.path.join(base, value))


def run_by_hooks(
    directories: Iterable[str],
    work_tree: str,
    home: str | None,
    budget: list[int] | None = None,
    programs: Iterable[str] = (),
) -> list[str]:
    """The files the git hooks in ``directories`` run, to the files those run in turn (module docstring): ``%`` and
    the path, as ``git_dirs`` reads it. ``budget``: [files, bytes] still to read, shared by several calls (``git_dirs``
    reads every directory's ``.envrc`` with one: red team 51 F4); else a fresh one."""
    texts: list[_Text] = []
    found: dict[str, None] = {}
    for directory in directories:
        names: list[str] = []
        with contextlib.suppress(OSError), os.scandir(directory) as entries:
            names = sorted(e.name for e in entries if not e.name.endswith(".sample"))
        if len(names) > _HOOK_FILES_MAX:  # (past the hooks read: what the others run may lie anywhere)
            found[PART_READ + work_tree] = None
            names = names[:_HOOK_FILES_MAX]
        # $0 is there; a linked hook's script finds its own folder too (``readlink -f "$0"``: red team 105 F4)
        texts += [(_whole(path, found), base, None) for path in (os.path.join(directory, name) for name in names)
                  for base in dict.fromkeys((directory, os.path.dirname(os.path.realpath(path))))]  # fmt: skip
    texts += [(_whole(os.path.join(work_tree, name), found), work_tree, None) for name in HOOK_MANAGER_FILES]
    # (a program a git config names, read for what it runs in turn: ``core.fsmonitor = tools/fsmon.sh``: 144 F4)
    texts += [(_whole(path, found), posixpath.dirname(path), None) for path in programs]
    mise, more = mise_files(work_tree)  # (what mise runs on entering the project: read as TOML, red team 146 F5)
    texts += [(mise_runs(_whole(os.path.join(work_tree, name), found)), work_tree, None) for name in mise]
    if more:
        found[PART_READ + work_tree] = None  # (past the files read: what the others run may lie anywhere)
    budget = budget if budget is not None else new_budget()
    bins = OnPath([posixpath.normpath(os.path.join(work_tree, d)) for d in sorted(path_dirs(work_tree))])
    for _level in range(_RUN_DEPTH):
        texts = [more for text, base, goals in texts for more in _runs(text, base, goals, work_tree, home, found,
                                                                       budget, bins)]  # fmt: skip
        if not texts:
            break
    for _text_left, base, _goals in texts:  # (past the levels: what these run is unread)
        found[PART_READ + base] = None
    for path, _how, _goals in on_path(sorted(bins.words), bins.dirs):  # (a PATH set by a text read later)
        found.setdefault(path, None)
    # (A pattern, ``^``: a path built with a variable, any file it matches, made or changed: red team 49 F4.)
    named = [path if path.startswith((_PATTERN, PART_READ)) else "%" + path for path in found]
    return named[:_RUN_NAMED_MAX] + [path for path in named[_RUN_NAMED_MAX:] if path.startswith(PART_READ)]


def _named(words: list[str], line: str) -> list[_Named]:
    """What one line names: (word, how — "run": read in turn if shell, "recipes": read for the goals', "whole": read
    whole, "include": a makefile's include, read whole, "": not read —, goals)."""
    named: list[_Named] = [(f"node_modules/.bin/{x}", "", ()) for x in _NPX.findall(line)]
    # (a hook manager's ``entry:``/``run:`` program by its bare name: pre-commit's ``language: script`` runs
    # ``entry: lint-check`` as the file at the top — red team 157 F2)
    named += [(word, "run", ()) for word in _ENTRY.findall(line)]
    named += make_named(line)  # (what make reads: includes, ``make -f X``, ``$(MAKE)``: red team 123)
    if RUNS_A_DIRECTORY.search(line):  # (``run-parts hooks.d``, ``find hooks.d -exec {} ;``: red team 162 F2)
        named += [(word, "", ()) for word in words[1:] if "$" not in word and word.strip("./")]  # (not the top)
    for at, word in enumerate(words):
        previous = words[at - 1] if at else ""
        if previous in _DIRECTORY_WORDS:
            continue  # a directory put on a path (``PATH_add .venv/bin``: path_dirs), no program
        if previous in (INCLUDED, SOURCED):  # (lefthook's ``extends:``, read whole; ``source_dir:``'s scripts)
            named.append((word, "whole", ()) if previous == INCLUDED else (f"{word.rstrip('/')}/*/*", "run", ()))
            continue
        if word.startswith("$"):
            if built := _BUILT.match(word):
                named.append((built.group(1), "run", ()))
            elif ")/" in word:  # (`"$(dirname "$(readlink -f "$0")")/lib.sh"`, split: red team 105 F4)
                named.append((word.rpartition(")/")[2].lstrip("/"), "run", ()))
        elif _GLOB.search(word) and not (at == 0 or runner(previous) or (at and runner(words[0]))
                                         or _LOOPS.match(line) or RUNS_A_DIRECTORY.search(line)):  # fmt: skip
            continue  # a glob a tool is given (``eslint src/**/*.js``, lefthook's ``glob:``): its data, not run
        elif (
            "/" in word
            or word.startswith("~")
            or word.endswith(_SCRIPT_SUFFIXES)
            or script_name(word, at, words[0])
            or runner(previous)
            or (at and runner(words[0]))  # (``python3 -W ignore check``: red team 140 F4; ``python3.11 x``: 142 F1)
        ):
            # (a file a shell is given runs as shell whatever its name: ``sh x.hook``, ``. ./x.conf`` — 165 F2)
            by_shell = posixpath.basename(previous) in _SOURCING or (at == 1 and posixpath.basename(words[0]) in SHELLS)
            named.append((word, "shell" if by_shell else "run", ()))
        elif previous == "mod":  # a justfile's module: NAME.just, NAME/mod.just, NAME/justfile
            named += [(f"{word}.just", "run", ()), (f"{word}/mod.just", "run", ()), (f"{word}/justfile", "run", ())]
        elif (files := RECIPE_FILES.get(word)) is not None:
            goals = tuple(w for w in words[at + 1 :] if not w.endswith(_SCRIPT_SUFFIXES))
            if word in ("make", "gmake"):  # its options and variables too: make_reads takes ``-I``, ``NAME=value``
                goals = _make_arguments(line, word) or goals
            named += [(name, "recipes" if word in _RECIPES_READ else "whole", goals) for name in files]
    for module in _MODULES.findall(line)[:16]:
        # ``python3 -m tools.check``: every file Python may take for it and its packages (red teams 8 A1, 149 F2, F3)
        named += [(word, "run", ()) for word in module_words(module)]
    return named


def _on_a_path(words: list[str]) -> set[str]:
    """The directories direnv puts on a path (``PATH_add .venv/bin``: ``path_dirs``), no programs; once a line (a
    line of a recipe expanded to 20,000 words asked this of each word: 670 million comparisons, two minutes)."""
    return {b for a, b in itertools.pairwise(words) if a in _DIRECTORY_WORDS}


def _make_arguments(line: str, program: str) -> tuple[str, ...]:
    """The words after the first make on ``line`` (``program``: make or gmake), as ``make_reads`` finds them."""
    return tuple(next(iter(make_calls(line)), [])) if program in ("make", "gmake") else ()


def _places(text: str, base: str, work_tree: str, home: str | None) -> list[str]:
    """The directories a text runs things from: the top, its own, and each it changes to (``cd tools``, ``make -C
    sub``, lefthook's ``root: sub/``: red team 8 A3; with ``CDPATH=scripts``, ``scripts/hooks`` too: 170 F4; a
    loop's variable, ``for d in packages/*; do (cd "$d" && …)``, as each of its words: 176 F4; below each root of
    ``find root … -execdir``: ``ANYWHERE``); all of them, the first 32 looked in (``_runs``)."""
    places = [work_tree, base]
    cdpath = [work_tree, base, *(expand_path(p, work_tree, home) for v in _CDPATH.findall(text) for p in v.split(":"))]
    loops = {var: items.split()[:32] for var, items in _LOOP_LIST.findall(text)}
    for found in _CHANGES_DIR.finditer(text):
        target = next(g for g in found.groups() if g is not None).strip("'\"")
        built = _BUILT.match(target) if target.startswith("$") else None
        if (held := _HELD_DIR.match(target)) and held.group(1) in loops:
            places += [expand_path(word + (held.group(2) or ""), work_tree, home) for word in loops[held.group(1)]]
        elif built or not target.startswith("$"):
            places += [expand_path(built.group(1) if built else target, where, home) for where in cdpath[:8]]
    places += [posixpath.join(expand_path(r, work_tree, home), ANYWHERE) for f in _EXECDIR.findall(text)
               for r in f.split()]  # fmt: skip
    # (a glob, ``cd tool?``: the directories it matches, and any made later — a pattern: ``hook_words.in_place``)
    places += [match for place in places if _GLOB.search(place) for match in sorted(glob.glob(place))[:16]]
    return list(dict.fromkeys(places))


def _prepared(text: str, base: str, goals: tuple[str, ...] | None, work_tree: str, home: str | None,
              found: dict[str, None], bins: OnPath) -> tuple[str, list[str], bool]:  # fmt: skip
    """One text as ``_runs`` reads it — its lines and the command lines it amounts to besides them —, the places a
    name of it is looked for in, and whether it is shell (not a hook manager's YAML); what it puts on PATH added to
    ``bins``, what a bound left unread to ``found``."""
    text = text.replace("\x00", "\n")  # (a binary read whole: no name holds a NUL, and a path with one fails)
    if goals is not None:
        text, cut = make_read(text, goals)  # (its variables expanded, its includes and makefiles named: make_reads)
        if cut:
            found[PART_READ + base] = None
    # The commands as bash's grammar reads them, read beside the lines as written (red team 138): past the parser's
    # bounds, the text's directory counts whole.
    # (``$(git rev-parse --git-dir)/../x``, ``~+/x``: places bash and git know — red team 142 F3, F8)
    # (``~-/x``: a directory it was in, each looked in; the text's own directory in any word — red team 170 F2, F4)
    text = TOP_WORD.sub("./", GIT_DIR_WORD.sub(".git", text)).replace("~+/", "./").replace("~-/", "./")
    text = HERE_WORD.sub(lambda _found: base, text)
    script = _RECIPE_PREFIX.sub("", text).replace("$$", "$") if goals is not None else text  # (a recipe as run)
    commands, whole = parsed_lines(script)
    shell = goals is not None or not _CONFIG.match(text)  # (a hook manager's YAML names files it only passes on)
    if not whole:
        found[PART_READ + base] = None
    # A parameter's default (``"${LINT:-./scripts/lint.sh}"``: red team 140 F2), a file read on a descriptor
    # (``exec 3<scripts/lint; sh <&3``, ``sh < x``: F5), a directory put on PATH by any spelling (F1): read too.
    defaults = PARAMETER_DEFAULT.sub(lambda found: found.group(1), text)
    read_from = [f"sh {shlex.quote(name)}" for name in READ_FROM.findall(text)]
    text = "\n".join([text, *commands, *read_from, *more_lines(text), *([defaults] if defaults != text else [])])
    bins.dirs += [b for b in put_on_path(text, base, work_tree) if b not in bins.dirs][: 16 - len(bins.dirs)]
    # (a language's search path the text sets: a module it loads by name is looked for there too — red team 146 F2)
    places = list(dict.fromkeys([*_places(text, base, work_tree, home), *search_dirs(text, base, work_tree)]))
    for place in places[_PLACES_MAX:]:  # (a directory past those looked in: all of it counts)
        found[PART_READ + place] = None
    found.update(dict.fromkeys(search_found(text, base, work_tree)))
    return text, places[:_PLACES_MAX], shell


def _runs(text: str, base: str, goals: tuple[str, ...] | None, work_tree: str, home: str | None,
          found: dict[str, None], budget: list[int], bins: OnPath) -> list[_Text]:  # fmt: skip
    """Add to ``found`` the files one text runs; the texts of those to read in turn. ``bins``: the directories the
    hooks put first on PATH (``path_dirs``), where a program named by its name alone is looked for."""
    text, places, shell = _prepared(text, base, goals, work_tree, home, found, bins)
    values, more = static_values(text), list[_Text]()
    known: dict[tuple[str, int], bool] = {}  # (once a text and set of places: a later ``cd`` adds one, 184 F1)
    done: set[tuple[str, int, str, tuple[str, ...], bool, bool, bool, bool]] = set()

    def files(word: str) -> bool:
        if (word, len(places)) not in known and len(known) >= 8192:
            found[PART_READ + base] = None  # (past the words looked up: the text is read in part)
            return False
        if (key := (word, len(places))) not in known:
            known[key] = is_file(word, places)
        return known[key]

    read: dict[str, tuple[int, int]] = {}  # line -> how many places and PATH directories it was read with
    for written in text.splitlines():
        if written.lstrip().startswith("#") or read.get(written) == (state := (len(places), len(bins.dirs))):
            continue  # (read again with no more places to look in, a line adds nothing: all else only grows, 133 F2)
        read[written] = state
        line = assigned(written, values)
        words = program_words(line, built=True)
        programs = [*words[:16], *git_commands(words)]  # (``git lint`` runs ``git-lint`` from PATH: 146 F4)
        bins.words.update(w for w in programs if len(bins.words) < 4096)
        named = _named(words, line) + _in_sites(words, line, places, home) + on_path(programs, bins.dirs)
        extra, resolved, direct = _interpreted(line, words)
        named += extra
        inners = code_strings(line)  # (``bash -c 'sh x.sh'``, ``node -e "require('./x')"``: red team 136 F3)
        for inner in inners:
            inners += code_strings(inner)  # (nested: ``sh -c "bash -c '…'"``; bounded as the text is, by its size)
            more_places(_places(inner, base, work_tree, home), places, found, _PLACES_MAX)
            inner_words = program_words(inner, built=True)
            extra, inner_resolved, inner_direct = _interpreted(inner, inner_words)
            named += _named(inner_words, inner) + _in_sites(inner_words, inner, places, home) + extra
            words, resolved, direct = [*words, *inner_words], resolved | inner_resolved, direct | inner_direct
        # Any word naming a file there is (``awk -f check.awk``, ``check() { sh "$1"; }; check lint``, ``eval
        # "$(cat lint)"``: red team 142) — whatever the program before it, it may run it.
        seen = set(words)
        words += [w for w in dict.fromkeys(operands(line)) if w not in seen]  # (red team 144 F1–F3)
        # (``[ -f x.tcl ] && tclsh x.tcl``: a name tested, then used, may be made later — not ``[ -f package.json ]``)
        tested = {t.strip("'\"") for t in _TESTED.findall(line)}
        named += [(w, "run", ()) for w in tested if line.count(w) > 1]
        dirs = _on_a_path(words)
        loose = [w for w in words if shell and "$" not in w and w not in tested and w not in dirs]
        named += [(w, "run", ()) for w in loose if path_like(w) or files(w)]
        runs_all = bool(RUNS_A_DIRECTORY.search(line))
        more += scripts_read(line, places, bins, budget, found)  # (a package.json script a hook runs: rt174 F1)
        for word, how, wanted in named:
            # (each name looked up once a text, as it is read on this line: a 240 KiB hook of 60,000 lines named a
            # word at every one, from each of 22 places — red team 149 F9)
            rules = (word in resolved, word in direct, path_like(word) and word in words)
            if (key := (word, len(places), how, wanted, runs_all, *rules)) in done:
                continue
            done.add(key)
            for path in _expanded(word, places, home):
                if len(found) >= _RUN_NAMED_MAX:
                    found[PART_READ + work_tree] = None  # (past the names: all of the work tree counts)
                    return more
                _found_by_rules(path, (runs_all, goals is not None or how in ("recipes", "include")), rules, found)
                if runs_all and os.path.isdir(path) and path not in bins.shell_read:  # (what they run: 168 F1)
                    bins.shell_read.add(path)
                    named += [(name, "run", ()) for name in files_in(path)]
                again = how == "shell" and path in found and path not in bins.shell_read  # (named before: 165 F2)
                if (path in found and not again) or _in_environment(path) or os.path.isdir(path):
                    continue  # an environment's entry point (`source .venv/bin/activate`): asked, as every change of
                    # it (changes.later), not refused — a command remaking the environment is everyday work
                found[path] = None
                if not how or path.startswith(_PATTERN):
                    continue
                body, cut = _read(path)
                # (``#!/usr/bin/make -f``: its recipes run — red team 165 F3)
                read_as = "recipes" if how == "run" and shebang_program(body) in ("make", "gmake") else how
                if not body or (read_as == "run" and not shell_text(path, body)):
                    continue  # (a program, not read for what it runs)
                bins.shell_read.add(path)
                if cut or min(budget) <= 0:  # (cut at its size, or past the budget: what it runs read in part)
                    found[PART_READ + posixpath.dirname(path)] = None
                if min(budget) <= 0:
                    continue
                budget[0] -= 1
                budget[1] -= len(body)
                more.append((body, posixpath.dirname(path), wanted if read_as == "recipes" else None))
    return more


def new_budget() -> list[int]:
    """What one look at what hooks run may read: [files, bytes]."""
    return [_RUN_READ_MAX, _RUN_BYTES_MAX]


def _in_sites(words: list[str], line: str, places: list[str], home: str | None) -> list[_Named]:
    """A module an environment's interpreter runs (``.venv/bin/python3 -mpre_commit``: pre-commit's hook, red team 48
    A): the package's ``__main__``/``__init__`` (or the module's file) in each site-packages of that environment — the
    program itself, protected like any a hook runs (its other modules, and what it imports, are the environment's)."""
    modules = _MODULES.findall(line)
    if not modules:
        return []
    named: list[_Named] = []
    for site in _sites(words, places):
        for module in modules:
            base = f"{site}/{module.replace('.', '/')}"
            named += [(f"{base}.py", "", ()), (f"{base}/__main__.py", "", ()), (f"{base}/__init__.py", "", ())]
    return named


def _sites(words: list[str], places: list[str]) -> list[str]:
    """The site-packages of each environment whose interpreter ``words`` name (``.venv/bin/python3``)."""
    sites: list[str] = []
    for word in words:
        if _INTERPRETER.search(word):
            # (Not resolved: an environment's python is a link to the interpreter it was made from.)
            for path in dict.fromkeys(posixpath.normpath(posixpath.join(where, word)) for where in places):
                env = posixpath.dirname(posixpath.dirname(path))
                if any(os.path.lexists(os.path.join(env, marker)) for marker in ENV_MARKERS):
                    sites += sorted(glob.glob(glob.escape(env) + "/lib/python*/site-packages"))[:4]
    return sites


def _in_environment(path: str) -> bool:
    """Whether ``path`` is an entry point of an environment (a directory holding ``pyvenv.cfg`` or ``conda-meta``)."""
    env = venv_entry(path)
    return env is not None and any(os.path.lexists(os.path.join(env, marker)) for marker in ENV_MARKERS)


def _expanded(word: str, places: list[str], home: str | None) -> list[str]:
    """The paths a word names from each place — the file it leads to, and the link it names on the way (replaced,
    it runs instead: ``node_modules/.bin/x``) —; a glob (``include mk/*.mk``) as the files it matches there; a path
    with a variable left in it as any name there (red team 48 A, lefthook's own hook): the files it matches now and
    the pattern (``^``), which any file made there later matches too (red team 49 F4)."""
    if word.startswith(_PATTERN):
        return [word]  # (a program on a PATH entry the reader cannot name: ``hook_words.on_path``)
    if "$" in word:
        parts = _LEFT.split(word)
        if len(parts) < 2 or not "".join(parts).strip("/"):
            return []  # a variable alone (``"$f"``, ``"$dir/$x"``): a file anywhere, nothing to name by a path
        # (its name a variable, ``sh "scripts/checks/$c"``: any file there — red team 138 F3)
        word = "*".join(glob.escape(part) for part in parts)
        patterns = [_PATTERN + expand_path(word, where, home) for where in places]
        return patterns + [os.path.realpath(p) for pattern in patterns
                           for p in sorted(glob.glob(pattern[1:]))[:_GLOB_MAX]]  # fmt: skip
    if any(c in word for c in "*?["):
        # And the pattern: a file made later that it matches is run or read too (``include mk/*.mk``, red team 123
        # F2; ``for f in scripts/checks/*.sh; do sh "$f"; done``, red team 136 F2), past the matches named too.
        paths = [expand_path(word, where, home) for where in places]
        return [_PATTERN + p for p in paths] + [os.path.realpath(p) for pattern in paths
                                                for p in sorted(glob.glob(pattern))[:_GLOB_MAX]]  # fmt: skip
    paths = [in_place(where, word) if _GLOB.search(where) else expand_path(word, where, home) for where in places]
    named = [posixpath.normpath(os.path.join(where, os.path.expanduser(word))) for where in places]
    return list(dict.fromkeys(paths + [n for n in named if os.path.islink(n)]))


def _whole(path: str, found: dict[str, None]) -> str:
    """A text a hook runs, its directory counted whole (``PART_READ``) where it is cut at its size."""
    text, cut = _read(path)
    if cut:
        found[PART_READ + posixpath.dirname(path)] = None
    return text


def _text(path: str) -> str:
    """``_read``'s text."""
    return _read(path)[0]


def _read(path: str) -> tuple[str, bool]:
    """A file's text (256 KiB at most; and whether it was cut there) as the program that reads it finds it, never a
    FIFO or device opened ("" if none). Threat (red team 104 F2): a hook that is a link (``.git/hooks/pre-commit ->
    ../../scripts/hook.sh``) read as nothing, what it runs was an ordinary file a command could rewrite: git, a shell
    and direnv follow a link, so it is read as what it leads to — resolved by name, the file at the end opened with
    no link followed."""
    with contextlib.suppress(OSError):
        if stat.S_ISLNK(os.lstat(path).st_mode):
            path = os.path.realpath(path)
    data = read_regular_bytes(None, path, _READ_MAX + 1) or b""
    # (bytes that are no UTF-8 kept as they are, ``surrogateescape``: a name the hook writes in Latin-1 is looked up
    # as that file, not as one with U+FFFD in it — red team 155 F2)
    return data[:_READ_MAX].decode("utf-8", "surrogateescape"), len(data) > _READ_MAX


# What direnv and mise put first on PATH in a project: ``PATH_add bin``, ``export PATH=$PWD/tools:$PATH``, mise's
# ``_.path = ["./bin"]``.
_PATH_CONFIGS = (".envrc", *MISE_PLACES)
# A directory holding one of these runs what it names when the user's shell enters it, git repository or not
# (``git_dirs``: red team 50 F5).
ENV_CONFIGS = _PATH_CONFIGS
_PATH_ADD = deferred(r"(?:^|[\s;&|])(?:PATH_add|path_add\s+PATH)\s+([^\n;&|#]+)")
# What puts an environment's bin first on PATH (red team 50 F2): direnv's ``layout node`` (node_modules/.bin), an
# activate script sourced (``source .venv/bin/activate``), ``VIRTUAL_ENV=.venv`` with ``layout python``, mise's
# ``_.python.venv = ".venv"`` (or ``{ path = ".venv" }``).
_LAYOUT_NODE = deferred(r"(?:^|[\s;&|])layout\s+node\b")
_ACTIVATED = deferred(r"""(?:^|[\s;&|])(?:source|\.|source_env(?:_if_exists)?)\s+["']?([^\s"';&|]+)/bin/activate\b""")
_VIRTUAL_ENV = deferred(r"""(?:^|[\s;])(?:export\s+)?VIRTUAL_ENV=["']?([^\s"';&|]+)""")
_LAYOUT_PYTHON = deferred(r"(?:^|[\s;&|])layout\s+python")


def path_dirs(work_tree: str) -> frozenset[str]:
    """The directories (relative to ``work_tree``, normalized; "." for the top) the project's direnv or mise
    configuration, or a git hook's own text, puts on PATH: an executable there named like a program runs in its
    place (``effects._shadows``, red team 5b F5, 8 FA4; husky's ``.husky/_/h`` exports ``node_modules/.bin`` first,
    red team 48 B). Hooks are read where git and the hook managers keep them (``.git/hooks``, ``.husky``,
    ``.husky/_``), as the hooks run: from the top."""
    found: set[str] = set()
    mise = mise_files(work_tree)[0]
    for name in [".envrc", *mise, *_hook_files(work_tree)]:
        text = _text(path := os.path.join(work_tree, name))
        values = [w for m in _PATH_ADD.findall(text) for w in program_words(m, built=True)]
        # (``PATH=…`` read as the hook reader reads it: variables, anchors, an entry it cannot name — red team 161)
        on = put_on_path(text, posixpath.dirname(path), work_tree)
        found.update(posixpath.relpath(d, work_tree) for d in on if d == work_tree or d.startswith(work_tree + "/"))
        values += mise_path_dirs(text) if name in mise else []
        values += ["node_modules/.bin"] if _LAYOUT_NODE.search(text) else []
        values += [f"{env}/bin" for env in _ACTIVATED.findall(text)]
        values += [f"{env}/bin" for env in _VIRTUAL_ENV.findall(text)] if _LAYOUT_PYTHON.search(text) else []
        for value in values:
            relative = re.sub(r"^(?:\$\{?PWD\}?|\$\(pwd\)|\{\{\s*config_root\s*\}\})/?", "", value.strip("'\""))
            if relative and not relative.startswith(("$", "/", "~")):
                found.add(posixpath.normpath(relative))
    return frozenset(found)


def _hook_files(work_tree: str) -> list[str]:
    """The hook files where git and the hook managers keep them (``.git/hooks``, ``.husky``, ``.husky/_``), relative
    to ``work_tree``; git never runs a ``*.sample``."""
    names: list[str] = []
    for hooks in (".git/hooks", ".husky", ".husky/_"):
        with contextlib.suppress(OSError), os.scandir(os.path.join(work_tree, hooks)) as entries:
            names += sorted(f"{hooks}/{e.name}" for e in entries if not e.name.endswith(".sample"))[:_HOOK_FILES_MAX]
    return names


def hook_names(work_tree: str) -> frozenset[str]:
    """The programs the hooks (``_hook_files``) run by their name alone (``prettier``, ``lint-staged``): one made
    where a hook puts a directory first on PATH runs at the next ``git commit`` (``effects._shadows``: red team 50
    F3, a tool the hook runs where it is installed, not yet)."""
    names: set[str] = set()
    for name in _hook_files(work_tree):
        for line in _text(os.path.join(work_tree, name)).splitlines():
            if not line.lstrip().startswith("#"):
                words = program_words(line)
                names.update(w for w in [*words, *git_commands(words)] if "/" not in w and not w.startswith("~"))
    return frozenset(names)


def hook_modules(work_tree: str) -> frozenset[str]:
    """Where a hook (its file, or a hook manager's config: ``lefthook.yml``'s ``run: python3 -m …``) runs a Python
    module from the work tree's top (``"$INSTALL_PYTHON" -mpre_commit``), the names of the modules that Python may
    import — its own and those installed in the environment the hook names — which a module of that name at the top
    would replace (Python puts the top first on its path: red teams 50 F4, 51 F1, F2); empty where no hook does."""
    texts = [_text(os.path.join(work_tree, name)) for name in [*_hook_files(work_tree), *HOOK_MANAGER_FILES]]
    lines = [line for text in texts for line in text.splitlines()
             if "python" in line.lower() and _MODULES.search(line) and not line.lstrip().startswith("#")]  # fmt: skip
    if not lines:
        return frozenset()
    names = set(sys.stdlib_module_names)
    for text in texts:
        values = static_values(text)
        for line in text.splitlines():
            words = program_words(assigned(line, values), built=True) if "python" in line.lower() else []
            for site in _sites(words, [work_tree]):
                with contextlib.suppress(OSError), os.scandir(site) as entries:
                    names.update(e.name.split(".", 1)[0] for e in itertools.islice(entries, 4096)
                                 if not e.name.endswith((".dist-info", ".egg-info", ".pth")))  # fmt: skip
    return frozenset(names)
