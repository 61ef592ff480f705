"""tests/corpus/measure_e2e.py, the end-to-end measure of issue 45, run on a tiny corpus: each outcome it counts
(asked before, asked after, refused, ran) is seen through the real server, and its look for lost work finds a file
and a commit gone."""

from __future__ import annotations

import functools
import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import anyio
import pytest

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
# One line of each outcome, as data: the tiny corpus the harness reads.
LINES = """\
# a tiny corpus
git status
rm notes.txt
sudo true
echo 'alias x=y' >> ~/.bashrc
git stash -u
"""
EXPECTED = ["ran", "asked-after", "asked-before", "refused", "ran"]


def _measure() -> ModuleType:
    spec = importlib.util.spec_from_file_location("corpus_measure_e2e", CORPUS / "measure_e2e.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
def test_the_end_to_end_measure_counts_each_outcome_of_a_tiny_corpus(tmp_path: Path) -> None:
    measure = _measure()
    corpus = tmp_path / "tiny_everyday.txt"
    corpus.write_text(LINES, encoding="utf-8")
    carried, lossy = (
        anyio.run(functools.partial(measure.run_file, corpus, loss=loss, read_only=False), backend="asyncio")
        for loss in (False, True)
    )
    for report in (carried, lossy):
        assert [line.outcome for line in report.lines] == EXPECTED, [(x.text, x.outcome, x.code) for x in report.lines]
        assert "Git has no copy of notes.txt" in report.lines[1].question
    assert not carried.loss and lossy.loss and lossy.lossy == []
    text = measure.printed([carried, lossy], misses=True)
    assert "tiny_everyday.txt (5, carried)" in text and "tiny_everyday.txt (5, loss)" in text
    assert "everyday lines asked or refused: 60.0% of 10 (target <= 1%: MISSED)" in text
    assert "lines that lost work (every question declined): 0" in text


def test_the_measure_finds_work_lost_and_a_commit_gone(tmp_path: Path) -> None:
    measure = _measure()
    pristine, proj = tmp_path / "pristine", tmp_path / "proj"
    pristine.mkdir()
    head, work = measure.fixture(pristine)
    measure.put_back(pristine, proj)
    assert measure.lost_work(proj, pristine, head, work) == []
    (proj / "notes.txt").unlink()
    (proj / "src" / "m1.py").write_text("other\n")
    assert measure.lost_work(proj, pristine, head, work) == ["src/m1.py", "notes.txt"]
    measure.put_back(pristine, proj)
    (proj / "notes.txt").write_text("changed\n")
    shutil.rmtree(proj / ".git")
    assert measure.lost_work(proj, pristine, head, work) == ["notes.txt", "HEAD commit"]
