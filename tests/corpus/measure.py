"""How the shell policies judge the corpus in this directory: the four figures of issue 11, and decision time.

    uv run python tests/corpus/measure.py [--misses]

Prints, for the default policy, the share of destructive intents denied and of ask-worthy commands asked
or denied, and the share of everyday commands asked or denied; for the readonly policy, the shell escapes
and file writes it lets through and the share of read-only everyday commands it refuses; then the median
and p99 time of one decision. ``--misses`` lists every line that misses its expectation.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.parsing import TooComplex
from mcp_server_guard.shell.strings.rules import PolicyEngine

HERE = Path(__file__).resolve().parent


def lines(name: str) -> list[str]:
    text = (HERE / name).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def decide(engine: PolicyEngine, line: str) -> str:
    try:
        return engine.decide(line).action
    except TooComplex:
        return "deny"


@dataclass
class Figure:
    title: str
    share: float  # of the lines, those that met the expectation (or, for "at most" figures, that missed)
    target: str
    met: bool
    misses: list[tuple[str, str]]


def figures() -> list[Figure]:
    default = PolicyEngine(load_policy().shell_exec)
    readonly = PolicyEngine(load_policy(Path("readonly")).shell_exec)

    def judged(engine: PolicyEngine, name: str, good: set[str]) -> tuple[float, list[tuple[str, str]]]:
        corpus = lines(name)
        misses = [(line, action) for line in corpus for action in [decide(engine, line)] if action not in good]
        return 1 - len(misses) / len(corpus), misses

    denied, miss_d = judged(default, "destructive.txt", {"deny"})
    asked, miss_a = judged(default, "askworthy.txt", {"ask", "deny"})
    allowed, miss_e = judged(default, "everyday.txt", {"allow"})
    held, miss_x = judged(readonly, "readonly_escapes.txt", {"ask", "deny"})
    ro_allowed, miss_r = judged(readonly, "readonly_everyday.txt", {"allow"})
    return [
        Figure("default: destructive intents denied", denied, ">= 95%", denied >= 0.95, miss_d),
        Figure("default: ask-worthy commands asked or denied", asked, ">= 90%", asked >= 0.90, miss_a),
        Figure("default: everyday commands asked or denied", 1 - allowed, "<= 1%", 1 - allowed <= 0.01, miss_e),
        Figure("readonly: shell escapes / file writes let through", 1 - held, "0%", held == 1.0, miss_x),
        Figure(
            "readonly: read-only everyday commands refused", 1 - ro_allowed, "<= 10%", 1 - ro_allowed <= 0.10, miss_r
        ),
    ]


def decision_times() -> tuple[float, float]:
    engine = PolicyEngine(load_policy().shell_exec)
    corpus = [line for name in ("destructive.txt", "askworthy.txt", "everyday.txt") for line in lines(name)]
    for line in corpus:  # warm the parser and caches
        decide(engine, line)
    samples = []
    for _ in range(5):
        for line in corpus:
            start = time.perf_counter()
            decide(engine, line)
            samples.append(time.perf_counter() - start)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99)]


def main() -> int:
    show_misses = "--misses" in sys.argv[1:]
    results = figures()
    sizes = {name: len(lines(name)) for name in sorted(p.name for p in HERE.glob("*.txt"))}
    print("corpus: " + ", ".join(f"{name} {n}" for name, n in sizes.items()))
    for figure in results:
        mark = "met" if figure.met else "MISSED"
        print(f"{figure.title:52} {figure.share * 100:6.1f}%  (target {figure.target}: {mark})")
        if show_misses:
            for line, action in figure.misses:
                print(f"    {action:5} {line}")
    median, p99 = decision_times()
    print(f"{'decision time, median / p99':52} {median * 1e3:6.3f} ms / {p99 * 1e3:.3f} ms  (target median < 1 ms)")
    return 0 if all(f.met for f in results) and median < 0.001 else 1


if __name__ == "__main__":
    sys.exit(main())
