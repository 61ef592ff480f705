"""shell_exec's box, through the real server: each test names an attack a hostile model tried and checks
that the kernel, not the string policy, stops it; the last ones check that everyday work still runs.

Needs bubblewrap (CI installs it); the server runs as whoever runs the tests (root in CI).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from mcp.client import ClientRequestContext
from mcp.types import ElicitResult, ListRootsResult, Root

from support import (
    RawClient,
    console_script,
    error_of,
    marker,
    my_children_with,
    processes_with,
    serve,
    wait_until,
)

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
SX = "mcp-server-shell-exec"
FAKE_KEY = "sk-fake-" + uuid.uuid4().hex


async def approve_everything(_ctx: Any, _params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"approve": True})


def box(workspace: Path, *flags: str, **client_kw: Any) -> Any:
    """The real server, with a human who approves every ask: the string policy is out of the way, the box is not."""
    return serve(SX, workspace, *flags, elicitation_callback=approve_everything, **client_kw)


async def sh(client: Any, command: str, **extra: Any) -> dict[str, Any]:
    with anyio.fail_after(60):
        result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 30, **extra})
    assert not result.is_error, result
    return dict(result.structured_content)


@pytest.fixture
def host_process() -> Iterator[subprocess.Popen[bytes]]:
    """A stand-in for another process of the user's (the host, an editor)."""
    proc = subprocess.Popen(["sleep", "600"], env={"OPENAI_API_KEY": FAKE_KEY, "PATH": os.environ["PATH"]})
    yield proc
    proc.kill()
    proc.wait()


async def test_every_layer_of_the_box_is_named_and_holds_even_as_root(workspace: Path) -> None:
    async with box(workspace) as client:
        out = await sh(client, "grep -E '^(CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status")
    assert out["sandbox"].startswith("bwrap+pidns+mountns+nocaps+seccomp")
    status = dict(line.split(":\t") for line in out["stdout"].splitlines())
    assert status == {
        "CapEff": "0000000000000000",
        "CapBnd": "0000000000000000",
        "CapAmb": "0000000000000000",
        "NoNewPrivs": "1",
        "Seccomp": "2",
    }


def call_raw(raw: RawClient, rid: int, command: str) -> dict[str, Any]:
    answer = raw.request(rid, "tools/call", {"name": "shell_exec", "arguments": {"command": command}})
    return dict(answer["result"]["structuredContent"])


def test_the_hosts_api_key_is_unreadable_through_proc(
    workspace: Path, tmp_path: Path, host_process: subprocess.Popen[bytes]
) -> None:
    probe = (
        "cat /proc/$PPID/environ; cat /proc/1/environ; "
        f"cat /proc/{host_process.pid}/environ; for p in /proc/[0-9]*; do cat $p/environ; done; env; ps -e"
    )
    env = {**os.environ, "OPENAI_API_KEY": FAKE_KEY}
    for flags in ([], ["--sandbox-read", "jail"], ["--network", "deny"]):
        raw = RawClient([console_script(SX), "--audit-log", str(tmp_path / "a.jsonl"), *flags], workspace, env=env)
        try:
            raw.initialize()
            out = call_raw(raw, 2, probe)
        finally:
            raw.close()
        assert FAKE_KEY not in out["stdout"] + out["stderr"], flags
        assert "sleep" not in out["stdout"], "a process outside the call is visible"


async def test_prlimit_kill_and_renice_of_the_server_and_a_host_process_fail(
    workspace: Path, host_process: subprocess.Popen[bytes]
) -> None:
    async with box(workspace) as client:
        server = my_children_with("shell-exec")
        assert server
        targets = [host_process.pid, server[0].pid]
        attack = "; ".join(
            f"prlimit --pid {pid} --cpu=1:1 --nofile=4:4; kill -STOP {pid}; kill -9 {pid}; renice -n 19 -p {pid}"
            for pid in targets
        )
        await sh(client, attack)
        after = await sh(client, "echo still-answering")
    assert after["stdout"] == "still-answering\n"
    assert host_process.poll() is None
    assert psutil.Process(host_process.pid).status() != psutil.STATUS_STOPPED
    assert psutil.Process(host_process.pid).rlimit(psutil.RLIMIT_CPU) == (psutil.RLIM_INFINITY, psutil.RLIM_INFINITY)
    assert psutil.Process(host_process.pid).nice() == 0


def chains(token: str) -> str:
    """A 4-level fork/setsid chain and a `setsid -f` daemon, all sleeping on ``token``."""
    inner = f"(setsid sh -c 'sleep {token} & sleep {token}' &) ; sleep {token}"
    return f'(setsid sh -c "(setsid sh -c \\"{inner}\\" &) ; sleep {token}" &) ; setsid -f sleep {token}; echo started'


async def test_fork_chains_and_setsid_daemons_are_gone_after_the_call(workspace: Path) -> None:
    token = f"1000.{uuid.uuid4().int % 10**8}"
    async with box(workspace) as client:
        out = await sh(client, chains(token))
        assert out["stdout"] == "started\n"
        await wait_until(lambda: not processes_with(token), timeout=10)
        assert (await sh(client, "echo alive"))["stdout"] == "alive\n"


def test_fork_chains_are_gone_after_the_server_is_killed(workspace: Path, tmp_path: Path) -> None:
    token = f"1000.{uuid.uuid4().int % 10**8}"
    raw = RawClient([console_script(SX), "--audit-log", str(tmp_path / "a.jsonl")], workspace)
    raw.initialize()
    raw.send(
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "shell_exec", "arguments": {"command": chains(token) + f"; sleep {token}"}},
        }
    )
    anyio.run(lambda: wait_until(lambda: len(processes_with(token)) >= 4, timeout=15))
    raw.proc.send_signal(signal.SIGKILL)
    raw.proc.wait(timeout=10)
    raw.close()
    anyio.run(lambda: wait_until(lambda: not processes_with(token), timeout=10))


async def test_metadata_of_files_outside_the_jail_cannot_change(workspace: Path) -> None:
    outside = workspace.parent / "outside" / "secret.txt"
    before = outside.stat()
    attack = (
        f"chmod 0777 {outside}; chmod 000 {outside}; chown 1234:1234 {outside}; touch -d 2001-01-01 {outside}; "
        f"setfattr -n user.x -v 1 {outside}; chattr +i {outside}; "
        f"python3 -c \"import os; os.setxattr('{outside}', 'user.y', b'1')\""
    )
    async with box(workspace) as client:
        await sh(client, attack)
    after = outside.stat()
    assert (after.st_mode, after.st_uid, after.st_gid, after.st_mtime) == (
        before.st_mode,
        before.st_uid,
        before.st_gid,
        before.st_mtime,
    )
    assert os.listxattr(outside) == []


@pytest.fixture
def docker_sock(tmp_path: Path) -> Iterator[tuple[Path, list[bytes]]]:
    """A stand-in for /var/run/docker.sock outside the jail: it records what reaches it."""
    path = tmp_path / "outside-sock" / "docker.sock"
    path.parent.mkdir()
    received: list[bytes] = []
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                received.append(conn.recv(100) or b"(connected)")

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield path, received
    stop.set()
    thread.join(5)
    server.close()


async def test_a_unix_socket_outside_the_jail_is_unreachable(
    workspace: Path, docker_sock: tuple[Path, list[bytes]]
) -> None:
    path, received = docker_sock
    attack = (
        f"python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{path}'); s.send(b'GET')\"; "
        f"curl -s --unix-socket {path} http://x/ ; echo done"
    )
    for flags in ([], ["--network", "deny"]):
        async with box(workspace, *flags) as client:
            out = await sh(client, attack)
        assert out["stdout"].endswith("done\n")
    assert received == []


_UNIX_ATTACK = """\
import socket
def attempt(what, fn):
    try:
        fn()
        print(what, "reached")
    except OSError as e:
        print(what, type(e).__name__)
def pair_datagram():
    a, _b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b"forged", LOG)
def datagram():
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"forged", LOG)
def message():
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendmsg([b"forged"], [], 0, LOG)
def stream():
    s = socket.socket(socket.AF_UNIX)
    s.connect(DOCKER)
    s.send(b"GET")
for what, fn in (("socketpair+sendto", pair_datagram), ("sendto", datagram), ("sendmsg", message), ("connect", stream)):
    attempt(what, fn)
"""


class _Daemons:
    """Stand-ins for /dev/log (datagrams) and docker.sock (a stream), bound by a process outside the box in a
    directory a command can see but is not allowed to work in (the client narrows its roots to ``sub``); they
    record what reaches them, and can be restarted (their sockets unlinked and bound anew)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir()
        self.log, self.docker = directory / "log", directory / "docker.sock"
        self.received: list[bytes] = []
        self.lock = threading.Lock()
        self.socks: tuple[socket.socket, socket.socket] = self._bind()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _bind(self) -> tuple[socket.socket, socket.socket]:
        log = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        log.bind(str(self.log))
        log.settimeout(0.1)
        docker = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        docker.bind(str(self.docker))
        docker.listen()
        docker.settimeout(0.1)
        return log, docker

    def restart(self) -> None:
        with self.lock:
            for sock in self.socks:
                sock.close()
            self.log.unlink()
            self.docker.unlink()
            self.socks = self._bind()

    def _serve(self) -> None:
        while not self.stop.is_set():
            with self.lock:
                log, docker = self.socks
            with contextlib.suppress(TimeoutError, OSError):  # OSError: closed by a restart meanwhile
                self.received.append(log.recv(100))
            with contextlib.suppress(TimeoutError, OSError):
                conn, _ = docker.accept()
                with conn:
                    self.received.append(conn.recv(100) or b"(connected)")

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        for sock in self.socks:
            sock.close()


@pytest.fixture
def outside_daemons(workspace: Path) -> Iterator[_Daemons]:
    daemons = _Daemons(workspace / "daemons")
    yield daemons
    daemons.close()


async def test_a_datagram_or_connection_to_a_unix_socket_outside_the_calls_roots_reaches_nothing(
    workspace: Path, outside_daemons: _Daemons
) -> None:
    # The attack: socketpair(AF_UNIX, SOCK_DGRAM) (or any socket) then sendto/sendmsg naming a daemon's socket
    # outside the call's roots (/dev/log, docker.sock), or connect to it.
    log, docker, received = outside_daemons.log, outside_daemons.docker, outside_daemons.received
    (workspace / "sub").mkdir(exist_ok=True)
    (workspace / "sub" / "attack.py").write_text(
        _UNIX_ATTACK.replace("LOG", repr(str(log))).replace("DOCKER", repr(str(docker))), encoding="utf-8"
    )
    roots = [workspace / "sub"]

    async def list_roots(_ctx: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=r.as_uri()) for r in roots])  # type: ignore[arg-type]

    # Commands on a copy see the project's files through overlayfs, where no socket answers; written directly
    # (--transactions off), the files are the real ones: the sockets outside the call's roots must be masked.
    direct = ["--transactions", "off"]
    for flags in ([], direct, [*direct, "--network", "deny"], [*direct, "--network", "allow"]):
        async with box(workspace, *flags, list_roots_callback=list_roots) as client:
            out = await sh(client, "python3 attack.py", cwd="sub")
            assert "reached" not in out["stdout"], (flags, out)
            assert out["stdout"].count("\n") == 4, out
            # The daemons restart (their sockets unlinked and bound anew) after the next calls' inits were made.
            outside_daemons.restart()
            again = await sh(client, "python3 attack.py", cwd="sub")
            assert "reached" not in again["stdout"], (flags, again)
    assert received == []
    # The same daemons, once the call's roots include them, are the project's own: reachable (the test can fail).
    roots[:] = [workspace]
    async with box(workspace, *direct, list_roots_callback=list_roots) as client:
        out = await sh(client, "python3 sub/attack.py")
    assert out["stdout"].count("reached") == 4, out


async def test_the_boxs_run_is_its_own_and_empty_so_no_daemon_socket_there_can_be_named(workspace: Path) -> None:
    # The attack: a daemon's socket under /run (docker's, the buses, journald's), bound after the box started,
    # restarted, renamed or nested deep. The box's /run shows nothing of the host's.
    async with box(workspace) as client:
        out = await sh(client, "find /run /var/run -mindepth 1 \\( -type s -o -type d -o -type f \\) | sort")
    resolv = os.path.realpath("/etc/resolv.conf")
    allowed = {resolv, *(str(p) for p in Path(resolv).parents)}
    assert set(out["stdout"].split()) <= allowed, out


async def test_a_command_makes_and_uses_unix_sockets_in_the_project_and_its_own_tmp(workspace: Path) -> None:
    # Test suites, dev servers and tmux use UNIX sockets of their own: they work in the box.
    script = (
        "import os, socket, threading\n"
        "for path in ('here.sock', '/tmp/there.sock'):\n"
        "    server = socket.socket(socket.AF_UNIX); server.bind(path); server.listen()\n"
        "    def answer(): c, _ = server.accept(); c.send(c.recv(10).upper()); c.close()\n"
        "    threading.Thread(target=answer).start()\n"
        "    client = socket.socket(socket.AF_UNIX); client.connect(path); client.send(b'ping')\n"
        "    print(path, client.recv(10).decode())\n"
        "    d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); d.bind(path + '.d')\n"
        "    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'dgram', path + '.d')\n"
        "    print(path, d.recv(10).decode()); os.unlink(path); os.unlink(path + '.d')\n"
    )
    (workspace / "own.py").write_text(script, encoding="utf-8")
    async with box(workspace) as client:
        out = await sh(client, "python3 own.py")
    assert out["stdout"] == ("here.sock PING\nhere.sock dgram\n/tmp/there.sock PING\n/tmp/there.sock dgram\n"), out


async def test_a_socket_family_that_leaves_the_network_namespace_cannot_be_made(workspace: Path) -> None:
    # The attack: AF_VSOCK's port space is the host's, whatever the network namespace (a way to the hypervisor
    # and the host's vsock services past the egress proxy); other rarely used families are kernel attack surface.
    probe = (
        "import socket\n"
        "for name in ('AF_VSOCK', 'AF_PACKET', 'AF_ALG', 'AF_TIPC', 'AF_UNIX', 'AF_INET', 'AF_INET6', 'AF_NETLINK'):\n"
        "    kind = {'AF_NETLINK': socket.SOCK_RAW, 'AF_ALG': socket.SOCK_SEQPACKET, 'AF_TIPC': socket.SOCK_RDM}\n"
        "    kind = kind.get(name, socket.SOCK_DGRAM)\n"
        "    try:\n"
        "        socket.socket(getattr(socket, name), kind).close(); print(name, 'made')\n"
        "    except OSError as e:\n"
        "        print(name, e.errno)\n"
    )
    (workspace / "families.py").write_text(probe, encoding="utf-8")
    async with box(workspace) as client:
        out = await sh(client, "python3 families.py")
    made = {line.split()[0] for line in out["stdout"].splitlines() if line.endswith("made")}
    assert made == {"AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"}, out


async def test_renaming_a_parent_of_a_hidden_path_does_not_unhide_it(isolated_home: Path) -> None:
    # The attack: with the home directory allowed, `mv ~/.config ~/c2` takes the hidden ~/.config/gh out from
    # under its mask (a mount follows its directory), and ~/c2/gh/hosts.yml would be readable.
    (isolated_home / ".config" / "gh").mkdir(parents=True)
    (isolated_home / ".config" / "gh" / "hosts.yml").write_text("oauth_token: SECRET-GH\n")
    (isolated_home / ".config" / "other.txt").write_text("fine\n")
    # (the mask moves with the directory in that call; the next call hid ~/.config/gh by name, no longer there)
    attack = "mv ~/.config ~/c2; cat ~/c2/gh/hosts.yml ~/.config/gh/hosts.yml; cat ~/.config/other.txt"
    for flags in (["--transactions", "off"], []):
        async with box(isolated_home, *flags) as client:
            out = await sh(client, attack)
            later = await sh(client, "cat ~/c2/gh/hosts.yml ~/.config/gh/hosts.yml")
        for seen in (out, later):
            assert "SECRET" not in seen["stdout"] + seen["stderr"], (flags, seen)
        assert "fine" in out["stdout"], (flags, out)  # the rest of ~/.config stays usable
    assert (isolated_home / ".config" / "gh" / "hosts.yml").exists()


async def test_device_nodes_cannot_be_made(workspace: Path) -> None:
    async with box(workspace) as client:
        out = await sh(client, "mknod kmsg c 1 11; mknod loop b 7 0; ls")
    assert "kmsg" not in out["stdout"] and "loop" not in out["stdout"]
    assert not (workspace / "kmsg").exists() and not (workspace / "loop").exists()


async def test_tiocsti_cannot_inject_keystrokes(workspace: Path) -> None:
    inject = (
        'python3 -c "import fcntl, os, pty, termios; m, s = pty.openpty(); '
        "fcntl.ioctl(s, termios.TIOCSTI, b'x'); print('injected')\""
    )
    async with box(workspace) as client:
        out = await sh(client, inject)
    assert "injected" not in out["stdout"]
    assert "Operation not permitted" in out["stderr"]


async def test_dev_shm_and_tmp_writes_stay_private_to_the_call(workspace: Path) -> None:
    name = f"mcp-guard-test-{uuid.uuid4().hex}"
    async with box(workspace) as client:
        first = await sh(client, f"echo x | tee /dev/shm/{name} /tmp/{name} > /dev/null && echo wrote")
        second = await sh(client, f"ls /dev/shm/{name} /tmp/{name} 2>&1 || true")
    assert first["stdout"] == "wrote\n"
    assert "No such file" in second["stdout"]
    assert not Path(f"/dev/shm/{name}").exists() and not Path(f"/tmp/{name}").exists()


async def test_the_root_file_system_is_read_only_and_the_jail_writable(workspace: Path) -> None:
    async with box(workspace) as client:
        # (paths the string layer cannot read, which refuses `touch /etc/…` itself: the box is what is tested here)
        line = 'touch "$(printf %s /etc)/mcp-guard-x" "$(printf %s /usr)/mcp-guard-x" 2>&1; '
        line += "echo ok > inside.txt; cat inside.txt"
        out = await sh(client, line)
    assert out["stdout"].count("Read-only file system") == 2
    assert (workspace / "inside.txt").read_text() == "ok\n"
    assert not Path("/etc/mcp-guard-x").exists()


async def test_client_roots_narrow_what_a_boxed_command_may_write(workspace: Path) -> None:
    """The box is prepared for the launch jail before any call; a client that narrows it to a subdirectory must
    get a box whose writable part is that subdirectory only (the workspace lies under /tmp, which the box
    otherwise replaces), and list_changed must widen it back to the launch jail, never beyond it."""
    (workspace / "sub").mkdir(exist_ok=True)
    roots = [workspace / "sub"]

    async def list_roots(_ctx: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=r.as_uri()) for r in roots])  # type: ignore[arg-type]

    write = "for f in {inside} {outside}; do (echo x > $f) 2>/dev/null && echo wrote $f || echo refused $f; done"
    async with serve(SX, workspace, elicitation_callback=approve_everything, list_roots_callback=list_roots) as client:
        narrowed = [
            await sh(
                client, write.format(inside=workspace / "sub" / f"in{i}", outside=workspace / f"out{i}"), cwd="sub"
            )
            for i in range(2)
        ]
        roots[:] = [workspace]
        await client.send_roots_list_changed()
        widened = await sh(client, write.format(inside=workspace / "in", outside=workspace.parent / "beyond"))
    for i, out in enumerate(narrowed):
        assert out["stdout"].split("\n")[:2] == [
            f"wrote {workspace / 'sub' / f'in{i}'}",
            f"refused {workspace / f'out{i}'}",
        ]
        assert not (workspace / f"out{i}").exists()
    # Outside the launch jail but under /tmp: the write lands in the call's private /tmp, never on the host.
    assert widened["stdout"].split("\n")[0] == f"wrote {workspace / 'in'}"
    assert (workspace / "in").exists() and not (workspace.parent / "beyond").exists()


async def test_everyday_git_flow_works_in_the_box(workspace: Path) -> None:
    flow = (
        "set -e; git init -q -b main repo; cd repo; git config user.email a@b; git config user.name n; "
        "echo 1 > a; git add a; git commit -qm one; git branch feature; git checkout -q feature; "
        "echo 2 >> a; git commit -qam two; git checkout -q main; echo 3 > b; git add b; git stash -q; "
        "git stash pop -q; git commit -qm three; git merge -q --no-edit feature; git checkout -q feature; "
        "git rebase -q main; git log --oneline | wc -l"
    )
    async with box(workspace) as client:
        out = await sh(client, flow)
    assert out["exitCode"] == 0, out["stderr"]
    assert int(out["stdout"]) >= 4


async def test_everyday_tools_write_the_project_and_tmpdir(workspace: Path) -> None:
    work = (
        "set -e; t=$(mktemp); echo tmp > $t; cat $t; python3 -m venv --without-pip .venv && ls .venv/bin/python; "
        "mkdir -p build && printf 'int main(){return 0;}' > m.c && "
        "(cc -o build/m m.c 2>/dev/null || cp /bin/true build/m) && ./build/m && echo built; "
        "python3 -c 'import multiprocessing as m; p = m.Pool(2); print(sum(p.map(abs, [-1, -2]))); p.close()'"
    )
    async with box(workspace) as client:
        out = await sh(client, work)
    assert out["exitCode"] == 0, out["stderr"]
    assert out["stdout"].splitlines() == ["tmp", ".venv/bin/python", "built", "3"]
    assert (workspace / ".venv").is_dir()
    assert stat.S_ISREG((workspace / "build" / "m").stat().st_mode)


async def test_commands_that_never_read_their_stdin_do_not_starve_other_calls_of_worker_threads(
    workspace: Path,
) -> None:
    # The attack: more commands than the server has worker threads (anyio's pool, 40), each fed more stdin than a
    # pipe holds and never reading it. Each blocked write once held a thread for the command's whole run, so any
    # call that needed one for a moment (a long line is checked on a worker thread) waited for them all to end.
    token = marker()
    held = 45
    async with box(workspace) as client, anyio.create_task_group() as tg:
        for _ in range(held):
            arguments = {"command": f"sleep {token}", "stdin": "x" * (128 << 10), "timeoutSeconds": 120}
            tg.start_soon(partial(client.call_tool, "shell_exec", arguments))
        await wait_until(lambda: len(my_children_with(token)) >= held, timeout=60)
        with anyio.fail_after(20):
            echo = await client.call_tool("shell_exec", {"command": "echo hi # " + "x" * 5000})
        assert dict(echo.structured_content or {})["stdout"] == "hi\n", echo
        assert len(my_children_with(token)) >= held  # they were all still waiting for their stdin to be read
        tg.cancel_scope.cancel()
    await wait_until(lambda: not my_children_with(token), timeout=30)


# What bubblewrap prints where unprivileged user namespaces are blocked (Ubuntu 24.04's AppArmor default).
APPARMOR_BWRAP = "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"


def _without_bwrap(tmp_path: Path, stand_in: str | None = None) -> dict[str, str]:
    """An environment whose PATH has everything of the real one but bubblewrap (or ``stand_in`` as bwrap)."""
    shadow = tmp_path / "no-bwrap-bin"
    shadow.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        for entry in Path(directory).glob("*") if Path(directory).is_dir() else []:
            if entry.name != "bwrap" and not (shadow / entry.name).exists():
                (shadow / entry.name).symlink_to(entry)
    if stand_in is not None:
        (shadow / "bwrap").write_text(stand_in)
        (shadow / "bwrap").chmod(0o755)
    return {**os.environ, "PATH": str(shadow)}


def test_sandbox_required_refuses_to_start_when_user_namespaces_are_blocked(workspace: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [console_script(SX), "--audit-log", str(tmp_path / "a.jsonl"), "--sandbox", "required"],
        cwd=workspace,
        env=_without_bwrap(tmp_path, APPARMOR_BWRAP),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "setting up uid map: Permission denied" in proc.stderr
    assert "kernel.apparmor_restrict_unprivileged_userns=0" in proc.stderr


def test_sandbox_auto_with_user_namespaces_blocked_runs_without_the_box_and_names_the_fix(
    workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "server.stderr"
    raw = RawClient(
        [console_script(SX), "--audit-log", str(tmp_path / "a.jsonl")],
        workspace,
        stderr=log,
        env=_without_bwrap(tmp_path, APPARMOR_BWRAP),
    )
    try:
        raw.initialize()
        answer = raw.request(1, "tools/call", {"name": "shell_exec", "arguments": {"command": "echo hi"}})
    finally:
        raw.close()
    result = answer["result"]["structuredContent"]
    assert result["stdout"] == "hi\n"
    assert "bwrap" not in result["sandbox"] and "landlock" in result["sandbox"]
    said = raw.stderr_lines()
    line = next(line for line in said if "no box" in line)
    # bubblewrap's own words, the cause named, and the network change said in the same line
    assert "setting up uid map: Permission denied" in line and "kernel.apparmor_restrict_unprivileged_userns=0" in line
    assert "network is deny instead of policy" in line


def test_sandbox_required_refuses_to_start_without_bubblewrap(workspace: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [console_script(SX), "--audit-log", str(tmp_path / "a.jsonl"), "--sandbox", "required"],
        cwd=workspace,
        env=_without_bwrap(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "bubblewrap is not installed" in proc.stderr and "apt install bubblewrap" in proc.stderr


async def test_sandbox_auto_without_bubblewrap_says_which_layer_is_missing(workspace: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [console_script(SX), "--audit-log", str(tmp_path / "a.jsonl")],
        cwd=workspace,
        env=_without_bwrap(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        with anyio.fail_after(30):
            first = await anyio.to_thread.run_sync(proc.stderr.readline)
        # One line: the layer missing, what commands now see, and (the default network mode, policy, needs the
        # box) no network rather than all of it.
        assert "no box: bubblewrap is not installed" in first
        assert "hidden paths (credentials) are not hidden" in first
        assert "the network is deny instead of policy (the default needs the box" in first
    finally:
        proc.kill()
        proc.communicate(timeout=30)


def test_the_box_builds_when_the_server_is_installed_under_the_temp_dir(workspace: Path, tmp_path: Path) -> None:
    """A clone or an install under /tmp (a try-out, a CI workspace): the box's own empty /tmp must not hide the
    server's Python from bubblewrap. A venv made under the test's temp dir runs the server; the box is built,
    and the venv stays out of the command's sight and reach."""
    import sysconfig

    assert str(tmp_path).startswith("/tmp/"), "the test's temp dir must lie under /tmp for this test"
    venv = tmp_path / "install" / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python*/site-packages"))
    # This venv sees the packages of the one running the tests (their editable installs included).
    (site / "server_under_test.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n", encoding="utf-8"
    )
    audit = tmp_path / "audit.jsonl"
    stderr = tmp_path / "server.err"
    raw = RawClient(
        [str(venv / "bin" / "python"), "-m", "mcp_server_shell_exec", "--audit-log", str(audit)],
        workspace,
        stderr=stderr,
        env={
            k: v
            for k, v in os.environ.items()
            if k in ("PATH", "HOME", "XDG_STATE_HOME", "LANG", "TMPDIR", "MCP_GUARD_RUNTIME_DIR")
        },
    )
    try:
        raw.initialize()
        message = raw.request(2, "tools/call", {"name": "shell_exec", "arguments": {
            "command": f"echo hi; ls {venv} 2>&1 | head -1; touch {venv}/planted 2>&1 | head -1"}})  # fmt: skip
    finally:
        raw.close()
    result = message["result"]
    assert not result.get("isError"), result
    assert result["structuredContent"]["sandbox"].startswith("bwrap"), stderr.read_text()
    assert "no box" not in stderr.read_text()
    assert result["structuredContent"]["stdout"].startswith("hi\n")
    assert not (venv / "planted").exists()


async def test_a_command_line_too_long_to_run_is_refused_and_the_box_keeps_serving(workspace: Path) -> None:
    """Threat: megabytes of arguments (more than execve takes) made a request over the box's frame limit, which
    ended the box's supervisor, and later calls failed with it."""
    async with box(workspace) as client:
        with anyio.fail_after(60):
            many = await client.call_tool("shell_exec", {"command": "true", "args": ["x" * 90_000] * 100})
            one = await client.call_tool("shell_exec", {"command": "true", "args": ["y" * 200_000]})
        after = [await sh(client, f"echo after-{i}") for i in range(3)]
    for refused in (many, one):
        assert refused.is_error and error_of(refused)["code"] == "COMMAND_TOO_COMPLEX", refused
        assert "too long to run" in error_of(refused)["message"]
    assert [out["stdout"] for out in after] == [f"after-{i}\n" for i in range(3)]
    assert {out["sandbox"].split("+")[0] for out in after} == {"bwrap"}


def test_a_box_left_without_calls_keeps_one_ready_init_and_makes_the_second_again_at_the_next_call(
    workspace: Path, tmp_path: Path
) -> None:
    # Issue 44 (idle memory): two ready inits with their keepers wait for calls (~7 MiB each); after ten seconds
    # with no call the box lets one go, and the next call has it made again.
    raw = RawClient([console_script(SX), "--audit-log", str(tmp_path / "a.jsonl")], workspace)
    try:
        raw.initialize()

        def call(rid: int) -> None:
            params = {"name": "shell_exec", "arguments": {"command": "echo 1 | tee /dev/null"}}
            assert raw.request(rid, "tools/call", params)["result"]["structuredContent"]["stdout"] == "1\n"

        def size() -> int:
            return len(psutil.Process(raw.proc.pid).children(recursive=True))

        call(2)
        anyio.run(lambda: wait_until(lambda: size() >= 5, timeout=10))  # bubblewrap, the supervisor, 2 × 2
        busy = size()
        anyio.run(lambda: wait_until(lambda: size() == busy - 2, timeout=25))  # a keeper and its init gone
        call(3)
        anyio.run(lambda: wait_until(lambda: size() == busy, timeout=10))
    finally:
        raw.close()
