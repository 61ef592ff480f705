"""Where a repository's next fetch or pull takes its commits from (and its next push puts them), as a command leaves
its config (``changes.git_refs``).

Threat (red team 110 F2): the judgement of refs trusts what a fetch brings as upstream's — but a command can choose
upstream. It makes a bare repository inside the allowed directories (nothing judges what one holds), puts a commit
there whose tree adds ``.envrc`` or a hook, and points ``remote.origin.url`` (or ``branch.main.remote``, a
submodule's url) at it: the user's next ``git pull`` writes that tree outside the box. A remote, branch or submodule
url that a call sets to a repository on this machine is asked — any local path or ``file:`` url, not only one inside
the allowed directories: a place inside has many spellings (``//root/x``, ``/proc/self/root/root/x``, a link; red
team 112 F1), and a relative one depends on where the user runs git. Where the next push goes (a remote's
``pushurl``, ``branch.*.pushRemote``, ``remote.pushDefault``) set to such a place is asked too: the user's next
``git push`` writes commits and branches into a repository on this machine, perhaps outside the allowed directories.
So is a remote defined the old way, by a file of the git dir (``remotes/<name>``: ``URL:`` lines; ``branches/<name>``:
``url#branch``), which git reads for any remote name its config does not define (red team 116 F1: ``branch.main.remote
= mirror`` and ``.git/remotes/mirror`` naming a copy the call filled; with no remote configured, ``remotes/origin``
alone): git itself never writes one, so any a call writes is asked.
"""

from __future__ import annotations

import re

from mcp_server_guard.changes.git_verdicts import Trees
from mcp_server_guard.git_config import git_config_entries
from mcp_server_guard.paths import printable

__all__ = ["LEGACY_REMOTE", "legacy_remote_question", "upstream_questions"]

LEGACY_REMOTE = re.compile(r"^(?:remotes|branches)/[^/]+$")  # (a path within a git dir)

_UPSTREAM = re.compile(
    r"^(?:remote\..+\.(?:push)?url|remote\.pushdefault|branch\..+\.(?:push)?remote|submodule\..+\.url)$"
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SCP_LIKE = re.compile(r"^[^/:]+:")  # ``host:path`` (git's scp-like syntax: a colon before any slash)


def upstream_questions(trees: Trees, config: str) -> list[str]:
    """Questions for the upstream urls the git config at ``config`` (root-relative) gains."""
    after = _upstreams(trees.read(config))
    before = _upstreams(trees.read(config, real=True))
    asks: list[str] = []
    for key, value in sorted(after - before):
        # (any local place, not only one inside the roots: ``//root/x``, ``/proc/self/root/root/x`` and links name
        # a place inside by another spelling — red team 112 F1)
        if not _local(value, named=key.startswith("branch.") or key == "remote.pushdefault"):
            continue
        if key.endswith(("pushurl", "pushremote", "pushdefault")):
            asks.append(printable(f"It sets {key} to {value} in {config}: a repository on this machine — your next "
                                  "git push would write your commits and branches there."))  # fmt: skip
        else:
            asks.append(printable(f"It sets {key} to {value} in {config}: a repository on this machine, which a "
                                  "command may have filled — your next git pull or fetch (or submodule update) would "
                                  "take what it holds as upstream's."))  # fmt: skip
    return asks


def _upstreams(data: bytes | None) -> set[tuple[str, str]]:
    if not data:
        return set()
    return {(key.lower(), value) for key, value in git_config_entries(data) or [] if _UPSTREAM.match(key.lower())}


def _local(value: str, *, named: bool = False) -> bool:
    """Whether a url names a repository on this machine (a path, absolute or relative, or a ``file:`` url); not a
    network url, nor (``named``: a branch's remote) a remote's name (``branch.main.remote = origin``; ``.``: the
    repository itself, whose refs are judged as they move)."""
    if value.lower().startswith("file:"):
        return True
    if _SCHEME.match(value) or (_SCP_LIKE.match(value) and not value.startswith(("./", "../"))):
        return False
    return not (named and "/" not in value and value != "..")


def legacy_remote_question(path: str) -> str:
    """The question for a call that writes a remote's old-style definition (``LEGACY_REMOTE``) at ``path``."""
    return printable(f"It writes {path}, an old-style definition of a remote (git reads its url for a remote of that "
                     "name that the config does not define): your next git pull or fetch would take commits from "
                     "where it says.")  # fmt: skip
