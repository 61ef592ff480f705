"""Red team 114 F4: red team 113 F3's answer for package.json dependencies (``hook_configs._fetched_spec``) counts a
spec as fetched from elsewhere when it starts with ``scheme:`` or is ``a/b``, and never when it starts ``file:``.
npm (its own npm-package-arg: first test) reads more:

- ``git@github.com:owner/repo.git`` (scp-like git, type ``git``): the ``@`` fails both of the judge's patterns;
- ``file:vendor/x.tgz`` and ``/abs/path/x.tgz`` (type ``file``): a tarball the model wrote in the project; npm
  installs it and runs its ``preinstall``/``install``/``postinstall`` scripts at the user's next ``npm install``,
  outside the box. The tarball's package.json is never judged (it is inside an archive).

Each lands unasked from shell_exec (a person who declines everything) and file_write writes it. Control: a
``git+http://`` spec, asked and refused. Specs travel as data (npm_specs.json); ``/PROJECT`` stands for the root."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

HERE = Path(__file__).resolve().parent
DATA = json.loads((HERE / "npm_specs.json").read_text())
BEFORE: str = DATA["before"]
SPECS: dict[str, str] = DATA["specs"]
NPM_MODULES = Path("/usr/lib/node_modules/npm/node_modules")


def _manifest(workspace: Path, case: str) -> str:
    parsed = json.loads(BEFORE)
    parsed["dependencies"]["left-pad"] = SPECS[case].replace("/PROJECT", str(workspace))
    return json.dumps(parsed, indent=2) + "\n"


def test_npm_reads_each_spec_as_fetched_from_elsewhere() -> None:
    if shutil.which("node") is None or not (NPM_MODULES / "npm-package-arg").is_dir():
        pytest.skip("no npm-package-arg")
    out = subprocess.run(
        ["node", str(HERE / "npa_types.txt"), str(HERE / "npm_specs.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"NODE_PATH": str(NPM_MODULES), "PATH": "/usr/bin:/bin"},
    )
    types = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(t in ("git", "file", "remote") for t in types.values()), types


@pytest.mark.parametrize("case", sorted(SPECS))
async def test_file_write_refuses_a_fetched_dependency(workspace: Path, case: str) -> None:
    (workspace / "package.json").write_text(BEFORE)
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool(
            "file_write", {"path": "package.json", "content": _manifest(workspace, case), "overwrite": True}
        )
    assert (workspace / "package.json").read_text() == BEFORE, (case, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("case", sorted(SPECS))
async def test_shell_exec_asks_before_a_fetched_dependency(workspace: Path, case: str) -> None:
    (workspace / "package.json").write_text(BEFORE)
    (workspace / "new.dat").write_text(_manifest(workspace, case))
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, "cp new.dat package.json", cwd=str(workspace))
    assert (workspace / "package.json").read_text() == BEFORE or person.questions, (
        case,
        out.get("transaction"),
        out.get("changes"),
    )
