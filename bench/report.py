"""Formatting of the table's cells and the profile tables; the run's recorded git state and file system."""

from __future__ import annotations

import os
import pstats
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.core import REPO

# cProfile times are wall times. Left out as waits: worker threads idling, the event loop polling; Context.run,
# whose own time is the C it calls directly on a worker thread - the SDK's stdin TextIOWrapper.readline, which
# sits blocked until the client's next request arrives (its decoding shows separately as codecs decode calls);
# socket.send, the asyncio wake-up a worker thread sends, whose wall time is mostly waiting to get the GIL back
# while the event loop runs (in parallel with the work that is counted).
IDLE_FUNCTIONS = (
    "'acquire' of '_thread.lock'",
    "'poll' of 'select.epoll'",
    "'select' of",
    "time.sleep",
    "'run' of '_contextvars.Context'",
    "'send' of '_socket.socket'",
)


LABELS = {
    "<frozen codecs>:319(decode)": "codecs decode: the SDK's stdin TextIOWrapper decoding 8 KiB chunks",
}


def function_name(key: tuple[str, int, str]) -> str:
    """``file:line(function)``, as pstats prints a function (built-ins as ``{name}``)."""
    filename, line, name = key
    if filename == "~" and line == 0:
        return f"{{{name[1:-1]}}}" if name.startswith("<") and name.endswith(">") else name
    return f"{filename}:{line}({name})"


def short_function(key: tuple[str, int, str]) -> str:
    text = function_name(key)
    if text in LABELS:
        return LABELS[text]
    for prefix in (str(REPO / ".venv" / "lib"), str(REPO), sys.base_prefix):
        text = text.replace(prefix + "/", "")
    return text


def summarise_profile(prof: Path, n: int, key_functions: dict[tuple[str, str], str]) -> dict[str, Any]:
    """Per-call own and cumulative times of a merged all-thread profile of ``n`` calls, idle waits left out;
    ``key_functions`` (file suffix, function name) -> label picks the cumulative rows to show, in that order."""
    stats = pstats.Stats(str(prof))
    entries: list[dict[str, Any]] = []
    key_rows: dict[str, dict[str, Any]] = {}
    raw_stats: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    for key, (_cc, nc, tt, ct, _callers) in raw_stats.items():
        name = function_name(key)
        if any(idle in name for idle in IDLE_FUNCTIONS):
            continue
        entries.append(
            {"function": short_function(key), "ncalls": nc, "tottime_per_call_s": tt / n, "cumtime_per_call_s": ct / n}
        )
        for (suffix, func), label in key_functions.items():
            if key[0].endswith(suffix) and key[2] == func:
                row = key_rows.setdefault(label, {"function": label, "cumtime_per_call_s": 0.0, "ncalls": 0})
                row["cumtime_per_call_s"] += ct / n
                row["ncalls"] += nc
    entries.sort(key=lambda e: e["tottime_per_call_s"], reverse=True)
    busy = sum(e["tottime_per_call_s"] for e in entries)
    return {
        "calls": n,
        "busy_per_call_s": busy,
        "top": entries[:14],
        "key": [key_rows[label] for label in key_functions.values() if label in key_rows],
    }


def ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s < 0.01 else f"{s * 1e3:.1f} ms"


def delta(s: float) -> str:
    return ("+" if s >= 0 else "−") + ms(abs(s))


def mib(b: int) -> str:
    return f"{b / 2**20:.1f} MiB"


def verdict(ok: bool) -> str:
    return "✅ met" if ok else "❌ missed"


Row = tuple[str, str, str, str, str]


def shell_profile_table(p: dict[str, Any]) -> str:
    audit = f"; tool span (audit) {ms(p['audit']['median_s'])}" if p.get("audit") else ""
    lines = [
        f"cProfile of mcp-server-shell-exec, all threads, {p['calls']} × `echo hi` (wall "
        f"{ms(p['wall_median_s'])} per call under the profiler{audit}; waits - idle threads, epoll while bash runs, "
        f"stdin readline blocked on the pipe - left out; busy {ms(p['busy_per_call_s'])} per call):",
        "",
        "| Function (own time) | Own time per call | Cumulative per call | Calls |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {e['function']} | {ms(e['tottime_per_call_s'])} | {ms(e['cumtime_per_call_s'])} | {e['ncalls']} |"
        for e in p["top"]
    ]
    lines += ["", "| Key function (cumulative, wall) | Per call | Calls |", "|---|---|---|"]
    lines += [f"| {e['function']} | {ms(e['cumtime_per_call_s'])} | {e['ncalls']} |" for e in p["key"]]
    return "\n".join(lines)


def profile_table(p: dict[str, Any]) -> str:
    lines = [
        f"cProfile of mcp-server-file-write, all threads, {p['calls']} × 10 MiB new-file write "
        f"(wall {ms(p['wall_median_s'])} per call under the profiler; waits - idle threads, stdin readline "
        "blocked on the pipe, worker threads' GIL waits in socket.send - left out; "
        f"busy {ms(p['busy_per_call_s'])} per call):",
        "",
        "| Function (own time) | Own time per write | Cumulative per write | Calls |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {e['function']} | {ms(e['tottime_per_call_s'])} | {ms(e['cumtime_per_call_s'])} | {e['ncalls']} |"
        for e in p["top"]
    ]
    lines += ["", "| Key function (cumulative) | Per write |", "|---|---|"]
    lines += [f"| {e['function']} | {ms(e['cumtime_per_call_s'])} |" for e in p["key"]]
    return "\n".join(lines)


def fs_type(path: Path) -> str:
    """File system type of the mount holding ``path`` (fsync costs depend on it)."""
    real, best, kind = os.path.realpath(path), "", "?"
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                mount = parts[1]
                if (real == mount or real.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best):
                    best, kind = mount, f"{parts[2]} ({parts[0]} on {mount})"
    except OSError:
        pass
    return kind


def git_state() -> dict[str, Any]:
    """Commit and dirtiness of the tree measured (the servers run from it, edits included)."""

    def git(*args: str) -> str:
        try:
            # rstrip only: porcelain status lines start with a space that is part of their format.
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.rstrip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    dirty = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()]
    return {"commit": git("rev-parse", "HEAD") or None, "modified_files": dirty}
