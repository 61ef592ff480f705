"""Where a repository's next fetch or pull takes its commits from, as a command leaves its config
(``changes.git_refs``).

Threat (red team 110 F2): the judgement of refs trusts what a fetch brings as upstream's — but a command can choose
upstream. It makes a bare repository inside the allowed directories (nothing judges what one holds), puts a commit
there whose tree adds ``.envrc`` or a hook, and points ``remote.origin.url`` (or ``branch.main.remote``, a
submodule's url) at it: the user's next ``git pull`` writes that tree outside the box. A remote, branch or submodule
url that a call sets to a place inside the allowed directories (or a relative path, whose place depends on where the
user runs git) is asked.
"""

from __future__ import annotations

import os
import posixpath
import re

from mcp_server_guard.changes.git_verdicts import Trees
from mcp_server_guard.git_config import git_config_entries
from mcp_server_guard.paths import printable, within_any

__all__ = ["upstream_questions"]

_UPSTREAM = re.compile(r"^(?:remote\..+\.url|branch\..+\.remote|submodule\..+\.url)$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SCP_LIKE = re.compile(r"^[^/:]+:")  # ``host:path`` (git's scp-like syntax: a colon before any slash)


def upstream_questions(trees: Trees, config: str) -> list[str]:
    """Questions for the upstream urls the git config at ``config`` (root-relative) gains."""
    after = _upstreams(trees.read(config))
    before = _upstreams(trees.read(config, real=True))
    asks: list[str] = []
    for key, value in sorted(after - before):
        place = _local_place(value, named=key.startswith("branch."))
        if place == "" or (place is not None and within_any(place, trees.roots)):
            asks.append(printable(f"It sets {key} to {value} in {config}: a repository inside the allowed "
                                  "directories, which a command can fill — your next git pull or fetch (or submodule "
                                  "update) would take what it holds as upstream's."))  # fmt: skip
    return asks


def _upstreams(data: bytes | None) -> set[tuple[str, str]]:
    if not data:
        return set()
    return {(key.lower(), value) for key, value in git_config_entries(data) or [] if _UPSTREAM.match(key.lower())}


def _local_place(value: str, *, named: bool = False) -> str | None:
    """The absolute local path a url names; "" for a relative one (its place depends on where git runs); None for a
    network url, or (``named``: a branch's remote) a remote's name (``branch.main.remote = origin``)."""
    if value.startswith("file://"):
        rest = value[len("file://") :]
        path = rest[rest.find("/") :] if "/" in rest else ""
        return posixpath.normpath(path) if path else ""
    if _SCHEME.match(value) or (_SCP_LIKE.match(value) and not value.startswith(("./", "../"))):
        return None
    if named and "/" not in value and value != "..":
        return None  # a remote's name (``.``: the repository itself, whose refs are judged as they move)
    if value.startswith("~"):
        value = os.path.expanduser(value)
    return posixpath.normpath(value) if value.startswith("/") else ""
