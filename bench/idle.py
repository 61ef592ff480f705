"""Idle memory of the three servers together, as an agent CLI leaves them between calls, beside the bare SDK server.

    uv run python -m bench.idle

Each server is started, answers ``initialize``, ``tools/list`` and one real call, then sits (``--settle``
seconds: by default past the moment shell_exec's box rests, 10 s with no call, keeping one
ready init instead of two; ``--settle 1`` shows the memory right after a call). For each process and its
children (shell_exec's box: bubblewrap, the supervisor, its ready inits) it reads ``/proc/<pid>/smaps_rollup``:

* RSS counts every page a process maps, shared ones in full in each process (the interpreter, libraries, and the
  pages the box's forked inits share with the supervisor): summed over processes it counts those many times;
* PSS divides each shared page among the processes sharing it: summed, it is the memory they take together;
* USS is what each holds alone (what ending it would give back).

The servers' state (records, compiled code, audit, history) lives in the run's temporary directory, never the
user's; each server is started once before (the session before), so that the measured start reads its start-up
records and compiled code, as every start of an agent CLI's but the very first does.

The target (issue 44; 180 MiB in issue 27): the three servers together ≤ 120 MiB, idle after one call each.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.client import RawClient, find_server
from bench.core import private_env

BARE = Path(__file__).with_name("servers") / "bare_server.py"
TARGET_MIB = 120.0
SETTLE_S = 12.0  # past the moment shell_exec's box rests (10 s with no call: shell.sandbox.supervisor)


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    found = [pid]
    try:
        threads = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found
    for thread in threads:
        try:
            children = (thread / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            found += _tree(int(child))
    return found


def _rollup(pid: int) -> dict[str, int]:
    """RSS, PSS and USS of one process, in KiB."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
            fields[parts[0][:-1]] = int(parts[1])
    uss = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return {"rss": fields.get("Rss", 0), "pss": fields.get("Pss", 0), "uss": uss}


def measure(settle_s: float = SETTLE_S) -> dict[str, dict[str, float]]:
    """Start every server at once, load each fully, let it settle, read its tree: MiB per server."""
    with tempfile.TemporaryDirectory(prefix="mcp-idle-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        (root / "hello.txt").write_text("hello\n", encoding="utf-8")
        audit = ["--audit-log", str(Path(tmp) / "audit.jsonl")]
        starts = {
            "file_read": ([find_server("mcp-server-file-read"), *audit], "file_read", {"path": "hello.txt"}),
            "file_write": (
                [find_server("mcp-server-file-write"), *audit, "--history-dir", str(Path(tmp) / "history")],
                "file_write",
                {"path": "new.txt", "content": "x"},
            ),
            "shell_exec": ([find_server("mcp-server-shell-exec"), *audit], "shell_exec", {"command": "true"}),
            "bare SDK server (floor)": ([sys.executable, str(BARE)], "echo", {"text": "hi"}),
        }
        env = private_env(Path(tmp) / "home")
        (Path(tmp) / "home").mkdir()

        def started() -> dict[str, RawClient]:
            """Every server started, its session up to one call done."""
            (root / "new.txt").unlink(missing_ok=True)
            clients = {name: RawClient(argv, root, sys.stderr, env) for name, (argv, _, _) in starts.items()}
            try:
                for name, client in clients.items():
                    _, tool, arguments = starts[name]
                    client.initialize()
                    client.request("tools/list", {})
                    result = client.call_tool(tool, arguments)
                    if result.get("isError"):
                        raise RuntimeError(f"{name}: {result}")
            except BaseException:
                for client in clients.values():
                    client.close()
                raise
            return clients

        for client in started().values():  # the session before
            client.close()
        clients = started()
        try:
            time.sleep(settle_s)
            out: dict[str, dict[str, float]] = {}
            for name, client in clients.items():
                rows = [_rollup(pid) for pid in _tree(client.pid)]
                out[name] = {k: sum(r[k] for r in rows) / 1024 for k in ("rss", "pss", "uss")} | {
                    "processes": len(rows)
                }
            return out
        finally:
            for client in clients.values():
                client.close()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--settle", type=float, default=SETTLE_S, help="seconds to sit after the call")
    args = ap.parse_args(argv)
    rows = measure(args.settle)
    print("| server | processes | RSS (summed) | PSS | USS |")
    print("|---|---|---|---|---|")
    for name, row in rows.items():
        print(
            f"| {name} | {row['processes']:.0f} | {row['rss']:.1f} MiB | {row['pss']:.1f} MiB | {row['uss']:.1f} MiB |"
        )
    ours = [row for name, row in rows.items() if not name.startswith("bare")]
    total = {k: sum(row[k] for row in ours) for k in ("rss", "pss", "uss")}
    print(f"| the three together | | {total['rss']:.1f} MiB | {total['pss']:.1f} MiB | {total['uss']:.1f} MiB |")
    verdict = "met" if total["pss"] <= TARGET_MIB else "missed"
    print(f"\ntarget: the three together <= {TARGET_MIB:.0f} MiB (PSS: the memory they take together): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
