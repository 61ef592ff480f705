"""Policy files: TOML, merged over the packaged default, validated with pydantic.

The packaged ``policies/default.toml`` is the single source of default values; a user policy
passed with ``--policy`` only names the keys it changes. An invalid file names the bad key.
"""

from __future__ import annotations

import fnmatch
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mcp_server_guard.shell.rules import ShellPolicy


class PolicyError(Exception):
    """The policy file cannot be used; the message names the file and the key."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
    protected_paths: tuple[str, ...]
    history_max_bytes: int = Field(ge=0)
    history_max_entries: int = Field(ge=1)

    @field_validator("denied_extensions")
    @classmethod
    def _dotted_lowercase(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(("." + ext.lstrip(".")).lower() for ext in value)

    @field_validator("protected_paths")
    @classmethod
    def _compilable(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            if not pattern.strip("/"):
                raise ValueError(f"empty pattern {pattern!r}")
        return value


class Policy(_Section):
    file_read: FileReadPolicy
    file_write: FileWritePolicy
    shell_exec: ShellPolicy
    source: tuple[str, ...] = Field(default=(), exclude=True)  # files the policy was read from


def default_policy_path() -> Path:
    """The packaged default policy; found by an installed server without the repository."""
    return Path(str(resources.files("mcp_server_guard") / "policies" / "default.toml"))


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise PolicyError(f"cannot read policy file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
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
    first = exc.errors()[0]
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
    msg = "unknown key" if first["type"] == "extra_forbidden" else first["msg"]
    more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"{key}: {msg}{more}"


def resolve_policy_name(path: Path) -> Path:
    """A bare name such as ``readonly`` means the packaged ``policies/readonly.toml``."""
    if path.exists() or "/" in str(path):
        return path
    packaged = default_policy_path().parent / (path.name if path.suffix == ".toml" else f"{path.name}.toml")
    return packaged if packaged.is_file() else path


def load_policy(path: Path | None = None) -> Policy:
    """Load the default policy, with ``path`` (a file, or a packaged policy's name) merged over it."""
    if path is not None:
        path = resolve_policy_name(path)
    default = default_policy_path()
    data = _read_toml(default)
    sources = [str(default)]
    if path is not None:
        data = _merge(data, _read_toml(path))
        sources.append(str(path))
    try:
        policy = Policy.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(f"invalid policy file {sources[-1]}: {_describe(exc, data)}") from None
    return policy.model_copy(update={"source": tuple(sources)})
