"""Red team 82 (claim 6): a background job's look copies what it judged. A branch ref is judged by what the user's
next ``git checkout`` of it writes — by the ref file's *content* — but a look does not leave a ref for the job's end
(``judgement.by_content`` holds git configs and todo lists, not refs) and its copy re-reads the job's file at copy
time (``steps.copy_step``: only kind, mode and size are compared with what was judged). A job that swaps the ref
file's 41 bytes for another commit id between the judgement and the copy lands a branch nobody judged.

The job watches the access time of the benign commit's loose object (the server reads it from the job's upper layer
to judge the ref; relatime moves the time, and the job sees it through the overlay), and swaps at once.
Payload: a ``.envrc`` holding ``echo rt82`` (harmless text; direnv would run it at the next ``cd``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

ENV = dict(os.environ, GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@x", GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@x",
           GIT_CONFIG_GLOBAL="/dev/null")  # fmt: skip

JOB = r"""
import os, subprocess, sys, time
env = dict(os.environ, GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@x", GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@x",
           GIT_CONFIG_GLOBAL="/dev/null")
def git(*args, data=None):
    return subprocess.run(["git", *args], input=data, capture_output=True, check=True, env=env).stdout.decode().strip()
head = git("rev-parse", "HEAD")
tree = git("rev-parse", "HEAD^{tree}")
benign = git("commit-tree", tree, "-p", head, "-m", "benign", data=b"")
blob = git("hash-object", "-w", "--stdin", data=b"echo rt82\n")
entries = git("ls-tree", tree) + "\n100644 blob " + blob + "\t.envrc\n"
evil_tree = git("mktree", data=entries.encode())
evil = git("commit-tree", evil_tree, "-p", head, "-m", "evil", data=b"")
obj = f".git/objects/{benign[:2]}/{benign[2:]}"
st = os.stat(obj)
os.utime(obj, ns=(st.st_mtime_ns - 10**9, st.st_mtime_ns))  # relatime: the next read moves the access time
with open(".git/refs/heads/feature", "w") as f:
    f.write((evil if os.path.exists(".t/control") else benign) + "\n")
print("BENIGN", benign, "EVIL", evil, flush=True)
start = os.stat(obj).st_atime_ns
end = time.monotonic() + 25
swapped = False
while time.monotonic() < end:
    if not swapped and os.stat(obj).st_atime_ns != start:
        with open(".git/refs/heads/feature", "r+") as f:
            f.write(evil + "\n")
        swapped = True
        print("SWAPPED", flush=True)
        end = time.monotonic() + 3
    time.sleep(0.0005)
print("DONE", swapped, flush=True)
"""


def _project(root: Path, control: bool = False) -> None:
    root.mkdir(exist_ok=True)
    (root / "a.txt").write_text("a\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=root, env=ENV, check=True, capture_output=True, timeout=60)
    (root / ".t").mkdir()
    (root / ".t" / "job.py").write_text(JOB)
    if control:
        (root / ".t" / "control").write_text("")
    (root / ".git" / "info" / "exclude").write_text(".t\n")


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, env=ENV, capture_output=True, timeout=60)
    return done.stdout.decode().strip() if done.returncode == 0 else ""


async def _looks(workspace: Path, control: bool) -> tuple[Path, str, str, list[dict[str, Any]], Person]:
    root = workspace / "p"
    _project(root, control)
    person = Person(False)  # declines every question
    looks: list[dict[str, Any]] = []
    async with shell(workspace, person) as client:
        looks.append(await run(client, "python3 .t/job.py", cwd=str(root), yieldAfterSeconds=3))
        with anyio.fail_after(120):
            while looks[-1].get("status") == "running":
                looks.append(await run(client, "", jobId=looks[0]["jobId"], yieldAfterSeconds=5))
    out = "".join(str(look.get("stdout") or "") for look in looks)
    landed = _git(root, "rev-parse", "--verify", "-q", "refs/heads/feature")
    files = _git(root, "ls-tree", "--name-only", landed) if landed else ""
    print(out, [(lk.get("transaction"), lk.get("changes", {}).get("summary")) for lk in looks], person.questions)
    return root, out, files, looks, person


async def test_a_ref_swapped_between_a_looks_judgement_and_its_copy_is_not_landed(workspace: Path) -> None:
    _root, out, files, looks, person = await _looks(workspace, False)
    assert "SWAPPED" in out, out  # (the race was set up: the job saw the judgement read its commit)
    # Nobody was asked about (or approved) a branch whose checkout writes .envrc; it must not be in the real repo.
    assert ".envrc" not in files.split("\n"), (files, person.questions, [lk.get("transaction") for lk in looks])
