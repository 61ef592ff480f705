"""Files larger than the file size limit, on a copy (red teams 40q A, 40r). overlayfs copies a real file up in whole,
under the caller's RLIMIT_FSIZE, when a command only re-modes, touches, links, renames or freshens it: with the limit on
the command, `chmod` of a large project file died of SIGXFSZ and git left `.git/index.lock` behind. A command on a
copy now runs without that limit, and what it does to a file of any size lands as natively (a size check on what
lands refused one end of a move and applied the other: red team 40r). The disk holding the copy is watched instead
(``shell.in_box.DiskWatch``), and the call's /tmp and /dev/shm (memory) are bounded in size."""

from __future__ import annotations

import fcntl
import os
import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.boxed import program, run, shell
from support.differential import Case, differential, differentials, failed

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


@pytest.fixture(autouse=True)
def disk_to_ourselves(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One test of this module at a time across the suite's workers: they measure the disk's free space and fill
    or allocate up to a gigabyte, and another's allocation freed meanwhile moved this one's floor out of reach (a
    fill that never reached it). Other modules write far less."""
    lock = tmp_path_factory.getbasetemp().parent / "disk-filling-tests.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


LIMIT = 1 << 20  # the smallest max_file_size_bytes a policy may set
BIG = 3 * LIMIT + 17
OLD_NS = 1_200_000_000 * 10**9


def limits(directory: Path, **values: int) -> tuple[str, ...]:
    path = directory / "limits.toml"
    path.write_text("[shell_exec]\n" + "".join(f"{k} = {v}\n" for k, v in values.items()), encoding="utf-8")
    return ("--policy", str(path))


def big_project(root: Path) -> None:
    data = random.Random(40).randbytes(BIG)
    for name in ("big1", "big2", "big3", "big4", "big5"):
        (root / name).write_bytes(data[: BIG - len(name)])
        os.utime(root / name, ns=(OLD_NS, OLD_NS))
    (root / "d").mkdir()


async def test_a_file_over_the_size_limit_is_re_moded_touched_linked_and_renamed_as_natively(workspace: Path) -> None:
    command = (
        "chmod 700 big1 && touch -d 2001-01-01 big2 && ln big3 big3.link && mv big4 moved.bin && mv big5 d/ && "
        'chmod 600 d/big5 && python3 -c \'import os; os.setxattr("big1", "user.note", b"kept")\''
    )
    problems, out = await differential(
        workspace, big_project, command, args=limits(workspace.parent, max_file_size_bytes=LIMIT)
    )
    assert not problems, "\n".join(problems)
    assert out["exitCode"] == 0 and out.get("limitHit") is None, out


async def test_git_freshening_a_large_object_leaves_no_lock_behind(workspace: Path) -> None:
    # git add of a file touched but not changed finds its object there and freshens it (a utime): a copy-up.
    (workspace / "big").write_bytes(random.Random(41).randbytes(BIG))
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "big"]):
        subprocess.run(["git", *argv], cwd=workspace, env=env, check=True)
    async with shell(workspace, None, *limits(workspace.parent, max_file_size_bytes=LIMIT)) as client:
        out = await run(client, "touch big && git add big && git status --porcelain && echo fine")
    assert out["exitCode"] == 0 and out["stdout"] == "fine\n" and out.get("limitHit") is None, out
    assert not (workspace / ".git" / "index.lock").exists()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=workspace, capture_output=True, text=True, check=True)
    assert status.stdout == ""


# Writes 100 MB to the file it is given, a megabyte at a time; says how it ended.
FILL = """
try:
    with open(sys.argv[1], "wb") as f:
        for _ in range(100):
            f.write(bytes(1 << 20))
    print("wrote all")
except OSError as exc:
    print(errno.errorcode[exc.errno], os.path.getsize(sys.argv[1]) <= 64 << 20)
"""


def parts_project(root: Path) -> None:
    big_project(root)
    for name in ("part1", "part2"):
        (root / name).write_bytes(random.Random(name).randbytes(700_000))
    (root / "small.txt").write_text("small\n")
    (root / "old.bin").write_text("old\n")
    (root / "d" / "big.bin").write_bytes(random.Random(42).randbytes(BIG))


GROWN_PAST_THE_LIMIT = [
    "head -c 3000000 /dev/zero > new.bin && cat big1 >> big2 && truncate -s 2000000 big3",
    # red team 40r F1-F4: each lost a file or split a link when what lands was bounded by size
    "mv d d2 && echo x >> d2/big.bin",
    "mv -f big4 old.bin && echo x >> old.bin",
    "cat part1 part2 > joined.bin && rm part1 part2",
    "ln small.txt s2 && head -c 3000000 /dev/zero >> s2",
]


async def test_a_file_a_command_grows_past_the_size_limit_on_its_copy_lands_as_natively(workspace: Path) -> None:
    """Every command through one server (each in copies of its own): each failing one is named."""
    args = limits(workspace.parent, max_file_size_bytes=LIMIT)
    cases = await differentials(workspace, parts_project, GROWN_PAST_THE_LIMIT, args=args)

    def landed(case: Case) -> list[str]:
        if case.out["exitCode"] == 0 and not case.out["changes"]["refused"]:
            return case.found
        return [*case.found, f"exit {case.out['exitCode']}, refused {case.out['changes']['refused']}: {case.out}"]

    assert not (problems := failed(cases, landed)), problems


async def test_a_sparse_file_in_a_directory_a_command_renames_stays_sparse(workspace: Path) -> None:
    # Red team 40r F7: the box's move helper copies a renamed directory; it wrote every hole of a sparse image.
    def sparse_project(root: Path) -> None:
        (root / "vm").mkdir()
        with open(root / "vm" / "disk.img", "wb") as image:
            image.truncate(64 << 20)
            image.seek(30 << 20)
            image.write(b"data in the middle")
        os.utime(root / "vm" / "disk.img", ns=(OLD_NS, OLD_NS))

    problems, _out = await differential(workspace, sparse_project, "mv vm vm2 && touch vm2/new")
    assert not problems, "\n".join(problems)
    assert (workspace / "p" / "vm2" / "disk.img").stat().st_blocks * 512 < 1 << 20


async def test_a_calls_memory_backed_tmp_holds_no_more_than_its_memory_limit(workspace: Path) -> None:
    args = limits(workspace.parent, max_memory_bytes=64 << 20)
    fill = program(workspace, "fill", FILL)
    async with shell(workspace, None, *args) as client:
        out = await run(client, f"{fill} /tmp/x; {fill} /dev/shm/y; stat -f -c %c /tmp /dev/shm")
    # and no more entries than one per 8 KiB of that (empty files take kernel memory no size counts)
    assert out["stdout"].split() == ["ENOSPC", "True", "ENOSPC", "True", "8192", "8192"], out


async def test_the_disk_watch_stops_a_call_at_its_floor_or_past_half_of_what_was_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcp_server_guard.shell.in_box import DiskWatch

    free = {"a": 10_000, "b": 1_000}
    monkeypatch.setattr("mcp_server_guard.shell.in_box._free_bytes", lambda path: free[path])
    killed: list[str] = []
    watch = DiskWatch(["a", "b", "a"], 4_000, lambda: killed.append("call"))
    watch.measure()
    assert watch.floors == {"a": 4_000, "b": 500}  # b had no more than the floor free: half of it
    assert watch.room == 500  # what one file may take (the call's RLIMIT_FSIZE): the least room above a floor
    assert not watch.check()
    free["b"] = 499
    assert watch.check()
    free["b"], free["a"] = 1_000, 3_999
    assert watch.check()
    free["a"] = 10_000

    async def fill() -> None:
        await anyio.sleep(0.6)
        free["a"] = 3_000

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(fill)
            await watch.run()  # looks until the floor is reached, then stops the call
    assert killed == ["call"] and watch.low


async def test_attack_a_late_first_measure_does_not_leave_the_command_unwatched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A full run on CI: the measure before the start (bounded at a second) came late on a loaded machine, the watch
    # had no floors and ended at once, and a command wrote 1 GiB past the floor unstopped. The watch measures then.
    from mcp_server_guard.shell.in_box import DiskWatch

    free, looks = {"a": 10_000}, []

    def free_bytes(path: str) -> int:
        looks.append(path)
        if len(looks) == 1:
            raise OSError(5, "the first statfs failed")  # as a look abandoned past its bound leaves it: no floors
        return free[path]

    monkeypatch.setattr("mcp_server_guard.shell.in_box._free_bytes", free_bytes)
    killed: list[str] = []
    watch = DiskWatch(["a"], 4_000, lambda: killed.append("call"))
    await watch.look(watch.measure)
    assert watch.floors == {}

    async def fill() -> None:
        while not watch.floors:
            await anyio.sleep(0.05)
        free["a"] = 3_000

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(fill)
            await watch.run()
    assert watch.floors == {"a": 4_000} and killed == ["call"] and watch.low


FILL_MARGIN = 384 << 20  # the floor below what is free, for the fills of up to 1 GiB


@pytest.fixture
def disk_alone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The tests that set a disk floor below what is free now run one at a time across the suite's workers: another
    one's fill of up to 1 GiB, freed meanwhile, kept a floor from being crossed (a rare failure under load)."""
    lock = tmp_path_factory.getbasetemp().parent / "disk-floor.lock"
    with open(lock, "a") as held:
        deadline = time.monotonic() + 600
        while True:
            try:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pytest.fail("another disk-floor test held the disk for 10 minutes")
                time.sleep(0.2)  # (bounded by the deadline above)
        yield


def _floor_below_free(workspace: Path, margin: int) -> tuple[str, ...]:
    """A policy whose disk floor lies ``margin`` bytes below what is free now (skipped with little free)."""
    fs = os.statvfs(workspace)
    free = fs.f_bavail * fs.f_frsize
    if free < 2 << 30:
        pytest.skip("less than 2 GiB free here")
    return limits(workspace.parent, min_free_disk_bytes=free - margin)


@pytest.mark.usefixtures("disk_alone")
async def test_a_command_filling_the_disk_of_its_copy_is_stopped_and_says_so(workspace: Path) -> None:
    # The floor 384 MiB below what is free now: the command's first 384 MiB reach it (it writes up to 1 GiB, in
    # files of 8 MiB: each under what one file may take). The margin leaves room for what the suite's other workers
    # write and free meanwhile on the same disk (a 64 MiB margin was crossed by another test's spool first).
    args = _floor_below_free(workspace, FILL_MARGIN)
    fill = "for i in $(seq 128); do head -c 8388608 /dev/zero > fill$i.bin; done; echo never"
    async with shell(workspace, None, *args) as client:
        with anyio.fail_after(90):
            result = await client.call_tool("shell_exec", {"command": fill, "timeoutSeconds": 60})
        after: dict[str, Any] = await run(client, "echo still here")
    out = dict(result.structured_content)
    assert out.get("limitHit") == "disk" and out["timedOut"] is False and "never" not in out["stdout"], out
    assert "stopped: the disk holding its copy was nearly full; nothing it did was applied" in result.content[0].text
    assert out["transaction"] == "none" and not list(workspace.glob("fill*"))  # its copy is gone: space again
    assert after["stdout"] == "still here\n"


@pytest.mark.skipif(shutil.which("fallocate") is None, reason="util-linux fallocate is missing")
@pytest.mark.usefixtures("disk_alone")
async def test_attack_one_allocation_cannot_take_the_disk_past_its_floor_between_two_looks(workspace: Path) -> None:
    # Red team 40r F5: `fallocate -l 1500M` went 1.26 GB past the floor before the watch's next look. No one file
    # may now take more than what is above the floor when the call starts (its RLIMIT_FSIZE).
    args = _floor_below_free(workspace, 64 << 20)
    async with shell(workspace, None, *args) as client:
        out = await run(client, "fallocate -l 1G big.bin; echo $?; ls -s big.bin")
    assert out["stdout"].split()[0] != "0", out  # refused at once (File too large)
    assert not (workspace / "big.bin").exists() or (workspace / "big.bin").stat().st_size <= 64 << 20


@pytest.mark.skipif(shutil.which("fallocate") is None, reason="util-linux fallocate is missing")
@pytest.mark.usefixtures("disk_alone")
async def test_attack_a_command_ending_between_two_looks_below_the_floor_applies_nothing(workspace: Path) -> None:
    # Red team 40s F2: a fast command (allocations end at once) took the disk below the floor before the first
    # look and landed. One more look when it ends: nothing applied, its copy gone. It allocates 480 MiB, each file
    # under what one may take (64 MiB above the floor): past the floor even when the suite's other workers free a few
    # hundred MiB meanwhile (120 MiB was once not enough, in CI).
    args = _floor_below_free(workspace, 64 << 20)
    async with shell(workspace, None, *args) as client:
        out = await run(client, "for i in $(seq 12); do fallocate -l 40M f$i.bin; done")
    assert out.get("limitHit") == "disk" and out["transaction"] == "none", out
    assert not list(workspace.glob("f*.bin"))


@pytest.mark.usefixtures("disk_alone")
async def test_a_job_stopped_for_the_disk_keeps_what_its_looks_applied_and_says_the_rest_went(workspace: Path) -> None:
    # Red team 40s F3: its end stayed "waiting" (its copy was gone) and the result said nothing had been applied.
    args = _floor_below_free(workspace, FILL_MARGIN)
    fill = "for i in $(seq 128); do head -c 8388608 /dev/zero > fill$i.bin; done"
    async with shell(workspace, None, *args) as client:
        # A look lands a.txt before the fill begins (a loaded machine may start the job late: looks every second,
        # with six before the fill).
        first = await run(client, f"echo a > a.txt; sleep 6; {fill}; echo never", yieldAfterSeconds=1.5)
        looks = [first]
        with anyio.fail_after(60):
            while looks[-1]["transaction"] != "applied":
                assert looks[-1]["status"] == "running", looks[-1]
                looks.append(await run(client, "", jobId=first["jobId"], yieldAfterSeconds=1))
            assert not list(workspace.glob("fill*")), looks[-1]  # (the look came before the fill)
            while looks[-1]["status"] == "running":
                looks.append(await run(client, "", jobId=first["jobId"], yieldAfterSeconds=2))
        again = await run(client, "", jobId=first["jobId"])
    assert (workspace / "a.txt").read_text() == "a\n"  # its look's
    end = looks[-1]
    assert end.get("limitHit") == "disk" and end["transaction"] == "none", end
    assert "since its last look" in end["changes"]["reason"] and again["transaction"] == "none", again
    # What a look during the fill landed stays (a loaded machine may look between two files, or as one is written:
    # as it was then, as natively when a job is stopped); nothing else does. (A result lists its first paths only:
    # the looks' counts of files created tell how many.)
    left = [p for p in workspace.glob("fill*")]
    assert len(left) <= sum(look["changes"]["created"] for look in looks[:-1] if look.get("changes")), (left, end)


async def test_a_jobs_look_copies_a_bounded_number_of_bytes_and_leaves_the_rest_for_its_end(workspace: Path) -> None:
    # Red team 40s F4: a look copies (the job still writes): a 600 MB file copied by a look took the disk twice.
    async with shell(workspace) as client:
        first = await run(
            client, "head -c 83886080 /dev/zero > big.bin; echo s > small.txt; sleep 4", yieldAfterSeconds=2
        )
        assert first["status"] == "running", first
        assert (workspace / "small.txt").exists() and not (workspace / "big.bin").exists()  # waits for the end
        with anyio.fail_after(60):
            end = await run(client, "", jobId=first["jobId"], yieldAfterSeconds=10)
    assert end["status"] == "exited" and (workspace / "big.bin").stat().st_size == 80 << 20, end
