"""Observation only (on PYTHONPATH of a server started by test_rt185_probe): every Python process started with
``-c`` (the server's network-namespace probe) writes, to $RT185_SEEN, the pids cgroup it was born in and that cgroup's
pids.max at that moment. Changes nothing."""

import os
import sys

_seen = os.environ.get("RT185_SEEN")
if _seen and sys.argv and sys.argv[0] == "-c":
    try:
        where, budget = "?", "?"
        with open("/proc/self/cgroup", encoding="ascii") as fh:
            for line in fh:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if "pids" in controllers.split(","):
                    where = "/sys/fs/cgroup/pids" + path
                    break
        if where != "?":
            if where.rstrip("/") == "/sys/fs/cgroup/pids":
                budget = "(root cgroup)"
            else:
                with open(os.path.join(where, "pids.max"), encoding="ascii") as fh:
                    budget = fh.read().strip()
        with open(_seen, "a", encoding="ascii") as fh:
            fh.write(f"{os.getpid()} {where} {budget}\n")
    except OSError:
        pass
