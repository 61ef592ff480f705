"""Shared by every section: paths, targets and counts, statistics, /proc readings, test data, the run's Env."""

from __future__ import annotations

import gc
import hashlib
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

BENCH_DIR = Path(__file__).resolve().parent


REPO = BENCH_DIR.parent


RESULTS = BENCH_DIR / "results" / "latest.json"


BARE_SERVER = BENCH_DIR / "servers" / "bare_server.py"


RAW_SERVER = BENCH_DIR / "servers" / "raw_server.py"


TRANSPORT_SERVER = BENCH_DIR / "servers" / "transport_server.py"


PROFILER = BENCH_DIR / "servers" / "profile_server.py"


MEMTRACE_SERVER = BENCH_DIR / "servers" / "memtrace_server.py"


UNCONFINED_SERVER = BENCH_DIR / "servers" / "unconfined_server.py"


WRITE_MODULE = "mcp_server_file_write"


SHELL_MODULE = "mcp_server_shell_exec"


PROTOCOL = "2025-11-25"


INIT_PARAMS = {
    "protocolVersion": PROTOCOL,
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}


SMALL_SIZE = 4096


BIG_SIZE = 10 * 1024 * 1024


LINE_BYTES = 80  # including the newline


BIG_POLICY = "[file_read]\nmax_read_bytes = 16777216\n"


WRITE_POLICY = "[file_write]\nmax_write_bytes = 16777216\nhistory_max_bytes = 67108864\n"


WRITE_TARGET_S = 0.002  # 4 KiB write, median


BASH = ("/bin/bash", "--noprofile", "--norc", "-c")  # how shell_exec runs a command line


ECHO_LINE = "echo hi"


ECHO_TARGET_S = 0.0025  # `echo hi` round trip, median


BIG_OUT_BYTES = 50_000_000


BIG_OUT_LINE = f"head -c {BIG_OUT_BYTES} /dev/zero | tr '\\0' x"


BIG_OUT_TARGET_S = 0.300  # head + tail of 50 MB of output returned


BIG_OUT_RSS_TARGET = 80 * 2**20  # server VmHWM


SLEEP_LINE = "sleep 1"


CONCURRENCY = 16


CONCURRENT_TARGET_S = 1.1  # 16 concurrent `sleep 1`, wall


SANDBOX_TARGET_S = 0.003  # the sandbox's cost on `echo hi`, median over the unconfined server


SANDBOX_IDLE_S = 0.05  # quiet time before each call of section 11's idle round


# shell_exec flags of each server of section 11 (the default is --sandbox auto --sandbox-read all --network allow).
SANDBOX_VARIANTS: dict[str, tuple[str, ...]] = {
    "off": ("--sandbox", "off"),
    "auto": (),
    "deny": ("--network", "deny"),
    "jail": ("--sandbox-read", "jail"),
}


@dataclass(frozen=True)
class Counts:
    spawns: int
    small_calls: int
    small_warmup: int
    sdk_small_calls: int
    big_calls: int
    sdk_big_calls: int
    direct_small: int
    write_calls: int = 500
    write_warmup: int = 50
    big_write_calls: int = 5
    profile_calls: int = 5
    shell_calls: int = 2000
    shell_warmup: int = 200
    shell_floor_calls: int = 2000
    shell_big_calls: int = 10
    shell_concurrent_rounds: int = 3
    shell_profile_calls: int = 1000
    sandbox_calls: int = 2000
    sandbox_parts_calls: int = 500
    sandbox_idle_calls: int = 100


FULL = Counts(
    spawns=15, small_calls=2000, small_warmup=200, sdk_small_calls=300, big_calls=10, sdk_big_calls=3, direct_small=2000
)


QUICK = Counts(
    spawns=3,
    small_calls=200,
    small_warmup=20,
    sdk_small_calls=30,
    big_calls=3,
    sdk_big_calls=1,
    direct_small=200,
    write_calls=100,
    write_warmup=10,
    big_write_calls=2,
    profile_calls=2,
    shell_calls=200,
    shell_warmup=20,
    shell_floor_calls=200,
    shell_big_calls=3,
    shell_concurrent_rounds=1,
    shell_profile_calls=100,
    sandbox_calls=200,
    sandbox_parts_calls=50,
    sandbox_idle_calls=20,
)


def private_env(home: Path, state: Path | None = None) -> dict[str, str]:
    """The environment of servers a bench starts: its own HOME, state directory and servers' registry (which
    otherwise lies in the account's real home and keeps every state directory a bench run ever used: each of them
    is then looked at by every call of every server of the user)."""
    state = state if state is not None else home / "state"
    return {
        **os.environ,
        "HOME": str(home),
        "XDG_STATE_HOME": str(state),
        "MCP_GUARD_RUNTIME_DIR": str(state.parent / "servers"),
    }


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def p95(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return xs[0]
    return statistics.quantiles(xs, n=100, method="inclusive")[94]


def summary(xs: Sequence[float]) -> dict[str, float]:
    return {"n": len(xs), "median_s": median(xs), "p95_s": p95(xs), "min_s": min(xs), "max_s": max(xs)}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (clock-tick resolution, 10 ms here)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status_bytes(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{key} not found")


def vm_hwm_bytes(pid: int) -> int:
    """Peak resident set of a process so far."""
    return proc_status_bytes(pid, "VmHWM")


def vm_rss_bytes(pid: int) -> int:
    return proc_status_bytes(pid, "VmRSS")


def make_text(size: int, seed: int = 0) -> bytes:
    """`size` bytes of lines of exactly LINE_BYTES bytes (the last may be shorter), pseudo-random words."""
    rng = random.Random(seed)
    words = [
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "golf",
        "hotel",
        "india",
        "juliet",
        "kilo",
        "lima",
        "mike",
        "november",
        "oscar",
        "papa",
        "quebec",
        "romeo",
        "sierra",
        "tango",
    ]
    lines: list[str] = []
    total = 0
    while total < size:
        line = ""
        while len(line) < LINE_BYTES - 1:
            line += rng.choice(words) + " "
        line = line[: LINE_BYTES - 1] + "\n"
        lines.append(line)
        total += len(line)
    data = "".join(lines).encode()[:size]
    return data[:-1] + b"\n"


def direct_read(path: Path) -> str:
    with open(path, "rb") as f:
        data = f.read()
    return hashlib.sha256(data).hexdigest()


def time_loop(fn: Callable[[], object], n: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        fn()
    gc.collect()
    times: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


@dataclass
class Env:
    tmp: Path
    root: Path  # server cwd = jail
    small: Path
    big: Path
    policy: Path
    server_cmd: str
    stderr: TextIO
    small_sha: str = ""
    big_sha: str = ""
    write_cmd: str = ""
    write_root: Path = Path()  # file_write server cwd = jail; the in-process floors write here too
    write_policy: Path = Path()
    shell_cmd: str = ""
    shell_root: Path = Path()  # shell_exec server cwd = jail
    sandbox_labels: dict[str, str] = field(default_factory=dict)  # SANDBOX_VARIANTS key -> expected `sandbox`
    notes: list[str] = field(default_factory=list)

    def audit_path(self, name: str) -> Path:
        return self.tmp / f"audit-{name}.jsonl"

    def ours_argv(self, *, big: bool = False, audit: str = "misc") -> list[str]:
        argv = [self.server_cmd, "--audit-log", str(self.audit_path(audit))]
        if big:
            argv += ["--policy", str(self.policy)]
        return argv

    def bare_argv(self) -> list[str]:
        return [sys.executable, str(BARE_SERVER)]

    def write_flags(self, *, big: bool, audit: str) -> list[str]:
        flags = ["--audit-log", str(self.audit_path(audit)), "--history-dir", str(self.tmp / f"history-{audit}")]
        if big:
            flags += ["--policy", str(self.write_policy)]
        return flags

    def write_argv(self, *, big: bool = False, audit: str = "write") -> list[str]:
        return [self.write_cmd, *self.write_flags(big=big, audit=audit)]

    @property
    def shell_sandbox(self) -> str | None:
        """The label the default (sandboxed) server's results must say."""
        return self.sandbox_labels.get("auto")

    def shell_flags(self, *, audit: str) -> list[str]:
        return ["--audit-log", str(self.audit_path(audit))]

    def shell_argv(self, *, audit: str = "shell") -> list[str]:
        return [self.shell_cmd, *self.shell_flags(audit=audit)]

    def sandbox_argv(self, variant: str, *, audit: str) -> list[str]:
        """A shell_exec server with a SANDBOX_VARIANTS entry's flags, or "unconfined": the server with the sandbox
        taken out of its spawn (bench/servers/unconfined_server.py, vfork as before the sandbox)."""
        if variant != "unconfined":
            return [*self.shell_argv(audit=audit), *SANDBOX_VARIANTS[variant]]
        tmpdir = self.tmp / "unconfined-tmp"
        tmpdir.mkdir(exist_ok=True)
        return [sys.executable, str(UNCONFINED_SERVER), str(tmpdir), *self.shell_flags(audit=audit), "--sandbox", "off"]


def trend(times: Sequence[float]) -> dict[str, float]:
    """Median of the first and of the last tenth of a series (growth with the number of calls made)."""
    k = max(len(times) // 10, 1)
    return {"first_tenth_median_s": median(times[:k]), "last_tenth_median_s": median(times[-k:])}


def p99(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return xs[0]
    return statistics.quantiles(xs, n=100, method="inclusive")[98]


def pids_cgroup(pid: int) -> str | None:
    """The pids cgroup a process is in (v1 `pids` hierarchy, else the v2 path), per /proc/PID/cgroup."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    paths = dict(line.split(":", 2)[1:] for line in lines if line.count(":") >= 2)
    return paths.get("pids", paths.get(""))
