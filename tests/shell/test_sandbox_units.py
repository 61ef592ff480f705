"""Unit tests of the box's hand-offs, by exact shape: the seccomp filter (run by a small BPF interpreter over every
syscall number), the call options and their wire checks, the frozen plan, and bubblewrap's command line."""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import json
import os
import resource
import socket
import struct
import threading
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from mcp_server_guard import linux
from mcp_server_guard.shell import process
from mcp_server_guard.shell.in_box import run_boxed
from mcp_server_guard.shell.process import Copy
from mcp_server_guard.shell.sandbox import overlays, seccomp, supervisor, wire, worker
from mcp_server_guard.shell.sandbox.box import Box, BoxSpec, Started, _empty_run, interpreter_dirs_in_tmp
from mcp_server_guard.shell.sandbox.frames import FrameReader
from mcp_server_guard.shell.sandbox.landlock import SYSTEM_READ_DIRS
from mcp_server_guard.shell.sandbox.layers import call_options
from mcp_server_guard.shell.sandbox.planning import (
    Confinement,
    Limits,
    NetworkMode,
    ReadScope,
    SandboxMode,
    SandboxPlan,
)

# -- the seccomp filter, run ---------------------------------------------------------------------------------

ALLOW, KILL, NOTIFY = 0x7FFF0000, 0x80000000, 0x7FC00000


def errno_of(err: int) -> int:
    return 0x00050000 | err


def run_filter(program: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """What the kernel's classic-BPF machine answers for one syscall (the instructions build_filter emits)."""
    data = (
        struct.pack("=iI", nr, arch)
        + struct.pack("=Q", 0)
        + b"".join(struct.pack("=Q", a) for a in (*args, *(0,) * (6 - len(args))))
    )
    code = [struct.unpack_from("=HBBI", program, i) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        pc += 1
        if op == 0x20:  # ld [k]
            acc = struct.unpack_from("=I", data, k)[0]
        elif op == 0x15:  # jeq
            pc += jt if acc == k else jf
        elif op == 0x35:  # jge
            pc += jt if acc >= k else jf
        elif op == 0x45:  # jset
            pc += jt if acc & k else jf
        elif op == 0x06:  # ret
            return int(k)
        else:
            raise AssertionError(f"unknown instruction {op:#x}")


def strictest(*actions: int) -> int:
    """Stacked filters: the kernel takes the action of highest precedence."""
    order = {KILL: 0, NOTIFY: 2, ALLOW: 3}
    return min(actions, key=lambda a: order.get(a, 1))


@pytest.mark.parametrize("arch", [seccomp.X86_64, seccomp.AARCH64], ids=lambda a: a.name)
def test_every_denied_syscall_is_refused_with_eperm_and_everyday_ones_pass(arch: seccomp.Arch) -> None:
    program = seccomp.build_filter(arch)
    for name in seccomp.denied_names(arch):
        assert run_filter(program, arch.numbers[name], arch.audit) == errno_of(errno.EPERM), name
    refused = {arch.numbers[n] for n in seccomp.denied_names(arch)}
    special = {arch.numbers[n] for n in ("clone3", "clone", "ioctl", "socket", "socketpair", "mknod", "mknodat",
                                         "prlimit64") if n in arch.numbers}  # fmt: skip
    for nr in set(range(460)) - refused - special:
        assert run_filter(program, nr, arch.audit) == ALLOW, nr


def test_another_abi_is_killed_and_x32_refused() -> None:
    program = seccomp.build_filter(seccomp.X86_64)
    i386 = 0x40000003
    assert run_filter(program, 11, i386) == KILL  # execve's i386 number would mean munmap on x86_64
    assert run_filter(program, 0x40000000 | 59, seccomp.X86_64.audit) == errno_of(errno.EPERM)


@pytest.mark.parametrize("unix_sockets", [False, True])
def test_namespaces_tiocsti_device_nodes_and_odd_socket_families_are_refused(unix_sockets: bool) -> None:
    arch = seccomp.X86_64
    program = seccomp.build_filter(arch, unix_sockets=unix_sockets)
    n, audit = arch.numbers, arch.audit
    assert run_filter(program, n["clone3"], audit) == errno_of(errno.ENOSYS)
    assert run_filter(program, n["clone"], audit, (0x10000000,)) == errno_of(errno.EPERM)  # CLONE_NEWUSER
    assert run_filter(program, n["clone"], audit, (0x01200011,)) == ALLOW  # fork's flags
    assert run_filter(program, n["ioctl"], audit, (0, seccomp.TIOCSTI)) == errno_of(errno.EPERM)
    assert run_filter(program, n["ioctl"], audit, (0, 0x5401)) == ALLOW  # TCGETS
    assert run_filter(program, n["mknodat"], audit, (0, 0, 0o020644)) == errno_of(errno.EPERM)  # a char device
    assert run_filter(program, n["mknod"], audit, (0, 0o060644)) == errno_of(errno.EPERM)  # a block device
    assert run_filter(program, n["mknodat"], audit, (0, 0, 0o010644)) == ALLOW  # a FIFO
    for family in (seccomp.AF_INET, seccomp.AF_INET6, seccomp.AF_NETLINK):
        assert run_filter(program, n["socket"], audit, (family,)) == ALLOW
    for family in (40, 17, 38):  # AF_VSOCK, AF_PACKET, AF_ALG
        assert run_filter(program, n["socket"], audit, (family,)) == errno_of(errno.EAFNOSUPPORT)
    unix = run_filter(program, n["socket"], audit, (seccomp.AF_UNIX,))
    assert unix == (ALLOW if unix_sockets else errno_of(errno.EAFNOSUPPORT))
    assert run_filter(program, n["socketpair"], audit, (seccomp.AF_UNIX,)) == ALLOW
    assert run_filter(program, n["socketpair"], audit, (seccomp.AF_INET,)) == errno_of(errno.EAFNOSUPPORT)


@pytest.mark.parametrize("arch", [seccomp.X86_64, seccomp.AARCH64], ids=lambda a: a.name)
def test_prlimit_of_another_process_is_refused_and_of_its_own_allowed(arch: seccomp.Arch) -> None:
    # The attack: prlimit(1, RLIMIT_NOFILE, ...) on the call's init, which serves the next calls.
    program = seccomp.build_filter(arch)
    nr = arch.numbers["prlimit64"]
    assert run_filter(program, nr, arch.audit, (0, 7, 0, 0)) == ALLOW  # setrlimit, ulimit: its own
    for pid in (1, 2, 4242):
        assert run_filter(program, nr, arch.audit, (pid, 7, 0, 0)) == errno_of(errno.EPERM), pid


@pytest.mark.parametrize("arch", [seccomp.X86_64, seccomp.AARCH64], ids=lambda a: a.name)
def test_the_early_and_late_parts_together_refuse_exactly_what_the_whole_filter_refuses(arch: seccomp.Arch) -> None:
    whole = seccomp.build_filter(arch, part="all")
    early = seccomp.build_filter(arch, part="early")
    late = seccomp.build_filter(arch, part="late")
    probes = [(), (0x10000000,), (seccomp.AF_UNIX,), (40,), (0, seccomp.TIOCSTI), (0, 0, 0o020644), (1, 7)]
    for nr in range(460):
        for args in probes:
            both = strictest(run_filter(early, nr, arch.audit, args), run_filter(late, nr, arch.audit, args))
            assert both == run_filter(whole, nr, arch.audit, args), (nr, args)
    for name in seccomp.LATE_CALLS:  # a call's thread still unshares and mounts between the two parts
        if name in arch.numbers:
            assert run_filter(early, arch.numbers[name], arch.audit) == ALLOW, name
            assert run_filter(late, arch.numbers[name], arch.audit) == errno_of(errno.EPERM), name


def test_renames_go_to_the_listener_only_in_the_notifying_part() -> None:
    arch = seccomp.X86_64
    for name in seccomp.RENAME_CALLS:
        nr = arch.numbers[name]
        assert run_filter(seccomp.build_filter(arch, part="late", notify=True), nr, arch.audit) == NOTIFY
        assert run_filter(seccomp.build_filter(arch, part="late"), nr, arch.audit) == ALLOW


@pytest.mark.parametrize("arch", [seccomp.X86_64, seccomp.AARCH64], ids=lambda a: a.name)
def test_copy_file_range_is_answered_enosys_only_for_a_command_on_a_copy(arch: seccomp.Arch) -> None:
    nr = arch.numbers["copy_file_range"]
    on_copy = seccomp.build_filter(arch, part="late", notify=True)
    assert run_filter(on_copy, nr, arch.audit) == errno_of(errno.ENOSYS)
    for program in (seccomp.build_filter(arch, part="late"), seccomp.build_filter(arch)):
        assert run_filter(program, nr, arch.audit) == ALLOW


# -- the plan and the call options ------------------------------------------------------------------------

LIMITS = Limits(memory_bytes=1 << 30, file_size_bytes=1 << 28, cpu_seconds=60, processes=256)


def a_plan(**changes: Any) -> SandboxPlan:
    return dataclasses.replace(
        SandboxPlan(SandboxMode.AUTO, ReadScope.ALL, NetworkMode.POLICY, LIMITS, abi=7), **changes
    )


def rlimits(on_copy: bool = False) -> list[list[int]]:
    """A call's limits; on a copy without RLIMIT_FSIZE (overlayfs copies a real file up under it)."""
    limits = [
        [resource.RLIMIT_CORE, 0, 0],
        [resource.RLIMIT_DATA, 1 << 30, 1 << 30],
        [resource.RLIMIT_CPU, 60, 65],
    ]
    limits += [] if on_copy else [[resource.RLIMIT_FSIZE, 1 << 28, 1 << 28]]
    return limits + ([[resource.RLIMIT_NPROC, 256, 256]] if os.geteuid() != 0 else [])


@pytest.mark.anyio
async def test_attack_a_command_outrunning_its_limits_finds_them_set_from_its_first_instruction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without the box the limits were set on the child after it started (prlimit): what it wrote or forked first
    # ran unbounded (a fast `head -c 5M > f` finished whole under load). They are set between fork and exec now;
    # a limit set afterwards is not counted here.
    monkeypatch.setattr(resource, "prlimit", lambda *_args: (0, 0))
    confinement = Confinement(str(tmp_path), None, "test", LIMITS)
    result = await process.run(["bash", "-c", "ulimit -f; (ulimit -f)"], cwd=str(tmp_path), env={"PATH": os.defpath},
                               stdin=None, timeout=30, max_output=1 << 16, confinement=confinement)  # fmt: skip
    assert result.stdout == f"{LIMITS.file_size_bytes // 1024}\n" * 2  # bash counts 1024-byte blocks


def test_a_limit_above_a_hard_limit_the_server_runs_under_keeps_that_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # Red team 40s F8: under a host's lower hard limit (`ulimit -Ht 100`, a unit's LimitCPU=) raising it is refused,
    # and every command failed to start; the lower limit stays instead.
    asked: list[tuple[int, int]] = []
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (50, 100))
    monkeypatch.setattr(resource, "setrlimit", lambda _which, value: asked.append(value))
    for soft, hard in ((300, 305), (60, 65), (60, 200), (resource.RLIM_INFINITY, resource.RLIM_INFINITY)):
        linux.set_limit(resource.RLIMIT_CPU, soft, hard)
    assert asked == [(100, 100), (60, 65), (60, 100), (100, 100)]


def test_the_plan_is_frozen() -> None:
    plan = a_plan()
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.network = NetworkMode.ALLOW  # type: ignore[misc]
    assert plan.label == "landlock-v7"


def test_call_options_have_exactly_the_shape_the_supervisor_reads() -> None:
    options = call_options(
        a_plan(),
        ["/tmp/p", "/work/q"],
        ["/work/q/.git/hooks"],
        ["/work/q/.env"],
        overlays=[("/work/q", "/state/areas/q")],
        sockets=["/run/x.sock"],
        proxy="token",
    )
    assert options == {
        "namespaces": True,
        "private_tmp": True,
        "tmp_binds": ["/tmp/p"],
        "tmp_bytes": 1 << 30,
        "read_only": ["/work/q/.git/hooks"],
        "masked": ["/work/q/.env"],
        "roots": ["/tmp/p", "/work/q"],
        "sockets": ["/run/x.sock"],
        "rlimits": rlimits(on_copy=True),
        "overlays": [{"root": "/work/q", "area": "/state/areas/q"}],
        "landlock": {
            "abi": 7,
            "read_all": True,
            "writable": ["/tmp/p", "/work/q", "/tmp", "/dev/shm", "/dev/pts"],
            "deny_tcp": False,
            "readable": [],
        },
        "proxy": "token",
    }
    assert wire.checked_options(json.loads(json.dumps(options))) == options
    # what the copy's disk may take before its floor: no one file more
    roomy = call_options(a_plan(), ["/work/q"], overlays=[("/work/q", "/state/areas/q")], room=5000)
    assert sorted(roomy["rlimits"]) == sorted([*rlimits(on_copy=True), [resource.RLIMIT_FSIZE, 5000, 5000]])


def test_read_only_mode_binds_every_root_read_only_and_gives_landlock_no_root_to_write() -> None:
    options = call_options(a_plan(jail_writable=False, read_scope=ReadScope.JAIL), ["/work/q"], ["/work/q/.git"])
    assert options["read_only"] == ["/work/q", "/work/q/.git"]
    assert options["overlays"] == []
    assert options["landlock"] is not None
    assert options["landlock"]["writable"] == ["/tmp", "/dev/shm", "/dev/pts"]
    assert options["landlock"]["readable"] == list(SYSTEM_READ_DIRS)


def test_without_landlock_the_options_say_none_rather_than_leaving_the_key_out() -> None:
    options = call_options(a_plan(abi=0), ["/work/q"])
    assert options["landlock"] is None
    assert wire.checked_options(options) == options


def good_request() -> dict[str, Any]:
    options = call_options(a_plan(), ["/work/q"], ["/work/q/.git/hooks"], ["/work/q/.env"])
    request = {"id": 1, "fds": 4, "argv": ["true"], "cwd": "/work/q", "env": {"A": "1"}}
    return {**options, **request, "gone": False, "recycle": False, "linked": []}


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda r: r.update(read_onyl=r.pop("read_only")), id="misspelt-read_only"),
        pytest.param(lambda r: r.pop("masked"), id="missing-masked"),
        pytest.param(lambda r: r.update(masked="/work/q/.env"), id="masked-not-a-list"),
        pytest.param(lambda r: r.update(masked=[7]), id="masked-holds-a-number"),
        pytest.param(lambda r: r.update(rlimits=[[4, 0]]), id="short-rlimit"),
        pytest.param(lambda r: r.update(namespaces=1), id="namespaces-not-a-bool"),
        pytest.param(lambda r: r["landlock"].pop("writable"), id="landlock-missing-writable"),
        pytest.param(lambda r: r["landlock"].update(readable="/etc"), id="landlock-readable-not-a-list"),
        pytest.param(lambda r: r.update(overlays=[{"root": "/work/q"}]), id="overlay-without-area"),
        pytest.param(lambda r: r.update(env={"A": 1}), id="env-value-not-a-string"),
        pytest.param(lambda r: r.update(opx="spawn"), id="unknown-key"),
        pytest.param(lambda r: r.update(id=True), id="id-a-bool"),
    ],
)
def test_a_misspelt_missing_or_mistyped_key_refuses_the_call_rather_than_dropping_a_guard(spoil: Any) -> None:
    request = good_request()
    assert wire.checked_request(request) == request
    spoil(request)
    with pytest.raises(wire.WireError):
        wire.checked_request(request)


def test_a_spawn_request_may_name_its_op() -> None:
    request = {"op": "spawn", **good_request()}
    assert wire.checked_request(request) == request


# -- bubblewrap's command line ------------------------------------------------------------------------------


def test_bubblewraps_command_line_is_exactly_the_box_asked_for(tmp_path: Path) -> None:
    hidden_dir, hidden_file = tmp_path / "creds", tmp_path / "token"
    hidden_dir.mkdir()
    hidden_file.write_text("x")
    roots = ("/work/q",)
    spec = BoxSpec(
        bwrap="/usr/bin/bwrap",
        namespaces=True,
        network_isolated=False,
        read_all=True,
        roots=roots,
        hidden=(str(hidden_dir), str(hidden_file)),
        egress=True,
        areas=("/state/areas",),
        copies=True,
    )
    argv = spec.bwrap_argv(5, {"usual": 7})
    under_tmp = [part for path in interpreter_dirs_in_tmp(roots) for part in ("--ro-bind", path, path)]
    supervisor = spec.supervisor_argv(5, {"usual": 7})
    assert argv == [
        "/usr/bin/bwrap", "--new-session", "--die-with-parent", "--unshare-user", "--disable-userns",
        "--assert-userns-disabled", "--cap-drop", "ALL",
        "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP", "--cap-add", "CAP_NET_ADMIN",
        "--cap-add", "CAP_DAC_OVERRIDE", "--cap-add", "CAP_FOWNER",
        "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net",
        "--ro-bind", "/", "/", "--dev", "/dev", "--dev-bind", "/proc", "/proc", "--tmpfs", "/tmp",
        *_empty_run(), *under_tmp,
        "--bind", "/work/q", "/work/q", "--bind", "/state/areas", "/state/areas",
        "--tmpfs", str(hidden_dir), "--ro-bind", "/dev/null", str(hidden_file),
        "--chdir", "/", "--", *supervisor,
    ]  # fmt: skip
    assert supervisor[-3:] == ["namespaces", "egress", "usual=7"]
    assert supervisor[1:3] == ["-I", "-S"]  # the supervisor sees no site-packages and no environment


def test_an_unused_copy_goes_with_what_overlayfs_left_in_it_and_never_through_a_link(tmp_path: Path) -> None:
    # A volatile overlay leaves work/incompat/volatile/dirty (its directories without permissions); an init removes
    # such a copy itself (never shown to a command, or taken back untouched). A link in it is removed as itself.
    base = tmp_path / "copy"
    volatile = base / "w0" / "work" / "incompat" / "volatile"
    volatile.mkdir(parents=True)
    (volatile / "dirty").touch()
    (base / "u0").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").touch()
    (base / "u0" / "link").symlink_to(outside)
    for directory in (volatile, volatile.parent, volatile.parent.parent):
        directory.chmod(0)
    overlays.remove_unused(str(base))
    assert not base.exists()
    assert (outside / "keep").exists()


def test_an_init_waits_for_the_last_calls_threads_to_end_before_taking_its_copy_back() -> None:
    # The last call's overlay is unmounted only once its thread (and rename handler) has ended: mounting another
    # overlay on the same directories before would share them between two mounts.
    try:
        os.close(os.pidfd_open(os.getpid(), worker._PIDFD_THREAD))
    except OSError:
        pytest.skip("no thread pidfds on this kernel")
    started, release = threading.Event(), threading.Event()
    tids: list[int] = []

    def last_call() -> None:
        tids.append(threading.get_native_id())
        started.set()
        release.wait(10)

    thread = threading.Thread(target=last_call)
    thread.start()
    started.wait(10)
    assert not worker._ended(tids, 0.05)  # still running
    release.set()
    assert worker._ended(tids, 5.0)
    thread.join()
    assert worker._ended(tids, 0.0)  # long gone


def test_a_call_cancelled_as_its_init_takes_the_copy_back_leaves_that_copy_to_the_init() -> None:
    # Threat: the command ended on its own while its call was being cancelled; its init said the copy was untouched
    # and took it back for its next call, on a line not read yet. The cancelled call's side must learn that before
    # it removes "its" copy: it would remove the next call's.
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    status_r, status_w = (s.detach() for s in socket.socketpair())

    class InitThatEndsAsItIsCancelled:
        def signal(self, call: int, signum: int = 9) -> None:
            pass

        async def spawn(self, *_args: object, **_kw: object) -> Started:
            return Started(1, None, out_r, err_r, status_r)

        async def gone(self, call: int, timeout: float) -> bool:
            os.write(status_w, b'{"txn": "c0ffee"}\n{"exit": 0, "settled": true, "untouched": true}\n')
            return True  # the supervisor says "gone" only after the init's last line (it said "done" after it)

        def forget(self, call: int) -> None:
            pass

    options = cast(wire.CallOptions, {"overlays": [{"root": "/r", "area": "/a"}]})
    copy = Copy()

    async def cancelled_call() -> None:
        with anyio.move_on_after(0.2):
            await run_boxed(
                cast(Box, InitThatEndsAsItIsCancelled()),
                ["true"],
                cwd="/",
                env={},
                stdin=None,
                timeout=30,
                max_output=1000,
                options=options,
                copy=copy,
            )

    try:
        anyio.run(cancelled_call)
    finally:
        for fd in (out_w, err_w, status_w):
            os.close(fd)
    assert copy.final and copy.untouched and copy.name == "c0ffee"


def _upper_state(upper: Path) -> overlays.UpperState:
    fd = os.open(upper, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return overlays.directory_state(fd)
    finally:
        os.close(fd)


def _as_mounted(tmp_path: Path) -> tuple[Path, overlays.MountedCopy]:
    """An upper directory, and a copy whose recorded state is the directory's state now."""
    upper = tmp_path / "area" / "c0" / "u0"
    upper.mkdir(parents=True)
    return upper, overlays.MountedCopy(
        "c0", ((str(tmp_path / "root"), str(tmp_path / "area")),), (_upper_state(upper),)
    )


def test_a_message_left_on_a_roots_own_attributes_is_seen_even_when_its_ctime_did_not_move(tmp_path: Path) -> None:
    # Threat: a call leaves a message for the next call served from the same directories on its root itself: an
    # extended attribute (a command's user.overlay.X is stored as user.overlay.overlay.X, beside overlayfs's own)
    # or an inode flag. Where ctimes are coarse, one made in the tick of the mount leaves the ctime as it was.
    upper, copy = _as_mounted(tmp_path)
    assert overlays.untouched(copy)
    try:
        os.setxattr(upper, "user.overlay.overlay.msg", b"from an earlier call")
    except OSError:
        pytest.skip("no user extended attributes here")
    _ctime, uid, gid, attributes, flags = copy.setup[0]
    now = _upper_state(upper)
    coarse = dataclasses.replace(copy, setup=((now[0], uid, gid, attributes, flags),))  # the same ctime
    assert not overlays.untouched(coarse)
    os.removexattr(upper, "user.overlay.overlay.msg")
    nodump = 0x40  # FS_NODUMP_FL, what `chattr +d` sets
    fd = os.open(upper, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.ioctl(fd, 0x40086602, struct.pack("i", max(flags, 0) | nodump) + bytes(4))  # FS_IOC_SETFLAGS
    except OSError:
        pytest.skip("no inode flags here")
    finally:
        os.close(fd)
    now = _upper_state(upper)
    coarse = dataclasses.replace(copy, setup=((now[0], uid, gid, now[3], flags),))
    assert not overlays.untouched(coarse)


# -- the pool of ready inits at rest ----------------------------------------------------------------------------


def test_a_box_with_no_call_for_a_while_lets_its_second_ready_init_go_and_tops_up_at_the_next_call() -> None:
    # Issue 44 (idle memory): each ready init and its keeper take ~7 MiB; between a model's calls one is enough.
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        box = supervisor.Supervisor(ours, namespaces=True, prepared=cast(Any, None))
        box.workers = {101: 201, 102: 202}
        box.offered = {101: supervisor._Ready(101, 201, None), 102: supervisor._Ready(102, 202, None)}
        box.children = {201: None, 202: None}
        now = box.last_call + 1.0
        assert box.short() == 0 and box.rest_in(now) == supervisor._RESTING_S - 1.0
        box.calls[9] = 101  # a call running: nothing rests
        assert box.rest_in(now + 60) is None
        del box.calls[9]
        assert box.rest_in(box.last_call + supervisor._RESTING_S + 1) == 0.0
        box.rest()
        reader = FrameReader(theirs)
        assert reader.read() and [m for m, _fds in reader.frames()] == [{"op": "withdraw", "init": 102}]
        assert box.short() < 0 and box.rest_in(now) is None  # nothing made again meanwhile
        del box.workers[102], box.offered[102], box.children[202]  # the init left (its socket closed): reaped
        assert box.short() == 0
        box.took(7, 101, tell=False)  # the next call: the pool is topped up again
        assert box.short() == 1 and not box.resting


@pytest.mark.parametrize("how", ["recursive", "remount-each"])
def test_attack_a_mount_below_a_read_only_bind_is_read_only_too(tmp_path: Path, how: str) -> None:
    # Red team 6 R1: a directory pinned below a root (a bind of its own) stayed writable when the root was bound
    # read-only; a read-only session re-moded ~/.config through it.
    import shutil
    import subprocess
    import sys

    if shutil.which("unshare") is None:
        pytest.skip("no unshare here")
    (tmp_path / "top" / "pinned").mkdir(parents=True)
    probe = Path(__file__).parent / "bind_read_only_probe.py"
    done = subprocess.run(["unshare", "-Urm", sys.executable, str(probe), str(tmp_path / "top"), how],
                          capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    if done.returncode != 0 and "unshare" in done.stderr:
        pytest.skip(f"no user namespaces here: {done.stderr.strip()}")
    assert done.stdout.strip() == "EROFS", (done.stdout, done.stderr)
    assert oct((tmp_path / "top" / "pinned").stat().st_mode & 0o777) != oct(0o777)
