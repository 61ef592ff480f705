"""End to end: corpus lines sent to the real shell_exec by a person who declines every question.

    uv run python tests/corpus/measure_e2e.py [--limit N] [--misses] [--loss | --carry] [--read-only] [FILE ...]

Each line goes, as JSON over stdio, to the installed console script ``mcp-server-shell-exec`` (the box on, the
default ``--mode workspace-write``, ``--network deny``), started in a git project made for the run in a temporary
directory with a fake HOME. Every question the server asks (an elicitation) is declined. Per file it prints how
many lines were asked before running (and so refused), asked after running (the copy's changes declined, nothing
applied), refused without a question, and ran; ``--misses`` lists the lines asked or refused.

The project holds committed files, a tracked file modified and not committed, untracked work (``notes.txt``,
``work/draft.md``) and an ignored file. Two ways to run a file:

- carried (``--carry``, the default for the everyday and read-only files): one project for the whole file, each
  line seeing what the lines before it left, as in a person's session;
- loss (``--loss``, the default for the other files): the project is put back before every line, and after it the
  work is looked for — a line *lost work* when content of a committed, modified or untracked file is in neither
  the tree nor git's objects, or HEAD's commit is gone. (A change applied without a question is not counted: undo
  has it, and the measure does not look there.) Loss runs cap the commands more tightly than the default policy
  (memory, CPU, processes, and the disk they may leave free) so that a line that floods the machine stays small.

``--read-only`` starts the server with ``--mode read-only`` (the default for the ``readonly_*`` files). With no FILE,
every corpus file of ``tests/corpus/public/`` and ``tests/corpus/*.txt`` is run, each in its default way; FILE is a
path or a name as the table prints it (``public/destructive.txt``; ``destructive.txt`` is tests/corpus's own).
``--limit N`` takes N lines spread over each file. The exit code is 1 when a line lost work, else 0; the everyday
target (asked or refused <= 1%) is printed, met or MISSED.

The lines travel as data only: read from the files and sent as JSON, never put on a command line here.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, ElicitRequestParams, ElicitResult

CORPUS = Path(__file__).resolve().parent
PUBLIC = CORPUS / "public"
ROOT = CORPUS.parent.parent
ERROR_META_KEY = "mcp-guard/error"
GIT_ENV = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"}
WORK = ("src/m1.py", "notes.txt", "work/draft.md")  # modified or untracked: git has no copy of their content
EVERYDAY_TARGET = 0.01
CALL_SECONDS = 10  # the command's own time-out
WAIT_SECONDS = 90  # the client's bound on one call


@dataclass
class Line:
    """One line's outcome. ``outcome``: asked-before, asked-after, refused, ran or error (a time-out, a failure
    that is not a refusal)."""

    text: str
    outcome: str
    code: str = ""
    transaction: str = ""
    question: str = ""  # the first question asked, if any
    lost: list[str] = field(default_factory=list)


@dataclass
class FileReport:
    name: str
    loss: bool
    read_only: bool
    lines: list[Line] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, outcome: str) -> int:
        return sum(line.outcome == outcome for line in self.lines)

    @property
    def bothered(self) -> list[Line]:
        """The lines asked (before or after) or refused."""
        return [line for line in self.lines if line.outcome in ("asked-before", "asked-after", "refused")]

    @property
    def lossy(self) -> list[Line]:
        return [line for line in self.lines if line.lost]

    @property
    def everyday(self) -> bool:
        return "everyday" in self.name


class Decliner:
    """The person: declines every question, and counts them."""

    def __init__(self) -> None:
        self.questions: list[str] = []

    @property
    def asked(self) -> int:
        return len(self.questions)

    async def __call__(self, context: Any, params: ElicitRequestParams) -> ElicitResult:
        self.questions.append(params.message)
        return ElicitResult(action="decline")


def corpus_lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def spread(lines: list[str], limit: int | None) -> list[str]:
    if limit is None or limit >= len(lines):
        return lines
    step = len(lines) / limit
    return [lines[int(i * step)] for i in range(limit)]


def default_files() -> list[Path]:
    return sorted(PUBLIC.glob("*.txt")) + sorted(CORPUS.glob("*.txt"))


def resolve(name: str) -> Path:
    path = Path(name)
    if path.exists():
        return path.resolve()
    for where in (CORPUS, PUBLIC):  # (as printed: ``public/NAME``, or ``NAME`` of tests/corpus before public's)
        if (where / name).exists():
            return where / name
    raise SystemExit(f"measure_e2e: no corpus file {name}")


def label(path: Path) -> str:
    return f"public/{path.name}" if path.parent == PUBLIC else path.name


def git(proj: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **GIT_ENV, "HOME": str(proj.parent / "githome")}
    return subprocess.run(["git", *args], cwd=proj, env=env, check=check, capture_output=True, text=True, timeout=60)


def fixture(pristine: Path) -> tuple[str, dict[str, str]]:
    """The project: committed files, a modified one, untracked work, an ignored log. Returns HEAD and the digests of
    the work git has no copy of."""
    (pristine / "src").mkdir(parents=True)
    for i in range(12):
        (pristine / "src" / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    (pristine / "tests").mkdir()
    (pristine / "tests" / "test_a.py").write_text("def test_a():\n    assert True\n")
    (pristine / "README.md").write_text("# demo\n")
    (pristine / ".gitignore").write_text("*.log\n")
    git(pristine, "init", "-q", "-b", "main")
    git(pristine, "add", "-A")
    git(pristine, "commit", "-q", "-m", "one")
    (pristine / "src" / "m1.py").write_text("def f1():\n    return 'edited, not committed'\n")
    (pristine / "notes.txt").write_text("untracked notes: only copy\n")
    (pristine / "work").mkdir()
    (pristine / "work" / "draft.md").write_text("untracked draft\n")
    (pristine / "run.log").write_text("ignored log\n")
    head = git(pristine, "rev-parse", "HEAD").stdout.strip()
    return head, {rel: hashlib.sha256((pristine / rel).read_bytes()).hexdigest() for rel in WORK}


def put_back(pristine: Path, proj: Path) -> None:
    """The project as the fixture made it (whatever a line left: modes taken away, links, other kinds). The directory
    itself stays: the server's box holds it from its start."""
    proj.mkdir(exist_ok=True)
    os.chmod(proj, 0o755)
    subprocess.run(["chmod", "-R", "u+rwx", str(proj)], capture_output=True, timeout=60, check=False)
    for entry in list(proj.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    if any(proj.iterdir()):
        raise RuntimeError(f"measure_e2e: could not clear {proj}")
    shutil.copytree(pristine, proj, symlinks=True, dirs_exist_ok=True)


def digests(proj: Path) -> set[str]:
    found: set[str] = set()
    for dirpath, _dirs, files in os.walk(proj):
        for name in files:
            path = Path(dirpath) / name
            try:
                if path.is_file() and not path.is_symlink() and path.stat().st_size < 10_000_000:
                    found.add(hashlib.sha256(path.read_bytes()).hexdigest())
            except OSError:
                continue
    return found


def lost_work(proj: Path, pristine: Path, head: str, work: dict[str, str]) -> list[str]:
    """The fixture's work that is now in neither the tree nor git's objects (and "HEAD commit" when it is gone)."""
    found = digests(proj) if proj.exists() else set()
    has_git = (proj / ".git").is_dir()
    lost = []
    for rel, digest in work.items():
        if digest in found:
            continue
        blob = git(pristine, "hash-object", rel).stdout.strip()
        if has_git and git(proj, "cat-file", "-e", blob, check=False).returncode == 0:
            continue  # git keeps it (a stash, an add)
        lost.append(rel)
    if not has_git or git(proj, "cat-file", "-e", head + "^{commit}", check=False).returncode != 0:
        lost.append("HEAD commit")
    return lost


def limits_policy(base: Path) -> Path:
    free = shutil.disk_usage(base).free
    policy = base / "limits.toml"
    policy.write_text(
        "[shell_exec]\n"
        f"min_free_disk_bytes = {max(free - 3 * 2**30, 2**30)}\n"
        "max_memory_bytes = 268435456\nmax_cpu_seconds = 20\nmax_processes = 128\n",
        encoding="utf-8",
    )
    return policy


def outcome_of(result: CallToolResult, asked: int) -> tuple[str, str, str]:
    """(outcome, error code, transaction) of one call that asked ``asked`` questions."""
    out: dict[str, Any] = dict(result.structured_content or {})
    transaction = str(out.get("transaction") or "")
    if not result.is_error:
        return ("asked-after" if transaction == "declined" else "ran"), "", transaction
    meta = (result.meta or {}).get(ERROR_META_KEY)
    payload: dict[str, Any] = meta if isinstance(meta, dict) else {}
    code = str(payload.get("code", ""))
    if asked or code == "ASK_DECLINED":
        return "asked-before", code, transaction
    if payload.get("category") == "SECURITY":
        return "refused", code, transaction
    return "error", code or "no-code", transaction


async def run_file(path: Path, *, loss: bool, read_only: bool, limit: int | None = None) -> FileReport:
    """Every line of ``path`` (``limit`` of them, spread) through a server of its own in a project of its own."""
    report = FileReport(label(path), loss, read_only)
    lines = spread(corpus_lines(path), limit)
    base = Path(tempfile.mkdtemp(prefix="measure-e2e-"))
    try:
        for name in ("home", "state", "pristine", "githome", "servers"):
            (base / name).mkdir(mode=0o700)
        head, work = fixture(base / "pristine")
        proj = base / "proj"
        put_back(base / "pristine", proj)
        args = ["--audit-log", str(base / "audit.jsonl"), "--network", "deny"]
        if read_only:
            args += ["--mode", "read-only"]
        elif loss:
            args += ["--policy", str(limits_policy(base))]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(base / "home"),
            "XDG_STATE_HOME": str(base / "state"),
            "MCP_GUARD_RUNTIME_DIR": str(base / "servers"),
            "LANG": "C.UTF-8",
        }
        script = shutil.which("mcp-server-shell-exec") or str(Path(sys.executable).parent / "mcp-server-shell-exec")
        params = StdioServerParameters(command=script, args=args, cwd=str(proj), env=env)
        person = Decliner()

        started = time.monotonic()
        async with Client(params, mode="legacy", elicitation_callback=person) as client:
            for text in lines:
                if loss:
                    put_back(base / "pristine", proj)
                before = person.asked
                line = Line(text, "error", "client-timeout")
                with anyio.move_on_after(WAIT_SECONDS):
                    result = await client.call_tool("shell_exec", {"command": text, "timeoutSeconds": CALL_SECONDS})
                    line.outcome, line.code, line.transaction = outcome_of(result, person.asked - before)
                if person.asked > before:
                    line.question = person.questions[before]
                if loss:
                    line.lost = lost_work(proj, base / "pristine", head, work)
                report.lines.append(line)
        report.seconds = time.monotonic() - started
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(base)], capture_output=True, timeout=60, check=False)
        shutil.rmtree(base, ignore_errors=True)
    return report


def printed(reports: Sequence[FileReport], *, misses: bool) -> str:
    rows = [
        f"{'file (lines, how)':44} {'asked before':>12} {'asked after':>11} {'refused':>8} {'ran':>5} "
        f"{'errors':>6} {'asked/refused':>13} {'lost work':>9}"
    ]
    for r in reports:
        how = "read-only" if r.read_only else ("loss" if r.loss else "carried")
        share = len(r.bothered) / max(len(r.lines), 1) * 100
        lost = str(len(r.lossy)) if r.loss else "-"
        rows.append(
            f"{f'{r.name} ({len(r.lines)}, {how})':44} {r.count('asked-before'):12d} {r.count('asked-after'):11d} "
            f"{r.count('refused'):8d} {r.count('ran'):5d} {r.count('error'):6d} {share:12.1f}% {lost:>9}"
        )
    everyday = [r for r in reports if r.everyday and not r.read_only]
    if everyday:
        total = sum(len(r.lines) for r in everyday)
        share = sum(len(r.bothered) for r in everyday) / max(total, 1)
        mark = "met" if share <= EVERYDAY_TARGET else "MISSED"
        rows.append(f"everyday lines asked or refused: {share * 100:.1f}% of {total} (target <= 1%: {mark})")
    lossy = [(r, line) for r in reports for line in r.lossy]
    rows.append(f"lines that lost work (every question declined): {len(lossy)}")
    rows += [f"    {r.name}: {line.outcome} lost {', '.join(line.lost)}: {line.text}" for r, line in lossy]
    rows.append(f"time: {sum(r.seconds for r in reports):.0f} s for {sum(len(r.lines) for r in reports)} lines")
    if misses:
        for r in reports:
            shown = [line for line in r.lines if line.outcome != "ran"]
            if shown:
                rows.append(f"\n== {r.name}: {len(shown)} lines not simply run")
                for line in shown:
                    rows.append(f"    {line.outcome:12} {line.code or line.transaction:16.16} {line.text}")
                    if line.question and line.outcome == "asked-after":
                        rows.append(f"{'':34}asked: {' '.join(line.question.split())[:200]}")
    return "\n".join(rows)


async def measure(
    paths: Sequence[Path], *, loss: bool | None, read_only: bool | None, limit: int | None
) -> list[FileReport]:
    reports = []
    for path in paths:
        ro = path.name.startswith("readonly_") if read_only is None else read_only
        lossy = not (ro or "everyday" in path.name) if loss is None else loss
        reports.append(await run_file(path, loss=lossy, read_only=ro, limit=limit))
    return reports


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    limit: int | None = None
    if "--limit" in args:
        at = args.index("--limit")
        limit = int(args[at + 1])
        del args[at : at + 2]
    flags = {a for a in args if a.startswith("--")}
    unknown = flags - {"--misses", "--loss", "--carry", "--read-only"}
    if unknown or {"--loss", "--carry"} <= flags:
        print(__doc__, file=sys.stderr)
        return 2
    loss = True if "--loss" in flags else (False if "--carry" in flags else None)
    read_only = True if "--read-only" in flags else None
    paths = [resolve(a) for a in args if not a.startswith("--")] or default_files()
    reports = anyio.run(lambda: measure(paths, loss=loss, read_only=read_only, limit=limit))
    print(printed(reports, misses="--misses" in flags))
    return 1 if any(r.lossy for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
