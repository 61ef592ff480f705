"""The change pipeline in one process, CPU time: reading a copy's upper layer, judging it, applying it
(``read_upper``, ``judge``, ``Applier.apply``), the least of several fresh copies each.

    uv run python -m bench.pipeline [--rounds 5]
    OTHER/.venv/bin/python bench/pipeline.py [--rounds 5]   # another build's library, this script

Each round makes a fresh project and runs the workload's shell on an overlay of it in a private user and mount
namespace (``unshare -Urm``, as the box mounts a copy; not timed), then times the three stages with
``time.process_time``. The second form times another build's library with the same workloads (an earlier commit's
virtual environment: before and after in one run, interleaved round by round when both are given to ``--against``).

Workloads: 20,000 small files in a new directory; ``git add -A && git commit`` of 100 changed files; 50 directories
of 20 files each, where one file in every directory has a second name in another, all moved (``mv``) and copied
(``cp -a``): the matching of names of files with several names.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# The library of the interpreter running this (another build's, run with its own python).
from mcp_server_guard import load_policy, protection_for
from mcp_server_guard.changes import Applier, judge, read_upper
from mcp_server_guard.files import HistoryStore

GIT = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x"}


def _git_project(root: Path) -> None:
    for i in range(100):
        (root / f"f{i}.txt").write_text(f"line {i}\n")
    subprocess.run("git init -q && git add -A && git commit -qm init", shell=True, cwd=root, check=True,
                   env={**os.environ, **GIT})  # fmt: skip
    for i in range(100):
        with open(root / f"f{i}.txt", "a") as f:
            f.write("more\n")


def _linked_project(root: Path) -> None:
    for d in range(50):
        (root / f"d{d}").mkdir()
        for i in range(20):
            (root / f"d{d}" / f"f{i}").write_text(f"{d} {i}\n")
    for d in range(50):
        os.link(root / f"d{d}" / "f0", root / f"d{(d + 1) % 50}" / f"x{d}")


WORKLOADS: dict[str, tuple[Callable[[Path], None], str]] = {
    "20,000 small files in a new directory": (
        lambda root: None,
        "mkdir new && cd new && for i in $(seq 1 20000); do echo $i > f$i; done",
    ),
    "git commit of 100 changed files": (_git_project, "git add -A && git commit -qm more"),
    "50 directories with linked files moved and copied": (
        _linked_project,
        "for d in $(seq 0 24); do mv d$d m$d; cp -a m$d c$d; done",
    ),
}


def _round(base: Path, setup: Callable[[Path], None], script: str) -> dict[str, float]:
    root, upper, work, history = base / "root", base / "upper", base / "work", base / "history"
    for d in (root, upper, work, history):
        d.mkdir(parents=True)
    setup(root)
    real = os.stat(root)
    os.chmod(upper, stat.S_IMODE(real.st_mode))
    os.utime(upper, ns=(real.st_atime_ns, real.st_mtime_ns))
    mounted = (stat.S_IMODE(real.st_mode), real.st_mtime_ns)
    started = time.time_ns()
    mount = (
        f"mount -t overlay overlay -o lowerdir={root},upperdir={upper},workdir={work},userxattr {root} "
        f"&& cd {root} && {script}"
    )
    subprocess.run(["unshare", "-Urm", "sh", "-ec", mount], check=True, capture_output=True, env={**os.environ, **GIT})
    policy = load_policy()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        t0 = time.process_time()
        try:
            changes = read_upper(str(upper), fd, str(root), mounted=mounted)
        except TypeError:  # a build from before the root's own mode and time were read
            changes = read_upper(str(upper), fd, str(root))
        t1 = time.process_time()
    finally:
        os.close(fd)
    protection = protection_for(policy)
    judgement = judge([changes], protection, policy.effects, [str(root)])
    t2 = time.process_time()
    applier = Applier(HistoryStore(history, 1 << 34, 100_000))
    applier.apply([changes], "bench", started)
    t3 = time.process_time()
    del judgement
    return {"read": (t1 - t0) * 1000, "judge": (t2 - t1) * 1000, "apply": (t3 - t2) * 1000}


def measure(rounds: int) -> dict[str, dict[str, float]]:
    """Per workload, the least CPU time of each stage (ms) over ``rounds`` fresh copies, and of their total."""
    found: dict[str, dict[str, float]] = {}
    for name, (setup, script) in WORKLOADS.items():
        best: dict[str, float] = {}
        for _ in range(rounds):
            base = Path(tempfile.mkdtemp(prefix="mcp-guard-pipeline-"))
            try:
                got = _round(base, setup, script)
            finally:
                shutil.rmtree(base, ignore_errors=True)
            got["total"] = sum(got.values())
            best = {k: min(v, best.get(k, v)) for k, v in got.items()}
        found[name] = best
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON (for --against)")
    parser.add_argument("--against", metavar="OTHER_VENV_BIN", help="also time another build's library")
    args = parser.parse_args(argv)
    results: dict[str, dict[str, dict[str, float]]] = {"this build": {}}
    if args.against:
        results["other build"] = {}
    # Interleaved round by round (the other build one round at a time in its own interpreter): a machine whose
    # speed drifts treats both alike.
    for _ in range(args.rounds):
        got = {"this build": measure(1)}
        if args.against:
            done = subprocess.run([str(Path(args.against) / "python"), __file__, "--rounds", "1", "--json"],
                                  capture_output=True, text=True, check=True, timeout=3600)  # fmt: skip
            got["other build"] = json.loads(done.stdout)
        for label, figures in got.items():
            for name, stages in figures.items():
                best = results[label].setdefault(name, dict(stages))
                results[label][name] = {k: min(v, best[k]) for k, v in stages.items()}
    if args.json:
        print(json.dumps(results["this build"]))
        return
    for name in WORKLOADS:
        print(name)
        for label in results:
            r = results[label][name]
            print(f"  {label:12} read {r['read']:8.1f}  judge {r['judge']:8.1f}  apply {r['apply']:8.1f}  "
                  f"total {r['total']:8.1f} ms CPU")  # fmt: skip


if __name__ == "__main__":
    main()
