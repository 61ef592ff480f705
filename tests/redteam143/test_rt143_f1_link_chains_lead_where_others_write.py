"""Red team 143 F1: a link that leads where others write, spelled so ``_leads_where_others_write`` does not see it.

``refusals._leads_where_others_write`` (the answer to red team 141 F1) asks about a link the command makes when its
target, outside the roots, lies in a directory anyone may write or is a file of another user. It works out where
the link leads with ``posixpath.normpath`` of the target text alone, and stops at the first link:

* a chain: ``up -> /`` (leads to a root-owned directory: nothing asked), then ``lib/mod.py -> ../up/<shared>/mod.py``
  (lexically inside the root: nothing asked). The kernel follows ``up`` and ``lib/mod.py`` is a name in the
  world-writable directory, as in red team 141 F1;
* the same with ``lib/up -> ../..`` (the project's parent: the user's own directory) and ``lib/mod.py ->
  up/shared/mod.py``;
* a link to a *directory* of another user (``lib/pkg -> /home/other/pkg``): only a file of another user counts, yet
  the owner of a directory writes every module in it.

Controls: ``lib/mod.py -> <shared>/mod.py`` and ``lib/mod.py -> <other>/mod.py`` are asked (declined, they do not
land). ``<shared>`` is a 1777 directory in the test's tmp dir (a stand-in for /tmp), ``<other>`` a directory owned
by uid 65534 (nobody). The links travel as data (rt143_f1_links.json); a person declines every question."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing"),
    pytest.mark.skipif(os.geteuid() != 0, reason="a directory of another user is made with chown (root)"),
]

CASES: dict[str, dict[str, str]] = json.loads((Path(__file__).resolve().parent / "rt143_f1_links.json").read_text())

MAKE_LINKS = """
import json, pathlib
for name, target in json.loads(pathlib.Path('.t/links.json').read_text()).items():
    p = pathlib.Path(name)
    p.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, name)
"""


def _places(workspace: Path) -> tuple[Path, Path]:
    shared = workspace.parent / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    other = workspace.parent / "other"
    (other / "pkg").mkdir(parents=True)
    (other / "pkg" / "__init__.py").write_text("VALUE = 1\n")
    (other / "mod.py").write_text("VALUE = 1\n")
    for path in (other, other / "pkg", other / "pkg" / "__init__.py", other / "mod.py"):
        os.chown(path, 65534, 65534)
    return shared, other


def _escaping(workspace: Path, shared: Path, other: Path) -> list[str]:
    """Links in the project whose real target lies in ``shared`` or ``other``."""
    found = []
    for path in workspace.rglob("*"):
        if not path.is_symlink() or ".t" in path.parts:
            continue
        real = Path(os.path.realpath(path))
        if real.is_relative_to(shared) or real.is_relative_to(other):
            found.append(f"{path.relative_to(workspace)} -> {os.readlink(path)} (really {real})")
    return sorted(found)


async def _one(workspace: Path, case: str) -> tuple[list[str], Person, dict[str, object]]:
    shared, other = _places(workspace)
    links = {k: v.replace("{shared}", str(shared)).replace("{other}", str(other)) for k, v in CASES[case].items()}
    (workspace / ".t").mkdir()
    (workspace / ".t" / "links.json").write_text(json.dumps(links))
    command = program(workspace, "links", MAKE_LINKS)
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, command, cwd=str(workspace))
    return _escaping(workspace, shared, other), person, out


@pytest.mark.parametrize("case", ["control_direct_to_shared", "control_file_of_another_user"])
async def test_control_a_direct_link_where_others_write_is_asked(workspace: Path, case: str) -> None:
    escaping, person, out = await _one(workspace, case)
    assert person.questions, out
    assert not escaping, (escaping, out.get("changes"))


@pytest.mark.parametrize(
    "case", ["chain_through_a_link_to_slash", "chain_through_a_link_to_the_parent", "directory_of_another_user"]
)
async def test_attack_a_link_that_leads_where_others_write_lands_unasked(workspace: Path, case: str) -> None:
    escaping, person, out = await _one(workspace, case)
    assert not escaping or person.questions, ("led where others write, nobody asked", escaping,
                                              out.get("transaction"))  # fmt: skip
