"""Git's config, read by git itself: its entries, which keys cannot make git run a program, and a config rewritten
with only those.

Owns the one reader of config bytes (:func:`git_config_entries`: ``git config --list -z`` over a private copy,
includes not followed, nothing else run) and the safe list. Threat: a config whose text reads one way to a
hand-written parser and another way to git, so git's own parser decides, never a look-alike. Not here: where
configs and git dirs lie and what git runs from them (``git_dirs``: file_write refuses every git config), nor the
judgement of a config a command changed (``changes.git_verdicts``).
"""

from __future__ import annotations

import os
import subprocess
import tempfile

from mcp_server_guard.paths import system_program

__all__ = ["MAX_GIT_CONFIG", "git_config_entries", "git_key_is_safe", "safe_git_config", "unsafe_git_entries"]

MAX_GIT_CONFIG = 1 << 20  # bytes of a config read at most; a larger one counts as unreadable
_GIT_TIMEOUT_S = 3.0  # git reads a 1 MiB config in milliseconds; past this it is refused
# Keys a git config written by a command may carry (section.key; "*" stands for any subsection): none of them
# makes git run a program. Any other key a command adds is refused (a new repository's config is applied
# without them).
# Not core.worktree: it sends git's checkouts and resets to any directory (outside the roots: your next
# `git reset --hard` writes there).
_SAFE_GIT_KEYS = frozenset(
    {
        "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates", "core.ignorecase",
        "core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol", "core.safecrlf",
        "user.name", "user.email", "init.defaultbranch", "branch.*.remote", "branch.*.merge",
        "branch.*.rebase",
        "remote.*.url", "remote.*.pushurl", "remote.*.fetch", "remote.*.push", "extensions.objectformat",
        "extensions.worktreeconfig", "extensions.refstorage", "submodule.*.url", "submodule.*.active",
        "commit.verbose", "pull.rebase", "pull.ff", "merge.ff", "gc.auto", "advice.*",
    }
)  # fmt: skip


def git_config_entries(data: bytes) -> list[tuple[str, str]] | None:
    """The (key, value) pairs git itself reads from config bytes: ``git config --list -z`` over a private copy,
    includes not followed, nothing else run. None when git cannot read them (then nothing may rely on them).

    Threat: a config whose text reads one way to a hand-written parser and another way to git (a backslash at
    the end of a comment, a form feed taken for a line break) — so git's own parser decides."""
    git = system_program("git")
    if git is None or len(data) > MAX_GIT_CONFIG:
        return None
    with tempfile.TemporaryDirectory(prefix="mcp-guard-gitconfig-") as private:
        path = os.path.join(private, "config")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        env = {"PATH": os.defpath, "HOME": private, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
        try:
            done = subprocess.run(
                [git, "config", "--no-includes", "--file", path, "--list", "-z"],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_GIT_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
    if done.returncode != 0:
        return None
    entries: list[tuple[str, str]] = []
    for item in done.stdout.split(b"\0"):
        if item:
            key, _, value = item.decode("utf-8", "surrogateescape").partition("\n")
            entries.append((key, value))
    return entries


def git_key_is_safe(key: str) -> bool:
    """Whether a config key (as git lists it: section[.subsection].name) cannot make git run a program."""
    section, _, rest = key.partition(".")
    name = rest.rsplit(".", 1)[-1].lower()
    has_sub = "." in rest
    plain = f"{section.lower()}.{name}" if not has_sub else f"{section.lower()}.*.{name}"
    return plain in _SAFE_GIT_KEYS or f"{section.lower()}.*" in _SAFE_GIT_KEYS


def unsafe_git_entries(data: bytes | None) -> list[str] | None:
    """The entries of a git config that could make git run programs, as ``key=value`` (sorted); [] for none or no
    file; None when git cannot read it."""
    if data is None:
        return []
    entries = git_config_entries(data)
    if entries is None:
        return None
    return sorted(f"{key}={value}" for key, value in entries if not git_key_is_safe(key))


def safe_git_config(data: bytes) -> bytes | None:
    """A config with only the keys on the safe list, written afresh from what git reads (never an edit of the
    given text); None when git cannot read the given config or would not read the result back the same."""
    entries = git_config_entries(data)
    if entries is None:
        return None
    kept = [(key, value) for key, value in entries if git_key_is_safe(key)]
    lines: list[str] = []
    current: tuple[str, str | None] | None = None
    for key, value in kept:
        section, _, rest = key.partition(".")
        sub, _, name = rest.rpartition(".")
        where = (section, sub or None)
        if where != current:
            current = where
            lines.append(f"[{section}]" if not sub else f'[{section} "{_quoted(sub)}"]')
        lines.append(f'\t{name} = "{_quoted(value)}"')
    text = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape") if lines else b""
    return text if git_config_entries(text) == kept else None


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
