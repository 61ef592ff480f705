"""Inits that serve calls in turn (``shell.sandbox.worker``), through the real server: a later call in the same
init finds nothing of an earlier one, and the init keeps nothing of the calls it served.

Each test names what a hostile command would try to leave behind for the next call. Which init serves a call shows
from inside as the start time of PID 1 (field 22 of /proc/1/stat): every call's PID namespace is its init's.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from mcp.types import ElicitResult

from support import RawClient, console_script, serve
from support.boxed import Person

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
SX = "mcp-server-shell-exec"
INIT = "cut -d' ' -f22 /proc/1/stat"  # the init serving this call: its start time


async def approve_everything(_ctx: Any, _params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"approve": True})


async def sh(client: Any, command: str) -> dict[str, Any]:
    with anyio.fail_after(60):
        result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 30})
    assert not result.is_error, result
    return dict(result.structured_content)


LEAVE_BEHIND = """
echo secret | tee /tmp/{name} /dev/shm/{name} > /dev/null
python3 -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", {port})); s.listen(); open("/tmp/{name}.up", "w").close(); time.sleep(600)' &
setsid sleep 600.{token} & (setsid sh -c 'sleep 600.{token}' &)
for _ in $(seq 100); do [ -e /tmp/{name}.up ] && break; sleep 0.05; done
echo listening; {init}
"""

LOOK_FOR_IT = """
ls /tmp /dev/shm | grep -c {name} || true
cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c 'sleep 60[0][.]{token}' || true
python3 -c 'import socket
try:
    socket.create_connection(("127.0.0.1", {port}), 2); print("reached")
except OSError:
    print("refused")'
{init}
"""


async def test_nothing_a_call_leaves_behind_reaches_a_later_call_in_the_same_init(workspace: Path) -> None:
    # A call leaves a file in its /tmp and /dev/shm, a listener on the call's loopback (the network namespace is
    # the init's, kept across calls) and setsid daemons. Later calls, in the same init, find none of it.
    name, token, port = f"left-{uuid.uuid4().hex[:8]}", str(uuid.uuid4().int % 10**8), 20000 + uuid.uuid4().int % 20000
    async with serve(SX, workspace, elicitation_callback=approve_everything) as client:
        first = await sh(client, LEAVE_BEHIND.format(name=name, port=port, token=token, init=INIT))
        assert first["stdout"].startswith("listening\n"), first
        first_init = first["stdout"].split()[-1]
        later = [await sh(client, LOOK_FOR_IT.format(name=name, port=port, token=token, init=INIT)) for _ in range(4)]
    inits = [out["stdout"].split()[-1] for out in later]
    assert first_init in inits  # the same init served a later call: what is checked is reuse
    for out in later:
        assert out["stdout"].split()[:3] == ["0", "0", "refused"], out


TAMPER = """
python3 -c 'import resource as r
try:
    r.prlimit(1, r.RLIMIT_NOFILE, (40, 40)); print("lowered")
except OSError as exc:
    print("refused", exc.errno)'
python3 -c 'import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print("shm", libc.shmget({key}, 4096, 0o1666) >= 0)'
{init}
"""

LOOK_AT_LIMITS = """
ulimit -Hn
python3 -c 'import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print("found" if libc.shmget({key}, 0, 0) >= 0 else "gone")'
{init}
"""


async def test_a_call_cannot_leave_limits_or_ipc_objects_for_later_calls_in_its_init(workspace: Path) -> None:
    # A call lowers its init's open-file limit (prlimit on PID 1: the later calls' limits, and a message for
    # them) and leaves a System V shared memory segment (it outlives every process). Later calls in the same init
    # see their own limits and no segment.
    key = 0x5EC7 + uuid.uuid4().int % 1000
    async with serve(SX, workspace, elicitation_callback=approve_everything) as client:
        before = await sh(client, LOOK_AT_LIMITS.format(key=key, init=INIT))
        first = await sh(client, TAMPER.format(key=key, init=INIT))
        later = [await sh(client, LOOK_AT_LIMITS.format(key=key, init=INIT)) for _ in range(4)]
    assert first["stdout"].split()[:4] == ["refused", "1", "shm", "True"], first
    limit = before["stdout"].split()[0]
    assert first["stdout"].split()[-1] in [out["stdout"].split()[-1] for out in later]  # the same init served
    for out in later:
        assert out["stdout"].split()[:2] == [limit, "gone"], out


async def test_a_command_that_follows_its_parent_is_not_killed_early(workspace: Path) -> None:
    # A command that asks to die with its parent (PR_SET_PDEATHSIG: runtimes and supervisors do) lives the whole
    # call: its parent, the thread of the init that started it, stays until the call is over.
    follow = "import ctypes, time; ctypes.CDLL(None).prctl(1, 9); time.sleep(0.5); print('alive')"
    async with serve(SX, workspace, elicitation_callback=approve_everything) as client:
        outs = [await sh(client, f"python3 -c {json.dumps(follow)}") for _ in range(3)]
    assert [out["stdout"] for out in outs] == ["alive\n"] * 3


def _inits(server: int) -> dict[int, int]:
    """The server's box inits (PID 1 of a call's namespaces, grandchildren of the supervisor): pid -> open fds."""
    inits: dict[int, int] = {}
    for proc in psutil.Process(server).children(recursive=True):
        try:
            ancestors = proc.parents()
            if len(ancestors) >= 3 and "supervisor" in " ".join(ancestors[1].cmdline()):
                inits[proc.pid] = len(os.listdir(f"/proc/{proc.pid}/fd"))
        except (psutil.Error, OSError):
            continue
    return inits


def _settled_inits(server: int) -> dict[int, int]:
    """The inits' open files once two looks 50 ms apart agree (an init closes a call's pipes just after answering)."""
    last = _inits(server)
    for _ in range(100):  # bounded: 5 s at most
        time.sleep(0.05)
        now = _inits(server)
        if now == last:
            return now
        last = now
    return last


def test_an_init_that_serves_many_calls_keeps_no_descriptor_of_them(workspace: Path) -> None:
    # Threat: a pipe, socket, listener or ruleset of an earlier call left open in the init (a command's pipes held
    # open, a descriptor a later call's command could be handed by mistake). The inits' open files do not grow.
    (workspace / "a.txt").write_text("a\n")
    raw = RawClient([console_script(SX), "--audit-log", str(workspace.parent / "audit.jsonl")], workspace)
    try:
        raw.initialize()
        rid = iter(range(1, 1000))

        def calls(n: int) -> None:
            for i in range(n):
                command = f"cat a.txt; echo {i} > b.txt; mkdir -p d{i}; mv d{i} e{i}; echo x | cat"
                answer = raw.request(next(rid), "tools/call", {"name": "shell_exec", "arguments": {"command": command}})
                assert answer["result"]["structuredContent"]["stdout"] == "a\nx\n", answer

        calls(6)
        before = _settled_inits(raw.proc.pid)
        calls(20)
        after = _settled_inits(raw.proc.pid)
    finally:
        raw.close()
    assert before and set(before) & set(after), (before, after)  # the same inits served the later calls
    # A descriptor kept per call would add 20; an init may hold fewer later, never more.
    grown = {pid: (before[pid], after[pid]) for pid in before if pid in after and after[pid] > before[pid]}
    assert not grown, (before, after)


def test_a_burst_is_served_by_few_inits_and_every_answer_is_its_own(workspace: Path) -> None:
    raw = RawClient([console_script(SX), "--audit-log", str(workspace.parent / "audit.jsonl")], workspace)
    calls = 40
    try:
        raw.initialize()
        for i in range(calls):
            command = f"echo {i}; {INIT}"
            raw.send(
                {
                    "jsonrpc": "2.0",
                    "id": i + 1,
                    "method": "tools/call",
                    "params": {"name": "shell_exec", "arguments": {"command": command}},
                }
            )
        answers: dict[int, dict[str, Any]] = {}
        while len(answers) < calls:
            message = raw.recv(timeout=60)
            if "id" in message and "method" not in message:
                answers[int(message["id"])] = message
    finally:
        raw.close()
    inits = set()
    for i in range(calls):
        out = answers[i + 1]["result"]["structuredContent"]["stdout"].split()
        assert out[0] == str(i), answers[i + 1]
        inits.add(out[1])
    assert len(inits) < calls, inits  # inits came back for more calls rather than one per call


def _copy_dirs() -> dict[int, str]:
    """The copies in this server's areas now: inode -> name."""
    copies = Path(os.environ["XDG_STATE_HOME"]) / "mcp-guard" / "copies"
    # (the inode as the directory lists it: a copy being taken back is renamed meanwhile)
    return {entry.inode(): entry.name for part in os.scandir(copies) for entry in os.scandir(part.path)}


async def test_an_untouched_copy_is_taken_back_by_its_init_for_its_next_call(workspace: Path) -> None:
    # A command that changes nothing leaves its copy empty: its init takes the copy's directories back for its next
    # call, under a new name (no directory made or removed for it), and the server neither reads nor removes it.
    # A copy that a command changed is applied as ever; no copy is left behind.
    seen: dict[int, set[str]] = {}
    async with serve(SX, workspace, elicitation_callback=approve_everything) as client:
        for i in range(8):
            out = await sh(client, f"rm -f absent.txt; echo {i}; {INIT}")  # a line that could write: on a copy
            assert out["stdout"].split()[0] == str(i) and out["transaction"] == "unchanged", out
            for inode, name in _copy_dirs().items():
                seen.setdefault(inode, set()).add(name)
        changed = await sh(client, "echo new > made.txt")
        assert changed["transaction"] == "applied", changed
        for _ in range(3):
            await sh(client, "true")
        kept = len(_copy_dirs())
    assert max(len(names) for names in seen.values()) >= 2, seen  # a directory served more than one call
    assert (workspace / "made.txt").read_text() == "new\n"
    assert kept <= 8, kept  # the lock, and one copy ready per init (a few): none piles up over the 12 calls


SET_ROOT_XATTR = """python3 -c 'import os, sys
try:
    os.setxattr(".", "user.note", b"from an earlier call"); print("set")
except OSError as exc:
    print("unsupported", exc.errno)'; {init}"""
GET_ROOT_XATTR = """python3 -c 'import os
try:
    print(os.getxattr(".", "user.note").decode().replace(" ", "-"))
except OSError as exc:
    print("none")'; {init}"""


async def test_a_roots_own_attributes_set_by_a_call_never_reach_a_later_call_through_a_taken_back_copy(
    workspace: Path,
) -> None:
    # Threat: a call leaves a message on the root directory itself (an extended attribute lands on its copy's upper
    # directory, which holds no entry): a copy taken back as it is would carry it to the next call in that init. The
    # call's changes are declined here (its tree deletion is asked): nothing of it lands, the root's attribute
    # neither, and no later call may see it. (One that lands is the root's own then: tests/redteam68.)
    (workspace / "d").mkdir()
    for i in range(30):
        (workspace / "d" / f"f{i}.txt").write_text(f"{i}\n")
    async with serve(SX, workspace, elicitation_callback=Person(answer=False)) as client:
        first = await sh(client, SET_ROOT_XATTR.format(init=f"rm -r d; {INIT}"))
        if first["stdout"].split()[0] != "set":
            pytest.skip(f"no user extended attributes here: {first['stdout']}")
        later = [await sh(client, GET_ROOT_XATTR.format(init=INIT)) for _ in range(4)]
    assert first["transaction"] != "applied" and (workspace / "d" / "f0.txt").exists(), first
    assert first["stdout"].split()[-1] in [out["stdout"].split()[-1] for out in later]  # the same init served
    assert [out["stdout"].split()[0] for out in later] == ["none"] * 4, later
    with pytest.raises(OSError):
        os.getxattr(workspace, "user.note")
