"""Approvals that stick, narrowly: what a human allowed for the rest of the session.

Three kinds, each given only through the approval form, never by the model:

* ``line``: this exact command line, in this directory, asked by this rule;
* ``prefix``: a program and its subcommand (``npm install``), asked by this rule — offered only when every
  command the line runs is that program and subcommand, written out in plain words (no substitution,
  expansion or here-document), and never for programs that can run anything (shells, interpreters, wrappers);
* ``host``: ``host:port`` through the egress proxy (``--network policy``).

Grants live in memory and end with the server, unless ``--approvals-file`` names a file (outside the allowed
directories; commands cannot write it) where they are kept and read back at the next start. Several servers may
share that file: each grant is merged into it under a lock (read what the others saved, add, replace the file
atomically), so no server's grant is lost to another's; a grant the file could not take (a full disk) holds
for this session only, and its label says so. A grant never
overrides a ``deny``: the policy refuses a line before grants are looked at, and the proxy's deny list is
judged before any question.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from mcp_server_guard.policy import HostVerdict
from mcp_server_guard.shell.process import Pause
from mcp_server_guard.shell.strings import INTERPRETERS, SHELLS, PolicyEngine, substitutes

__all__ = ["CallHosts", "Grant", "GrantKind", "HostAnswer", "HostAsk", "SessionApprovals", "session_prefix"]

log = logging.getLogger("mcp_server_guard.grants")

GrantKind = Literal["line", "prefix", "host"]
MAX_GRANTS = 1000
MAX_PENDING_LINES = 64
MAX_PENDING_HOSTS = 8
HOST_QUESTION_TIMEOUT_S = 300.0  # then the host is refused (the policy's question_timeout_seconds sets it)
MAX_QUESTIONS = 8  # host questions per command; further unnamed hosts are refused without one
_FILE_VERSION = 1

# Programs whose "subcommand" can be any program or any code: a prefix grant for them would allow anything.
RUNS_ANYTHING = SHELLS | INTERPRETERS | frozenset(
    {
        "env", "sudo", "doas", "run0", "pkexec", "su", "xargs", "parallel", "eval", "exec", "source", ".",
        "command", "builtin", "nohup", "setsid", "timeout", "nice", "ionice", "stdbuf", "time", "watch",
        "find", "busybox", "ssh", "strace", "ltrace", "gdb", "chroot", "unshare", "nsenter", "flock", "script",
        "expect", "tmux", "screen", "npx", "uvx", "pipx", "awk", "gawk", "mawk", "sed", "fakeroot", "docker",
        "podman", "kubectl", "systemd-run", "at", "batch", "crontab",
    }
)  # fmt: skip
_INTERPRETER_FAMILIES = ("python", "pypy", "perl", "ruby", "php", "node", "lua", "tcl", "wish", "java", "Rscript")
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9_-]*")


def _runs_anything(program: str) -> bool:
    return program in RUNS_ANYTHING or program.startswith(_INTERPRETER_FAMILIES)


def session_prefix(engine: PolicyEngine, command: str, args: Sequence[str], env: dict[str, str] | None) -> str | None:
    """The ``program subcommand`` a session grant may name for this line, or None when none is safe.

    Threat: a prefix is a standing yes for lines nobody has seen yet. So: the words must be the words that
    run (no ``$(…)``, ``$x``, ``<(…)``, here-documents), the program a bare name PATH finds (not ``./npm``),
    not one that runs arbitrary programs or code, and every command of a compound line must be it:
    ``npm install && rm x`` has no prefix ``npm install`` covers."""
    if not args and substitutes(command):
        return None
    commands = engine.plain_commands(command, args, env)
    if not commands:
        return None
    first = commands[0]
    if len(first) < 2 or "/" in first[0] or _runs_anything(first[0]) or not _SUBCOMMAND.fullmatch(first[1]):
        return None
    if any(argv[:2] != first[:2] for argv in commands):
        return None
    return f"{first[0]} {first[1]}"


@dataclass(frozen=True)
class Grant:
    kind: GrantKind
    value: str  # the line / "program subcommand" / "host:port"
    rule: str  # the rule whose "ask" it answers ("" for hosts)
    cwd: str  # for a line: the directory it runs in; "" otherwise
    approved_by: str
    at: str  # ISO 8601, UTC
    addresses: str = ""  # a host's: the special addresses its human was shown (comma-separated)
    unsaved: str = ""  # why the approvals file could not keep it ("": kept, or no file); never saved itself

    @property
    def shown_addresses(self) -> tuple[str, ...]:
        return tuple(a for a in self.addresses.split(",") if a)

    @property
    def label(self) -> str:
        """How a result names it: session-line, session-prefix:npm install, session-host:h:443; with
        ``(this session only: …)`` when the approvals file could not keep it."""
        name = {"line": "session-line", "prefix": f"session-prefix:{self.value}", "host": f"session-host:{self.value}"}
        return name[self.kind] + (f" (this session only: {self.unsaved})" if self.unsaved else "")

    def saved(self) -> dict[str, str]:
        """What the approvals file keeps of it."""
        fields = asdict(self)
        del fields["unsaved"]
        return fields


class SessionApprovals:
    """The grants of this server's session (and of earlier ones, with ``--approvals-file``)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._grants: dict[tuple[GrantKind, str, str, str], Grant] = {}
        # Each grant's generation: how many grants were given (or taken from the file) before it, this session;
        # those read at start are 0. A call's question is answered against the grants older than it (``given_by``).
        self.generation = 0
        self._born: dict[tuple[GrantKind, str, str, str], int] = {}
        self._lock = threading.Lock()
        # (line, cwd) -> hosts its last run could not ask about; memory only, bounded
        self._pending: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {}
        if path is not None and path.exists():
            self._load(path)

    def _load(self, path: Path) -> None:
        """Raises ValueError when the file is not an approvals file (the server then refuses to start)."""
        self._grants.update(_read_file(path))

    def pending_hosts(self, shown: str, cwd: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Hosts the last run of this line tried to reach while nobody could be asked (asked before the next),
        each with the special addresses it resolved to then."""
        return tuple(self._pending.get((shown, cwd), {}).items())

    def add_pending(self, shown: str, cwd: str, hosts: Mapping[str, tuple[str, ...]]) -> None:
        key = (shown, cwd)
        merged = {**self._pending.pop(key, {}), **hosts}
        self._pending[key] = dict(list(merged.items())[:MAX_PENDING_HOSTS])
        while len(self._pending) > MAX_PENDING_LINES:
            del self._pending[next(iter(self._pending))]

    def forget_pending(self, shown: str, cwd: str) -> None:
        self._pending.pop((shown, cwd), None)

    def __len__(self) -> int:
        return len(self._grants)

    def grants(self) -> list[Grant]:
        return list(self._grants.values())

    def for_line(self, shown: str, cwd: str, rule: str | None, prefix: str | None) -> Grant | None:
        """The grant that covers a line the policy asks about: the exact line, or its prefix, for the same rule."""
        if rule is None:
            return None
        return self._grants.get(("line", shown, rule, cwd)) or (
            self._grants.get(("prefix", prefix, rule, "")) if prefix is not None else None
        )

    def given_by(self, grant: Grant, generation: int) -> bool:
        """Whether ``grant`` was there at ``generation`` (a call's check: see ``Asked.generation``)."""
        return self._born.get((grant.kind, grant.value, grant.rule, grant.cwd), 0) <= generation

    def for_host(self, host: str, port: int) -> Grant | None:
        return self._grants.get(("host", f"{host}:{port}", "", ""))

    def grant(
        self,
        kind: GrantKind,
        value: str,
        *,
        rule: str = "",
        cwd: str = "",
        approved_by: str,
        addresses: Sequence[str] = (),
    ) -> Grant:
        """Remember a human's approval for the session (and in the approvals file, when there is one)."""
        at = datetime.now(UTC).isoformat(timespec="seconds")
        grant = Grant(kind, value, rule, cwd if kind == "line" else "", approved_by, at, ",".join(addresses))
        key = (grant.kind, grant.value, grant.rule, grant.cwd)
        with self._lock:
            self.generation += 1
            self._grants[key] = grant
            self._born[key] = self.generation
            _trim(self._grants)
            if self.path is not None:
                why = self._merge_into_file(self.path, key, grant)
                if why:
                    log.warning("approvals file %s: %s; the grant holds for this session only", self.path, why)
                    grant = replace(grant, unsaved=why)
                    self._grants[key] = grant
        return grant

    def _merge_into_file(self, path: Path, key: tuple[GrantKind, str, str, str], grant: Grant) -> str:
        """Add ``grant`` to the file under its lock: what other servers sharing it saved is read first and kept
        (and taken into this session); the file is replaced atomically (a crash leaves the old file or the new
        one). Returns why it could not be kept ("" when it was); no temp file is ever left beside the file."""
        try:
            lock = os.open(path.with_name(f".{path.name}.lock"), _LOCK_FLAGS, 0o600)
        except OSError as exc:
            return f"its lock cannot be opened ({exc.strerror or exc})"
        try:
            if not _flock_within(lock, APPROVALS_LOCK_WAIT_S):
                return f"another server held its lock for over {APPROVALS_LOCK_WAIT_S:g} s"
            try:
                theirs = _read_file(path) if path.exists() else {}
            except ValueError as exc:
                return f"it cannot be read as an approvals file any more ({exc}); it was left as it is"
            for other_key, other in theirs.items():
                if other_key not in self._grants:
                    self._grants[other_key] = other
                    self._born[other_key] = self.generation
            merged = {**theirs, key: grant}
            _trim(merged)
            body = json.dumps({"version": _FILE_VERSION, "grants": [g.saved() for g in merged.values()]}, indent=1)
            return _replace_file(path, (body + "\n").encode("utf-8"))
        finally:
            os.close(lock)


APPROVALS_LOCK_WAIT_S = 5.0  # another server's merge takes milliseconds; past this the grant is this session's
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_BYTES = 16 << 20  # an approvals file of MAX_GRANTS grants is well under this


def _trim(grants: dict[tuple[GrantKind, str, str, str], Grant]) -> None:
    while len(grants) > MAX_GRANTS:
        del grants[next(iter(grants))]


def _read_file(path: Path) -> dict[tuple[GrantKind, str, str, str], Grant]:
    """The grants an approvals file keeps; ValueError when it is not one."""
    found: dict[tuple[GrantKind, str, str, str], Grant] = {}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise ValueError("not a regular file")
            data = json.loads(fh.read(_FILE_BYTES + 1).decode("utf-8"))
        if data.get("version") != _FILE_VERSION:
            raise ValueError(f"unknown version {data.get('version')!r}")
        for entry in data["grants"][-MAX_GRANTS:]:
            fields = {k: str(entry[k]) for k in ("kind", "value", "rule", "cwd", "approved_by", "at")}
            grant = Grant(**fields, addresses=str(entry.get("addresses", "")))  # type: ignore[arg-type]
            if grant.kind not in ("line", "prefix", "host"):
                raise ValueError(f"unknown kind {grant.kind!r}")
            found[(grant.kind, grant.value, grant.rule, grant.cwd)] = grant
    except (OSError, KeyError, TypeError, AttributeError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not an approvals file: {exc}") from None
    return found


def _flock_within(fd: int, seconds: float) -> bool:
    """An exclusive flock on ``fd``, waiting at most ``seconds`` (a hung holder never hangs a call)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)


def _replace_file(path: Path, body: bytes) -> str:
    """Write ``body`` to a fresh temp file beside ``path``, sync it and rename it over ``path``; why not ("" when
    done). On any failure the temp file is removed: a full disk leaves the old file and nothing else."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        return f"it cannot be written ({exc.strerror or exc})"
    try:
        try:
            view = memoryview(body)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return f"it cannot be written ({exc.strerror or exc})"
    return ""


HostAnswer = Literal["command", "session", "deny"]
# (host, port, why no rule names it) -> the human's answer, or None when there was none
HostAsk = Callable[[str, int, str], Awaitable[HostAnswer | None]]


class CallHosts:
    """The hosts of one running command under ``--network policy``: what the human allowed for it, and how to
    ask about a host no rule names while it runs (2025-era clients), or remember it to ask before the next run
    of the same line (2026-07-28 clients, which cannot be asked mid-call).

    One question per host and call, however many connections wait for it; the time a question waits is added
    to the command's timeout (``pause``); questions still open when the command ends are withdrawn."""

    def __init__(
        self,
        grants: SessionApprovals,
        *,
        shown: str,
        cwd: str,
        approved: Mapping[str, tuple[str, ...]] | None = None,
        ask: HostAsk | None = None,
        ask_later: bool = False,
        question_timeout: float = HOST_QUESTION_TIMEOUT_S,
    ) -> None:
        self.grants = grants
        self.question_timeout = question_timeout
        self.shown, self.cwd = shown, cwd
        self.approved = dict(approved or {})  # host:port -> the special addresses its human was shown
        self.refused: set[str] = set()
        self.unasked: dict[str, tuple[str, ...]] = {}
        self.answers: list[str] = []  # for the audit: "host:port: answer"
        self.ask = ask
        self.ask_later = ask_later
        self.pause = Pause()
        self._questions: dict[str, asyncio.Task[HostAnswer | None]] = {}

    async def decide(self, host: str, port: int, verdict: HostVerdict) -> HostVerdict:
        """The verdict on a host no rule names (``verdict`` is the rules' "ask")."""
        key = f"{host}:{port}"
        # ``verdict.addresses``: the special addresses an approved name turned out to resolve to (the proxy asks
        # again about those, with a warning); an approval covers the addresses its human was shown, no others.
        wanted = set(verdict.addresses)
        if key in self.approved and wanted <= set(self.approved[key]):
            shown = self.approved[key]
            return HostVerdict("allow", "approved-command", f"{key} approved by the user for this command", shown)
        granted = self.grants.for_host(host, port)
        if granted is not None and wanted <= set(granted.shown_addresses):
            return HostVerdict(
                "allow", "approved-session", f"{key} approved by the user for this session", granted.shown_addresses
            )
        if key in self.refused:
            return HostVerdict("deny", "not-approved", f"the user did not allow {key}")
        question = f"{key} {','.join(sorted(wanted))}"
        if self.ask is None or (question not in self._questions and len(self._questions) >= MAX_QUESTIONS):
            if self.ask is not None:
                return HostVerdict("deny", "unnamed-host", f"{verdict.reason}; {MAX_QUESTIONS} questions already asked")
            if self.ask_later and (key not in self.unasked or not wanted <= set(self.unasked[key])):
                self.unasked[key] = tuple(sorted(wanted | set(self.unasked.get(key, ()))))
            later = (
                "; run the same command again and the user will be asked first"
                if self.ask_later
                else "; this client cannot ask the user"
            )
            return HostVerdict("deny", "unnamed-host", verdict.reason + later)
        task = self._questions.get(question)
        if task is None:
            task = self._questions[question] = asyncio.ensure_future(self._ask(host, port, verdict))
        answer = await asyncio.shield(task)
        if answer in ("command", "session"):
            return HostVerdict(
                "allow", f"approved-{answer}", f"{key} approved by the user for this {answer}", verdict.addresses
            )
        return HostVerdict("deny", "not-approved", f"the user did not allow {key}")

    async def _ask(self, host: str, port: int, verdict: HostVerdict) -> HostAnswer | None:
        assert self.ask is not None
        key = f"{host}:{port}"
        self.pause.begin()
        try:
            # A client that never answers must not hold the command forever (its timeout is paused meanwhile).
            async with asyncio.timeout(self.question_timeout):
                answer = await self.ask(host, port, verdict.reason)
        except TimeoutError:
            answer = None
        except Exception:  # the client went away or answered nonsense: a refusal, never a crash
            log.exception("the question about %s failed")
            answer = None
        finally:
            self.pause.end()
        self.answers.append(f"{key}: {answer or 'no answer'}")
        if answer == "command":
            self.approved[key] = tuple(sorted({*self.approved.get(key, ()), *verdict.addresses}))
        elif answer == "session":
            earlier = self.grants.for_host(host, port)
            shown = sorted({*(earlier.shown_addresses if earlier else ()), *verdict.addresses})
            self.grants.grant("host", key, approved_by="human:elicitation", addresses=shown)
        else:
            self.refused.add(key)
        return answer

    async def close(self) -> None:
        """The command ended: withdraw open questions; keep unasked hosts to ask before the next run."""
        for task in self._questions.values():
            task.cancel()
        if self._questions:
            await asyncio.gather(*self._questions.values(), return_exceptions=True)
        if self.unasked:
            self.grants.add_pending(self.shown, self.cwd, self.unasked)
