"""Policy files: TOML, merged over the packaged default, validated with pydantic.

The packaged ``policies/default.toml`` is the single source of default values; a user policy
passed with ``--policy`` only names the keys it changes. An invalid file names the bad key.
"""

from __future__ import annotations

import fnmatch
import importlib.machinery
import ipaddress
import re
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from mcp_server_guard.policy_files import read_policy_toml

PACKAGED_PATTERNS = "packaged_patterns"  # (validation context: the packaged policy's args_regex patterns)
# shell_exec rules: what each decides, and the findings of the parser a `detect` rule may name.
Action = Literal["deny", "ask", "allow"]
DETECTABLE = frozenset(
    {
        "fork-bomb",
        "eval",
        "source",
        "dynamic-command",
        "pipe-to-shell",
        "prompt-expansion",
        "dynamic-shell-string",
        "dynamic-redirect",
        "parse-error",
        "too-deep",
        "write-redirect",
        "device-write",
        "env-code",
        "path-override",
        "code-in-data",
        "script-from-data",
        "command-variable",
        "remote-code",
        "shell-escape",
        "system-write",
        "dynamic-program",
        "dynamic-eval",
        "search-path",
        "code-built-command",
        "pip-variable",
        "kill-everything",
        "script-writes",
        "write-outside",
    }
)
# Findings that are facts, not doubts: allowed unless a detect rule says otherwise.
INFORMATIONAL = frozenset({"write-redirect", "command-variable", "script-writes", "write-outside"})


class PolicyError(Exception):
    """The policy file cannot be used; the message names the file and the key."""


class _Section(BaseModel):
    # (defer_build: a section is validated as part of Policy, whose schema holds it; its own validator is built only
    # if something validates one alone — issue 44, ~8 ms of every start)
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class FileReadPolicy(_Section):
    max_read_bytes: int = Field(gt=0, le=1 << 30)
    sniff_bytes: int = Field(ge=512, le=1 << 20)
    allowed_mime_types: tuple[str, ...]

    def mime_allowed(self, mime: str) -> bool:
        return any(fnmatch.fnmatchcase(mime, pattern) for pattern in self.allowed_mime_types)


class FileWritePolicy(_Section):
    max_write_bytes: int = Field(gt=0, le=1 << 31)
    denied_extensions: tuple[str, ...]
    denied_mime_types: tuple[str, ...]
    shebang_interpreters: tuple[str, ...]
    history_max_bytes: int = Field(ge=0)
    history_max_entries: int = Field(ge=1)

    @field_validator("denied_extensions")
    @classmethod
    def _dotted_lowercase(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(("." + ext.lstrip(".")).lower() for ext in value)


class PathsPolicy(_Section):
    """The [paths] section: what no tool writes (protected) and what no tool reads (hidden)."""

    protected: tuple[str, ...]
    hidden: tuple[str, ...]

    @field_validator("protected")
    @classmethod
    def _compilable(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            if not pattern.strip("/"):
                raise ValueError(f"empty pattern {pattern!r}")
        return value

    @field_validator("hidden")
    @classmethod
    def _anchored(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            if not (entry.startswith("/") or entry == "~" or entry.startswith("~/")) or entry.rstrip("/") in ("", "~"):
                raise ValueError(f"{entry!r}: a hidden path is absolute or starts with ~/, and is not / or ~ itself")
        return value


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # (see _Section)

    id: str = Field(min_length=1)
    action: Action
    reason: str = Field(min_length=1)
    programs: tuple[str, ...] = ()
    subcommands: tuple[str, ...] = ()
    flags: tuple[tuple[str, ...], ...] = ()
    args: tuple[str, ...] = ()
    args_regex: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    without: tuple[str, ...] = ()
    min_positionals: int = Field(default=0, ge=0)
    # The second operand (the command after the object, as iproute2 reads ``ip link delete``) abbreviates one of
    # these: ``ip l d eth0`` is ``ip link delete eth0`` to ip, which takes any prefix. ``se|t``: at least ``se`` (``ip
    # a s`` shows addresses: the shortest form where the verb is no reading one).
    verb_prefixes: tuple[str, ...] = ()
    option_values: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    detect: str | None = None
    undoable: bool = False  # guards only the project's files: judged by its effects when commands work on a copy
    # What it guards, the box stops anyway (a disk, another process, a program run in the box): on a copy, a
    # run-time argument that could make it match is not asked about beforehand.
    boxed: bool = False
    # Matches only when an operand names a place outside the allowed directories (the box's private /tmp aside).
    outside: bool = False
    # Lines the rule must match, and lines it must not (checked when a policy file is loaded for shell_exec, and
    # the default rules' by the test suite: ``shell.strings.rules.check_examples``), judged with the project at
    # /home/user/project and HOME /home/user.
    examples: tuple[str, ...] = ()
    not_examples: tuple[str, ...] = ()

    @field_validator("args_regex")
    @classmethod
    def _compiles(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        # (the packaged policy's own patterns are known to compile — a test compiles each —: not compiled again at
        # every server's start, issue 44; each is compiled where a rule is first matched)
        known = info.context.get(PACKAGED_PATTERNS, frozenset()) if isinstance(info.context, dict) else frozenset()
        for pattern in value:
            if pattern in known:
                continue
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
        return value

    @field_validator("detect")
    @classmethod
    def _known_finding(cls, value: str | None) -> str | None:
        if value is not None and value not in DETECTABLE:
            raise ValueError(f"unknown finding {value!r}; one of {', '.join(sorted(DETECTABLE))}")
        return value

    @model_validator(mode="after")
    def _programs_or_detect(self) -> Rule:
        if bool(self.programs) == bool(self.detect):
            raise ValueError("a rule names either programs or detect (exactly one of them)")
        if self.detect and self.action == "allow":
            raise ValueError("what cannot be decided statically is never allowed: detect rules deny or ask")
        return self


class ShellPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # (see _Section)

    mode: Literal["denylist", "allowlist"]
    default_timeout_seconds: float = Field(gt=0)
    max_timeout_seconds: float = Field(gt=0)
    default_output_bytes: int = Field(ge=1024)
    max_output_bytes: int = Field(ge=1024)
    undecidable: Literal["ask", "deny"]
    max_memory_bytes: int = Field(ge=16 << 20)
    max_file_size_bytes: int = Field(ge=1 << 20)
    # A command on a copy is stopped when the copy's disk has less free (see ``shell.in_box.DiskWatch``).
    min_free_disk_bytes: int = Field(default=1 << 30, ge=0)
    max_cpu_seconds: int = Field(ge=1)
    max_processes: int = Field(ge=8)
    max_jobs: int = Field(default=8, ge=0, le=256)
    job_timeout_seconds: float = Field(default=3600, gt=0)
    job_forget_seconds: float = Field(default=600, ge=0)
    kept_output_bytes: int = Field(default=64 << 20, ge=0)
    kept_output_seconds: float = Field(default=600, ge=0)
    # How long a question to the human (the approval form, a host) waits for an answer; then it is a refusal.
    question_timeout_seconds: float = Field(default=300, gt=0)
    rules: tuple[Rule, ...] = ()
    # A policy file's rules extend the default ones (a rule with a default rule's id replaces it) unless it
    # sets inherit_rules = false; disabled_rules drops default rules by id.
    inherit_rules: bool = True
    disabled_rules: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> ShellPolicy:
        if self.default_timeout_seconds > self.max_timeout_seconds:
            raise ValueError("default_timeout_seconds exceeds max_timeout_seconds")
        if self.default_output_bytes > self.max_output_bytes:
            raise ValueError("default_output_bytes exceeds max_output_bytes")
        seen: set[str] = set()
        for rule in self.rules:
            if rule.id in seen:
                raise ValueError(f"duplicate rule id {rule.id!r}")
            seen.add(rule.id)
        return self


# -- [network] entries: the grammar of allow/deny, and how a host and its addresses are judged --------------

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# Addresses a public name must never lead to (besides is_private & co.): cloud metadata endpoints.
_METADATA = (ipaddress.ip_network("169.254.169.254/32"), ipaddress.ip_network("fd00:ec2::254/128"))


def special_address(ip: IPAddress) -> bool:
    """Loopback, private, link-local, shared (CGNAT), multicast, reserved, unspecified or metadata."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    elif isinstance(ip, ipaddress.IPv6Address) and ip.sixtofour is not None and special_address(ip.sixtofour):
        return True  # 2002:7f00:1::/48, 2002:a9fe:a9fe::/48: an IPv4 special address inside 6to4
    return (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
        or any(ip in net for net in _METADATA)
    )


class NetworkRuleError(ValueError):
    """An entry of [network] allow/deny that cannot be read."""


@dataclass(frozen=True)
class HostRule:
    """One ``host[:port]`` entry: a host glob (lower case), or an address block; any port when ``port`` is None."""

    text: str
    glob: str | None
    block: IPNetwork | None
    port: int | None

    @classmethod
    def parse(cls, entry: str) -> HostRule:
        text = entry.strip()
        host, port = text, None
        if text.startswith("["):  # [v6]:port
            close = text.find("]")
            if close < 0:
                raise NetworkRuleError(f"{entry!r}: unclosed '['")
            host, rest = text[1:close], text[close + 1 :]
            if rest:
                port = _port(entry, rest.removeprefix(":"))
        elif text.count(":") == 1:
            host, port_text = text.split(":")
            port = _port(entry, port_text)
        if not host:
            raise NetworkRuleError(f"{entry!r}: no host")
        try:
            block = ipaddress.ip_network(host, strict=False)
        except ValueError:
            block = None
        if block is not None:
            return cls(text, None, block, port)
        host = host.lower().rstrip(".")
        if not all(c.isalnum() or c in "-.*_?" for c in host):
            raise NetworkRuleError(f"{entry!r}: a host is a name, a glob like *.example.org, an address or a block")
        return cls(text, host, None, port)

    def matches_host(self, host: str) -> bool:
        if self.glob is not None:
            return fnmatch.fnmatchcase(host, self.glob) or (
                self.glob.startswith("*.") and host == self.glob[2:]  # *.pypi.org covers pypi.org
            )
        try:
            return ipaddress.ip_address(host) in self.block  # type: ignore[operator]
        except ValueError:
            return False

    def matches(self, host: str, port: int) -> bool:
        return (self.port is None or self.port == port) and self.matches_host(host)

    def names_address(self, host: str, ip: IPAddress, port: int) -> bool:
        """Does this entry name this special address: its block holds it, or it is the exact host name?"""
        if self.port is not None and self.port != port:
            return False
        if self.block is not None:
            return ip in self.block
        return self.glob == host and not any(c in self.glob for c in "*?")


def _port(entry: str, text: str) -> int | None:
    if text == "*":
        return None
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise NetworkRuleError(f"{entry!r}: the port must be a number from 1 to 65535 or *")
    return int(text)


@dataclass(frozen=True)
class HostVerdict:
    action: str  # "allow", "deny" or "ask"
    rule: str | None  # the entry that decided, or a reason code (e.g. "private-address")
    reason: str
    # An "ask": the loopback/private/metadata addresses the name resolves to now (shown in the question); an
    # approval: those its human saw, and so the only such addresses it lets the connection reach.
    addresses: tuple[str, ...] = ()


@dataclass
class NetworkRules:
    allow: tuple[HostRule, ...]
    deny: tuple[HostRule, ...]

    @classmethod
    def parse(cls, allow: Iterable[str], deny: Iterable[str]) -> NetworkRules:
        return cls(tuple(HostRule.parse(e) for e in allow), tuple(HostRule.parse(e) for e in deny))

    def judge(self, host: str, port: int) -> HostVerdict:
        """The verdict on a name (or literal address) and port, before resolving it."""
        host = normal_host(host)
        for rule in self.deny:
            if rule.matches(host, port):
                return HostVerdict(
                    "deny", f"deny:{rule.text}", f"{host}:{port} is denied by [network].deny '{rule.text}'"
                )
        for rule in self.allow:
            if rule.matches(host, port):
                return HostVerdict("allow", f"allow:{rule.text}", f"{host}:{port} is allowed by '{rule.text}'")
        return HostVerdict("ask", None, f"no [network] rule names {host}:{port}")

    def judge_address(self, host: str, ip: IPAddress, port: int, *, approved: bool = False) -> HostVerdict | None:
        """A refusal when ``host`` resolved to ``ip`` and that address is off limits; None when it may be used.

        ``approved``: a human approved exactly this host and port, which names it as an exact entry would."""
        host = normal_host(host)
        for rule in self.deny:
            if rule.block is not None and (rule.port is None or rule.port == port) and ip in rule.block:
                return HostVerdict("deny", f"deny:{rule.text}", f"{host} resolves to {ip}, denied by '{rule.text}'")
        named = approved or any(rule.names_address(host, ip, port) for rule in self.allow)
        if special_address(ip) and not named:
            return HostVerdict(
                "deny",
                "private-address",
                f"{host} resolves to {ip}: loopback, private, link-local and metadata addresses are refused "
                "unless a [network].allow entry names them",
            )
        return None


def normal_host(host: str) -> str:
    return host.strip("[]").lower().rstrip(".")


class EffectsPolicy(_Section):
    """The [effects] section: how shell_exec judges what a command did to the copy before it reaches the files."""

    scratch: tuple[str, ...]  # build and cache directories (names or path globs, at any depth)
    max_files: int = Field(ge=0)  # deleting, replacing or emptying more files than this outside scratch asks
    ask_tree_deletion: bool  # deleting a directory that held files, outside scratch, asks
    ask_truncation: bool  # emptying a file asks
    ask_new_executables: bool  # a new executable file outside executable_places asks
    executable_places: tuple[str, ...]  # where new executables are expected (path globs)
    ask_uncommitted: bool  # deleting or emptying a file git reports as modified or untracked asks
    max_unbacked_files: int = Field(ge=0)  # with ask_uncommitted: deleting or emptying more files in no repository
    held_seconds: float = Field(gt=0)  # a held change set (2026-07-28 clients) is dropped after this long
    held_max: int = Field(ge=1)  # held change sets kept at most (the oldest is dropped first)
    held_max_bytes: int = Field(ge=0)  # bytes of held change sets kept at most


class NetworkPolicy(_Section):
    """The [network] section: where commands may connect through the egress proxy (``--network policy``).

    Entries are ``host[:port]``: a host name or glob (``*.pypi.org`` also covers ``pypi.org``), an IP address or
    a CIDR block; no port means any. Deny wins. A policy file's lists add to the packaged ones;
    ``inherit_allow = false`` starts the allow list from the file's own entries."""

    allow: tuple[str, ...]
    deny: tuple[str, ...] = ()
    inherit_allow: bool = True

    @field_validator("allow", "deny")
    @classmethod
    def _entries(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            try:
                HostRule.parse(entry)
            except NetworkRuleError as exc:
                raise ValueError(str(exc)) from None
        return value


class Policy(_Section):
    file_read: FileReadPolicy
    file_write: FileWritePolicy
    shell_exec: ShellPolicy
    paths: PathsPolicy
    network: NetworkPolicy
    effects: EffectsPolicy
    source: tuple[str, ...] = Field(default=(), exclude=True)  # files the policy was read from
    own_rules: tuple[str, ...] = Field(default=(), exclude=True)  # ids of the shell rules the policy file gives


def default_policy_path() -> Path:
    """The packaged default policy; found by an installed server without the repository. Where the package is
    files on disk, beside its ``__init__`` (what ``importlib.resources.files`` gives then, without importing it)."""
    import mcp_server_guard  # noqa: PLC0415 - (loaded: this module is in it)

    spec = mcp_server_guard.__spec__
    on_disk = (importlib.machinery.SourceFileLoader, importlib.machinery.SourcelessFileLoader)
    if spec is not None and spec.origin and isinstance(spec.loader, on_disk):
        return Path(spec.origin).parent / "policies" / "default.toml"
    from importlib import resources  # noqa: PLC0415 - a zip or another loader: importlib.resources reads it

    return Path(str(resources.files("mcp_server_guard") / "policies" / "default.toml"))


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        # The packaged policies from their parsed form when it is current (issue 44: ~13 ms of every start).
        return read_policy_toml(path, default_policy_path().parent)
    except OSError as exc:
        raise PolicyError(f"cannot read policy file {path}: {exc.strerror}") from None
    except ValueError as exc:  # (tomllib.TOMLDecodeError; or bytes that are not UTF-8)
        raise PolicyError(f"invalid TOML in policy file {path}: {exc}") from None


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _describe(exc: ValidationError, data: dict[str, Any]) -> str:
    """The first problem, worded for a person: an unknown key first of all (a misspelt key silently left at its
    default is the likeliest mistake), with the key it most likely meant."""
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    first = errors[0]
    loc = list(first["loc"])
    key = f"[{loc[0]}]" if loc else "(top level)"
    node: Any = data.get(str(loc[0])) if loc else None
    for part in loc[1:]:
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and part < len(node) else None
            rule_id = node.get("id") if isinstance(node, dict) else None
            key += f"[{part}]" + (f" (rule {rule_id!r})" if rule_id else "")
        else:
            key += f".{part}"
            node = node.get(part) if isinstance(node, dict) else None
    msg = first["msg"]
    if first["type"] == "extra_forbidden":
        known = _keys_at(loc[:-1])
        import difflib  # noqa: PLC0415 - only for a misspelt name (issue 44: not loaded at every start)

        near = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6) if loc else []
        msg = (
            f"unknown key; did you mean '{near[0]}'?"
            if near
            else "unknown key" + (f" (known: {', '.join(known)})" if known and len(known) <= 12 else "")
        )
    others = [".".join(map(str, e["loc"])) for e in errors[1:]]
    more = f" (and {len(others)} more: {', '.join(others[:3])}{', …' if len(others) > 3 else ''})" if others else ""
    return f"{key}: {msg}{more}"


def _keys_at(loc: list[int | str]) -> list[str]:
    """The keys the policy model takes at ``loc`` (a section, a rule, ...); [] where it cannot tell."""
    model: Any = Policy
    for part in loc:
        if isinstance(part, int):
            args = [a for a in typing.get_args(model) if a is not Ellipsis]
            model = args[0] if args else None
        elif isinstance(model, type) and issubclass(model, BaseModel) and part in model.model_fields:
            model = model.model_fields[part].annotation
        else:
            return []
    if isinstance(model, type) and issubclass(model, BaseModel):
        return [name for name, field in model.model_fields.items() if not field.exclude]
    return []


def resolve_policy_name(path: Path) -> Path:
    """A bare name such as ``readonly`` means the packaged ``policies/readonly.toml``, whatever lies in the working
    directory by that name; a file of one's own there is named with a ``/`` (``./readonly``) or by another name.

    Threat (red team 130 F1): a file ``readonly`` a model wrote in the project (the directory the servers start in)
    was the policy of every later ``--mode read-only`` or ``--policy readonly`` start: its rules, or none."""
    if "/" in str(path):
        return path
    packaged = default_policy_path().parent / (path.name if path.suffix == ".toml" else f"{path.name}.toml")
    return packaged if packaged.is_file() else path


def _combine_rules(data: dict[str, Any], default_rules: list[Any], section: Any, path: Path) -> None:
    """A policy file's rules extend the default rules: a deny or ask rule of the defaults still holds under a
    stricter file (an allow-list keeps them). Same id replaces; ``disabled_rules`` drops; ``inherit_rules =
    false`` starts from none."""
    if not isinstance(section, dict):
        return
    own = section.get("rules", [])
    if not isinstance(own, list) or section.get("inherit_rules", True) is False:
        return
    replaced = {rule.get("id"): rule for rule in own if isinstance(rule, dict)}
    default_ids = {rule.get("id") for rule in default_rules if isinstance(rule, dict)}
    combined = [rule for rule in own if not (isinstance(rule, dict) and rule.get("id") in default_ids)]
    combined += [replaced.get(rule.get("id"), rule) if isinstance(rule, dict) else rule for rule in default_rules]
    disabled = section.get("disabled_rules", [])
    if isinstance(disabled, list):
        unknown = [d for d in disabled if d not in default_ids and d not in replaced]
        if unknown:
            raise PolicyError(f"invalid policy file {path}: [shell_exec].disabled_rules: no rule {unknown[0]!r}")
        combined = [rule for rule in combined if not (isinstance(rule, dict) and rule.get("id") in disabled)]
    data["shell_exec"]["rules"] = combined


def _combine_network(data: dict[str, Any], default: dict[str, Any], section: Any) -> None:
    """A policy file's [network] lists add to the packaged ones (deny always; allow unless inherit_allow is
    false), so naming one more host never drops the registries, and naming a deny never drops a default deny."""
    if not isinstance(section, dict):
        return
    for key in ("allow", "deny"):
        own = section.get(key)
        inherited = default.get(key, [])
        if not isinstance(own, list) or not isinstance(inherited, list):
            continue
        if key == "allow" and section.get("inherit_allow", True) is False:
            continue
        data["network"][key] = list(dict.fromkeys([*inherited, *own]))


def _patterns(data: dict[str, Any]) -> frozenset[str]:
    """The ``args_regex`` patterns of a policy table's rules."""
    section = data.get("shell_exec")
    rules = section.get("rules") if isinstance(section, dict) else None
    return frozenset(
        pattern
        for rule in (rules if isinstance(rules, list) else [])
        if isinstance(rule, dict) and isinstance(rule.get("args_regex"), list)
        for pattern in rule["args_regex"]
        if isinstance(pattern, str)
    )


def load_policy(path: Path | None = None) -> Policy:
    """Load the default policy, with ``path`` (a file, or a packaged policy's name) merged over it."""
    if path is not None:
        path = resolve_policy_name(path)
    default = default_policy_path()
    data = _read_toml(default)
    packaged = _patterns(data)
    sources = [str(default)]
    override: dict[str, Any] = {}
    if path is not None:
        override = _read_toml(path)
        if isinstance(override.get("file_write"), dict) and "protected_paths" in override["file_write"]:
            raise PolicyError(
                f"invalid policy file {path}: [file_write].protected_paths is now [paths].protected "
                "(one list that every tool enforces); move the key there"
            )
        default_rules = data.get("shell_exec", {}).get("rules", [])
        default_network = dict(data.get("network", {}))
        data = _merge(data, override)
        _combine_network(data, default_network, override.get("network"))
        _combine_rules(data, default_rules, override.get("shell_exec", {}), path)
        sources.append(str(path))
    try:
        policy = Policy.model_validate(data, context={PACKAGED_PATTERNS: packaged})
    except ValidationError as exc:
        raise PolicyError(f"invalid policy file {sources[-1]}: {_describe(exc, data)}") from None
    section = override.get("shell_exec")
    own = section.get("rules") if isinstance(section, dict) else None
    own = own if isinstance(own, list) else []
    ids = tuple(r["id"] for r in own if isinstance(r, dict) and isinstance(r.get("id"), str))
    return policy.model_copy(update={"source": tuple(sources), "own_rules": ids})
