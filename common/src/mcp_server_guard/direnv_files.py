"""What direnv evaluates besides ``.envrc`` itself (``changes.later``): the Nix, flake, devenv, devbox and flox
files whose ``shellHook`` or hooks run at every ``cd`` into the directory."""

from __future__ import annotations

import itertools
import os
import posixpath
import re

from mcp_server_guard.hook_configs import read_regular
from mcp_server_guard.hook_words import program_words
from mcp_server_guard.patterns import deferred

__all__ = ["direnv_evaluates"]

# What direnv's ``use nix``/``use flake``/``use devenv`` evaluates (``direnv_evaluates``): each file's ``shellHook``
# runs at every ``cd``.
_USE_FILES = {"nix": ("shell.nix", "default.nix"), "flake": ("flake.nix", "flake.lock"),
              "devenv": ("devenv.nix", "devenv.yaml", "devenv.lock"), "devbox": ("devbox.json",),
              "flox": (".flox/env/manifest.toml", ".flox/env/manifest.lock")}  # fmt: skip

_USE = deferred(r"(?:^|[\s;&|])use[_ ]\s*(nix|flake|devenv|flox)\b([^\n;&|#]*)", re.M)
# devbox's direnv integration (``eval "$(devbox generate direnv --print-envrc)"``): devbox.json's ``shell.init_hook``
# runs at every cd (red team 99 F4).
_DEVBOX = deferred(r"^[^#\n]*\bdevbox\s+(?:generate\s+direnv|shellenv)\b", re.M)
# flox's (``use flox``, or ``eval "$(flox activate …)"``): its manifest's ``[hook] on-activate`` and ``[profile]``
# scripts run at every cd.
_FLOX = deferred(r"^[^#\n]*\bflox\s+activate\b([^\n]*)", re.M)


def _flox_files(rest: str) -> set[str]:
    """The manifest (and lock) of the flox environment ``use flox …``/``flox activate …`` names (``-d``/``--dir``;
    the directory's own by default)."""
    words = [w.strip("\"'$()`;") for w in rest.split()]  # (its options: program_words leaves them out)
    where = [w for k, w in itertools.pairwise(words) if k in ("-d", "--dir")]
    where = [*where, *(w[6:] for w in words if w.startswith("--dir="))] or ["."]
    return {posixpath.normpath(posixpath.join(w, f)) for w in where if w for f in _USE_FILES["flox"]}


def direnv_evaluates(directory: str) -> frozenset[str]:
    """The files ``directory``'s ``.envrc`` has direnv evaluate (relative to it, normalized) with ``use nix [file]``,
    ``use flake [dir]``, ``use devenv`` (or ``use_nix`` …): their ``shellHook`` runs at every ``cd`` into it
    (``changes.later`` asks about a change of them: red teams 50 F6, 51 F3; asked, not refused, as adding a package
    there is everyday work)."""
    named: set[str] = set()
    envrc = read_regular(None, os.path.join(directory, ".envrc"), 256 << 10) or ""
    for kind, rest in _USE.findall(envrc):
        given = [w.split("#", 1)[0] for w in program_words(rest)]  # (``.#devShell``: the flake here)
        given = [w for w in given if w and w not in (".", "./")]
        if kind == "flox":  # (``use flox -d dir``: that directory's)
            named.update(_flox_files(rest))
        elif kind == "nix" and given:
            named.update(posixpath.normpath(w) for w in given)
        elif kind == "flake" and given:
            named.update(posixpath.normpath(posixpath.join(w, f)) for w in given for f in _USE_FILES["flake"])
        else:
            named.update(_USE_FILES[kind])
    if _DEVBOX.search(envrc):
        named.update(_USE_FILES["devbox"])
    for rest in _FLOX.findall(envrc):  # (``eval "$(flox activate -d tools)"``: red team 101 D)
        named.update(_flox_files(rest))
    return frozenset(named)
