"""Run a server module with a probe on its event loop: how late a timer fires (the loop's lag), how long the loop
runs callbacks and how much of that on a CPU, which callbacks held it longest, and the loop thread's time on a CPU
and waiting in the run queue for one (the machine's contention, apart from what the loop itself does).

    python bench/servers/lag_server.py OUT.json MODULE [ARGS...]

SIGUSR1 writes what was seen since the previous SIGUSR1 to OUT.json (atomically, with a sequence number), then
starts afresh: a caller brackets the stretch it wants to see with two signals.

The probe is asyncio's own callbacks, timed: every ``Handle._run`` (task steps, I/O callbacks, timers) is timed
with perf_counter and thread_time, and a timer re-armed every PROBE_S reports how late it ran. A callback that
took more than SLOW_S is named (its task's name, and where its coroutine stopped). Only the first loop made on
the main thread is probed (the server's). The threads' times come from /proc/self/task/*/schedstat.
"""

from __future__ import annotations

import asyncio
import json
import os
import runpy
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

PROBE_S = 0.005
SLOW_S = 0.002


class Seen:
    """What one phase saw."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.busy_s = 0.0  # in callbacks
        self.busy_cpu_s = 0.0  # of it, on a CPU
        self.callbacks = 0
        self.lags: list[float] = []
        self.slow: dict[str, list[float]] = {}  # label -> [count, total s, max s, s on a CPU]

    def report(self, seq: int) -> dict[str, Any]:
        wall = time.perf_counter() - self.started
        slow = sorted(self.slow.items(), key=lambda kv: kv[1][1], reverse=True)[:15]
        return {
            "seq": seq,
            "wall_s": wall,
            "busy_s": self.busy_s,
            "busy_cpu_s": self.busy_cpu_s,
            "callbacks": self.callbacks,
            "lags_s": self.lags,
            "slow": [{"label": k, "count": int(v[0]), "total_s": v[1], "max_s": v[2], "cpu_s": v[3]} for k, v in slow],
            "threads": thread_cpu(),
            "loop_thread": schedstat(threading.main_thread().native_id or 0),
        }


def schedstat(tid: int) -> list[float]:
    """[seconds on a CPU, seconds waiting in the run queue for one] of thread ``tid`` so far."""
    try:
        return [int(x) / 1e9 for x in Path(f"/proc/self/task/{tid}/schedstat").read_text().split()[:2]]
    except (OSError, ValueError):
        return [0.0, 0.0]


def thread_cpu() -> dict[str, list[float]]:
    """Every thread of this process, by name (threads of one name summed): ``schedstat``."""
    out: dict[str, list[float]] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            name = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
        except OSError:
            continue
        entry = out.setdefault(name, [0.0, 0.0])
        for i, value in enumerate(schedstat(int(tid))):
            entry[i] += value
    return out


def label(callback: Callable[..., Any]) -> str:
    """A task step as its coroutine and where it stands now; any other callback as its qualified name."""
    task = getattr(callback, "__self__", None)
    if isinstance(task, asyncio.Task):
        coro: Any = task.get_coro()
        inner = coro
        while getattr(inner, "cr_await", None) is not None and hasattr(inner.cr_await, "cr_code"):
            inner = inner.cr_await
        frame = getattr(inner, "cr_frame", None)
        where = f"{inner.cr_code.co_qualname}:{frame.f_lineno}" if frame is not None else "done"
        return f"task {task.get_name()} (now at {where})"
    func = getattr(callback, "func", callback)  # functools.partial
    return str(getattr(func, "__qualname__", repr(func)))


class Probe:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.seen = Seen()
        self.seq = 0
        self.loop: asyncio.AbstractEventLoop | None = None

    def install(self) -> None:
        probe = self
        original = asyncio.Handle._run

        def timed(handle: asyncio.Handle) -> None:
            if probe.loop is None or handle._loop is not probe.loop:  # type: ignore[attr-defined]
                original(handle)
                return
            t0, c0 = time.perf_counter(), time.thread_time()
            original(handle)
            took, cpu = time.perf_counter() - t0, time.thread_time() - c0
            seen = probe.seen
            seen.busy_s += took
            seen.busy_cpu_s += cpu
            seen.callbacks += 1
            if took > SLOW_S:
                entry = seen.slow.setdefault(label(handle._callback), [0, 0.0, 0.0, 0.0])  # type: ignore[attr-defined]
                entry[0] += 1
                entry[1] += took
                entry[2] = max(entry[2], took)
                entry[3] += cpu

        asyncio.Handle._run = timed  # type: ignore[method-assign,assignment]

        class Policy(asyncio.DefaultEventLoopPolicy):
            def new_event_loop(self) -> asyncio.AbstractEventLoop:
                loop = super().new_event_loop()
                if probe.loop is None and threading.current_thread() is threading.main_thread():
                    probe.loop = loop
                    loop.call_soon(probe.tick, loop.time() + PROBE_S)
                return loop

        asyncio.set_event_loop_policy(Policy())
        signal.signal(signal.SIGUSR1, self.dump)

    def tick(self, due: float) -> None:
        assert self.loop is not None
        now = self.loop.time()
        self.seen.lags.append(max(0.0, now - due))
        self.loop.call_at(now + PROBE_S, self.tick, now + PROBE_S)

    def dump(self, _signum: int, _frame: FrameType | None) -> None:
        seen, self.seen = self.seen, Seen()
        self.seq += 1
        tmp = self.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(seen.report(self.seq)))
        os.replace(tmp, self.out)


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, module = Path(sys.argv[1]), sys.argv[2]
    sys.argv = [module, *sys.argv[3:]]
    Probe(out).install()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
