"""What the user's own tools run later, outside the box, judged by what a command left in the files that say it.

A git hook manager's keys and the npm scripts hooks run, in a ``package.json`` (``hook_configs``): the user's next
``git commit`` or ``npm install`` runs them. Python's start-up code: a ``sitecustomize``/``usercustomize`` module in
any form and anywhere in the roots (a ``.py``, a ``.pyc``, a package, a compiled copy in ``__pycache__``: a ``.pth``
path line or an editable install puts any directory on ``sys.path``), and a ``.pth`` file with an ``import`` line in
a ``site-packages`` directory (lines split as any Python splits them): every start of that Python runs them —
``uv run``, ``pytest``, an editor querying the project's interpreter (red team 5b F9, 6 L5). A virtual
environment's entry points (``bin/activate*``, ``bin/python*``, ``pyvenv.cfg``) rewritten in one that existed
before the call: every activation or start runs them (6 L6). Each is asked about, never refused. The lines
installers write (setuptools' distutils shim and editable finders, virtualenv's, coverage's) are not in a new
environment (``uv venv``: the installer's whole) nor where an installer rewrites a line that was there; a line new
to a ``site-packages`` that existed before the call is asked whatever it imports, and so is one whose module is not
in that ``site-packages`` (a ``.pth`` path line lets Python find it in the project); a module a ``.pth`` imports,
deleted while the line stays, is asked about too. The other files of a virtual environment are the project's code
and not judged. Judged by content: a running job's look leaves these files for the job's end (the job may swap the
bytes between a look's judgement and its copy).
"""

from __future__ import annotations

import contextlib
import os
import posixpath

from mcp_server_guard.changes.changeset import ChangeSet
from mcp_server_guard.changes.git_verdicts import Trees
from mcp_server_guard.changes.nofollow import DIR, Changed, open_dir
from mcp_server_guard.direnv_files import direnv_evaluates
from mcp_server_guard.hook_configs import (
    MAX_PACKAGE_JSON,
    attribute_conversions,
    attributes_file,
    changed_hook_keys,
    hook_texts,
    hooked_texts,
    installer_hook_keys,
    installer_limit,
    installer_manifest,
    judged_manifest,
    judged_package_json,
    manifest_hooks,
)
from mcp_server_guard.paths import printable
from mcp_server_guard.python_startup import (
    ENV_MARKERS,
    PTH_MAX,
    env_code,
    pth_import_lines,
    pth_imports,
    pth_modules,
    site_module,
    site_pth,
    site_start,
    start_up_file,
    startup_module,
    venv_entry,
    version_path,
)

__all__ = ["runs_later"]

_Sites = dict[str, tuple[set[str], set[str]]]  # site-packages -> what its .pth files import at start (real tree)

_USE_NAMES = frozenset(
    ("shell.nix", "default.nix", "flake.nix", "flake.lock", "devenv.nix", "devenv.yaml", "devenv.lock")
)


def runs_later(
    changes: ChangeSet,
    refused: dict[tuple[str, str], str],
    asks: list[str],
    by_content: set[tuple[str, str]],
) -> None:
    """Add to ``asks`` what the command set up for the user's tools to run later (see the module docstring); the
    paths judged so to ``by_content``. ``refused``: what is refused anyway (not asked about)."""
    trees: Trees | None = None
    sites: _Sites = {}
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
                        "(.envrc: use nix, flake, devenv; devbox): its shell hook runs there, outside the "
                        "box.")  # fmt: skip
        if start_up_file(change.path):
            by_content.add(key)
            trees = trees or Trees(changes)
            question = _python_start(changes, change.path, change.kind, trees, sites)
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
        if attributes_file(change.path):
            by_content.add(key)
            trees = trees or Trees(changes)
            new = trees.read(change.path, limit=MAX_PACKAGE_JSON) if change.kind == "file" and not change.link else None
            old = trees.read(change.path, real=True, limit=MAX_PACKAGE_JSON) if change.action == "modify" else b""
            if lines := attribute_conversions(old, new):
                asks.append(f"It changes {printable(change.path)} so that git converts the bytes of the files it "
                            f"names ({printable(lines[0])}): your next git stash, add or checkout stores or writes "
                            "them converted (a binary file's edit with them).")  # fmt: skip
            continue
        if installer_manifest(change.path):
            by_content.add(key)
            trees = trees or Trees(changes)
            most = installer_limit(change.path)
            new = trees.read(change.path, limit=most) if change.kind == "file" and not change.link else None
            old = trees.read(change.path, real=True, limit=most) if change.action == "modify" else b""
            if keys := installer_hook_keys(change.path, old, new):
                asks.append(f"It changes what your package manager runs at install from {printable(change.path)} "
                            f"({printable(', '.join(keys))}): it runs at your next install, outside the "
                            "box.")  # fmt: skip
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
    (``use nix dev.nix``, ``use flake ./nix``: ``direnv_files.direnv_evaluates``; ``evaluated``: read per directory)."""
    directory = posixpath.dirname(path)  # (any name: ``use nix dev-shell.txt`` evaluates it, red team 101 D)
    for _level in range(_UP_MAX):
        if directory not in evaluated:
            evaluated[directory] = direnv_evaluates(posixpath.join(root, directory))
        if evaluated[directory] and posixpath.relpath(path, directory or ".") in evaluated[directory]:
            return True
        if not directory:
            return False
        directory = posixpath.dirname(directory)
    return False


def _python_start(changes: ChangeSet, path: str, kind: str, trees: Trees, sites: _Sites) -> str | None:
    """The question about start-up code a command made or changed at ``path``, if it is one (module docstring)."""
    where = printable(posixpath.dirname(path))
    if startup_module(path):
        return (f"It adds a Python start-up module ({printable(path)}): every start of a Python that finds it on its "
                "path runs it, outside the box.")  # fmt: skip
    data = trees.read(path, limit=PTH_MAX) if kind == "file" else None
    if site_pth(path):
        site = posixpath.dirname(path)
        if data is None or len(data) >= PTH_MAX or any(not module for module in pth_imports(data)):
            return f"It adds code that every start of the Python of {where} runs ({printable(path)}), outside the box."
        if trees.real_kind(site) != "dir":
            return None  # a new site-packages (``uv venv``): the installer's whole
        # Threat: an installer's line made to import the command's code — its module written by this call (red team 6
        # L5), by an earlier one (85 F1), as a package or a compiled copy only (87 F2, 88 F1), under a dotted name
        # (88 F2). Whatever it imports, a line new to that site-packages (in none of its .pth files before the call)
        # is asked; an installer rewriting a line that was there is not.
        if new := sorted(pth_import_lines(data) - _at_start(changes.root, site, sites, trees)[1]):
            return (f"It adds a start-up line ({printable(path)}: {printable('; '.join(new)[:200])}): every start of "
                    f"the Python of {where} runs what it imports, outside the box (expected once after pip install -e "
                    "of your project, or a first install of setuptools).")  # fmt: skip
        # Threat (red team 86 F2): an installer's line whose module is not in that site-packages: Python finds it on
        # a path a .pth path line adds (``../../tools``, an editable install's ``src/``) — the project's code.
        if away := sorted({m for m in pth_imports(data) if not _in_site(trees, site, m)}):
            return (f"It keeps a start-up line ({printable(path)}) importing {printable(', '.join(away))}, which is "
                    f"not in {where}: Python finds it elsewhere on its path (a .pth path line), and every start of "
                    "that Python runs it, outside the box.")  # fmt: skip
        return None
    if (inside := site_module(path)) is not None:
        site, module = inside
        if module in _at_start(changes.root, site, sites, trees)[0]:
            return (f"It changes {printable(path)}, which a .pth file of {printable(site)} imports at every start of"
                    " that Python, outside the box.")  # fmt: skip
    if (venv := venv_entry(path)) is not None:
        if not any(trees.real_kind(posixpath.join(venv, marker)) in ("file", "dir") for marker in ENV_MARKERS):
            return None  # a new environment: the installer's whole
        return (f"It changes {printable(path)}, which every activation, start or install of the environment "
                f"{printable(venv or '.')} runs or reads, outside the box.")  # fmt: skip
    if data is not None and version_path(path, data):
        return (f"It makes {printable(path)} name an interpreter by its path: the version manager (uv, pyenv, asdf)"
                " runs that file at your next start, outside the box.")  # fmt: skip
    if data is not None and (names := env_code(path, data)):
        return (f"It sets {', '.join(names)} in {printable(path)}: the programs that load it (node --env-file, "
                "direnv's dotenv, docker compose) run what that names, outside the box.")  # fmt: skip
    return None


def _at_start(root: str, site: str, sites: _Sites, trees: Trees) -> tuple[set[str], set[str]]:
    """The modules the real .pth files of ``site`` import (red team 8 D2: ``_distutils_hack`` rewritten alone, its
    line untouched), and their import lines; read once per call, beneath the root, no link followed."""
    if site not in sites:
        sites[site] = (set(), set())
        if trees.real_kind(site) == "dir":
            with contextlib.suppress(OSError, Changed):
                fd = os.open(root, DIR)
                try:
                    directory = open_dir(fd, site)
                finally:
                    os.close(fd)
                try:
                    sites[site] = site_start(directory, ".")
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


def _import_unplaced(changes: ChangeSet, path: str, trees: Trees, sites: _Sites) -> str | None:
    """The question about a module of a site-packages the command deleted, where a .pth file there still imports it
    and nothing of that name stands in its place. Threat (red team 86 F2): Python then looks for it on the paths
    the .pth path lines add (an editable install's ``src/``), where the project's code stands in for it."""
    inside = site_module(path)
    if inside is None:
        return None
    site, module = inside
    if _in_site(trees, site, module) or module not in _at_start(changes.root, site, sites, trees)[0]:
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
