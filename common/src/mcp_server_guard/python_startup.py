"""Start-up code: what every start of an interpreter, or every activation of an environment, runs before any program
of the project — judged by every writer (shell_exec asks, file_write refuses: ``changes.later``,
``files.writing``).

- A ``sitecustomize``/``usercustomize`` module in any form (``.py``, ``.pyc``, an extension, a package, a compiled
  copy in ``__pycache__``) anywhere: ``site`` imports the first one on ``sys.path``, and a ``.pth`` path line or an
  editable install puts any directory there.
- A ``.pth`` file in a ``site-packages`` directory with a line starting ``import``: ``site`` runs it. Lines are split
  at every line end a Python takes (3.11 reads with universal newlines, 3.13 with ``str.splitlines``), a BOM dropped.
  And a module such a line imports, where the ``.pth`` is already there (``_distutils_hack`` rewritten alone).
- An environment's entry points: ``bin/activate*`` (sourced by a shell, ``.envrc``'s ``source``), ``bin/python*``
  (the interpreter every tool starts), ``pyvenv.cfg`` (its ``home`` names the interpreter), a conda or pixi
  environment's ``etc/conda/activate.d/*`` — in a directory holding ``pyvenv.cfg`` or ``conda-meta``.
- A version file that names an interpreter by its path (``.python-version`` holding ``./tools/py``: ``uv run``
  runs that file), and an ``.env`` file that sets a variable making programs load code (``NODE_OPTIONS``,
  ``PYTHONSTARTUP``, ``LD_PRELOAD`` …: ``env_names``) — ``node --env-file``, direnv's ``dotenv``, docker compose.

Threat: a command planting one of them in the project; the user's next ``pytest``, ``uv run``, an editor querying
the interpreter, runs it outside the box (red team 5b F9, 6 L5, L6, 8 D1, D2, J1, J2).
"""

from __future__ import annotations

import contextlib
import os

from mcp_server_guard.env_names import is_command_valued, runs_code
from mcp_server_guard.patterns import deferred

__all__ = [
    "ENV_MARKERS",
    "PTH_MAX",
    "SHAPE_NAMES",
    "env_code",
    "pth_import_lines",
    "pth_imports",
    "pth_modules",
    "site_imports",
    "site_module",
    "site_pth",
    "site_start",
    "start_up_file",
    "startup_module",
    "venv_entry",
    "version_path",
    "written_here",
    "written_start_up",
]

PTH_MAX = 1 << 20  # bytes of a .pth file read at most; a larger one counts as running code
ENV_MARKERS = ("pyvenv.cfg", "conda-meta")  # what makes a directory an environment (a venv's, conda's or pixi's)
_STARTUP_MODULES = ("sitecustomize", "usercustomize")
_SITE_DIRS = ("site-packages", "dist-packages")
# What an environment's Python or installer reads at its top: ``pyvenv.cfg`` (the interpreter), ``pip.conf`` (the
# index pip installs from, for every pip run in it: red team 97 F5), conda's ``.condarc``.
_ENV_CONFIGS = ("pyvenv.cfg", "pip.conf", ".condarc")
_VENV_ENTRY = deferred(r"(?:bin|Scripts)/(?:activate(?:\.\w+|_this\.py)?|(?:python|pypy)[\d.]*(?:\.exe)?)")
_CONDA_HOOKS = deferred(r"etc/conda/(?:de)?activate\.d/[^/]+")
# The names that make a directory part of an environment, as the judgement looks for them beside or above a path
# (``changes.unrelated``: a write of one may change what another path is).
SHAPE_NAMES = (*ENV_MARKERS, *_SITE_DIRS, "activate.d", "deactivate.d")
# The files version managers read for which interpreter to start (uv, pyenv, asdf, mise, nvm, rbenv, …).
# (uv reads ``.python-versions`` too, PDM ``.pdm-python``: the interpreter by its path — red team 117 F2)
_VERSION_FILES = frozenset({".python-version", ".python-versions", ".pdm-python", ".tool-versions", ".node-version",
                            ".nvmrc", ".ruby-version", ".java-version", ".go-version", ".terraform-version",
                            ".bun-version", ".sdkmanrc", ".zig-version", ".deno-version"})  # fmt: skip
# The lines installers write (setuptools' distutils shim and editable finders, virtualenv, coverage), with the module
# each imports.
_INSTALLERS = deferred(
    r"import (?:os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os\.environ\.get\(var, 'local'\) == 'local'; "
    r"enabled and __import__\('(?P<shim>_distutils_hack)'\)\.add_shim\(\); ?"
    r"|(?P<finder>__editable___\w+_finder); (?P=finder)\.install\([^)\n]*\)|(?P<venv>_virtualenv)"
    r"|(?P<cov>coverage); coverage\.process_startup\(\))[ \t]*"
)
_IMPORTED = deferred(r"(?:\bimport\s+|__import__\(\s*['\"])([A-Za-z_]\w*)")


def startup_module(path: str) -> bool:
    """Whether ``path`` is (or is inside) a start-up module: a component named ``sitecustomize``/``usercustomize``
    before its first dot."""
    return any(part.split(".", 1)[0] in _STARTUP_MODULES for part in path.split("/"))


def site_pth(path: str) -> bool:
    """Whether ``path`` is a .pth file in a site-packages directory (every start of that Python reads it)."""
    parts = path.split("/")
    return len(parts) > 1 and parts[-2] in _SITE_DIRS and parts[-1].endswith(".pth")


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").removeprefix("\ufeff").splitlines()


# Line ends Python 3.13 splits a .pth at (``str.splitlines``) and 3.11/3.12 do not (``\n``, ``\r`` only): a form feed
# is whitespace to the tokenizer, so ``import _virtualenv\f;code`` is one line of code there (red team 88 F3).
_ODD_BREAKS = deferred("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def pth_imports(data: bytes) -> list[str]:
    """The lines of a .pth file ``site`` runs, each as the module an installer's line imports, or "" for any other
    code — every line of a file whose lines one Python splits where another does not."""
    found: list[str] = []
    odd = bool(_ODD_BREAKS.search(data.decode("utf-8", "replace")))
    for line in _lines(data):
        if line.startswith(("import ", "import\t")):
            installer = None if odd else _INSTALLERS.fullmatch(line)
            found.append(next(name for name in installer.groups() if name) if installer else "")
    return found


def pth_import_lines(data: bytes) -> set[str]:
    """The import lines of a .pth file, as they stand (what tells a line new from one that was there)."""
    return {line for line in _lines(data) if line.startswith(("import ", "import\t"))}


def pth_modules(data: bytes) -> set[str]:
    """The top-level modules the lines of a .pth file import (``import _virtualenv``, ``__import__('x')``)."""
    return {
        name for line in _lines(data) if line.startswith(("import ", "import\t")) for name in _IMPORTED.findall(line)
    }


def site_module(path: str) -> tuple[str, str] | None:
    """(the site-packages directory, the top-level module) of a path inside one (``__pycache__`` copies too), or
    None."""
    parts = path.split("/")
    for at in range(len(parts) - 2, -1, -1):
        if parts[at] in _SITE_DIRS:
            rest = parts[at + 1 :]
            name = rest[1] if rest[0] == "__pycache__" and len(rest) > 1 else rest[0]
            return "/".join(parts[: at + 1]), name.split(".", 1)[0]
    return None


def venv_entry(path: str) -> str | None:
    """The directory of the environment whose entry point ``path`` would be (``.venv`` for ``.venv/bin/activate``;
    "" for the root), or None. Whether it is one is for the caller to see (``ENV_MARKERS``)."""
    parts = path.split("/")
    if parts[-1] in _ENV_CONFIGS:
        return "/".join(parts[:-1])
    if len(parts) >= 2 and _VENV_ENTRY.fullmatch("/".join(parts[-2:])):
        return "/".join(parts[:-2])
    if len(parts) >= 4 and _CONDA_HOOKS.fullmatch("/".join(parts[-4:])):
        return "/".join(parts[:-4])
    return None


def version_path(path: str, data: bytes) -> bool:
    """Whether a version manager's file names an interpreter by its path (a word with a ``/``): uv, pyenv or asdf
    then runs that file for ``uv run``, ``python`` …"""
    if path.rsplit("/", 1)[-1] not in _VERSION_FILES:
        return False
    # A comment is skipped only where every reader ends its lines alike: uv reads them at LF (a lone CR, a form feed,
    # U+2028 within a line), ``str.splitlines`` at each of those — ``3.12\r# ./tools/py`` is no comment to uv, so in
    # a file holding such a break no line is taken for a comment; and a comment starts at ``#`` after spaces and
    # tabs only (Python strips more than uv: ``\x1f#``).
    text = data.decode("utf-8", "replace")
    odd = bool(_ODD_BREAKS.search(text)) or "\r" in text.replace("\r\n", "")
    return any("/" in word for line in _lines(data) if odd or not line.lstrip(" \t").startswith("#")
               for word in line.split())  # fmt: skip


def env_code(path: str, data: bytes) -> list[str]:
    """The variables an ``.env`` file (``.env``, ``.env.*``, ``*.env``, ``.flaskenv``) sets that make programs load
    code or run a command (``env_names``); none for another file."""
    if not _env_file(path.rsplit("/", 1)[-1]):
        return []
    # Lines as python-dotenv ends them (a lone CR too, and the odd breaks), keys quoted or not (red team 106 F3).
    lines = _ENV_BREAKS.split(data.decode("utf-8", "replace"))
    names = {next(g for g in found.groups() if g is not None) for line in lines if (found := _ENV_KEY.match(line))}
    return sorted(n for n in names if runs_code(n) or is_command_valued(n))


_ENV_BREAKS = deferred("\r\n|[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_ENV_KEY = deferred(r"""\s*(?:export\s+)?(?:'([^']*)'|"([^"]*)"|([^=#\s'"]+))\s*=""")


def _env_file(name: str) -> bool:
    return name in (".env", ".flaskenv") or name.startswith(".env.") or name.endswith(".env")


def start_up_file(path: str) -> bool:
    """Whether a change at ``path`` is judged here at all (by its name; what it holds decides the rest)."""
    name = path.rsplit("/", 1)[-1]
    return (
        startup_module(path)
        or site_pth(path)
        or venv_entry(path) is not None
        or site_module(path) is not None
        or name in _VERSION_FILES
        or _env_file(name)
    )


def written_start_up(path: str, data: bytes, in_env: bool) -> str | None:
    """Why a file write of ``data`` at ``path`` would be start-up code (file_write, which cannot ask, refuses it;
    an installer's line too: a model writing one is no installer), or None. ``in_env``: the directory
    :func:`venv_entry` names holds one of ``ENV_MARKERS``."""
    if startup_module(path):
        return "a Python start-up module: every start of a Python that finds it on its path runs it"
    if site_pth(path) and (len(data) >= PTH_MAX or pth_imports(data)):
        return "a .pth file with an import line: every start of that Python runs it"
    if in_env and venv_entry(path) is not None:
        return "an entry point or a config of an environment: every activation, start or install in it runs or reads it"
    if version_path(path, data):
        return "a version file naming an interpreter by its path: the version manager runs that file"
    if names := env_code(path, data):
        return f"an .env file setting {', '.join(names)}: the programs that load it run what that names"
    return None


def written_here(rel: str, data: bytes, dirfd: int) -> str | None:
    """:func:`written_start_up` for a write at ``rel`` whose directory is open (``dirfd``), looking up from it at
    what makes the rest count: an environment's markers, the .pth files of the site-packages it lies in (red team 8
    D1, D2). Never through a link; what cannot be read counts as not there."""
    env = venv_entry(rel)
    in_env = env is not None and any(_there(dirfd, f"{_up(rel, env)}/{marker}") for marker in ENV_MARKERS)
    if why := written_start_up(rel, data, in_env):
        return why
    inside = site_module(rel)
    if inside is not None and inside[1] in site_imports(dirfd, _up(rel, inside[0])):
        return f"a module ({inside[1]}) that a .pth file imports at every start of that Python"
    return None


def _up(rel: str, top: str) -> str:
    """The way up from the directory of ``rel`` to ``top`` (both beneath one root), as ``..`` steps."""
    return "/".join([".."] * (rel.count("/") - (top.count("/") + 1 if top else 0))) or "."


def _there(dirfd: int, rel: str) -> bool:
    try:
        os.stat(rel, dir_fd=dirfd, follow_symlinks=False)
    except OSError:
        return False
    return True


def site_imports(dirfd: int, rel: str) -> set[str]:
    """The modules the .pth files of the directory ``rel`` (from ``dirfd``) import."""
    return site_start(dirfd, rel)[0]


def site_start(dirfd: int, rel: str) -> tuple[set[str], set[str]]:
    """The modules the .pth files of the directory ``rel`` (from ``dirfd``) import, and their import lines."""
    from mcp_server_guard.hook_configs import read_regular  # noqa: PLC0415 - with the first site judged (issue 44)

    found: set[str] = set()
    lines: set[str] = set()
    with contextlib.suppress(OSError):
        site = os.open(rel, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
        try:
            for name in sorted(n for n in os.listdir(site) if n.endswith(".pth"))[:256]:
                text = read_regular(site, name, PTH_MAX)
                found |= pth_modules(text.encode()) if text is not None else set()
                lines |= pth_import_lines(text.encode()) if text is not None else set()
        finally:
            os.close(site)
    return found, lines
