"""Run a server module under cProfile in every thread (not just the main one); dump merged stats at exit.

    python bench/profile_server.py OUT.prof MODULE [ARGS...]

`python -m cProfile` profiles the main thread only, but an SDK server reads stdin and runs blocking tool
work on anyio worker threads. Here every thread started after launch gets its own profiler (via
threading.setprofile); at exit all are merged into OUT.prof. SIGUSR1 clears every profiler, so a caller
can drop start-up and warm-up before the calls it wants to see.

Caveat of cProfile: C code called directly from C (e.g. the stdin `TextIOWrapper.readline` that anyio's
worker thread runs through `Context.run`) is not an entry of its own; it counts as the caller's own time.
"""

from __future__ import annotations

import atexit
import cProfile
import pstats
import runpy
import signal
import sys
import threading
from types import FrameType
from typing import Any


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, module = sys.argv[1], sys.argv[2]
    sys.argv = [module, *sys.argv[3:]]
    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()

    def start_in_thread(*_: Any) -> None:
        prof = cProfile.Profile()
        with lock:
            profiles.append(prof)
        prof.enable()  # replaces this hook for the rest of the thread's life

    def clear(_signum: int, _frame: FrameType | None) -> None:
        with lock:
            for prof in profiles:
                prof.clear()

    def dump() -> None:
        main_prof.disable()
        stats: pstats.Stats | None = None
        with lock:
            for prof in profiles:
                prof.create_stats()
                if not getattr(prof, "stats", None):
                    continue  # a thread that ran nothing since the last clear
                stats = pstats.Stats(prof) if stats is None else stats.add(prof)
        if stats is not None:
            stats.dump_stats(out)

    threading.setprofile(start_in_thread)
    signal.signal(signal.SIGUSR1, clear)
    main_prof = cProfile.Profile()
    profiles.append(main_prof)
    atexit.register(dump)
    main_prof.enable()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
