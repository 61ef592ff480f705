"""What the user's own tools run later, outside the box, judged by what a command left in the files that say it.

A git hook manager's keys and the npm scripts hooks run, in a ``package.json`` (``hook_configs``): the user's next
``git commit`` or ``npm install`` runs them. A ``.pth`` file with an ``import`` line, or a ``sitecustomize.py`` /
``usercustomize.py``, in a ``site-packages`` directory (a project's virtual environment is a build directory, left
unjudged otherwise): every start of that Python runs it — ``uv run``, ``pytest``, an editor querying the project's
interpreter (red team 5b F9). Each is asked about, never refused; the lines installers write (setuptools'
distutils shim and editable finders, virtualenv's, coverage's) are not. The modules such lines import, like every
other file of a virtual environment, are the project's code and not judged. Judged by content: a running job's look
leaves these files for the job's end (the job may swap the bytes between a look's judgement and its copy).
"""

from __future__ import annotations

import os
import posixpath
import re

from mcp_server_guard.changes.changeset import ChangeSet
from mcp_server_guard.changes.git_verdicts import Trees
from mcp_server_guard.changes.nofollow import DIR, Changed, open_dir
from mcp_server_guard.hook_configs import MAX_PACKAGE_JSON, changed_hook_keys, hook_texts, judged_package_json
from mcp_server_guard.paths import printable

__all__ = ["runs_later"]

_STARTUP_MODULES = ("sitecustomize.py", "usercustomize.py")
_PTH_MAX = 1 << 20  # bytes of a .pth file read at most; a larger one counts as running code
# site.py runs a .pth line that starts with "import" followed by a space or a tab.
_PTH_CODE = re.compile(rb"^import[ \t]", re.MULTILINE)
# The lines installers write (setuptools' distutils shim and editable finders, virtualenv, coverage): not asked about.
_INSTALLERS = re.compile(
    rb"import (?:os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os\.environ\.get\(var, 'local'\) == 'local'; "
    rb"enabled and __import__\('_distutils_hack'\)\.add_shim\(\); ?"
    rb"|(__editable___[\w.]+_finder); \1\.install\([^)\n]*\)|_virtualenv|coverage; coverage\.process_startup\(\))"
    rb"[ \t]*\r?"
)


def runs_later(
    changes: ChangeSet, refused: dict[tuple[str, str], str], asks: list[str], by_content: set[tuple[str, str]]
) -> None:
    """Add to ``asks`` what the command set up for the user's tools to run later (see the module docstring); the
    paths judged so to ``by_content``. ``refused``: what is refused anyway (not asked about)."""
    trees: Trees | None = None
    for change in changes.changes:
        key = (changes.root, change.path)
        if change.action not in ("create", "modify") or key in refused:
            continue
        if _site_startup(change.path):
            by_content.add(key)
            trees = trees or Trees(changes)
            data = trees.read(change.path, limit=_PTH_MAX) if change.kind == "file" else None
            name = change.path.rsplit("/", 1)[-1]
            if name in _STARTUP_MODULES or data is None or len(data) >= _PTH_MAX or _runs_code(data):
                where = printable(posixpath.dirname(change.path))
                asks.append(f"It adds code that every start of the Python of {where} runs ({printable(change.path)}),"
                            " outside the box.")  # fmt: skip
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


def _runs_code(data: bytes) -> bool:
    """Whether a .pth file holds a line site.py runs, other than the lines installers write."""
    return any(_PTH_CODE.match(line) and not _INSTALLERS.fullmatch(line) for line in data.split(b"\n"))


def _site_startup(path: str) -> bool:
    """A file every start of a Python runs from: a .pth file or a start-up module in a site-packages directory."""
    parts = path.split("/")
    name = parts[-1]
    return (
        len(parts) > 1
        and parts[-2] in ("site-packages", "dist-packages")
        and (name.endswith(".pth") or name in _STARTUP_MODULES)
    )


def _hook_texts(root: str, path: str) -> list[str]:
    """The hook files beside the real package.json at ``path`` (``hook_configs.hook_texts``); none where its
    directory cannot be reached with no link followed."""
    try:
        fd = os.open(root, DIR)
    except OSError:
        return []
    try:
        directory = open_dir(fd, posixpath.dirname(path))
    except (OSError, Changed):
        return []
    finally:
        os.close(fd)
    try:
        return hook_texts(directory)
    finally:
        os.close(directory)
