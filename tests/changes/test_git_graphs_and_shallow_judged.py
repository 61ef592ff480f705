"""What git itself writes stays unasked while a forged history is caught: commit graphs git writes (one file, a split
chain, an octopus merge's extra parents) check out against the commits' own objects; a shallow clone or a shallow
fetch's ``shallow`` (a boundary whose parents the repository lacks) lands; a ``git fetch --depth`` that makes a full
repository shallow cuts history it holds and is asked (red team 108)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from mcp_server_guard.changes.git_graphs import graph_bases, graph_chunks, graph_lies
from mcp_server_guard.changes.git_objects import Objects
from support.boxed import Person, run, shell
from support.hooked import git, git_out

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is missing")


def _history(root: Path) -> None:
    """Commits on three branches merged at once (an octopus: a commit with three parents), then more."""
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", "base")
    for name in ("one", "two"):
        git(root, "checkout", "-q", "-b", name, "main")
        (root / f"{name}.txt").write_text(f"{name}\n")
        git(root, "add", "-A")
        git(root, "commit", "-q", "--no-verify", "-m", name)
    git(root, "checkout", "-q", "main")
    (root / "m.txt").write_text("main\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", "main")
    git(root, "merge", "-q", "--no-edit", "one", "two")


def _lies(root: Path, graph: Path) -> list[bytes]:
    objects = Objects([os.open(root / ".git" / "objects", os.O_RDONLY | os.O_DIRECTORY)])
    try:
        data = graph.read_bytes()
        below: list[bytes] = []
        for base in graph_bases(data):
            below += graph_chunks((graph.parent / f"graph-{base.hex()}.graph").read_bytes())[1]
        return graph_lies(objects, data, 20, below)
    finally:
        objects.close()


def test_a_commit_graph_git_wrote_with_an_octopus_merge_tells_no_lie(tmp_path: Path) -> None:
    _history(tmp_path)
    assert len(git_out(tmp_path, "log", "-1", "--format=%P").split()) == 3
    git(tmp_path, "commit-graph", "write", "--reachable")
    assert _lies(tmp_path, tmp_path / ".git/objects/info/commit-graph") == []


def test_a_split_commit_graph_chain_git_wrote_tells_no_lie(tmp_path: Path) -> None:
    _history(tmp_path)
    git(tmp_path, "commit-graph", "write", "--reachable", "--split=no-merge")
    (tmp_path / "b.txt").write_text("b\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "--no-verify", "-m", "after")
    git(tmp_path, "commit-graph", "write", "--reachable", "--split=no-merge")
    chain = (tmp_path / ".git/objects/info/commit-graphs/commit-graph-chain").read_text().split()
    assert len(chain) == 2
    top = tmp_path / f".git/objects/info/commit-graphs/graph-{chain[-1]}.graph"
    assert graph_bases(top.read_bytes()) and _lies(tmp_path, top) == []


def _upstream(root: Path) -> Path:
    source = root / "upstream"
    source.mkdir()
    git(source, "init", "-q", "-b", "main")
    for i in range(3):
        (source / "f.txt").write_text(f"version {i}\n")
        git(source, "add", "-A")
        git(source, "commit", "-q", "--no-verify", "-m", f"c{i}")
    return source


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_a_shallow_clone_lands_and_a_fetch_that_cuts_held_history_is_asked(workspace: Path) -> None:
    source = _upstream(workspace)
    full = workspace / "full"
    git(workspace, "clone", "-q", f"file://{source}", str(full))
    yes = Person(True)  # (a clone from a repository on this machine is asked for its upstream: test_git_upstreams)
    async with shell(workspace, yes) as client:
        cloned = await run(client, f"git clone -q --depth 1 file://{source} shallow-copy", cwd=str(workspace))
    assert cloned.get("transaction") == "applied" and not any("no parents" in q for q in yes.questions), cloned
    assert (workspace / "shallow-copy/.git/shallow").is_file()
    person = Person(False)
    async with shell(workspace, person) as client:
        cut = await run(client, "git fetch -q --depth 1 origin", cwd=str(full))
    assert person.questions and any("no parents" in q for q in person.questions), cut
    assert not (full / ".git/shallow").exists()
