"""Environment variables that change what a program runs: one table for every way a command gets them.

A caller can set a variable three ways: the call's ``env`` field, an assignment before the program
(``LESSOPEN='|sh x' less f``) and ``env NAME=value prog``. The same names are judged in all three:

* *command-valued* names (``PAGER``, ``GIT_SSH_COMMAND``, ``LESSOPEN`` …) hold a command line that some
  program runs: the value is judged as a command line.
* *code* names (``LD_PRELOAD``, ``BASH_ENV``, ``GIT_CONFIG_*``, ``NODE_OPTIONS``, ``XDG_CONFIG_HOME`` …)
  make a program load code or configuration the caller chose: they cannot be judged before running (the
  policy's ``undecidable`` action: ask or deny; on a copy, a search path such as ``PYTHONPATH`` is judged by
  what the command does).

The ``env`` field is judged exactly as the same assignments written before the line (``PolicyEngine.expand``);
only what is no variable at all (an invalid name, a value that is an exported bash function) is refused here.
* ``PATH`` decides which file a program name runs; the policy judges the program that PATH finds.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping, Sequence

from mcp_server_guard.errors import SecurityError

# Taken from the server's own environment; everything else is dropped.
BASE_ENV_NAMES = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TZ")


BASE_ENV_PATTERNS = ("LC_*",)


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def base_env(source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed part of the server's own environment (computed once per server)."""
    source = os.environ if source is None else source
    env = {k: v for k, v in source.items() if k in BASE_ENV_NAMES or _matches(k, BASE_ENV_PATTERNS)}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


def build_env(extra: Mapping[str, str] | None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: the allow-listed basics plus the caller's (filtered) variables."""
    env = dict(base_env() if base is None else base)
    for name, value in (extra or {}).items():
        if not name or "=" in name or "\x00" in name:
            raise SecurityError("ENV_REFUSED", f"Environment name {name!r} is not valid.", "Use NAME=value pairs.")
        if "\x00" in value:
            raise SecurityError("ENV_REFUSED", f"The value of {name} holds a NUL byte, which no environment can carry.",
                                "Pass the value without it.")  # fmt: skip
        if value.startswith("()"):
            raise SecurityError(
                "ENV_REFUSED",
                f"The value of {name} looks like an exported bash function.",
                "Pass plain values only.",
            )
        env[name] = value
    return env


# Threat to usefulness, not safety: where a run cannot write the project or HOME (a read-only session, a line that
# only reads), linters and type checkers fail to make their cache there (``ruff check`` exits 2, ``mypy`` stops
# with an internal error on ``.mypy_cache``: issue 45). Their caches go to the call's own /tmp instead, gone when it
# ends; a variable the caller set stays as set.
_CALLS_TMP = "/tmp"  # noqa: S108 - in the box, the call's own private /tmp
SCRATCH_CACHES = {
    "RUFF_CACHE_DIR": f"{_CALLS_TMP}/.cache/ruff",
    "MYPY_CACHE_DIR": f"{_CALLS_TMP}/.cache/mypy",
    "XDG_CACHE_HOME": f"{_CALLS_TMP}/.cache",
    "npm_config_cache": f"{_CALLS_TMP}/.cache/npm",
}


def boxed_env(env: Mapping[str, str], *, scratch_caches: bool) -> dict[str, str]:
    """A boxed run's environment: ``env``, TMPDIR the call's own /tmp, and — where the run cannot write the project
    (``scratch_caches``) — the caches there too (``SCRATCH_CACHES``; a variable the caller set stays as set)."""
    return {**(SCRATCH_CACHES if scratch_caches else {}), **env, "TMPDIR": _CALLS_TMP}
