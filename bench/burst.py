"""A burst of concurrent commands on one connection: the box beside ``--sandbox off``, interleaved.

    uv run python -m bench.burst [--calls 100] [--rounds 7]

One shell_exec server per variant (the default box; the default box with a line that could write, ``echo <i> | tee
/dev/null``, which works on a copy where ``echo`` only reads (see ``shell.strings.reading``); ``--network deny``;
``--transactions off``; ``--sandbox off``), started once and warmed up with one burst each. Each round writes
``--calls`` requests of ``echo <i>`` (or the variant's line) at once to every server in turn (the order rotated
each round, so drift hits all alike) and measures the wall time until the last answer; every output is checked.
Also the machine's CPU time during each burst (all processes, from ``/proc/stat``), and the server process's own
(from ``/proc/<pid>/stat``).

The target (issue 27): the default box's median ≤ 1.3 × ``--sandbox off``'s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.client import RawClient, find_server

TARGET_RATIO = 1.3
READS = "echo {i}"
# The variants: the server's flags, and the line each call runs.
VARIANTS: dict[str, tuple[list[str], str]] = {
    "box (default)": ([], READS),
    "box, a line that could write (on a copy)": ([], "echo {i} | tee /dev/null"),
    "box, --network deny": (["--network", "deny"], READS),
    "box, --transactions off": (["--transactions", "off"], READS),
    "--sandbox off": (["--sandbox", "off", "--network", "allow"], READS),
}


def _machine_cpu_s() -> float:
    """Busy CPU time of the whole machine so far (user, nice, system, irq, softirq), in seconds."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def _process_cpu_s(pid: int) -> float:
    parts = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def burst(client: RawClient, calls: int, line: str = READS) -> tuple[float, float, float]:
    """Wall, machine CPU and server CPU seconds of one burst of ``line`` (which prints ``{i}``); every answer
    checked."""
    cpu0, own0, t0 = _machine_cpu_s(), _process_cpu_s(client.pid), time.perf_counter()
    ids = [
        client.send("tools/call", {"name": "shell_exec", "arguments": {"command": line.format(i=i)}})
        for i in range(calls)
    ]
    for i, rid in enumerate(ids):
        result = client.wait(rid)
        out = (result.get("structuredContent") or {}).get("stdout")
        if result.get("isError") or out != f"{i}\n":
            raise RuntimeError(f"call {i}: {str(result)[:300]}")
    return time.perf_counter() - t0, _machine_cpu_s() - cpu0, _process_cpu_s(client.pid) - own0


def measure(calls: int, rounds: int) -> dict[str, dict[str, float]]:
    base = Path(tempfile.mkdtemp(prefix="mcp-guard-burst-"))
    clients: dict[str, RawClient] = {}
    walls: dict[str, list[float]] = {name: [] for name in VARIANTS}
    cpus: dict[str, list[float]] = {name: [] for name in VARIANTS}
    owns: dict[str, list[float]] = {name: [] for name in VARIANTS}
    try:
        for index, (name, (flags, line)) in enumerate(VARIANTS.items()):
            root = base / f"v{index}"
            root.mkdir()
            argv = [find_server("mcp-server-shell-exec"), "--allow-path", str(root)]
            argv += ["--audit-log", str(base / f"{root.name}.jsonl"), *flags]
            clients[name] = RawClient(argv, root, sys.stderr)
            clients[name].initialize()
            burst(clients[name], calls, line)  # warm-up: the box's inits made, the code paths loaded
        names = list(VARIANTS)
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                time.sleep(0.3)  # the last burst's teardown (namespaces, copies) out of the way
                wall, cpu, own = burst(clients[name], calls, VARIANTS[name][1])
                walls[name].append(wall)
                cpus[name].append(cpu)
                owns[name].append(own)
    finally:
        for c in clients.values():
            c.close()
    return {
        name: {
            "wall_s": statistics.median(walls[name]),
            "wall_min_s": min(walls[name]),
            "wall_max_s": max(walls[name]),
            "machine_cpu_ms_per_call": statistics.median(cpus[name]) * 1000 / calls,
            "server_cpu_ms_per_call": statistics.median(owns[name]) * 1000 / calls,
        }
        for name in VARIANTS
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    result = measure(args.calls, args.rounds)
    floor = result["--sandbox off"]["wall_s"]
    print(f"{args.calls} concurrent `echo`, one connection, {args.rounds} rounds interleaved (medians)")
    print("| server | wall (min-max) | x --sandbox off | machine CPU per call | server CPU per call |")
    print("|---|---|---|---|---|")
    for name, r in result.items():
        print(
            f"| {name} | {r['wall_s'] * 1000:.0f} ms ({r['wall_min_s'] * 1000:.0f}-{r['wall_max_s'] * 1000:.0f}) "
            f"| {r['wall_s'] / floor:.2f} | {r['machine_cpu_ms_per_call']:.1f} ms "
            f"| {r['server_cpu_ms_per_call']:.1f} ms |"
        )
    ratio = result["box (default)"]["wall_s"] / floor
    print(f"target: the default box <= {TARGET_RATIO} x --sandbox off: {'met' if ratio <= TARGET_RATIO else 'missed'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
