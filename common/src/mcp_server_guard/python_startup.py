"""Python's start-up code: what every start of a Python, or every activation of a virtual environment, runs before
any program of the project — judged by every writer (shell_exec asks, file_write refuses: ``changes.later``,
``files.writing``).

- A ``sitecustomize``/``usercustomize`` module in any form (``.py``, ``.pyc``, an extension, a package, a compiled
  copy in ``__pycache__``) anywhere: ``site`` imports the first one on ``sys.path``, and a ``.pth`` path line or an
  editable install puts any directory there.
- A ``.pth`` file in a ``site-packages`` directory with a line starting ``import``: ``site`` runs it. Lines are split
  at every line end a Python takes (3.11 reads with universal newlines, 3.13 with ``str.splitlines``), a BOM dropped.
- A virtual environment's entry points: ``bin/activate*`` (sourced by a shell, ``.envrc``'s ``source``),
  ``bin/python*`` (the interpreter every tool starts) and ``pyvenv.cfg`` (its ``home`` names the interpreter).

Threat: a command planting one of them in the project's environment; the user's next ``pytest``, ``uv run``, an
editor querying the interpreter, runs it outside the box (red team 5b F9, 6 L5, L6).
"""

from __future__ import annotations

import re

__all__ = ["PTH_MAX", "pth_imports", "site_pth", "startup_module", "venv_entry", "written_start_up"]

PTH_MAX = 1 << 20  # bytes of a .pth file read at most; a larger one counts as running code
_STARTUP_MODULES = ("sitecustomize", "usercustomize")
_SITE_DIRS = ("site-packages", "dist-packages")
_VENV_ENTRY = re.compile(r"(?:bin|Scripts)/(?:activate(?:\.\w+|_this\.py)?|(?:python|pypy)[\d.]*(?:\.exe)?)")
# The lines installers write (setuptools' distutils shim and editable finders, virtualenv, coverage), with the module
# each imports.
_INSTALLERS = re.compile(
    r"import (?:os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os\.environ\.get\(var, 'local'\) == 'local'; "
    r"enabled and __import__\('(?P<shim>_distutils_hack)'\)\.add_shim\(\); ?"
    r"|(?P<finder>__editable___[\w.]+_finder); (?P=finder)\.install\([^)\n]*\)|(?P<venv>_virtualenv)"
    r"|(?P<cov>coverage); coverage\.process_startup\(\))[ \t]*"
)


def startup_module(path: str) -> bool:
    """Whether ``path`` is (or is inside) a start-up module: a component named ``sitecustomize``/``usercustomize``
    before its first dot."""
    return any(part.split(".", 1)[0] in _STARTUP_MODULES for part in path.split("/"))


def site_pth(path: str) -> bool:
    """Whether ``path`` is a .pth file in a site-packages directory (every start of that Python reads it)."""
    parts = path.split("/")
    return len(parts) > 1 and parts[-2] in _SITE_DIRS and parts[-1].endswith(".pth")


def pth_imports(data: bytes) -> list[str]:
    """The lines of a .pth file ``site`` runs, each as the module an installer's line imports, or "" for any other
    code."""
    found: list[str] = []
    for line in data.decode("utf-8", "replace").removeprefix("\ufeff").splitlines():
        if line.startswith(("import ", "import\t")):
            installer = _INSTALLERS.fullmatch(line)
            found.append(next(name for name in installer.groups() if name) if installer else "")
    return found


def venv_entry(path: str) -> str | None:
    """The directory of the virtual environment whose entry point ``path`` would be (``.venv`` for
    ``.venv/bin/activate``; "" for the root), or None. Whether it is one is for the caller to see (``pyvenv.cfg``)."""
    parts = path.split("/")
    if parts[-1] == "pyvenv.cfg":
        return "/".join(parts[:-1])
    if len(parts) >= 2 and _VENV_ENTRY.fullmatch("/".join(parts[-2:])):
        return "/".join(parts[:-2])
    return None


def written_start_up(path: str, data: bytes, in_venv: bool) -> str | None:
    """Why a file write of ``data`` at ``path`` would be start-up code (file_write, which cannot ask, refuses it;
    an installer's line too: a model writing one is no installer), or None. ``in_venv``: the directory
    :func:`venv_entry` names holds a ``pyvenv.cfg``."""
    if startup_module(path):
        return "a Python start-up module: every start of a Python that finds it on its path runs it"
    if site_pth(path) and (len(data) >= PTH_MAX or pth_imports(data)):
        return "a .pth file with an import line: every start of that Python runs it"
    if in_venv and venv_entry(path) is not None:
        return "an entry point of a virtual environment: every activation or start of it runs it"
    return None
