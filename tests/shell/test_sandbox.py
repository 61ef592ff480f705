"""shell_exec under kernel confinement (Landlock, network namespace, resource limits), through the real server.

Each test names what the kernel stops that the string policy lets through.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_server_guard.shell.sandbox.planning import landlock_abi
from support import console_script, serve

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(landlock_abi() == 0, reason="this kernel has no Landlock"),
]
SX = "mcp-server-shell-exec"
PY = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else "python3"


async def sh(client: Any, command: str, **extra: Any) -> dict[str, Any]:
    with anyio.fail_after(60):
        result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 30, **extra})
    assert not result.is_error, result
    return dict(result.structured_content)


async def test_python_writing_outside_the_jail_is_stopped_by_the_kernel(workspace: Path, mode: str) -> None:
    outside = workspace.parent / "outside" / "pwned.txt"
    write = f"{PY} -c \"open('{outside}', 'w').write('x')\""  # the string policy has no objection
    async with serve(SX, workspace, mode=mode) as client:
        refused = await sh(client, write)
        inside = await sh(client, f"{PY} -c \"open('inside.txt', 'w').write('ok')\" && cat inside.txt")
    # Landlock says PermissionError; in the box the outside directory is not even there (private /tmp).
    assert refused["exitCode"] != 0 and ("PermissionError" in refused["stderr"] or "FileNotFound" in refused["stderr"])
    assert not outside.exists()
    assert inside["stdout"] == "ok" and inside["exitCode"] == 0
    assert f"landlock-v{landlock_abi()}" in refused["sandbox"]


async def test_private_tmpdir_is_writable_and_removed_afterwards(workspace: Path) -> None:
    async with serve(SX, workspace) as client:
        out = await sh(client, 'touch "$TMPDIR/scratch" && ls "$TMPDIR" | grep -x scratch && echo "$TMPDIR"')
        shared_tmp = await sh(client, "touch /tmp/mcp-guard-shared-test-file")
    lines = out["stdout"].splitlines()
    assert lines[0] == "scratch" and out["exitCode"] == 0
    assert not Path(lines[1], "scratch").exists()  # the private directory went with the call
    # Landlock refuses the shared /tmp; the box gives the call its own /tmp: either way the host's is untouched.
    assert not Path("/tmp/mcp-guard-shared-test-file").exists()
    assert shared_tmp["exitCode"] != 0 or shared_tmp["sandbox"].startswith("bwrap")


async def test_reading_ssh_keys_fails_under_sandbox_read_jail(workspace: Path, isolated_home: Path) -> None:
    ssh = isolated_home / ".ssh"
    ssh.mkdir()
    (ssh / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n", encoding="utf-8")
    key = ssh / "id_ed25519"
    async with serve(SX, workspace, "--sandbox-read", "jail") as client:
        confined = await sh(client, f"cat {key}; ls {ssh}; echo system: $(head -c 4 /etc/passwd | wc -c)")
        own = await sh(client, "cat hello.txt")
    async with serve(SX, workspace) as client:
        default = await sh(client, f"cat {key}")
    assert "PRIVATE KEY" not in confined["stdout"]
    assert "Permission denied" in confined["stderr"] or "No such file" in confined["stderr"]
    assert "system: 4" in confined["stdout"]  # system files stay readable
    assert own["stdout"] == "hello\nworld\n"
    # The default read scope is the whole system minus the hidden list (~/.ssh is on it); without the box
    # only --sandbox-read jail keeps it out: documented.
    assert ("PRIVATE KEY" in default["stdout"]) is not default["sandbox"].startswith("bwrap")


async def test_link_and_rename_tricks_cannot_place_a_file_outside(workspace: Path) -> None:
    outside = workspace.parent / "outside"
    async with serve(SX, workspace) as client:
        linked = await sh(client, f"ln hello.txt {outside}/hard; ln -s /etc/passwd {outside}/soft; echo done")
        moved = await sh(client, f"mv sub/inner.txt {outside}/moved; cp hello.txt {outside}/copied; echo done")
        renamed_dir = await sh(client, f"mv sub {outside}/subdir; echo done")
    for name in ("hard", "soft", "moved", "copied", "subdir"):
        assert not (outside / name).exists(), name
    assert (workspace / "sub" / "inner.txt").exists()
    assert linked["stderr"] and moved["stderr"] and renamed_dir["stderr"]


@pytest.fixture
def loopback_servers() -> Iterator[tuple[int, socket.socket]]:
    """A TCP listener and a UDP receiver on 127.0.0.1, started by the test itself."""
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    tcp.settimeout(0.2)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    stop = threading.Event()

    def accept_loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = tcp.accept()
                conn.close()
            except OSError:
                continue

    thread = threading.Thread(target=accept_loop, daemon=True)
    thread.start()
    yield tcp.getsockname()[1], udp
    stop.set()
    thread.join(timeout=5)
    tcp.close()
    udp.close()


async def test_network_deny_blocks_loopback_tcp_and_udp(
    workspace: Path, loopback_servers: tuple[int, socket.socket]
) -> None:
    tcp_port, udp = loopback_servers
    udp_port = udp.getsockname()[1]
    connect = (
        f"{PY} -c \"import socket; socket.create_connection(('127.0.0.1', {tcp_port}), timeout=3); print('TCP-OK')\""
    )
    send = (
        f'{PY} -c "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
        f"s.sendto(b'UDP', ('127.0.0.1', {udp_port})); print('SENT')\""
    )
    async with serve(SX, workspace, "--network", "allow") as client:
        tcp_allowed = await sh(client, connect)
    async with serve(SX, workspace, "--network", "deny") as client:
        tcp_denied = await sh(client, connect)
        udp_denied = await sh(client, send)
    assert "TCP-OK" in tcp_allowed["stdout"]  # control: the listener works
    assert "TCP-OK" not in tcp_denied["stdout"] and tcp_denied["exitCode"] != 0
    assert tcp_denied["sandbox"].endswith("+netns")
    # Without the box the send fails; in the box it leaves into the box's own empty network namespace.
    assert "SENT" not in udp_denied["stdout"] or udp_denied["sandbox"].startswith("bwrap")
    udp.settimeout(0.5)
    with pytest.raises(TimeoutError):
        udp.recvfrom(16)


def _limits_policy(tmp_path: Path, **limits: int) -> Path:
    path = tmp_path / "limits.toml"
    path.write_text("[shell_exec]\n" + "".join(f"{k} = {v}\n" for k, v in limits.items()), encoding="utf-8")
    return path


async def test_fork_bomb_is_contained_and_the_server_keeps_answering(workspace: Path, tmp_path: Path) -> None:
    bomb = (
        f'{PY} -c "import os, time\nfor _ in range(100000):\n    if os.fork() == 0:\n        time.sleep(60)\n'
        '        os._exit(0)"'
    )
    policy = _limits_policy(tmp_path, max_processes=64)
    async with serve(SX, workspace, "--policy", str(policy)) as client:
        out = await sh(client, bomb)
        after = await sh(client, "echo still here")
    assert out["exitCode"] != 0 and out["limitHit"] == "processes" and out["timedOut"] is False
    assert "Resource temporarily unavailable" in out["stderr"]
    assert after["stdout"] == "still here\n"


async def test_memory_hog_is_contained(workspace: Path, tmp_path: Path) -> None:
    policy = _limits_policy(tmp_path, max_memory_bytes=256 << 20)
    async with serve(SX, workspace, "--policy", str(policy)) as client:
        out = await sh(client, f"{PY} -c \"x = bytearray(1 << 30); print('allocated')\"")
        small = await sh(client, f"{PY} -c \"x = bytearray(16 << 20); print('fine')\"")
    assert out["limitHit"] == "memory" and "allocated" not in out["stdout"]
    assert small["stdout"] == "fine\n"


def _no_box_path(tmp_path: Path) -> dict[str, str]:
    """A PATH with no bubblewrap on it: the server confines commands with Landlock and limits alone."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("bash", "sh", "head", "git"):
        if (found := shutil.which(name)) is not None:
            (tools / name).symlink_to(found)
    return {"PATH": str(tools)}


async def test_file_size_limit_is_reported(workspace: Path, tmp_path: Path) -> None:
    # A command that works on no copy (here: Landlock alone, no bubblewrap on PATH) runs under RLIMIT_FSIZE; on a
    # copy the judge bounds the files instead (tests/changes/test_file_size_on_a_copy.py).
    policy = _limits_policy(tmp_path, max_file_size_bytes=1 << 20)
    async with serve(SX, workspace, "--policy", str(policy), env=_no_box_path(tmp_path)) as client:
        out = await sh(client, "head -c 5000000 /dev/zero > big.bin")
    assert "bwrap" not in out["sandbox"], out
    assert out.get("limitHit") == "fileSize", out
    assert (workspace / "big.bin").stat().st_size <= 1 << 20


def _start(workspace: Path, *args: str, abi: str | None = None) -> subprocess.Popen[str]:
    env = {**os.environ}
    if abi is not None:
        env["MCP_GUARD_LANDLOCK_MAX_ABI"] = abi
    return subprocess.Popen(
        [console_script(SX), "--audit-log", str(workspace.parent / "a.jsonl"), *args],
        cwd=workspace,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sandbox_required_refuses_to_start_without_landlock(workspace: Path) -> None:
    proc = _start(workspace, "--sandbox", "required", abi="0")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert err.strip().count("\n") == 0 and "Landlock" in err


async def test_sandbox_auto_without_landlock_runs_unconfined_and_says_so(workspace: Path) -> None:
    proc = _start(workspace, abi="0")
    try:
        assert proc.stderr is not None
        with anyio.fail_after(30):
            first = await anyio.to_thread.run_sync(proc.stderr.readline)
        assert "unconfined" in first
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    from support import server_params

    params = server_params(SX, workspace)
    params.env = {**(params.env or {}), "MCP_GUARD_LANDLOCK_MAX_ABI": "0"}
    from mcp import Client

    async with Client(params, mode="legacy") as client:
        out = await sh(client, "echo hi")
    assert "landlock" not in out["sandbox"]


async def test_older_landlock_abi_degrades_explicitly(workspace: Path) -> None:
    from mcp import Client

    from support import server_params

    params = server_params(SX, workspace)
    params.env = {**(params.env or {}), "MCP_GUARD_LANDLOCK_MAX_ABI": "3"}
    async with Client(params, mode="legacy") as client:
        out = await sh(client, f"{PY} -c \"open('{workspace.parent / 'outside' / 'x'}', 'w')\"")
    assert "landlock-v3" in out["sandbox"]
    assert out["exitCode"] != 0 and not (workspace.parent / "outside" / "x").exists()


async def test_sandbox_off_reports_none(workspace: Path) -> None:
    async with serve(SX, workspace, "--sandbox", "off") as client:
        out = await sh(client, "echo hi")
    assert out["sandbox"] == "none"


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/sys/fs/cgroup/pids").is_dir(), reason="needs a pids cgroup (root)")
async def test_a_daemon_that_left_the_process_group_still_dies_with_the_call(workspace: Path) -> None:
    import uuid

    import psutil

    token = f"1000.{uuid.uuid4().int % 10**8}"

    def alive() -> bool:
        return any(token in " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"]))

    async with serve(SX, workspace) as client:
        out = await sh(client, f"setsid sleep {token} > /dev/null 2>&1 < /dev/null & echo started")
        assert out["stdout"] == "started\n"
        with anyio.fail_after(10):
            while alive():
                await anyio.sleep(0.05)


def test_the_outside_sockets_are_found_where_daemons_keep_them_and_the_projects_are_left_usable(tmp_path: Path) -> None:
    # Threat: a daemon's socket (docker.sock, the buses, /dev/log) named by a command: every socket a command
    # could see in the box is found in the kernel's table (those under /run never are: the box's /run is empty).
    from mcp_server_guard.shell.sandbox.sockets import bound_paths, found_sockets, outside

    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "daemon.sock"))
    assert str(tmp_path / "daemon.sock") in bound_paths()  # bound in this network namespace: the kernel lists it
    sock.close()
    table = tmp_path / "unix"
    table.write_text(
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        "0000: 00000002 00000000 00010000 0001 01 1 /var/lib/my daemon.sock\n"
        "0000: 00000002 00000000 00010000 0001 01 2 @/tmp/.X11-unix/X0\n"
        "0000: 00000002 00000000 00000000 0002 01 3\n"
    )
    assert bound_paths(str(table)) == ["/var/lib/my daemon.sock"]
    project = tmp_path / "proj"
    found = found_sockets(
        [str(project)],
        bound=[
            "/srv/db/db.sock",
            "/run/dbus/system_bus_socket",
            "/tmp/.X11-unix/X0",
            "/dev/log",
            f"{project}/dev.sock",
        ],
    )
    # /tmp, /run and /dev are the box's own (never visible there); the project's sockets are visible, and usable by
    # a call whose roots hold them, not by one narrowed out of them.
    assert found == tuple(sorted([f"{project}/dev.sock", "/srv/db/db.sock"]))
    assert outside(found, [str(project)]) == ["/srv/db/db.sock"]
    assert sorted(outside(found, [str(project / "sub")])) == sorted(found)


def test_sockets_a_command_binds_elsewhere_cannot_push_a_daemons_off_the_list(tmp_path: Path) -> None:
    # The attack: a job binds thousands of sockets (in its own root) so that a daemon's socket falls past the
    # list's bound and goes unmasked. Its own are left out first; past the bound the call is refused, never short.
    from mcp_server_guard.shell.sandbox.sockets import MAX_SOCKETS, TooManySockets, outside

    project = str(tmp_path / "proj")
    flood = [f"{project}/s{i:05}.sock" for i in range(MAX_SOCKETS + 700)]
    assert outside([*flood, "/zz/daemon.sock"], [project]) == ["/zz/daemon.sock"]
    with pytest.raises(TooManySockets):
        outside([*flood, "/zz/daemon.sock"], [str(tmp_path / "proj" / "narrowed")])
