"""The box's wire format: one call's confinement as the server builds it (``layers.call_options``) and the
supervisor reads it, and the request that carries it to a ready init.

Typed, and read with ``[]`` after ``checked``: a key misspelt on either side is an error that refuses the call,
never a silently absent read-only mount, mask or Landlock rule (``.get(key, default)`` would have dropped it).
Standard library only: the supervisor imports this with no site-packages.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast


class LandlockRules(TypedDict):
    """A call's Landlock ruleset (see ``landlock.Rules``)."""

    abi: int
    read_all: bool
    writable: list[str]
    deny_tcp: bool
    readable: list[str]  # with read_all false: the system directories a command may read besides its roots


class Overlay(TypedDict):
    """A writable root the command sees as a copy, and the area its upper layer lies in (``changes.area``)."""

    root: str
    area: str


class CallOptions(TypedDict):
    """One call's confinement inside the box."""

    namespaces: bool  # the call's own PID and mount namespaces (fresh /proc, private /tmp and /dev/shm)
    private_tmp: bool
    tmp_binds: list[str]  # roots (and copy areas) under /tmp, bound back over the private /tmp
    tmp_bytes: int  # what the private /tmp and /dev/shm (memory) may hold each (0: the kernel's default)
    read_only: list[str]  # protected paths inside the roots, bound read-only
    masked: list[str]  # hidden paths, /dev/null or an empty directory over each
    roots: list[str]  # the call's writable roots
    sockets: list[str]  # UNIX sockets outside the roots, masked
    rlimits: list[list[int]]  # [resource, soft, hard]
    overlays: list[Overlay]
    landlock: LandlockRules | None  # None: no Landlock on this kernel
    proxy: str  # the call's egress token ("" without --network policy)


class CallRequest(CallOptions):
    """What an init receives: the options and the command."""

    id: int
    fds: int
    argv: list[str]
    cwd: str
    env: dict[str, str]
    gone: bool  # say when every process of the call has ended (a call on a copy)
    recycle: bool  # the init may take an untouched copy back for its next call (nothing reads it while it runs)
    linked: list[str]  # on a copy: directories holding files with several names, whose deletions are noted (unlinks)


class WireError(ValueError):
    """A message that is not of its shape: a key missing, unknown, or of another type."""


# What of a call's request its view and confinement are made from: every option but the egress token.
VIEW_KEYS = ("namespaces", "private_tmp", "tmp_binds", "tmp_bytes", "read_only", "masked", "roots", "sockets",
             "rlimits", "overlays", "landlock")  # fmt: skip
_TYPES: dict[str, type | tuple[type, ...]] = {
    "namespaces": bool,
    "private_tmp": bool,
    "tmp_binds": list,
    "tmp_bytes": int,
    "read_only": list,
    "masked": list,
    "roots": list,
    "sockets": list,
    "rlimits": list,
    "overlays": list,
    "landlock": (dict, type(None)),
    "proxy": str,
    "id": int,
    "fds": int,
    "argv": list,
    "cwd": str,
    "env": dict,
    "gone": bool,
    "recycle": bool,
    "linked": list,
    "abi": int,
    "read_all": bool,
    "writable": list,
    "deny_tcp": bool,
    "readable": list,
    "root": str,
    "area": str,
}


def _exact(raw: Any, shape: Any, what: str, extra: frozenset[str] = frozenset()) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise WireError(f"{what}: not an object")
    wanted: frozenset[str] = shape.__required_keys__
    keys = raw.keys()
    if not (wanted <= keys and keys - wanted <= extra):
        missing, unknown = sorted(wanted - keys), sorted(keys - wanted - extra)
        raise WireError(f"{what}: missing {missing}, unknown {unknown}")
    for key in wanted:
        value, kind = raw[key], _TYPES[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise WireError(f"{what}: {key} is a {type(value).__name__}")
    return raw


def _strings(message: dict[str, Any], keys: tuple[str, ...], what: str) -> None:
    for key in keys:
        if not all(isinstance(item, str) for item in message[key]):
            raise WireError(f"{what}: {key} holds a non-string")


def checked_options(raw: Any, extra: frozenset[str] = frozenset()) -> CallOptions:
    """``raw`` as call options, exactly (``extra``: keys of an enclosing message that may be there besides)."""
    options = _exact(raw, CallOptions, "call options", extra)
    _strings(options, ("tmp_binds", "read_only", "masked", "roots", "sockets"), "call options")
    for limit in options["rlimits"]:
        if not (isinstance(limit, list) and len(limit) == 3 and all(type(n) is int for n in limit)):
            raise WireError("call options: an rlimit is not [resource, soft, hard]")
    for overlay in options["overlays"]:
        _exact(overlay, Overlay, "overlay")
    if options["landlock"] is not None:
        _strings(_exact(options["landlock"], LandlockRules, "landlock"), ("writable", "readable"), "landlock")
    return cast(CallOptions, options)


# What a request holds besides the options; ``op``: the supervisor's spawn request names itself.
_REQUEST_ONLY = frozenset(CallRequest.__required_keys__ - CallOptions.__required_keys__) | {"op"}


def checked_request(raw: Any) -> CallRequest:
    """``raw`` as a call request, exactly (``op`` may be there: the supervisor's spawn request)."""
    request = _exact(raw, CallRequest, "call request", frozenset({"op"}))
    checked_options(request, _REQUEST_ONLY)
    _strings(request, ("argv", "linked"), "call request")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in request["env"].items()):
        raise WireError("call request: env holds a non-string")
    return cast(CallRequest, request)


__all__ = [
    "CallOptions",
    "CallRequest",
    "LandlockRules",
    "Overlay",
    "WireError",
    "checked_options",
    "checked_request",
]
