"""Red team 100 F3 (LOW; answered by more build products' suffixes, the rest kept as the claim's limit): the bound
issue 42 item 7 claims (another agent's file_write never meets FILE_BUSY while a
build's huge change set is judged) holds only for change sets made of the listed suffixes. The outputs of real builds
hold names outside PLAIN_SUFFIXES (``.so``, ``.a``, ``.d``, ``.whl``, a ``package.json`` in ``node_modules``, cargo's
``.fingerprint/``, CMake's ``.cmake``), so ``unrelated_to`` answers None ("anything") for them, every file_write
makes the judgement stale again, and after three rounds it runs under the tree lock as before. Likewise another
agent's notes called ``TODO``, ``plan.json`` or ``notes.yaml`` are "anything"."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.changes.changeset import Change, ChangeSet
from mcp_server_guard.changes.unrelated import unrelated_to
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for

POLICY = load_policy(None)


@pytest.mark.parametrize(
    "product",
    [
        "build/lib.linux-x86_64-cpython-312/pkg/_speedups.cpython-312-x86_64-linux-gnu.so",
        "build/libfoo.a",
        "build/obj/main.d",
        "dist/pkg-1.0-py3-none-any.whl",
        "dist/pkg-1.0.tar.gz",
        "target/debug/deps/libfoo-1.rlib",
    ],
)
def test_a_real_builds_output_is_not_judged_again_for_every_notes_write(tmp_path: Path, product: str) -> None:
    root = tmp_path / "root"
    changes = ChangeSet(str(root), str(tmp_path / "upper"), (Change("build/a.o", "create", "file"),
                                                            Change(product, "create", "file")))  # fmt: skip
    unrelated = unrelated_to([changes], protection_for(POLICY), [str(root)])
    assert unrelated is not None and unrelated(frozenset({str(root / "notes.md")}))


@pytest.mark.parametrize(
    "product",
    [
        "node_modules/left-pad/package.json",  # a manifest: what it names may be read
        "target/debug/.fingerprint/foo-1/lib-foo",  # a dot directory
        "build/CMakeFiles/foo.dir/DependInfo.cmake",  # a script a tool runs
    ],
)
def test_a_build_with_more_than_plain_content_is_still_judged_again(tmp_path: Path, product: str) -> None:
    # The claim's limit, kept (docs/shell_exec.md): such a change set may be judged by files it names.
    root = tmp_path / "root"
    changes = ChangeSet(str(root), str(tmp_path / "upper"), (Change(product, "create", "file"),))
    assert unrelated_to([changes], protection_for(POLICY), [str(root)]) is None


@pytest.mark.parametrize("notes", ["TODO", "plan.json", "notes.yaml", "NOTES"])
def test_notes_with_no_content_suffix_make_a_build_judgement_stale(tmp_path: Path, notes: str) -> None:
    # The claim's limit, kept: a name with no suffix may be a Makefile's kind, a json or yaml file a config.
    root = tmp_path / "root"
    changes = ChangeSet(str(root), str(tmp_path / "upper"), (Change("build/a.o", "create", "file"),))
    unrelated = unrelated_to([changes], protection_for(POLICY), [str(root)])
    assert unrelated is not None and not unrelated(frozenset({str(root / notes)}))
