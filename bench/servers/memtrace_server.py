"""Run mcp-server-shell-exec under tracemalloc and say where a call's Python memory peaks.

    python bench/servers/memtrace_server.py OUT.jsonl [SERVER ARGS...]

Wraps the server's process runners (``run`` without the box, ``run_boxed`` in it: the command, its two bounded
output buffers, the rendering of head + tail into text) and splits each call at the end of it. SIGUSR2 appends
one JSON line to OUT.jsonl for the call that last ran, in bytes of traced Python allocations:

  run_peak          peak during run() over the traced memory when run() began (buffers, chunks, rendered text)
  run_retained      still allocated when run() returned (the rendered stdout/stderr)
  after_run_peak    peak from run()'s return until the signal, over the traced memory when run() began: the
                    output model, its text block, model_dump, CallToolResult and the SDK's response (JSON
                    encoding, `json + "\\n"`, the TextIOWrapper's bytes) - send the signal once the response
                    line has arrived
  vm_hwm / vm_rss   the process's peak and current resident set (bytes), for scale

tracemalloc sees Python's allocators only: pydantic-core's Rust buffer for model_dump_json and the kernel's
pipe buffers are not in it (VmHWM has them). Tracing slows every allocation, so time nothing through this.
"""

from __future__ import annotations

import json
import runpy
import signal
import sys
import tracemalloc
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

MODULE = "mcp_server_shell_exec"


def proc_status() -> dict[str, int]:
    found: dict[str, int] = {}
    with open("/proc/self/status") as f:
        for line in f:
            key = line.split(":", 1)[0]
            if key in ("VmHWM", "VmRSS"):
                found[key.lower().replace("vm", "vm_")] = int(line.split()[1]) * 1024
    return found


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    sys.argv = [MODULE, *sys.argv[2:]]
    tracemalloc.start()
    from mcp_server_guard.shell import execution  # after tracemalloc.start(): its imports are traced too

    state: dict[str, int] = {}

    def traced(original: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def traced_run(*args: Any, **kwargs: Any) -> Any:
            start = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            try:
                return await original(*args, **kwargs)
            finally:
                current, peak = tracemalloc.get_traced_memory()
                tracemalloc.reset_peak()
                state.update(start=start, run_peak=peak - start, run_retained=current - start)

        return traced_run

    def report(_signum: int, _frame: FrameType | None) -> None:
        current, peak = tracemalloc.get_traced_memory()
        start = state.get("start", current)
        line = {
            "run_peak": state.get("run_peak", 0),
            "run_retained": state.get("run_retained", 0),
            "after_run_peak": peak - start,
            "retained_now": current - start,
            **proc_status(),
        }
        with open(out, "a") as f:
            f.write(json.dumps(line) + "\n")

    # ShellExec.execute looks both names up in its module at call time.
    for name in ("run", "run_boxed"):
        vars(execution)[name] = traced(vars(execution)[name])
    signal.signal(signal.SIGUSR2, report)
    runpy.run_module(MODULE, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
