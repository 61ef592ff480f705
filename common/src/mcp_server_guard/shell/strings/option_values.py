"""The options that take a value, per program (``matching.parse_args``): so that the first positional (the
subcommand) is found and a value is not read as a flag (``pacman -S --ignore -s foo``: -s is what --ignore leaves
out, not a search). String data, advisory like the rest of the policy layer."""

from __future__ import annotations

__all__ = ["IPROUTE", "IPROUTE_VALUES", "VALUE_OPTIONS"]

# Options that take a value, per program, so that the first positional (the subcommand) is found and
# values are not read as flags. Single-dash words of programs in SINGLE_DASH_LONG are whole option names.
VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "git": frozenset({"C", "c", "git-dir", "work-tree", "namespace", "config-env", "super-prefix", "exec-path"}),
    "apt": frozenset({"o", "c", "t", "a", "option", "config-file", "target-release"}),
    "apt-get": frozenset({"o", "c", "t", "a", "option", "config-file", "target-release"}),
    "dnf": frozenset({"c", "setopt", "installroot", "releasever", "repo", "enablerepo", "disablerepo", "x", "exclude",
                      "config", "repofrompath", "forcearch", "d", "debuglevel", "e", "errorlevel", "disableplugin",
                      "enableplugin", "comment", "destdir", "downloaddir", "excludepkgs", "repoid"}),
    "yum": frozenset({"c", "setopt", "installroot", "releasever", "enablerepo", "disablerepo", "x", "exclude",
                      "config", "d", "debuglevel", "e", "errorlevel", "disableplugin", "enableplugin"}),
    "systemctl": frozenset({"H", "M", "t", "p", "n", "o", "host", "machine", "type", "property", "lines", "output",
                            "root", "image", "job-mode", "s", "signal", "kill-whom", "kill-value", "what", "when",
                            "state", "preset-mode", "message", "timestamp", "drop-in", "check-inhibitors"}),
    "docker": frozenset({"H", "c", "l", "host", "context", "config", "log-level", "v", "volume", "mount", "e", "w"}),
    "kubectl": frozenset({"n", "namespace", "context", "cluster", "s", "server", "kubeconfig", "f", "filename", "l"}),
    "find": frozenset(
        {"name", "iname", "path", "ipath", "wholename", "iwholename", "regex", "iregex", "type", "xtype", "mtime",
         "mmin", "atime", "amin", "ctime", "cmin", "newer", "anewer", "cnewer", "size", "user", "group", "perm",
         "maxdepth", "mindepth", "fprint", "fprint0", "fls", "printf", "links", "samefile", "inum", "uid", "gid",
         "regextype", "context", "used", "lname", "ilname", "fstype"}
    ),
    "tar": frozenset({"f", "C", "I", "T", "X", "b", "file", "directory", "use-compress-program", "files-from",
                      "exclude-from", "to-command", "checkpoint-action", "info-script", "new-volume-script", "F",
                      "rmt-command", "rsh-command", "exclude", "transform", "owner", "group", "mode"}),
    "sort": frozenset({"o", "k", "t", "S", "T", "output", "key", "field-separator", "buffer-size",
                       "temporary-directory", "compress-program", "files0-from", "parallel"}),
    "rsync": frozenset({"e", "rsh", "exclude", "include", "filter", "f", "rsync-path", "files-from", "B", "T",
                        "temp-dir", "chmod", "chown", "backup-dir", "suffix", "password-file", "log-file"}),
    "ssh": frozenset({"b", "c", "D", "E", "e", "F", "I", "i", "J", "L", "l", "m", "O", "o", "p", "Q", "R", "S",
                      "W", "w", "B"}),
    "rg": frozenset({"e", "f", "g", "t", "T", "A", "B", "C", "m", "M", "j", "pre", "pre-glob", "glob", "type",
                     "type-not", "regexp", "file", "max-count", "context", "after-context", "before-context",
                     "replace", "r", "threads", "max-depth", "encoding", "E", "sort", "sortr"}),
    "grep": frozenset({"e", "f", "A", "B", "C", "m", "regexp", "file", "max-count", "context", "after-context",
                       "before-context", "include", "exclude", "exclude-dir", "label", "d", "D", "directories",
                       "devices", "binary-files"}),
    "tree": frozenset({"L", "P", "I", "o", "H", "T", "charset", "filelimit", "timefmt", "sort"}),
    "sed": frozenset({"e", "f", "l", "expression", "file", "line-length"}),
    "awk": frozenset({"f", "v", "F", "file", "assign", "field-separator", "i", "include", "l", "load"}),
    "date": frozenset({"d", "f", "r", "date", "file", "reference", "s", "set", "I", "iso-8601"}),
    "kill": frozenset({"s", "n"}),
    "pkill": frozenset({"u", "U", "g", "G", "P", "s", "t", "F", "euid", "uid", "group", "pgroup", "parent",
                        "session", "terminal", "pidfile", "signal", "r", "runstates", "O", "older", "ns", "nslist"}),
    "chmod": frozenset({"reference"}),
    "chown": frozenset({"reference", "from"}),
    "truncate": frozenset({"s", "r", "size", "reference", "o"}),
    "brew": frozenset(),
    "xxd": frozenset({"c", "g", "l", "s", "o", "n", "cols", "groupsize", "len", "seek", "name"}),
}  # fmt: skip
VALUE_OPTIONS["gawk"] = VALUE_OPTIONS["mawk"] = VALUE_OPTIONS["nawk"] = VALUE_OPTIONS["awk"]
VALUE_OPTIONS["podman"] = VALUE_OPTIONS["nerdctl"] = VALUE_OPTIONS["finch"] = VALUE_OPTIONS["docker"]
VALUE_OPTIONS["nmcli"] = frozenset({"f", "fields", "g", "get-values", "w", "wait", "e", "escape", "c", "colors", "m",
                                    "mode"})  # fmt: skip
# npm's options that take a value (`npm install --location global x`: red team 20 F13)
VALUE_OPTIONS["npm"] = frozenset({"location", "prefix", "registry", "workspace", "w", "cache", "userconfig",
                                  "globalconfig", "loglevel", "tag", "otp", "scope", "access", "script-shell", "before",
                                  "omit", "include", "install-strategy", "C"})  # fmt: skip
VALUE_OPTIONS["egrep"] = VALUE_OPTIONS["fgrep"] = VALUE_OPTIONS["grep"]
# cargo's options that take a value: the global ones (its subcommand comes after them), -p (-pn is --package n)
VALUE_OPTIONS["cargo"] = frozenset({"color", "config", "explain", "C", "Z", "p", "package", "j", "F", "registry"})
# iproute2's options are single-dash words it also takes abbreviated (``-n`` is ``-netns``): those that take a value.
IPROUTE_VALUES = frozenset(
    word[:n] for word in ("netns", "batch", "rcvbuf", "loops", "family") for n in range(1, len(word) + 1)
) - {"r"}  # fmt: skip
IPROUTE = frozenset({"ip", "tc", "bridge"})
VALUE_OPTIONS["ip"] = IPROUTE_VALUES
_NETNS_BATCH = frozenset(w[:n] for w in ("netns", "batch") for n in range(1, len(w) + 1))
VALUE_OPTIONS["tc"] = _NETNS_BATCH | {"cf", "conf"}  # (tc's -f is -force: no value)
VALUE_OPTIONS["bridge"] = _NETNS_BATCH
# pip's (global and install) options that take a value (``pip --log l.txt install``: red team 20 F2).
VALUE_OPTIONS["pip"] = frozenset(
    {"log", "log-file", "proxy", "retries", "timeout", "exists-action", "trusted-host", "cert", "client-cert",
     "cache-dir", "python", "use-feature", "use-deprecated", "keyring-provider", "r", "requirement", "c", "constraint",
     "e", "editable", "t", "target", "platform", "python-version", "implementation", "abi", "root", "prefix", "src",
     "upgrade-strategy", "i", "index-url", "extra-index-url", "f", "find-links", "config-settings", "C",
     "global-option", "report", "progress-bar", "no-binary", "only-binary"}
)  # fmt: skip
# uv's options that take a value (``uv pip install -p /usr/bin/python3 x``: the interpreter it installs into).
VALUE_OPTIONS["uv"] = frozenset(
    {"p", "python", "config-file", "directory", "project", "t", "target", "prefix", "r", "requirement", "c",
     "constraint", "o", "output-file", "i", "index-url", "extra-index-url", "f", "find-links", "cache-dir", "with",
     "from", "index", "default-index", "python-version", "color", "e", "editable"}
)  # fmt: skip
# pacman's options that take a value (``pacman -S --ignore -s foo`` installs foo: -s is what --ignore leaves out;
# red team 102 F4); yay and paru take pacman's.
VALUE_OPTIONS["pacman"] = frozenset(
    {"b", "dbpath", "r", "root", "cachedir", "color", "config", "gpgdir", "hookdir", "logfile", "arch", "sysroot",
     "ignore", "ignoregroup", "overwrite", "assume-installed", "print-format", "ask"}
)  # fmt: skip
# yay's and paru's own besides (red team 103 F3: ``yay -S --editor -s foo`` installs foo).
VALUE_OPTIONS["yay"] = VALUE_OPTIONS["paru"] = VALUE_OPTIONS["pacman"] | {
    "editor", "editorflags", "makepkg", "makepkgconf", "mflags", "pacman", "pacmanconf", "git", "gitflags", "gpg",
    "gpgflags", "gpgdir", "builddir", "sudo", "sudoflags", "sortby", "searchby", "aururl", "aurrpcurl", "clonedir",
    "completioninterval", "requestsplitn", "redownload", "rebuild", "answerclean", "answerdiff", "answeredit",
    "answerupgrade", "removemake", "bat", "batflags", "fm", "fmflags", "chroot", "develfile", "limit", "mode",
}  # fmt: skip
# modprobe's options that take a value (``modprobe -C -n e1000`` loads: -n is the config's name; red team 102 F3).
VALUE_OPTIONS["modprobe"] = frozenset({"C", "config", "d", "dirname", "S", "set-version"})
