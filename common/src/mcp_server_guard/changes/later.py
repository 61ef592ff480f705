"""What the user's own tools run later, outside the box, judged by what a command left in the files that say it.

A git hook manager's keys and the npm scripts hooks run, in a ``package.json`` (``hook_configs``): the user's next
``git commit`` or ``npm install`` runs them. Python's start-up code: a ``sitecustomize``/``usercustomize`` module in
any form and anywhere in the roots (a ``.py``, a ``.pyc``, a package, a compiled copy in ``__pycache__``: a ``.pth``
path line or an editable install puts any directory on ``sys.path``), and a ``.pth`` file with an ``import`` line in
a ``site-packages`` directory (lines split as any Python splits them): every start of that Python runs them —
``uv run``, ``pytest``, an editor querying the project's interpreter (red team 5b F9, 6 L5). A virtual
environment's entry points (``bin/activate*``, ``bin/python*``, ``pyvenv.cfg``) rewritten in one that existed
before the call: every activation or start runs them (6 L6). Each is asked about, never refused. The lines
installers write (setuptools' distutils shim and editable finders, virtualenv's, coverage's) are not, unless the
module such a line imports was written by the same call (or landed by an earlier one) in a ``site-packages`` that
existed before it (a new environment, ``uv venv``, is the installer's whole), or is not in that ``site-packages`` at
all (a ``.pth`` path line lets Python find it in the project); a module a ``.pth`` imports, deleted while the line
stays, is asked about too. The other files of a virtual environment are the project's code
and not judged. Judged by content: a running job's look leaves these files for the job's end (the job may swap the
bytes between a look's judgement and its copy).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
from collections.abc import Mapping

from mcp_server_guard.changes.changeset import ChangeSet
from mcp_server_guard.changes.git_verdicts import Trees
from mcp_server_guard.changes.nofollow import DIR, Changed, open_dir
from mcp_server_guard.files.planted import OVERFLOW
from mcp_server_guard.hook_configs import (
    MAX_PACKAGE_JSON,
    changed_hook_keys,
    hook_texts,
    hooked_texts,
    judged_manifest,
    judged_package_json,
    manifest_hooks,
)
from mcp_server_guard.hook_runs import DIRENV_USE_FILES, direnv_evaluates
from mcp_server_guard.paths import printable
from mcp_server_guard.python_startup import (
    ENV_MARKERS,
    PTH_MAX,
    env_code,
    pth_imports,
    pth_modules,
    site_imports,
    site_module,
    site_pth,
    start_up_file,
    startup_module,
    venv_entry,
    version_path,
)

__all__ = ["runs_later"]

_USE_NAMES = frozenset(
    ("shell.nix", "default.nix", "flake.nix", "flake.lock", "devenv.nix", "devenv.yaml", "devenv.lock")
)


Landed = Mapping[str, tuple[int, ...]]  # absolute path -> the file this server last landed there (Applier.landed)


def runs_later(
    changes: ChangeSet,
    refused: dict[tuple[str, str], str],
    asks: list[str],
    by_content: set[tuple[str, str]],
    landed: Landed | None = None,
) -> None:
    """Add to ``asks`` what the command set up for the user's tools to run later (see the module docstring); the
    paths judged so to ``by_content``. ``refused``: what is refused anyway (not asked about)."""
    trees: Trees | None = None
    sites: dict[str, set[str]] = {}  # site-packages directory -> the modules its .pth files import (real tree)
    evaluated: dict[str, frozenset[str]] = {}
    for change in changes.changes:
        key = (changes.root, change.path)
        if change.action == "delete" and key not in refused and site_module(change.path) is not None:
            trees = trees or Trees(changes)
            if (question := _import_unplaced(changes, change.path, trees, sites)) and question not in asks:
                asks.append(question)
        if change.action not in ("create", "modify") or key in refused:
            continue
        if _evaluated_by_direnv(changes.root, change.path, evaluated):
            asks.append(f"It changes {printable(change.path)}, which direnv evaluates at every cd into its directory "
                        "(.envrc: use nix, flake or devenv): its shellHook runs there, outside the box.")  # fmt: skip
        if start_up_file(change.path):
            by_content.add(key)
            trees = trees or Trees(changes)
            question = _python_start(changes, change.path, change.kind, trees, sites, landed)
            if question and question not in asks:
                asks.append(question)
            continue
        if judged_manifest(change.path):
            by_content.add(key)
            trees = trees or Trees(changes)
            new = trees.read(change.path, limit=MAX_PACKAGE_JSON) if change.kind == "file" and not change.link else None
            old = trees.read(change.path, real=True, limit=MAX_PACKAGE_JSON) if change.action == "modify" else b""
            if manifest_hooks(new) or (old is not None and old and manifest_hooks(old)):
                asks.append(f"It changes {printable(change.path)}, which holds scripts or git hook settings (pnpm and "
                            "the hook tools read it as a package.json): they run at your next git commit or install, "
                            "outside the box.")  # fmt: skip
            continue
        judged = [end for end in (change.path, change.link) if end and judged_package_json(end)]
        if judged and (change.kind != "file" or change.link):
            # Threat: a package.json made a link, or given another name (red team 3 F2, F3): what is written later
            # through the other name, or into the file the link leads to, would change it unjudged.
            asks.append(f"It makes {change.path} {'a link' if change.kind != 'file' else 'another name'} of "
                        f"{change.link or 'another file'}: what is written through it changes what git hooks run "
                        f"from {judged[0]}, unjudged.")  # fmt: skip
        elif judged:
            # Judged by its content: a running job's look leaves it for the job's end, whatever this look found (the
            # job may swap a hooked one in between the judgement and the copy: red team 4 F0).
            by_content.add(key)
            trees = trees or Trees(changes)
            new = trees.read(change.path, limit=MAX_PACKAGE_JSON)
            old = trees.read(change.path, real=True, limit=MAX_PACKAGE_JSON) if change.action == "modify" else None
            if keys := changed_hook_keys(old, new, _hook_texts(changes.root, change.path)):
                asks.append(f"It changes what git hooks and package managers run from {change.path} "
                            f"({', '.join(keys)}): they run at your next git commit or npm install, outside the "
                            "box.")  # fmt: skip


_UP_MAX = 8  # directories above a nix file whose .envrc is read at most


def _evaluated_by_direnv(root: str, path: str, evaluated: dict[str, frozenset[str]]) -> bool:
    """Whether an ``.envrc`` of the directory of ``path`` or one above it (within the root) has direnv evaluate it
    (``use nix dev.nix``, ``use flake ./nix``: ``hook_runs.direnv_evaluates``; ``evaluated``: read per directory)."""
    name = path.rsplit("/", 1)[-1]
    if name not in DIRENV_USE_FILES and not name.endswith(".nix"):
        return False
    directory = posixpath.dirname(path)
    for _level in range(_UP_MAX):
        if directory not in evaluated:
            evaluated[directory] = direnv_evaluates(posixpath.join(root, directory))
        if posixpath.relpath(path, directory or ".") in evaluated[directory]:
            return True
        if not directory:
            return False
        directory = posixpath.dirname(directory)
    return False


def _python_start(
    changes: ChangeSet, path: str, kind: str, trees: Trees, sites: dict[str, set[str]], landed: Landed | None
) -> str | None:
    """The question about start-up code a command made or changed at ``path``, if it is one (module docstring)."""
    where = printable(posixpath.dirname(path))
    if startup_module(path):
        return (f"It adds a Python start-up module ({printable(path)}): every start of a Python that finds it on its "
                "path runs it, outside the box.")  # fmt: skip
    data = trees.read(path, limit=PTH_MAX) if kind == "file" else None
    if site_pth(path):
        site = posixpath.dirname(path)
        # A new site-packages (``uv venv``) is the installer's whole; in one that was there, an installer's line
        # counts as code where the call wrote the module it imports (red team 6 L5).
        fresh = trees.real_kind(site) != "dir"
        if data is None or len(data) >= PTH_MAX or any(not module for module in pth_imports(data)):
            return f"It adds code that every start of the Python of {where} runs ({printable(path)}), outside the box."
        # Threat (red team 86 F2): an installer's line whose module is not in that site-packages: Python finds it on
        # a path a .pth path line adds (``../../tools``, an editable install's ``src/``) — the project's code, run
        # at every start of that Python.
        if not fresh and (away := sorted({m for m in pth_imports(data) if not _in_site(trees, site, m)})):
            return (f"It adds a start-up line ({printable(path)}) importing {printable(', '.join(away))}, which is not "
                    f"in {where}: Python finds it elsewhere on its path (a .pth path line), and every start of the "
                    f"Python of {where} runs it, outside the box.")  # fmt: skip
        if not fresh and any(_written(changes, site, module) for module in pth_imports(data)):
            return (f"It adds an installer's start-up line ({printable(path)}) with the module it imports: every start"
                    f" of the Python of {where} runs it, outside the box (expected after pip install -e of your "
                    "project).")  # fmt: skip
        # Threat (red team 85 F1): the module written by one call (an ordinary package file then), the line that
        # imports it by the next: a new line importing a module this server landed is asked like one written now.
        new = set(pth_imports(data)) - _imported_at_start(changes.root, site, sites, trees)
        if not fresh and (ours := sorted(m for m in new if _landed(posixpath.join(changes.root, site), m, landed))):
            return (f"It adds a start-up line ({printable(path)}) importing {printable(', '.join(ours))}, which an "
                    f"earlier command wrote: every start of the Python of {where} runs it, outside the box."
                    )  # fmt: skip
        return None
    if (inside := site_module(path)) is not None:
        site, module = inside
        if module in _imported_at_start(changes.root, site, sites, trees):
            return (f"It changes {printable(path)}, which a .pth file of {printable(site)} imports at every start of"
                    " that Python, outside the box.")  # fmt: skip
    if (venv := venv_entry(path)) is not None:
        if not any(trees.real_kind(posixpath.join(venv, marker)) in ("file", "dir") for marker in ENV_MARKERS):
            return None  # a new environment: the installer's whole
        return (f"It changes {printable(path)}, which every activation or start of the environment "
                f"{printable(venv or '.')} runs, outside the box.")  # fmt: skip
    if data is not None and version_path(path, data):
        return (f"It makes {printable(path)} name an interpreter by its path: the version manager (uv, pyenv, asdf)"
                " runs that file at your next start, outside the box.")  # fmt: skip
    if data is not None and (names := env_code(path, data)):
        return (f"It sets {', '.join(names)} in {printable(path)}: the programs that load it (node --env-file, "
                "direnv's dotenv, docker compose) run what that names, outside the box.")  # fmt: skip
    return None


def _imported_at_start(root: str, site: str, sites: dict[str, set[str]], trees: Trees) -> set[str]:
    """The modules the real .pth files of ``site`` import (red team 8 D2: ``_distutils_hack`` rewritten alone, its
    line untouched); read once per call, beneath the root, no link followed."""
    if site not in sites:
        sites[site] = set()
        if trees.real_kind(site) == "dir":
            with contextlib.suppress(OSError, Changed):
                fd = os.open(root, DIR)
                try:
                    directory = open_dir(fd, site)
                finally:
                    os.close(fd)
                try:
                    sites[site] = site_imports(directory, ".")
                finally:
                    os.close(directory)
    return sites[site]


def _in_site(trees: Trees, site: str, module: str) -> bool:
    """Whether the module ``module`` (its top-level name) stands in ``site`` as the command left it: a package (its
    ``__init__``), a ``.py`` or a ``.pyc`` — never a link (what it leads to is elsewhere), nor a directory without an
    ``__init__`` (a namespace portion: Python takes a module of that name found later on its path first)."""
    top = module.split(".", 1)[0]
    return any(trees.kind(f"{site}/{name}") == "file"
               for name in (f"{top}.py", f"{top}.pyc", f"{top}/__init__.py", f"{top}/__init__.pyc"))  # fmt: skip


def _import_unplaced(changes: ChangeSet, path: str, trees: Trees, sites: dict[str, set[str]]) -> str | None:
    """The question about a module of a site-packages the command deleted, where a .pth file there still imports it
    and nothing of that name stands in its place. Threat (red team 86 F2): Python then looks for it on the paths
    the .pth path lines add (an editable install's ``src/``), where the project's code stands in for it."""
    inside = site_module(path)
    if inside is None:
        return None
    site, module = inside
    if _in_site(trees, site, module) or module not in _imported_at_start(changes.root, site, sites, trees):
        return None
    for name in (c.path for c in changes.changes if posixpath.dirname(c.path) == site and site_pth(c.path)):
        data = trees.read(name, real=True, limit=PTH_MAX)
        if data is not None and module in pth_modules(data):  # (an uninstall: the line importing it goes with it)
            new = trees.read(name, limit=PTH_MAX)
            if new is None or module not in pth_modules(new):
                return None
    return (f"It deletes {printable(path)}, which a .pth file of {printable(site)} imports at every start of that "
            f"Python: Python then looks for {printable(module)} elsewhere on its path (a .pth path line), outside the "
            "box.")  # fmt: skip


def _landed(site: str, module: str, landed: Landed | None) -> bool:
    """Whether a tool landed the module ``module`` of ``site`` (absolute): a file, a package's directory or a file
    of it (red team 87 F2: a package logged by its directory's bare name); every module, once the log of what tools
    landed overflowed (``files.planted.OVERFLOW``)."""
    if not landed:
        return False
    starts = (f"{site}/{module}.", f"{site}/{module}/")
    return OVERFLOW in landed or any(path == f"{site}/{module}" or path.startswith(starts) for path in landed)


def _written(changes: ChangeSet, site: str, module: str) -> bool:
    """Whether the call made or changed the module ``module`` of ``site`` (a file, a package, a compiled copy)."""
    starts = (f"{site}/{module}.", f"{site}/{module}/", f"{site}/__pycache__/{module}.")
    return any(c.action in ("create", "modify") and (c.path == f"{site}/{module}" or c.path.startswith(starts))
               for c in changes.changes)  # fmt: skip


_ABOVE_MAX = 16  # directories above a package.json whose hooks are read at most


def _hook_texts(root: str, path: str) -> list[str]:
    """The hook files beside the real package.json at ``path`` and beside each package.json above it in the root
    (``hook_configs.hook_texts``), and what those packages' hooks run (``hooked_texts``: a monorepo's root hook runs
    each workspace's scripts, ``npm run lint --workspaces``, ``turbo run lint``: red team 6 L3); a directory that
    cannot be reached with no link followed is left out."""
    try:
        fd = os.open(root, DIR)
    except OSError:
        return []
    texts: list[str] = []
    parts = [p for p in posixpath.dirname(path).split("/") if p]
    try:
        for depth in range(len(parts), max(-1, len(parts) - _ABOVE_MAX - 1), -1):
            try:
                directory = open_dir(fd, "/".join(parts[:depth]))
            except (OSError, Changed):
                continue
            try:
                texts += hook_texts(directory)
                if depth < len(parts):
                    texts += hooked_texts(directory)
            finally:
                os.close(directory)
    finally:
        os.close(fd)
    return texts
