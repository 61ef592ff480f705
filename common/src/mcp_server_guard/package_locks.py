"""The places a lock file fetches from (``hook_configs.installer_hook_keys``).

Threat (red team 117 F1): the user's next ``npm ci``, ``uv sync``, ``composer install`` … fetches what the lock says,
whatever the manifest says — a lock entry moved to a host, a repository or an archive the model chose, its
``postinstall`` or ``setup.py`` then run outside the box. Everyday installs write new urls by the hundred, all on
the registry: a place is what the entry fetches from, and a place the lock did not name before is asked (refused
to file_write).

A url is read as the package managers read it (the WHATWG rules npm, uv and Cargo follow), and only a url that reads
the same to any reader — printable ASCII, an http(s) scheme, no user information, no backslash, no dot segments, a
host of letters, digits, dots and hyphens — is taken for its host: a public registry (one place), a code host's
repository (its owner and name), another host (its name). Any other url is a place by its whole text: a ``\\`` that
WHATWG reads as ``/``, a ``,@`` that makes the registry a user name, a tab it drops, ``../..`` it resolves (red
team 119 F1) all make a url no lock held before. An archive by its path (``file:x.TGZ``, ``vendor/x.tar``) is a place
by its whole name. JSON and TOML locks are read parsed (their escapes decoded: ``\\u002f``), describing keys
(``funding``, ``homepage`` …) left out; other locks by their text, split at spaces, quotes and line ends only.
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

from mcp_server_guard.package_sources import ARCHIVE, other_encoding
from mcp_server_guard.patterns import deferred

__all__ = ["LOCK_FILES", "MAX_LOCK", "lock_places"]

LOCK_FILES = ("package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock", "deno.lock",
              "uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock", "pylock.toml", "Cargo.lock", "Gemfile.lock",
              "gems.locked", "composer.lock", "pixi.lock", "conda-lock.yml", "conda-lock.yaml")  # fmt: skip
MAX_LOCK = 64 << 20  # bytes of a lock file read at most (a monorepo's package-lock.json runs to tens of MiB)
# The public registries a package manager fetches from by default: a place there is the registry's (as a version
# range in a manifest is), one place for each.
_REGISTRIES = frozenset(
    {"registry.npmjs.org", "registry.npmjs.com", "registry.yarnpkg.com", "pypi.org", "files.pythonhosted.org",
     "pypi.python.org", "index.crates.io", "static.crates.io", "crates.io", "rubygems.org", "index.rubygems.org",
     "repo.packagist.org", "packagist.org", "conda.anaconda.org", "repo.anaconda.com", "proxy.golang.org",
     "sum.golang.org", "jsr.io", "deno.land", "download.pytorch.org"}
)  # fmt: skip
# Hosts of anyone's repositories: a place there is its owner and repository, not the host.
_CODE_HOSTS = frozenset({"github.com", "gitlab.com", "bitbucket.org", "codeload.github.com", "api.github.com",
                         "raw.githubusercontent.com", "objects.githubusercontent.com", "gist.github.com",
                         "codeberg.org", "git.sr.ht"})  # fmt: skip
# A string that fetches (at its start): a url of any scheme (WHATWG takes ``http:host/x`` without its slashes), a
# repository (``git@host:x``, scp-like ``user@host:path/x``, ``github:x/y``); not a yarn key (``pkg@npm:1.0.0``).
_URLISH = deferred(
    r"(?:[a-z][a-z0-9.-]*\+)?(?:https?|ftp|file|git|ssh|svn|hg|wss?):|[a-z][a-z0-9+.-]*://|git@"
    r"|[\w.-]+@[\w.-]+:\S*/|(?:github|gitlab|bitbucket|gist):",
    re.I,
)
# A url every reader reads alike (matched whole, its query and fragment cut): an http(s) scheme (a ``registry+`` or
# ``git+`` prefix allowed), a host of lower-case letters, digits, dots and hyphens, a port, a path of printable ASCII
# with no backslash.
_CLEAN = deferred(r"(?:[a-z0-9-]+\+)?https?://([a-z0-9.-]+)(?::[0-9]{1,5})?(/[!-\[\]-~]*)?")
_DOT_SEGMENT = deferred(r"(?:^|/)(?:\.|%2e){1,2}(?:/|$)", re.I)
_DESCRIBING = frozenset({"funding", "homepage", "support", "repository", "bugs", "author", "authors", "license",
                         "notification-url", "description", "keywords"})  # fmt: skip
_ENTRY_FIELDS = ("version", "resolved", "integrity", "name", "lockfileVersion")
_TOKENS = deferred(r"[ \n\"']+")  # (raw text: a tab, a CR or a comma stays inside a token: the url is odd then)


def lock_places(name: str, data: bytes | None) -> set[str] | None:
    """The places the lock file ``name`` holding ``data`` fetches from; None where it cannot be read so (a JSON or
    TOML lock this parser does not take — a byte-order mark, ``\\x`` escapes, trailing commas uv or bun take: red
    team 120 F1)."""
    if data is None or len(data) >= MAX_LOCK or other_encoding(data):
        return None
    if not data:
        return set()
    pairs = _strings(name, data)
    if pairs is None:
        return None
    return {place for key, text in pairs if (place := _place(text, key, npm=name in _NPM_LOCKS))}


_NPM_LOCKS = frozenset({"package-lock.json", "npm-shrinkwrap.json", "bun.lock"})
_JSON_LOCKS = frozenset({*_NPM_LOCKS, "deno.lock", "composer.lock", "Pipfile.lock"})
_TOML_LOCKS = frozenset({"uv.lock", "poetry.lock", "pdm.lock", "pylock.toml", "Cargo.lock"})
# A JSONC lock's trailing commas (bun.lock), outside its strings.
_JSONC = deferred(r'("(?:[^"\\]|\\.)*")|,(\s*[}\]])')


def _strings(name: str, data: bytes) -> list[tuple[str, str]] | None:
    """The (key, string) pairs a lock holds — its strings by the key they stand under ("" in a list or a text), its
    keys too — parsed where it is JSON or TOML (None where that fails); else its text's tokens."""
    text = data.decode("utf-8", "replace")
    parsed: Any = None
    try:
        if name in _JSON_LOCKS:
            body = _JSONC.sub(lambda m: m.group(1) or m.group(2), text) if name == "bun.lock" else text
            parsed = json.loads(body)
        elif name in _TOML_LOCKS:
            parsed = tomllib.loads(text)
        else:
            return [("", token) for token in _TOKENS.split(text) if token]
    except (ValueError, RecursionError):
        return None
    found: list[tuple[str, str]] = []
    stack: list[tuple[str, Any]] = [("", parsed)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, dict):
            # (a describing key only as a field of a package's entry, beside its version — not a package named so in
            # a table of packages: ``"dependencies": {"license": {…}}``, red team 122 F1)
            # (a field holds a string: a table holding a package named ``version`` is no entry, red team 124 F3)
            entry = any(isinstance(item.get(field), str) for field in _ENTRY_FIELDS)
            for inner_key, inner in item.items():
                if not (entry and str(inner_key).lower() in _DESCRIBING):
                    stack.append((str(inner_key), inner))
                    found.append(("", str(inner_key)))
        elif isinstance(item, list):
            stack += [(key, inner) for inner in item]
        elif isinstance(item, str):
            found.append((key, item))
    return found


# npm's specs in a lock's ``resolved``/``version``/``from``: a repository by shorthand (``someone/evil#main``,
# ``github:…``, ``sourcehut:~x/y``) is fetched from its host and skips the integrity check (red team 120 F2).
_NPM_SPEC_KEYS = frozenset({"resolved", "version", "from"})
# (an alias; a version or range; ``name@range`` as a v1 lock's ``from`` says it)
_NPM_REGISTRY_SPEC = deferred(r"npm:.*|(?:@[\w.-]+/)?[\w.-]+@[\w.^~<>=*| +-]*|[\w.^~<>=*| +-]*")


def _place(text: str, key: str = "", *, npm: bool = False) -> str:
    """Where a string of a lock fetches from ("" for none: a version, a hash, a name). ``key``: what it stands
    under; ``npm``: in an npm lock (its specs read as npm reads them)."""
    given = text.strip(" ,;}])")
    bare = given.split("#", 1)[0].split("?", 1)[0]
    if "\\" in given:  # (an escape this reading does not undo: YAML's "\u003a", a WHATWG backslash)
        return f"escaped {given}"
    if npm and key in _NPM_SPEC_KEYS and not _URLISH.match(given) and not _NPM_REGISTRY_SPEC.fullmatch(given):
        return f"spec {given}"
    if _URLISH.match(given):
        clean = _CLEAN.fullmatch(bare)
        if (
            clean is None
            or "@" in given.split("//", 1)[-1].split("/", 1)[0]
            or _DOT_SEGMENT.search(clean.group(2) or "")
        ):
            return f"url {given}"  # (read otherwise by some reader, or not a web url: the whole of it)
        host = clean.group(1).rstrip(".")
        if host in _REGISTRIES:
            return f"registry {host}"
        if host in _CODE_HOSTS:
            parts = (clean.group(2) or "").strip("/").removesuffix(".git").split("/")
            owner = "/".join(parts[1:3] if host == "api.github.com" and parts[0] == "repos" else parts[:2])
            return f"{host}/{owner}"
        return f"host {host}"
    if ARCHIVE.search(bare) and not any(c in bare for c in "*?["):
        return f"archive {given}"
    return ""
