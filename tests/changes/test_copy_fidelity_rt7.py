"""Red team 7 (issue 40, "the copy is faithful"): what it found, each checked to fail on the code before.

F1 a background job's look lands a sparse file dense (holes written as zeros).
F2 a file with several names that is sparse: its pre-image is copied dense and counted by its apparent size (a
   one-byte append to a 300 MiB sparse file with two names fails the call; at 60 MiB it costs 60 MiB of history).
F3 a background job's look drops the ACL a new file or directory inherits from its directory's default ACL.
F4 a new hard link of a project file with an ACL is reported as an ACL "a command sets", "left out" (refused).
F5 renameat2(RENAME_EXCHANGE) of two names of one file: a no-op natively; through the box it sets both
   directories' modification times to now.
F6 a sparse project file carrying a user.overlay.* attribute is replicated dense into the escape layer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.acls import acls, acls_work, project
from support.boxed import run, shell
from support.differential import differential
from support.differential import native as run_natively
from support.fidelity import differences, snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

OLDT = 1_000_000_000 * 10**9


def du_kib(path: Path) -> int:
    return int(subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True).stdout.split()[0])


async def job(client: Any, root: Path, command: str) -> list[dict[str, Any]]:
    """``command`` as a job (a look after 1.5 s, then every 3 s until it ends): each look's result."""
    looks = [await run(client, command, cwd=str(root), yieldAfterSeconds=1.5)]
    with anyio.fail_after(120):
        while looks[-1]["status"] == "running":
            looks.append(await run(client, "", jobId=looks[0]["jobId"], yieldAfterSeconds=3))
    return looks


# F1 ------------------------------------------------------------------------------------------------------------
async def test_a_jobs_look_lands_a_sparse_file_sparse(workspace: Path) -> None:
    command = "truncate -s 40M sp.bin && echo x >> sp.bin; sleep 4"
    nat = workspace.parent / "native"
    nat.mkdir()
    run_natively(nat, command.replace("; sleep 4", ""))
    async with shell(workspace) as client:
        looks = await job(client, workspace, command)
    assert looks[0]["status"] == "running" and looks[0]["transaction"] == "applied", looks[0]
    native_blocks, boxed_blocks = os.lstat(nat / "sp.bin").st_blocks, os.lstat(workspace / "sp.bin").st_blocks
    assert (workspace / "sp.bin").stat().st_size == (nat / "sp.bin").stat().st_size
    assert boxed_blocks <= native_blocks + 64, (
        f"sp.bin takes {boxed_blocks} blocks ({boxed_blocks // 2048} MiB) after the job, {native_blocks} natively"
    )


# F2 ------------------------------------------------------------------------------------------------------------
def sparse_pair(root: Path, size: int) -> None:
    with open(root / "big.img", "wb") as f:
        f.truncate(size)
        f.write(b"head")
    os.link(root / "big.img", root / "big2.img")


async def test_a_one_byte_append_to_a_sparse_file_with_two_names_applies(workspace: Path) -> None:
    sparse_pair(workspace, 300 << 20)  # 4 KiB on disk, 300 MiB apparent
    async with shell(workspace) as client:
        out = await run(client, "echo x >> big.img", cwd=str(workspace))
    assert out["transaction"] == "applied", (out["transaction"], out["changes"])
    assert (workspace / "big2.img").read_bytes()[-2:] == b"x\n"


async def test_the_pre_image_of_a_sparse_file_with_two_names_stays_sparse(workspace: Path) -> None:
    sparse_pair(workspace, 60 << 20)
    state = Path(os.environ["XDG_STATE_HOME"])
    before = du_kib(state)
    async with shell(workspace) as client:
        out = await run(client, "echo x >> big.img", cwd=str(workspace))
    assert out["transaction"] == "applied", out["changes"]
    grown = du_kib(state) - before
    assert grown < 4096, f"the history grew by {grown} KiB to keep a file holding 4 bytes of data"


# F3 ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["echo new > shared/new.txt", "mkdir shared/nd && echo x > shared/nd/f"])
async def test_a_jobs_look_keeps_the_acl_a_new_entry_inherits(workspace: Path, command: str) -> None:
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    nat, box = workspace.parent / "native", workspace / "p"
    for r in (nat, box):
        r.mkdir()
        project(r)
    run_natively(nat, command)
    async with shell(workspace) as client:
        looks = await job(client, box, command + "; sleep 4")
    assert looks[0]["transaction"] == "applied", looks[0]  # the look landed it
    assert not differences(snapshot(nat), snapshot(box))
    native_acls, boxed_acls = acls(nat), acls(box)
    assert boxed_acls == native_acls, "differ: " + str(
        {
            k: (native_acls.get(k), boxed_acls.get(k))
            for k in set(native_acls) | set(boxed_acls)
            if native_acls.get(k) != boxed_acls.get(k)
        }
    )


# F4 ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["ln acl.txt plain/l", "ln acl.txt shared/l"])
async def test_a_new_name_of_a_file_with_an_acl_is_no_refusal(workspace: Path, command: str) -> None:
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    problems, out = await differential(workspace, project, command)
    assert not problems, "\n".join(problems)
    assert acls(workspace / "p") == acls(workspace.parent / "native")  # the tree is right ...
    assert not out["changes"]["refused"], out["changes"]["paths"]  # ... but the result says an ACL was left out


# F5 ------------------------------------------------------------------------------------------------------------
def linked_pair(root: Path) -> None:
    (root / "hello.txt").write_text("hello\n")
    (root / "sub").mkdir(exist_ok=True)
    os.link(root / "hello.txt", root / "sub" / "h2")
    for p in ("hello.txt", "sub", "."):
        os.utime(root / p, ns=(OLDT, OLDT))


EXCHANGE = (
    'python3 -c "import ctypes; l=ctypes.CDLL(None, use_errno=True); '
    "print(l.renameat2(-100, b'hello.txt', -100, b'sub/h2', 2), ctypes.get_errno())\""
)


async def test_exchange_of_two_names_of_one_file_changes_nothing(workspace: Path) -> None:
    problems, _out = await differential(workspace, linked_pair, EXCHANGE)
    assert not problems, "\n".join(problems)


# F6 ------------------------------------------------------------------------------------------------------------
async def test_a_marked_sparse_file_is_not_copied_dense_for_a_call_beside_it(workspace: Path, tmp_path: Path) -> None:
    with open(workspace / "vm.img", "wb") as f:
        f.truncate(150 << 20)
    os.setxattr(workspace / "vm.img", "user.overlay.note", b"1")  # the project's own attribute (data)
    before = du_kib(tmp_path)
    async with shell(workspace) as client:
        await run(client, "echo hi > x.txt", cwd=str(workspace))
        grown = du_kib(tmp_path) - before
        big = subprocess.run(["find", str(tmp_path), "-type", "f", "-size", "+10M"], capture_output=True,
                             text=True).stdout  # fmt: skip
    assert grown < 20_000, f"the disk took {grown} KiB more for a call writing 3 bytes; large files: {big}"
