"""What other writers wrote while a change set was judged, and whether it can matter to that judgement.

Threat: a judgement taken for still true after another server's write changed what it read (red team 82 F2: a
write made ``shaped/`` a git dir while a config for it was judged harmless). Threat: a huge judgement (a build's
190,000 files: many seconds) that every write of another agent makes stale again, until it runs under the tree
lock and that agent's file_write meets FILE_BUSY (issue 42 item 7). So the tree lock's log says what each writer
wrote (``files.treelock``), and a judgement stands when every path written since is *plain content* far from its
own paths — a notes file, a source file, a build product somewhere else.

A judgement reads more of the tree than the paths it judges: each path's directories (a git dir is known by the
names beside it: ``objects``, ``refs``, ``HEAD``), the repository's bookkeeping, the configs and manifests that
say what runs later (and the files they name), modes, ``.gitignore``, ``CACHEDIR.TAG``. None of those is plain
content by name, so a write of any of them makes the judgement stale, as every write did before. And where the
change set itself holds anything but plain content (a config, a link, a dot file) its judgement may read files it
names anywhere: then any write makes it stale. Names are checked, not trusted to be safe: a plain name that the
server's protection still refuses (an included git config called ``notes.md``), or one inside a git dir, matters.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence

from mcp_server_guard.changes.changeset import ChangeSet
from mcp_server_guard.files.treelock import Unrelated
from mcp_server_guard.git_search import is_git_dir
from mcp_server_guard.protected import Lookups, Protection
from mcp_server_guard.python_startup import SHAPE_NAMES, start_up_file

__all__ = ["PLAIN_SUFFIXES", "declared", "plain", "unrelated_to"]

# Content no judgement reads to judge another path: text, sources, build products, images. Not a config format
# (json, toml, yaml, ini, xml, cfg, conf, env), not a script a tool runs by name (sh, ps1, bat, mk, nix, lua), no
# Python start-up file (pth).
# fmt: off
PLAIN_SUFFIXES = frozenset({
    "md", "txt", "rst", "adoc", "csv", "tsv", "log", "html", "htm", "css", "scss", "less", "svg", "png", "jpg",
    "jpeg", "gif", "webp", "ico", "bmp", "pdf", "py", "pyi", "pyc", "js", "jsx", "ts", "tsx", "mjs", "cjs", "map",
    "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "o", "obj", "class", "java", "kt", "scala", "go", "rs", "rb", "php",
    "swift", "cs", "fs", "hs", "ml", "erl", "clj", "dart", "r", "jl", "sql", "tex", "bib", "dat", "bin", "wasm",
    # build products (red team 100 F3): libraries, dependency notes, packages and archives nothing reads to judge
    "so", "a", "d", "dylib", "dll", "lib", "pdb", "rlib", "rmeta", "whl", "gz", "tgz", "xz", "bz2", "zst", "zip",
    "jar", "war", "pyd", "egg", "deb", "rpm", "pyo", "gcno", "gcda",
})
# fmt: on
# Names that tell what a directory is (``git_dirs.is_git_dir`` takes one with ``objects`` and ``refs`` for a git
# dir; ``conda-meta`` makes an environment, red team 100 F1): a plain file below one of them may make the directory
# above it something else, or be inside one.
# fmt: off
_SHAPE_PARTS = frozenset({
    "head", "objects", "refs", "commondir", "gitdir", "config", "hooks", "info", "logs", "modules", "worktrees",
    "branches", "rebase-merge", "rebase-apply", "sequencer", "lfs", *(name.lower() for name in SHAPE_NAMES),
})
# fmt: on
# Paths one apply says it writes at most (more: "anything", as a taking that says nothing).
DECLARED_MAX = 256


def plain(parts: Sequence[str], directory: bool = False) -> bool:
    """Whether a path of these components is plain content by name: no dot file or dot directory on the way, no
    name that tells what a directory is, nothing judged as an environment's start-up, and (a file) a content
    suffix."""
    for part in parts:
        if not part or part.startswith(".") or part.lower() in _SHAPE_PARTS:
            return False
    if not parts or start_up_file("/".join(parts)):
        return False  # (an entry point, a site module: judged by the environment around it)
    if directory:
        return True
    stem, dot, suffix = parts[-1].rpartition(".") if parts else ("", "", "")
    return bool(stem and dot) and suffix.lower() in PLAIN_SUFFIXES


def declared(sets: Sequence[ChangeSet]) -> list[str] | None:
    """The real paths an apply of ``sets`` writes, for judgements running meanwhile (``treelock.tree_lock``'s
    ``wrote``); None (anything) past DECLARED_MAX or for a list that is cut. Not the directories whose times it sets
    afterwards: no judgement reads a directory's time."""
    paths: set[str] = set()
    for changes in sets:
        if changes.incomplete:
            return None
        for change in changes.changes:
            paths.update(_real(changes.root, rel) for rel in (change.path, change.moved_from) if rel)
        if len(paths) > DECLARED_MAX:
            return None
    return sorted(paths)


def unrelated_to(sets: Sequence[ChangeSet], protection: Protection, roots: Sequence[str]) -> Unrelated | None:
    """Whether what other writers wrote since ``sets`` were judged cannot matter to that judgement (see the module);
    None where anything may: the change set holds more than plain content, or its list is cut."""
    own: set[str] = set()
    for changes in sets:
        if changes.incomplete:
            return None
        for change in changes.changes:
            if change.kind not in ("file", "dir"):
                return None  # (a link's judgement may look where it points)
            directory = change.kind == "dir"
            named = ((change.path, directory), (change.moved_from, directory), (change.top, True),
                     (change.link, False), (change.stays, False))  # fmt: skip
            for rel, whole in named:
                if rel and not plain(rel.split("/"), directory=whole):
                    return None
                if rel:
                    own.add(_real(changes.root, rel))
    around = own.union(*(_ancestors(path) for path in own))
    bases = sorted({changes.root for changes in sets}, key=len, reverse=True)

    def unrelated(written: frozenset[str]) -> bool:
        lookups = Lookups()  # (the git rule's search of the roots: once for every path written)
        return all(_far(path, own, around, bases, (protection, roots, lookups)) for path in written)

    return unrelated


def _far(
    path: str, own: set[str], around: set[str], bases: Sequence[str], rule: tuple[Protection, Sequence[str], Lookups]
) -> bool:
    """Whether another writer's write of ``path`` cannot change the judgement of a change set of plain ``own``
    paths (``around``: them and every directory above them)."""
    if not path.startswith("/") or posixpath.normpath(path) != path:
        return False  # (not a real path: said wrong, or a directory since deleted)
    if path in around or any(above in own for above in _ancestors(path)):
        return False  # one of the judged paths, a directory above one, or a path below one
    base = next((b for b in bases if path.startswith(b.rstrip("/") + "/")), "/")
    if not plain(path[len(base) :].strip("/").split("/")):
        return False
    if any(is_git_dir(above) for above in _ancestors(path)):
        return False  # (inside a git dir: its bookkeeping)
    protection, roots, lookups = rule
    return protection.write_rule([path], None, roots, lookups) is None  # (a plain name a config includes)


def _real(root: str, rel: str) -> str:
    return posixpath.normpath(posixpath.join(root, rel))


def _ancestors(path: str) -> Iterator[str]:
    """Every directory above ``path``, nearest first, ``/`` last."""
    while path not in ("/", ""):
        path = posixpath.dirname(path)
        yield path
