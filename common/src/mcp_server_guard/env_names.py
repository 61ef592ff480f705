"""Environment variable names that change what a program runs (their values a command line, or code and
configuration a program loads): one table for the shell's judge (``shell.environment``) and for the files that set
them for later (an ``.env`` a tool loads: ``python_startup``).
"""

from __future__ import annotations

import fnmatch

__all__ = ["CODE_PATTERNS", "COMMAND_VALUED", "DATA_ONLY", "is_command_valued", "runs_code"]

# Threat: a variable whose value is a command some program runs (a pager, an editor, an ssh or askpass
# helper, less's input filter). Names, not patterns.
COMMAND_VALUED = frozenset(
    {
        "PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER", "BAT_PAGER", "EDITOR", "VISUAL", "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR", "SUDO_EDITOR", "FCEDIT", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_PROXY_COMMAND",
        "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "BROWSER", "GIT_EXTERNAL_DIFF", "PROMPT_COMMAND",
        "LESSOPEN", "LESSCLOSE", "RSYNC_RSH", "RSYNC_CONNECT_PROG", "RUSTC_WRAPPER", "FZF_DEFAULT_COMMAND",
        # the compilers and tools make and build scripts run by these names (`CC='…' make hello`)
        "CC", "CXX", "CPP", "LD", "AR", "AS", "FC", "RUSTC", "RUSTC_WORKSPACE_WRAPPER", "RUSTDOC",
    }
)  # fmt: skip
# Threat: variables that make a program load a library, a script, options or a configuration file the
# caller chose (the dynamic loader, shells' startup files, interpreters' option variables, git's and
# tar's and ripgrep's configuration through the environment, the directories configurations are read from).
CODE_PATTERNS = (
    "LD_*", "DYLD_*", "BASH_ENV", "ENV", "BASH_FUNC_*", "PS4", "IFS", "SHELLOPTS", "BASHOPTS", "NODE_OPTIONS",
    "PYTHON*", "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "RUBYOPT", "RUBYLIB", "GIT_*", "GCONV_PATH",
    "MALLOC_*", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "ZDOTDIR", "TAR_OPTIONS",
    "RIPGREP_CONFIG_PATH", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "HOME", "NPM_CONFIG_*", "npm_config_*",
    "LESSKEY*", "LESS", "CDPATH", "GLOBIGNORE", "BASH_XTRACEFD", "HISTFILE", "INPUTRC", "TERMINFO*",
    "CURL_HOME", "WGETRC", "MANOPT", "MANROFFOPT", "MAKEFLAGS", "MAKEFILES", "VIMINIT", "EXINIT", "LUA_INIT*",
    "GOFLAGS", "ZIPOPT", "PSQLRC", "NODE_PATH", "EXECIGNORE", "POSIXLY_CORRECT", "BASH_COMPAT",
    "BASH_LOADABLES_PATH", "SHELL", "CARGO_TARGET_*", "CARGO_BUILD_*",
    # the container engines' daemon and configuration (a remote daemon over ssh, credential helpers, OCI hooks and
    # runtimes the configuration names: red team 21)
    "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "CONTAINER_HOST", "CONTAINER_CONNECTION", "CONTAINERS_CONF*",
    "CONTAINERS_REGISTRIES_CONF", "CONTAINERS_STORAGE_CONF", "BUILDKIT_HOST", "REGISTRIES_CONFIG_PATH",
)  # fmt: skip
# Names inside CODE_PATTERNS that only carry data: allowed everywhere.
DATA_ONLY = frozenset(
    {
        "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONHASHSEED", "PYTHONUTF8",
        "PYTHONFAULTHANDLER", "PYTHONTRACEMALLOC", "PYTHONDEVMODE", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT",
    }
)  # fmt: skip


def is_command_valued(name: str) -> bool:
    return name in COMMAND_VALUED


def runs_code(name: str) -> bool:
    """A name that makes programs load code or configuration chosen by whoever sets it."""
    if name in DATA_ONLY or name in COMMAND_VALUED:
        return False
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in CODE_PATTERNS)
