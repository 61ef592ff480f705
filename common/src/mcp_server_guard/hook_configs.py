"""Git hooks configured in a ``package.json``: what the hook managers of Node projects run at the user's next
``git commit`` or ``git push``, outside any box.

Husky 4 runs ``husky.hooks``; lint-staged and nano-staged run the commands of their key on the staged files (from
a hook husky, simple-git-hooks or lefthook installed); simple-git-hooks, yorkie (``gitHooks``), ghooks
(``config.ghooks``), ``pre-commit``/``pre-push`` (the npm packages: the scripts named there) and husky before 1.0
(``scripts.precommit`` …) name what a hook runs. Threat: a command or a write adding ``"lint-staged": {"*":
"curl … | sh"}`` to a project whose hooks run lint-staged — the user's own next commit runs it. The hook files
and these tools' own config files are protected paths (``policies/default.toml``); these keys live in a file
every project edits, so a change of them is judged by what it changes: shell_exec asks, file_write (which cannot
ask) refuses. The file is read as JSON the way Node reads it (the last of two equal keys wins); one that cannot be
read so here counts as setting every hook (see ``_hook_settings``).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_PACKAGE_JSON", "UNREAD", "changed_hook_keys", "judged_package_json"]

MAX_PACKAGE_JSON = 4 << 20  # bytes of a package.json read at most; one this large counts as not read
_TOP = frozenset(
    {
        "husky", "lint-staged", "nano-staged", "simple-git-hooks", "gitHooks", "ghooks", "git-hooks", "pre-commit",
        "precommit", "pre-push", "prepush", "post-merge", "post-commit", "lefthook", "commitlint",
    }
)  # fmt: skip
# husky before 1.0: an npm script named after the hook (without its dash), run by the hook it installed
_HOOKS = ("applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
          "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
          "pre-push", "pre-receive", "update", "post-receive", "post-update", "push-to-checkout", "pre-auto-gc",
          "post-rewrite", "sendemail-validate")  # fmt: skip
_SCRIPTS = frozenset({*_HOOKS, *(hook.replace("-", "") for hook in _HOOKS)})


def judged_package_json(path: str) -> bool:
    """Whether ``path`` is a ``package.json`` whose hook keys are judged: one of the project's, not an installed
    package's (under ``node_modules``: npm rewrites those, and no hook manager reads them)."""
    parts = path.split("/")
    return parts[-1] == "package.json" and "node_modules" not in parts


UNREAD = "(the whole file: it could not be read as JSON here)"


def _hook_settings(data: bytes | None) -> dict[str, str] | None:
    """Each hook key the file sets, with its value as canonical JSON; None where it cannot be read as Node reads it.

    Threat: a file Node reads and this reader does not (an integer of 5,000 digits, nesting 2,000 deep, bytes
    that are not UTF-8, a file past what is read) taken for one that sets no hook (red team 3 F1): such a file is
    judged as setting them all. Read as Node reads it: invalid UTF-8 replaced, a BOM dropped, numbers kept as
    their text (no conversion limit)."""
    if not data:
        return {}
    if len(data) >= MAX_PACKAGE_JSON:
        return None
    try:
        parsed: Any = json.loads(data.decode("utf-8", "replace").removeprefix("\ufeff"), parse_int=str,
                                 parse_float=str, parse_constant=str)  # fmt: skip
    except (ValueError, RecursionError):
        return None
    if not isinstance(parsed, dict):
        return {}
    found = {key: parsed[key] for key in _TOP if key in parsed}
    for section, keys in (("scripts", _SCRIPTS), ("config", frozenset({"ghooks"}))):
        inner = parsed.get(section)
        if isinstance(inner, dict):
            found |= {f"{section}.{key}": inner[key] for key in keys if key in inner}
    return {key: json.dumps(value, sort_keys=True) for key, value in found.items()}


def changed_hook_keys(old: bytes | None, new: bytes | None) -> list[str]:
    """The hook keys the new content of a package.json sets to another value than the old one had (a key taken
    out makes no hook run anything new); a new content that cannot be read counts as setting them."""
    before, after = _hook_settings(old), _hook_settings(new)
    if after is None:
        return [UNREAD]
    return sorted(key for key, value in after.items() if before is None or before.get(key) != value)
