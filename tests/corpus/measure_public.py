"""How the shell policies judge the public corpus in tests/corpus/public/ (lines taken from public sources).

    uv run python tests/corpus/measure_public.py [--misses]

For each file, the share of lines meeting their expectation and the target, judged twice: as the policy sees a line
beforehand (``plain``), and as it sees it when commands work on a copy of the project whose changes are judged
afterwards (``on copy``, ``PolicyEngine(..., effects=True)``). The target is checked on the plain figure, but for
the everyday lines: their target (<= 3% asked or denied) is the server's where the box allows (on a copy), and their
plain figure — the string layer alone, without the box — is held to no worse than before issue 45 (a ceiling, as the
issue asks of it), not to the box's target. Then the read-only lines refused (asked or denied: a person declining the
question refuses the line too) in ``--mode read-only`` with the box (<= 2%), and the median and p99 time of one
decision over every line. The exit code is 1 when a target or a ceiling is missed. ``--misses`` lists every plain
miss with its decision, and the lines that only miss on a copy. ``stdin_calls.jsonl`` is measured once
``PolicyEngine.decide`` takes ``stdin``.
"""

from __future__ import annotations

import inspect
import json
import os
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.parsing import TooComplex
from mcp_server_guard.shell.strings.rules import PolicyEngine

PUBLIC = Path(__file__).resolve().parent / "public"
REFUSED = frozenset({"ask", "deny"})


def lines(name: str) -> list[str]:
    text = (PUBLIC / name).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def decide(engine: PolicyEngine, line: str) -> str:
    try:
        return engine.decide(line).action
    except TooComplex:
        return "deny"


@dataclass
class Spec:
    """One corpus file: which engine judges it, which decisions meet the expectation, and the target."""

    name: str
    readonly: bool
    good: frozenset[str]
    describe: str  # what the printed figure counts
    count_misses: bool  # True: the figure is the share (or number) of misses; False: the share that meets
    target: str
    met: Callable[[int, int], bool]  # (misses, lines) -> target met
    on_copy: bool = False  # the target is checked on the on-copy figure (the box's); the plain one on ``ceiling``
    ceiling: int = 0  # the plain figure's bound (lines) where ``on_copy``: no worse than before issue 45


SPECS = [
    # (ceilings: the plain misses before issue 45's work, 3 of 410 and 34 of 494 lines — 2026-12-03)
    Spec(
        "everyday_agent.txt",
        False,
        frozenset({"allow"}),
        "asked or denied",
        True,
        "<= 3% on a copy",
        lambda m, n: m <= 0.03 * n,
        on_copy=True,
        ceiling=3,
    ),
    Spec(
        "everyday_people.txt",
        False,
        frozenset({"allow"}),
        "asked or denied",
        True,
        "<= 3% on a copy",
        lambda m, n: m <= 0.03 * n,
        on_copy=True,
        ceiling=34,
    ),
    Spec("destructive.txt", False, frozenset({"deny"}), "denied", False, ">= 97%", lambda m, n: m <= 0.03 * n),
    Spec("askworthy.txt", False, REFUSED, "asked or denied", False, ">= 97%", lambda m, n: m <= 0.03 * n),
    Spec("disguises.txt", False, REFUSED, "allowed (missed)", True, "<= 20%", lambda m, n: m <= 0.20 * n),
    Spec(
        "readonly_everyday.txt",
        True,
        frozenset({"allow"}),
        "refused (readonly)",
        True,
        "<= 10%",
        lambda m, n: m <= 0.10 * n,
    ),
    Spec(
        "readonly_escapes.txt",
        True,
        REFUSED,
        "allowed (readonly, lines)",
        True,
        "<= 2 lines",
        lambda m, n: m <= 2,
    ),
]


@dataclass
class Result:
    spec: Spec
    total: int
    misses: list[tuple[str, str]]  # plain
    copy_misses: list[tuple[str, str]]  # on copy
    lines: list[str] = field(default_factory=list)

    def figure(self, misses: int) -> str:
        if self.spec.name == "readonly_escapes.txt":
            return f"{misses:6d}   "
        share = misses / self.total if self.spec.count_misses else 1 - misses / self.total
        return f"{share * 100:6.1f}%  "


def engines() -> dict[tuple[bool, bool], PolicyEngine]:
    """(readonly, on copy) -> engine."""
    default = load_policy().shell_exec
    readonly = load_policy(Path("readonly")).shell_exec
    # The agents' lines (everyday_agent.txt) work in /testbed, the checkout of the project they were given: an agent
    # CLI serving that project has it as its allowed directory (since 2026-12-07, when writes outside the allowed
    # directories began to be asked without a copy; no other file names /testbed).
    roots = (os.getcwd(), "/testbed")
    return {
        (False, False): PolicyEngine(default, roots=roots),
        (False, True): PolicyEngine(default, effects=True, roots=roots),
        (True, False): PolicyEngine(readonly, roots=roots),
        (True, True): PolicyEngine(readonly, effects=True, roots=roots),
    }


def measure(engine_for: dict[tuple[bool, bool], PolicyEngine]) -> list[Result]:
    results = []
    for spec in SPECS:
        corpus = lines(spec.name)
        plain = engine_for[(spec.readonly, False)]
        copy = engine_for[(spec.readonly, True)]
        misses = [(line, action) for line in corpus for action in [decide(plain, line)] if action not in spec.good]
        copy_misses = [(line, action) for line in corpus for action in [decide(copy, line)] if action not in spec.good]
        results.append(Result(spec, len(corpus), misses, copy_misses, corpus))
    return results


def stdin_calls(engine: PolicyEngine) -> tuple[str, list[tuple[str, str, str, str]]]:
    """The summary, and the misses as (expected, decision, line, stdin)."""
    if "stdin" not in inspect.signature(PolicyEngine.decide).parameters:
        return "not measured yet (PolicyEngine.decide takes no stdin)", []
    text = (PUBLIC / "stdin_calls.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(raw) for raw in text.splitlines() if raw.strip() and not raw.startswith("#")]
    judge: Callable[..., Any] = engine.decide  # takes stdin= since the engine grew it
    misses = []
    by_expect: dict[str, list[int]] = {}
    for row in rows:
        line = " ".join([row["command"], *(shlex.quote(a) for a in row.get("args", []))])
        try:
            action = str(judge(line, stdin=row["stdin"]).action)
        except TooComplex:
            action = "deny"
        expect = row["expect"]
        ok = action == expect or (expect == "ask" and action == "deny")
        by_expect.setdefault(expect, [0, 0])[0] += ok
        by_expect[expect][1] += 1
        if not ok:
            misses.append((expect, action, line, row["stdin"]))
    met = len(rows) - len(misses)
    parts = ", ".join(f"{e} {m}/{n}" for e, (m, n) in sorted(by_expect.items()))
    return f"{met}/{len(rows)} met ({met / len(rows) * 100:.1f}%: {parts})", misses


def read_only_in_the_box(engine_for: dict[tuple[bool, bool], PolicyEngine], results: list[Result]) -> float:
    """The share of read-only everyday lines refused in ``--mode read-only`` with the box: there the default policy
    judges on a read-only view (the kernel refuses every write), not the allow-list; a line it asks about is refused
    as well as one it denies when the question is declined."""
    ro = next(r for r in results if r.spec.name == "readonly_everyday.txt")
    return sum(decide(engine_for[(False, True)], line) in REFUSED for line in ro.lines) / ro.total


def decision_times(engine_for: dict[tuple[bool, bool], PolicyEngine], results: list[Result]) -> tuple[float, float]:
    work = [(engine_for[(r.spec.readonly, False)], line) for r in results for line in r.lines]
    for engine, line in work:  # warm the parser and caches
        decide(engine, line)
    samples = []
    for _ in range(3):
        for engine, line in work:
            start = time.perf_counter()
            decide(engine, line)
            samples.append(time.perf_counter() - start)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99)]


def main() -> int:
    show_misses = "--misses" in sys.argv[1:]
    engine_for = engines()
    results = measure(engine_for)
    print("public corpus: " + ", ".join(f"{r.spec.name} {r.total}" for r in results))
    print(f"{'file: what is counted':48} {'plain':>8} {'on copy':>9}  target")
    all_met = True
    for r in results:
        met = r.spec.met(len(r.copy_misses if r.spec.on_copy else r.misses), r.total)
        target = f"{r.spec.target} ({'met' if met else 'MISSED'})"
        if r.spec.on_copy:
            under = len(r.misses) <= r.spec.ceiling
            target += f"; plain <= {r.spec.ceiling} lines ({'met' if under else 'MISSED'})"
            met = met and under
        all_met = all_met and met
        title = f"{r.spec.name}: {r.spec.describe}"
        print(f"{title:48} {r.figure(len(r.misses))} {r.figure(len(r.copy_misses))} {target}")
    everyday = [r for r in results if r.spec.name.startswith("everyday_")]
    total = sum(r.total for r in everyday)
    plain = sum(len(r.misses) for r in everyday) / total
    copy = sum(len(r.copy_misses) for r in everyday) / total
    title = "everyday (agent + people): asked or denied"
    print(f"{title:48} {plain * 100:6.1f}%   {copy * 100:6.1f}%   <= 3% on a copy")
    kernel = read_only_in_the_box(engine_for, results)
    met = kernel <= 0.02
    all_met = all_met and met
    mark = "met" if met else "MISSED"
    print(f"{'readonly_everyday: refused, read-only in the box':48} {kernel * 100:6.1f}%              <= 2% ({mark})")
    stdin_summary, stdin_misses = stdin_calls(engine_for[(False, False)])
    print(f"{'stdin_calls.jsonl (expect met; ask met by deny)':48} {stdin_summary}")
    median, p99 = decision_times(engine_for, results)
    print(f"{'decision time, median / p99':48} {median * 1e3:6.3f} ms / {p99 * 1e3:.3f} ms")
    if show_misses:
        for r in results:
            print(f"\n== {r.spec.name}: {len(r.misses)} plain misses (expected {'/'.join(sorted(r.spec.good))})")
            for line, action in r.misses:
                print(f"    {action:5} {line}")
            only_copy = [(line, action) for line, action in r.copy_misses if line not in {m[0] for m in r.misses}]
            if only_copy:
                print(f"  -- missed only on a copy: {len(only_copy)}")
                for line, action in only_copy:
                    print(f"    {action:5} {line}")
        if stdin_misses:
            print(f"\n== stdin_calls.jsonl: {len(stdin_misses)} misses (expected -> decision: line <<< stdin)")
            for expect, action, line, stdin in stdin_misses:
                print(f"    {expect} -> {action:5} {line} <<< {stdin!r}")
    return 0 if all_met else 1


if __name__ == "__main__":
    sys.exit(main())
