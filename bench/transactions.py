"""What working on a copy costs: shell_exec with its copy beside the same server writing the files directly
(``--transactions off``), same run, same machine.

    uv run python -m bench.transactions [--calls 200] [--rounds 3] [--against OTHER_VENV_BIN]

``--against``: also time, in the same run and interleaved with this build, the servers of another build (the
``bin`` directory of its virtual environment: an earlier commit's, to show a change's cost before and after).

* ``echo hi``: the call round trip, interleaved between a server with the copy, one without (its box mounts the
  protected paths read-only instead, as before the copy), and one with no box at all (the floor).
  Target (issue 25): at most 1 ms more than the server without the copy.
* three workloads, each timed end to end (the command, then reading, judging and applying its changes), with
  the copy and without, from a fresh project each round: ``git commit`` of 100 changed files; 20,000 small
  files created in a new directory (applied as one rename); a line appended to a 100 MB file (the overlay copies
  the file up inside the command — the kernel's copy, in the command's time — and the apply renames the new file
  into place and hard-links the old one into the history: no copy of our own).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.client import RawClient, find_server
from bench.core import private_env

GIT = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x"}


class _Server:
    """One shell_exec server on its own project (made by ``setup``) and state directory."""

    def __init__(
        self,
        base: Path,
        flags: Sequence[str],
        setup: Callable[[Path], None] = lambda _project: None,
        bin_dir: Path | None = None,
    ) -> None:
        self.project = base / "project"
        self.project.mkdir(parents=True)
        setup(self.project)
        env = {**private_env(base), **GIT}
        script = str(bin_dir / "mcp-server-shell-exec") if bin_dir else find_server("mcp-server-shell-exec")
        argv = [script, "--audit-log", str(base / "audit.jsonl"), *flags]
        self._stderr = (base / "stderr.txt").open("w", encoding="utf-8")
        self.client = RawClient(argv, self.project, self._stderr, env)
        self.client.initialize()

    def call(self, command: str, timeout: float = 300) -> tuple[float, dict[str, Any]]:
        started = time.perf_counter()
        result = self.client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 290}, timeout=timeout)
        took = (time.perf_counter() - started) * 1000
        out = dict(result.get("structuredContent") or {})
        if out.get("exitCode") != 0:
            raise RuntimeError(f"{command!r} failed: {result}")
        return took, out

    def close(self) -> None:
        self.client.close()
        self._stderr.close()


def _variants(against: Path | None) -> dict[str, tuple[list[str], Path | None]]:
    found: dict[str, tuple[list[str], Path | None]] = {"copy": ([], None), "no copy": (["--transactions", "off"], None)}
    if against is not None:
        found["copy, other build"] = ([], against)
    return found


def _echo(calls: int, against: Path | None) -> dict[str, float]:
    variants = {**_variants(against), "no box": (["--sandbox", "off"], None)}
    with tempfile.TemporaryDirectory(prefix="bench-tx-") as tmp:
        servers = {
            name: _Server(Path(tmp) / name.replace(" ", "-").replace(",", ""), flags, bin_dir=where)
            for name, (flags, where) in variants.items()
        }
        times: dict[str, list[float]] = {name: [] for name in servers}
        try:
            for i in range(calls + 10):
                for name, server in servers.items():
                    took, out = server.call("echo hi")
                    assert out["stdout"] == "hi\n"
                    if i >= 10:
                        times[name].append(took)
                    time.sleep(0.01)  # calls come one after another, as from a model
        finally:
            for server in servers.values():
                server.close()
    return {name: statistics.median(values) for name, values in times.items()}


def _fill_repo(project: Path) -> None:
    env = {**os.environ, **GIT}
    subprocess.run(["git", "init", "-q", str(project)], check=True, env=env)
    for i in range(100):
        (project / f"f{i:03d}.txt").write_text(f"one {i}\n")
    subprocess.run(["git", "-C", str(project), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(project), "commit", "-qm", "one"], check=True, env=env)
    for i in range(100):
        (project / f"f{i:03d}.txt").write_text(f"two {i}\n")


def _big_file(project: Path) -> None:
    """100 MB (10^8 bytes: under the policy's 100 MiB file-size limit, with room for the line)."""
    with (project / "big.bin").open("wb") as fh:
        chunk = os.urandom(1_000_000)
        for _ in range(100):
            fh.write(chunk)


WORKLOADS: dict[str, tuple[Callable[[Path], None], str]] = {
    "git commit of 100 files": (_fill_repo, "git add -A && git -c user.name=b -c user.email=b@x commit -qm two"),
    "20,000 small files in a new directory": (
        lambda project: None,
        "python3 -c \"import os; os.mkdir('many'); [open(f'many/{i}', 'w').write('x') for i in range(20000)]\"",
    ),
    "a line appended to a 100 MB file": (_big_file, "echo line >> big.bin"),
}


def _workloads(rounds: int, against: Path | None) -> dict[str, dict[str, float]]:
    found: dict[str, dict[str, float]] = {}
    variants = _variants(against)
    for label, (setup, command) in WORKLOADS.items():
        totals: dict[str, list[float]] = {name: [] for name in variants}
        commands: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(rounds):
            for name, (flags, where) in variants.items():
                with tempfile.TemporaryDirectory(prefix="bench-tx-") as tmp:
                    server = _Server(Path(tmp), flags, setup, bin_dir=where)
                    try:
                        took, out = server.call(command)
                    finally:
                        server.close()
                    if not flags:
                        assert out["transaction"] == "applied", out
                    totals[name].append(took)
                    commands[name].append(float(out["durationMs"]))
        found[label] = {name: statistics.median(totals[name]) for name in variants} | {
            f"{name} command": statistics.median(commands[name]) for name in variants
        }
    return found


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=200, help="echo calls per server")
    ap.add_argument("--rounds", type=int, default=3, help="fresh projects per workload and server")
    ap.add_argument("--against", type=Path, default=None, help="the bin directory of another build's venv")
    args = ap.parse_args(argv)
    echo = _echo(args.calls, args.against)
    print(f"echo hi, median round trip over {args.calls} calls each, interleaved:")
    for name, value in echo.items():
        print(f"  {name:<18} {value:7.2f} ms")
    extra = echo["copy"] - echo["no copy"]
    print(f"  the copy costs {extra:+.2f} ms (target: at most +1 ms) {'OK' if extra <= 1.0 else 'MISSED'}")
    print(f"\nworkloads, median of {args.rounds} fresh projects (call round trip; in brackets the command itself):")
    for label, row in _workloads(args.rounds, args.against).items():
        print(f"  {label}")
        for name in _variants(args.against):
            settling = ""
            if name != "no copy":
                extra = row[name] - row[f"{name} command"] - (row["no copy"] - row["no copy command"])
                settling = f"   judging + applying {extra:+.1f} ms"
            print(f"    {name:<18} {row[name]:8.1f} ms ({row[f'{name} command']:.1f}){settling}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
