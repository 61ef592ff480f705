"""The box supervisor: one long-lived process per server, inside the box, that starts every command.

The server talks to it over a UNIX stream socket: length-prefixed JSON frames, the call's stdio and status
pipes attached with SCM_RIGHTS. Each call runs under its own *init* process:

* with namespaces, the init is PID 1 of a fresh PID namespace and has its own mount namespace: a fresh
  /proc that shows only the call's own processes, a private /tmp and /dev/shm, the protected paths
  re-mounted read-only, the hidden paths and the UNIX sockets outside the call's roots masked; with
  --network policy, its own network namespace too, whose one way out (a listener on 127.0.0.1) it hands to
  the server's egress proxy;
* it sets the resource limits, enforces Landlock, becomes non-dumpable, drops every capability, loads the
  seccomp filter, and only then starts the command (posix_spawn: a new session, stdio on the pipes);
* it forwards SIGTERM/SIGINT/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2 to the command's process group, reaps orphans
  (as PID 1, or as their subreaper), and when the command exits writes its wait status to the status pipe
  and exits itself, taking every process the call left behind with it (its PID namespace dies with it;
  without one it kills its group and every orphan first).

Inits are forked ahead of time: each builds the usual call's mount view, Landlock ruleset and most of the
seccomp filter, then waits for its call. The supervisor offers every ready init to the server (its socket,
with SCM_RIGHTS), and the server hands a call straight to one ("took" tells the supervisor which); so a call
pays no fork and no hop through the supervisor on its way in. When none is ready, the server asks the
supervisor to "spawn" the call. A chain of parent-death signals (supervisor → keeper → init) ends every call
when the supervisor goes, however the server ends; an init whose server closed its socket leaves.

The status pipe carries one JSON line: ``{"exit": <wait status>}``, or ``{"error": errno, "where": "...",
"message": "..."}`` when the command could not start. A call whose init was killed (timeout, server exit)
closes the pipe without a line.

Standard library only, run with ``python -I -S``: the supervisor starts in tens of milliseconds.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import errno
import gc
import json
import os
import resource
import secrets
import selectors
import signal
import socket
import stat
import struct
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp_server_guard import linux
from mcp_server_guard.shell.sandbox import landlock, renames, seccomp, wire
from mcp_server_guard.shell.sandbox.wire import CallOptions, CallRequest, LandlockRules, Overlay

_MAX_FRAME = 8 << 20
_MAX_FDS = 4
_POOL_IDLE = 2  # ready inits offered to the server while no call runs
_POOL_BUSY = 1  # ... and while calls run (a fork then competes with the running command for the CPU)
_QUIET_S = 0.010  # a pool that is not empty is topped up once the box has been quiet this long
_SETTLE_S = 60.0  # a rename the handler was moving when its caller died may take this long to finish
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
_DEFAULT_IN_CHILD = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGXCPU, *_FORWARDED)


# -- framing (shared with the server side) ------------------------------------------------------


def rights(fds: list[int]) -> list[tuple[int, int, array.array[int]]]:
    """The ancillary data that passes ``fds`` over a UNIX socket (SCM_RIGHTS)."""
    return [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []


def received_fds(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    """The fds that came with a ``recvmsg`` (SCM_RIGHTS)."""
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return list(fds)


def send_frame(sock: socket.socket, message: Mapping[str, Any], fds: list[int] | None = None) -> None:
    body = json.dumps(message, separators=(",", ":")).encode("utf-8", "surrogateescape")
    if len(body) > _MAX_FRAME:
        # The reader would refuse it and stop reading the channel: never send one (the call fails, the box stays).
        raise OSError(errno.E2BIG, f"a request of {len(body)} bytes is over the box's limit of {_MAX_FRAME}")
    data = struct.pack(">I", len(body)) + body
    sent = sock.sendmsg([data], rights(fds or []))
    if sent < len(data):
        sock.sendall(data[sent:])


class FrameReader:
    """Reassembles frames from a stream socket, keeping the fds that came with each."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""
        self.fds: list[int] = []

    def read(self, flags: int = 0) -> bool:
        """Read what is available; False at EOF (``flags``: e.g. MSG_DONTWAIT, which raises BlockingIOError)."""
        data, ancillary, _flags, _addr = self.sock.recvmsg(
            1 << 16, socket.CMSG_SPACE(_MAX_FDS * array.array("i").itemsize), socket.MSG_CMSG_CLOEXEC | flags
        )
        self.fds.extend(received_fds(ancillary))
        self.buffer += data
        return bool(data)

    def frames(self) -> list[tuple[dict[str, Any], list[int]]]:
        out: list[tuple[dict[str, Any], list[int]]] = []
        while len(self.buffer) >= 4:
            (size,) = struct.unpack(">I", self.buffer[:4])
            if size > _MAX_FRAME:
                raise ValueError(f"frame of {size} bytes")
            if len(self.buffer) < 4 + size:
                break
            body, self.buffer = self.buffer[4 : 4 + size], self.buffer[4 + size :]
            message = json.loads(body.decode("utf-8", "surrogateescape"))
            count = int(message.get("fds", 0)) if isinstance(message, dict) else 0
            fds, self.fds = self.fds[:count], self.fds[count:]
            out.append((message if isinstance(message, dict) else {}, fds))
        return out


# -- what every init needs, computed once before forking (file reads cost a forked child dearly) --------


@dataclass(frozen=True)
class _Prepared:
    bounding: tuple[int, ...]  # the capabilities left in the bounding set (bubblewrap already dropped the rest)
    has_caps: bool
    # the filter's early and late parts as ready ``sock_fprog``s (see seccomp), and the late part that also sends
    # the rename calls to the init's handler
    seccomp: tuple[Any, Any, Any] | None
    usual: CallOptions | None  # the usual call's options, set up by each ready init before its call comes


def _read_all(fd_text: str | None) -> bytes | None:
    """Everything in the pipe named by ``fd_text`` (None when not given)."""
    if not fd_text:
        return None
    fd = int(fd_text)
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _fprog(program: bytes) -> Any:
    buffer = ctypes.create_string_buffer(program, len(program))
    return seccomp.SockFprog(len(program) // 8, ctypes.addressof(buffer)), buffer  # the buffer kept alive


def _prepare(seccomp_fd: str | None, late_fd: str | None, notify_fd: str | None, usual_fd: str | None) -> _Prepared:
    early, late, notify = _read_all(seccomp_fd), _read_all(late_fd), _read_all(notify_fd)
    fprog = (_fprog(early), _fprog(late), _fprog(notify or late)) if early and late else None
    said = _read_all(usual_fd)
    usual = wire.checked_options(json.loads(said)) if said else None
    bounding = linux.capability_mask("CapBnd")
    caps = tuple(cap for cap in range(linux.last_cap() + 1) if bounding >> cap & 1)
    return _Prepared(caps, bool(linux.capability_mask()), fprog, usual)


# -- the per-call init --------------------------------------------------------------------------


def _die_with_parent() -> None:
    """SIGKILL when the parent goes; if it is already gone (reparented), go now."""
    parent = os.getppid()
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _report(fd: int, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, json.dumps(message).encode() + b"\n")


def proxy_env(port: int, token: str) -> dict[str, str]:
    """What a command needs to find the egress proxy (upper and lower case: tools read one or the other)."""
    url = f"http://{token}:x@127.0.0.1:{port}"
    env = {"HTTP_PROXY": url, "HTTPS_PROXY": url, "ALL_PROXY": url, "NO_PROXY": "", "no_proxy": ""}
    env.update({k.lower(): v for k, v in env.items() if k.isupper()})
    return env


def _hand_over_listener(status: int, listener: socket.socket, spec: CallRequest) -> None:
    """--network policy: this call's own network namespace has one way out, ``listener`` (127.0.0.1 in it). It goes
    to the server on the call's status socket, so the egress proxy knows every connection accepted on it as this
    call's by where it arrives, not by a secret the command could copy; the command learns its address (with the
    call's token, a second check) from the proxy variables."""
    port = int(listener.getsockname()[1])
    token = spec["proxy"]
    spec["env"] = {**spec["env"], **proxy_env(port, token)} if token else spec["env"]
    with socket.socket(fileno=os.dup(status)) as channel:
        channel.sendmsg([json.dumps({"net": port}).encode() + b"\n"], rights([listener.fileno()]))
    listener.close()  # the command never holds it (it could accept the connections meant for the proxy)


def _base_mounts(options: CallOptions) -> None:
    """The call's own view, built by a ready init before its call: fresh /proc, private /tmp (jail roots under it
    bound back) and /dev/shm."""
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    linux.mount("proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
    if options["private_tmp"]:
        keep = [(p, os.open(p, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)) for p in options["tmp_binds"]]
        linux.mount("tmpfs", "/tmp", "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=1777")  # noqa: S108
        for path, fd in keep:
            os.makedirs(path, exist_ok=True)
            linux.mount(f"/proc/self/fd/{fd}", path, None, linux.MS_BIND | linux.MS_REC)
            os.close(fd)
        with contextlib.suppress(OSError):
            linux.mount("tmpfs", "/dev/shm", "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=1777")  # noqa: S108


def _narrow_tmp_binds(prepared: list[str], wanted: list[str]) -> None:
    """The client narrowed its roots: a prepared root under /tmp that the call may not write becomes read-only,
    with the narrowed roots inside it bound back writable. (Landlock lets the call write its whole /tmp, so the
    mounts are what keep it out of the narrowed-out part.)"""
    for root in prepared:
        if root in wanted:
            continue
        inside = [w for w in wanted if w.startswith(root.rstrip("/") + "/")]
        keep = [(w, os.open(w, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)) for w in inside]
        linux.bind_read_only(root)
        for path, fd in keep:
            linux.mount(f"/proc/self/fd/{fd}", path, None, linux.MS_BIND | linux.MS_REC)
            os.close(fd)


def _mask_sockets(paths: list[str]) -> None:
    """The UNIX sockets outside the call's reach (see ``sockets``): a read-only /dev/null over each, so that
    neither connect nor a datagram can name them."""
    for path in paths:
        with contextlib.suppress(OSError):  # gone since the server looked, or not visible in the box
            linux.mask(path)


def _pin_ancestors(masked: list[str], roots: list[str]) -> None:
    """Threat: ``mv ~/.config ~/c2`` takes a hidden ``~/.config/gh`` out from under its mask (a mount follows its
    directory), and ``~/c2/gh`` is readable. Each directory between a root and a hidden path is bound onto itself
    first: a mount point cannot be renamed or removed (EBUSY), so the hidden path stays where its mask is."""
    pinned: set[str] = set()
    for path in masked:
        root = next((r for r in roots if path.startswith(r.rstrip("/") + "/")), None)
        if root is None:
            continue
        ancestors: list[str] = []
        parent = os.path.dirname(path)
        while parent.startswith(root.rstrip("/") + "/"):
            ancestors.append(parent)
            parent = os.path.dirname(parent)
        for directory in reversed(ancestors):  # outermost first
            if directory in pinned or not os.path.isdir(directory) or os.path.islink(directory):
                continue
            with contextlib.suppress(OSError):
                linux.mount(directory, directory, None, linux.MS_BIND | linux.MS_REC)
                pinned.add(directory)


def _call_mounts(spec: CallRequest, usual: CallOptions) -> None:
    """What only this call needs on top of the prepared view: narrowed roots, protected paths read-only, hidden
    paths and outside sockets masked. The sockets are masked now, every one: a mask made ahead of the call would
    be gone if its daemon had bound the socket anew since."""
    _mask_sockets(spec["sockets"])
    if spec["tmp_binds"] != usual["tmp_binds"]:
        _narrow_tmp_binds(usual["tmp_binds"], spec["tmp_binds"])
    _pin_ancestors(spec["masked"], spec["roots"])
    for path in spec["read_only"]:
        try:
            linux.bind_read_only(path)
        except FileNotFoundError:
            continue  # gone since the server looked: nothing left to protect there
    for path in spec["masked"]:
        try:
            linux.mask(path)
        except FileNotFoundError:
            continue


def _resolve(program: str, env: dict[str, str]) -> str:
    if "/" in program:
        return program
    for directory in env.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or ".", program)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    raise FileNotFoundError(2, f"{program}: command not found")


def _children() -> list[int]:
    pids: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir("/proc/self/task"):
            fd = os.open(f"/proc/self/task/{tid}/children", os.O_RDONLY)
            try:
                pids.extend(int(p) for p in os.read(fd, 1 << 16).split())
            finally:
                os.close(fd)
    return pids


def _kill_leftovers(group: int) -> None:
    """Without a PID namespace: the call's group and every orphan reparented to us die with the call."""
    with contextlib.suppress(OSError):
        os.killpg(group, signal.SIGKILL)
    deadline = time.monotonic() + 2.0
    while (pids := _children()) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        time.sleep(0.001)


def _load_seccomp(fprog: Any) -> None:
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    linux.prctl(seccomp.PR_SET_SECCOMP, seccomp.SECCOMP_MODE_FILTER, ctypes.addressof(fprog[0]))


# -- the copy the command works on ---------------------------------------------------------------


@dataclass(frozen=True)
class _Copy:
    """One call's overlays: below ``<area>/<name>/`` for each writable root, ``u<i>`` takes its writes (the upper
    layer the server reads afterwards) and ``w<i>`` is overlayfs's own work directory."""

    name: str
    overlays: tuple[tuple[str, str], ...]  # (root, area)


def _escape(path: str) -> str:
    """A path as overlayfs reads it in its options (a comma ends an option, a colon separates lower layers)."""
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


def _mount_copy(overlays: list[Overlay]) -> _Copy:
    """Mount an overlay over each writable root (its writes go to a fresh upper directory in the root's area, on
    the same file system), then hide every area: the command sees neither its own upper layer nor another's."""
    name = secrets.token_hex(8)
    pairs = tuple((o["root"], o["area"]) for o in overlays)
    for index, (root, area) in enumerate(pairs):
        base = os.path.join(area, name)
        os.makedirs(base, mode=0o700, exist_ok=True)
        upper, work = os.path.join(base, f"u{index}"), os.path.join(base, f"w{index}")
        os.mkdir(upper, 0o700)
        os.mkdir(work, 0o700)
        # The merged root shows the upper directory's own mode and times: those of the root itself.
        real = os.stat(root)
        os.chmod(upper, stat.S_IMODE(real.st_mode))
        os.utime(upper, ns=(real.st_atime_ns, real.st_mtime_ns))
        options = f"lowerdir={_escape(root)},upperdir={_escape(upper)},workdir={_escape(work)},userxattr,volatile"
        linux.mount("overlay", root, "overlay", linux.MS_NOSUID | linux.MS_NODEV, options)
    for area in dict.fromkeys(area for _, area in pairs):
        linux.mask(area)
    return _Copy(name, pairs)


def probe_copy(usual: CallOptions) -> str:
    """Whether the copy can be made here: mount it once in a throwaway mount namespace and write through it.
    Returns "" when it works, else why not (what the kernel said)."""
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    child = os.fork()
    if child == 0:
        code = 1
        try:
            os.close(read_end)
            linux.unshare(linux.CLONE_NEWNS)
            linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
            copy = _mount_copy(usual["overlays"])
            os.write(write_end, f"name={copy.name}\n".encode())
            for root, _area in copy.overlays:
                probe = os.path.join(root, f".mcp-guard-probe-{copy.name}")
                os.mkdir(probe)
                os.rmdir(probe)
            code = 0
        except OSError as exc:
            os.write(write_end, f"why={exc.strerror or exc}\n".encode(errors="replace"))
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        said = dict(line.decode(errors="replace").partition("=")[::2] for line in pipe.read().splitlines())
    _pid, status = os.waitpid(child, 0)
    name = said.get("name", "")
    if name:
        for overlay in usual["overlays"]:
            _remove_probe(os.path.join(overlay["area"], name))
    if os.waitstatus_to_exitcode(status) == 0:
        return ""
    return said.get("why") or f"the probe ended with status {status}"


def _remove_probe(directory: str) -> None:
    """The probe's empty upper and work directories (overlayfs leaves its work directory without permissions)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            path = os.path.join(directory, name)
            with contextlib.suppress(OSError):
                for inner in os.listdir(path):
                    os.chmod(os.path.join(path, inner), 0o700)
                    os.rmdir(os.path.join(path, inner))
            os.rmdir(path)
        os.rmdir(directory)


@dataclass
class _View:
    """What a ready init set up before its call: the prepared mounts, the usual call's Landlock ruleset."""

    mounted: bool = False
    ruleset: int = -1
    filtered: bool = False  # the early part of the seccomp filter is loaded
    copy: _Copy | None = None  # the overlays the call's command works on
    handler: renames.Handler | None = None  # the thread answering the command's renames


def _prepare_view(prepared: _Prepared, own_pidns: bool) -> _View:
    """In a ready init, before its call comes: everything that is the same for every usual call. A failure
    here is not fatal: the call then does it itself (and reports what fails)."""
    view = _View()
    usual = prepared.usual
    try:
        if usual is not None and own_pidns and usual["namespaces"]:
            _base_mounts(usual)
            view.mounted = True
            if usual["overlays"]:
                view.copy = _mount_copy(usual["overlays"])
        rules = usual["landlock"] if usual is not None else None
        if rules is not None:
            # After the copy: a Landlock rule names the inode its path has now (the overlay's, for a root).
            view.ruleset = landlock.build(_rules(rules), rules["readable"])
        if prepared.seccomp is not None:
            _load_seccomp(prepared.seccomp[0])  # the init needs none of it; only the mount calls stay open
            view.filtered = True
        if view.copy is not None:
            renames.warm_up()
        _warm_up()
    except OSError:
        pass
    return view


def _answer_renames(prepared: _Prepared) -> renames.Handler:
    """Start the thread that answers the command's renames, then load the filter's last part, which sends them to
    it. Call it confined as the command will be (the thread inherits that: see ``renames.Handler``); the last
    part refuses the mount calls, which the thread, with no capability and under Landlock, cannot make anyway."""
    which = renames.arch()
    if which is None or prepared.seccomp is None:
        raise OSError(errno.ENOSYS, "directory renames cannot be handled here")
    handler = renames.Handler(which)
    handler.start()
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    handler.attach(renames.load_with_listener(prepared.seccomp[2], which))
    return handler


def _warm_up() -> None:
    """A forked process pays a page fault for each page of the supervisor's memory it first writes to, and
    Python writes reference counts on everything it touches: the first use of a ctypes function or type costs
    0.1-0.7 ms here, the second microseconds. Use harmlessly, while waiting, what starting the call uses."""
    linux.warm_up()
    resource.getrlimit(resource.RLIMIT_CORE)
    json.loads('{"argv": ["x"], "env": {"A": "1"}, "fds": 4}')
    os.getcwd()


def _rules(rules: LandlockRules) -> landlock.Rules:
    return landlock.Rules(rules["abi"], rules["read_all"], tuple(rules["writable"]), rules["deny_tcp"])


def _start_command(
    spec: CallRequest, stdio: list[int], status: int, own_pidns: bool, prepared: _Prepared, view: _View
) -> int:
    """Confine this process as the spec says, then start the command; returns its pid."""
    where = "setup"
    usual = prepared.usual
    try:
        copy: _Copy | None = None
        if spec["namespaces"]:
            prepared_tmp: CallOptions = usual if view.mounted and usual is not None else spec
            if not view.mounted:
                _base_mounts(spec)
            wanted = spec["overlays"]
            if wanted:
                where = "copy"
                copy = view.copy if view.copy is not None and list(view.copy.overlays) == _pairs(wanted) else None
                if copy is None:
                    if view.copy is not None:
                        raise OSError(errno.EINVAL, "the call's writable roots differ from the prepared copy")
                    copy = _mount_copy(wanted)
                _report(status, {"txn": copy.name})
                where = "setup"
            elif view.copy is not None:
                for root, _area in view.copy.overlays:  # a call that must not work on the copy
                    linux.umount(root)
            _call_mounts(spec, prepared_tmp)
        if not own_pidns:
            linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)  # the call's orphans come to us, not to the supervisor
        for which, soft, hard in spec["rlimits"]:
            resource.setrlimit(which, (soft, hard))
        rules = spec["landlock"]
        ruleset = -1
        if rules is not None:
            prepared_rules = usual["landlock"] if usual is not None else None
            reuse = view.ruleset >= 0 and rules == prepared_rules and copy is view.copy
            ruleset = view.ruleset if reuse else landlock.build(_rules(rules), rules["readable"])
        if ruleset >= 0:
            landlock.restrict_self(ruleset)
        linux.prctl(linux.PR_SET_DUMPABLE, 0)  # the command cannot read this process's memory or environment
        if prepared.has_caps:
            linux.drop_all_capabilities(prepared.bounding)
        if prepared.seccomp is not None and not view.filtered:
            _load_seccomp(prepared.seccomp[0])
        if copy is not None:
            where = "copy"
            view.handler = _answer_renames(prepared)
        elif prepared.seccomp is not None:
            _load_seccomp(prepared.seccomp[1])
        where = "cwd"
        os.chdir(spec["cwd"])
        where = "exec"
        env = spec["env"]
        argv = spec["argv"]
        actions = [(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(stdio)]
        return os.posix_spawn(
            _resolve(argv[0], env),
            argv,
            env,
            file_actions=actions,
            setsid=True,
            setsigdef=_DEFAULT_IN_CHILD,
            setsigmask=(),
        )
    except OSError as exc:
        raise _StartFailed(exc.errno or 0, where, exc.strerror or str(exc)) from None
    except (ValueError, TypeError, KeyError) as exc:  # a malformed spec
        raise _StartFailed(0, where, f"{type(exc).__name__}: {exc}") from None


def _pairs(overlays: list[Overlay]) -> list[tuple[str, str]]:
    return [(o["root"], o["area"]) for o in overlays]


class _StartFailed(Exception):
    def __init__(self, errno_: int, where: str, message: str) -> None:
        super().__init__(message)
        self.errno, self.where, self.message = errno_, where, message


def run_init(sock: socket.socket, own_pidns: bool, prepared: _Prepared, listener: socket.socket | None = None) -> None:
    """A ready init: prepare the usual call's view, wait for a call, run it, exit. Never returns. ``listener``:
    the proxy's way into this call's own network namespace (--network policy)."""
    view = _prepare_view(prepared, own_pidns)
    reader = FrameReader(sock)
    frames: list[tuple[dict[str, Any], list[int]]] = []
    try:
        while not frames:
            if not reader.read():
                os._exit(0)  # retired unused
            frames = reader.frames()
    except (OSError, ValueError):
        os._exit(1)
    sock.close()
    raw, fds = frames[0]
    if len(fds) != _MAX_FDS:
        os._exit(1)
    stdio, status = fds[:3], fds[3]
    try:
        try:
            spec = wire.checked_request(raw)
        except wire.WireError as exc:
            raise _StartFailed(0, "request", str(exc)) from None
        if listener is not None:
            try:
                _hand_over_listener(status, listener, spec)
            except (OSError, KeyError, TypeError) as exc:
                raise _StartFailed(getattr(exc, "errno", 0) or 0, "network", str(exc)) from None
        child = _start_command(spec, stdio, status, own_pidns, prepared, view)
    except _StartFailed as exc:
        _report(status, {"error": exc.errno, "where": exc.where, "message": exc.message})
        os._exit(0)
    for fd in stdio:
        os.close(fd)

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.killpg(child, signum)

    for signum in _FORWARDED:
        signal.signal(signum, forward)
    exit_status = 0
    while True:
        try:
            pid, wait_status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == child:
            exit_status = wait_status
            break
    if not own_pidns:
        _kill_leftovers(child)
    elif spec["overlays"]:
        # The copy is final once nothing of the call can write to it: say so now rather than after the kernel has
        # torn the namespaces down (milliseconds). As PID 1, kill what the command left and reap until none is
        # left (an orphan is reparented to us before its parent can be reaped), then let the rename handler finish.
        with contextlib.suppress(OSError):
            os.kill(-1, signal.SIGKILL)
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
        settled = view.handler is None or view.handler.idle.acquire(timeout=_SETTLE_S)
        _report(status, {"exit": exit_status, "settled": settled})
        os._exit(0)
    _report(status, {"exit": exit_status})
    os._exit(0)  # as PID 1: the kernel now kills whatever of the call is left


# -- the supervisor -----------------------------------------------------------------------------


@dataclass
class _Ready:
    init: int  # the init's pid (as we see it)
    reaped: int  # the child we reap for it: the keeper with namespaces, else the init itself
    sock: socket.socket | None  # our end of the init's socket (None once handed to the server)


class Supervisor:
    def __init__(self, sock: socket.socket, namespaces: bool, prepared: _Prepared, egress: bool = False) -> None:
        self.sock = sock
        self.namespaces = namespaces
        # --network policy: each call in its own network namespace, whose only way out is a listener the proxy
        # accepts on (one per call: see _hand_over_listener)
        self.egress = egress
        self.prepared = prepared
        self.reader = FrameReader(sock)
        self.offered: dict[int, _Ready] = {}  # init pid -> a ready init the server holds
        self.calls: dict[int, int] = {}  # call id -> init pid
        self.children: dict[int, int | None] = {}  # reaped pid -> call id (None while ready)
        self.died: dict[int, None] = {}  # offered inits that ended before the server's "took" arrived (bounded)
        self.told: set[int] = set()  # calls whose end the server waits to hear of ("gone")

    # -- making inits ahead of time -------------------------------------------------------------

    def _in_child(self) -> None:
        """In a freshly forked child: let go of everything that belongs to the supervisor or to other calls."""
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        self.sock.close()
        for fd in self.reader.fds:  # fds of a frame not read in full yet
            with contextlib.suppress(OSError):
                os.close(fd)

    def prefork(self) -> _Ready:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        if not self.namespaces:
            init = os.fork()
            if init == 0:
                try:
                    self._in_child()
                    ours.close()
                    _die_with_parent()
                    run_init(theirs, own_pidns=False, prepared=self.prepared)
                finally:
                    os._exit(1)
            theirs.close()
            return self._track(_Ready(init, init, ours))
        # unshare(CLONE_NEWPID) only affects the caller's future children and cannot be undone in a user
        # namespace: a keeper makes the init (PID 1 of the new namespace) and stays its parent, so that the
        # chain of parent-death signals reaches it.
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        keeper = os.fork()
        if keeper == 0:
            try:
                self._in_child()
                ours.close()
                os.close(read_end)
                _die_with_parent()
                listener: socket.socket | None = None
                if self.egress:
                    linux.unshare(linux.CLONE_NEWPID | linux.CLONE_NEWNS | linux.CLONE_NEWNET)
                    linux.loopback_up()
                    listener = socket.create_server(("127.0.0.1", 0), backlog=256)
                else:
                    linux.unshare(linux.CLONE_NEWPID | linux.CLONE_NEWNS)
                init = os.fork()
                if init == 0:
                    os.close(write_end)
                    _die_with_parent()
                    run_init(theirs, own_pidns=True, prepared=self.prepared, listener=listener)
                theirs.close()
                if listener is not None:
                    listener.close()
                os.write(write_end, struct.pack("=i", init))
                os.close(write_end)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(init, 0)
            finally:
                os._exit(0)
        theirs.close()
        os.close(write_end)
        data = os.read(read_end, 4)
        os.close(read_end)
        init = struct.unpack("=i", data)[0] if len(data) == 4 else -1
        return self._track(_Ready(init, keeper, ours))

    def _track(self, ready: _Ready) -> _Ready:
        self.children[ready.reaped] = None
        return ready

    def wanted(self) -> int:
        return _POOL_BUSY if self.calls else _POOL_IDLE

    def refill(self) -> None:
        """Fork ready inits up to the pool size and offer each to the server."""
        while len(self.offered) < self.wanted():
            ready = self.prefork()
            assert ready.sock is not None
            try:
                if ready.init <= 0:
                    return
                send_frame(self.sock, {"op": "ready", "init": ready.init, "fds": 1}, [ready.sock.fileno()])
            finally:
                ready.sock.close()
                ready.sock = None
            self.offered[ready.init] = ready

    # -- requests ------------------------------------------------------------------------------

    def took(self, call: int, init: int, tell: bool) -> None:
        """The server handed call ``call`` to the offered init ``init`` (``tell``: say when it is gone)."""
        if tell:
            self.told.add(call)
        ready = self.offered.pop(init, None)
        if ready is not None and ready.reaped in self.children:
            self.calls[call] = init
            self.children[ready.reaped] = call
        elif init in self.died:
            del self.died[init]
            self._gone(call)  # the call ran and ended before we heard it was taken

    def spawn(self, message: dict[str, Any], fds: list[int]) -> None:
        """No offered init was at hand: start the call with a new one."""
        spec = wire.checked_request(message)
        call = spec["id"]
        spec["namespaces"] = self.namespaces and spec["namespaces"]
        ready = self.prefork()
        assert ready.sock is not None
        try:
            if ready.init <= 0:
                raise OSError(0, "could not make a process for the call")
            send_frame(ready.sock, {**spec, "fds": _MAX_FDS}, fds)
        finally:
            ready.sock.close()
        self.calls[call] = ready.init
        self.children[ready.reaped] = call
        if spec["gone"]:
            self.told.add(call)

    def signal(self, call: int, signum: int) -> None:
        init = self.calls.get(call)
        if init is not None:
            with contextlib.suppress(OSError):
                os.kill(init, signum)

    def reap(self) -> None:
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid not in self.children:
                continue
            call = self.children.pop(pid)
            if call is not None:
                self.calls.pop(call, None)
                self._gone(call)
            else:  # an offered init ended: unused, or with a call whose "took" is still on its way
                for init in [i for i, r in self.offered.items() if r.reaped == pid]:
                    del self.offered[init]
                    self.died[init] = None
                    while len(self.died) > _POOL_IDLE * 64:
                        del self.died[next(iter(self.died))]

    def _gone(self, call: int) -> None:
        """Every process of ``call`` has ended (its init was reaped: a PID namespace's init is reaped only after
        everything in it): what it wrote is final."""
        if call in self.told:
            self.told.discard(call)
            with contextlib.suppress(OSError):
                send_frame(self.sock, {"op": "gone", "id": call})

    def kill_all(self) -> None:
        for init in [*self.offered, *self.calls.values()]:
            with contextlib.suppress(OSError):
                os.kill(init, signal.SIGKILL)
        self.offered.clear()
        deadline = time.monotonic() + 2.0
        while self.children and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.001)

    def handle(self, message: dict[str, Any], fds: list[int]) -> None:
        op = message.get("op")
        try:
            if op == "took":
                self.took(int(message["id"]), int(message["init"]), bool(message.get("gone")))
            elif op == "spawn" and len(fds) == _MAX_FDS:
                self.spawn(message, fds)
            elif op == "signal":
                self.signal(int(message["id"]), int(message["sig"]))
        except Exception as exc:  # noqa: BLE001 - a bad request must never end the box
            if len(fds) == _MAX_FDS:
                _report(fds[3], {"error": getattr(exc, "errno", 0) or 0, "where": "supervisor", "message": str(exc)})
            print(f"mcp-guard box: {op}: {type(exc).__name__}: {exc}", file=sys.stderr)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def serve(self) -> None:
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)  # only the server (by closing the socket) ends the box
        selector = selectors.DefaultSelector()
        selector.register(self.sock, selectors.EVENT_READ)
        selector.register(wake_r, selectors.EVENT_READ)
        self.sock.sendall(b"R")  # ready; offers follow
        if self.prepared.usual is not None and self.prepared.usual["overlays"]:
            send_frame(self.sock, {"op": "probe", "copy": probe_copy(self.prepared.usual)})
        last_busy = 0.0
        while True:
            # Requests first. The pool is refilled at once when it is empty, else once the box has been quiet
            # for a moment: a fork right after a call would compete for the CPU with the server's answer, and
            # with the next call.
            timeout: float | None = None
            if not self.offered:
                timeout = 0
            elif len(self.offered) < self.wanted():
                timeout = max(0.0, last_busy + _QUIET_S - time.monotonic())
            events = selector.select(timeout=timeout)
            if not events:
                try:
                    self.refill()
                except OSError as exc:
                    if exc.errno in (errno.EPIPE, errno.ECONNRESET):
                        self.kill_all()  # the server is gone
                        return
                    raise
                continue
            last_busy = time.monotonic()
            for key, _ in events:
                if key.fileobj is self.sock:
                    try:
                        more = self.reader.read()
                    except ConnectionResetError:
                        more = False
                    if not more:
                        self.kill_all()
                        return
                    for message, fds in self.reader.frames():
                        self.handle(message, fds)
                else:
                    with contextlib.suppress(OSError):
                        os.read(wake_r, 4096)
                    self.reap()


def main(argv: list[str] | None = None) -> None:
    """``supervisor FD [namespaces] [seccomp=FD] [usual=FD]``: serve the server on socket FD until it closes.

    ``usual`` carries the options of a usual call (JSON): each ready init sets up that much before its call;
    ``seccomp`` and ``seccomp_late`` the two parts of the filter."""
    args = sys.argv[1:] if argv is None else argv
    sock = socket.socket(fileno=int(args[0]))
    options = dict(arg.partition("=")[::2] for arg in args[1:])
    _die_with_parent()  # the server (or bubblewrap, which dies with the server)
    linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
    prepared = _prepare(
        options.get("seccomp"), options.get("seccomp_late"), options.get("seccomp_notify"), options.get("usual")
    )
    supervisor = Supervisor(sock, "namespaces" in options, prepared, egress="egress" in options)
    gc.freeze()  # what exists now is shared with every fork, untouched by the collector
    supervisor.serve()


if __name__ == "__main__":
    main()
