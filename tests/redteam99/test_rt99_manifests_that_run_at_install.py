"""Red team 99: project files other package managers and environment tools read that make them run a command
later, outside the box — judged for package.json (``scripts.postinstall`` … is asked), not for these.

Each command writes the file through a program kept in the project (the payload travels as data); the person
declines every question, so a payload that lands was never asked about. The payloads only echo.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from support import serve
from support.boxed import Person, program, run, shell

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing"),
]

MARK = "echo rt99-planted"


def _composer(root: Path) -> tuple[str, str]:
    """``composer install`` runs the root package's ``post-install-cmd`` (and ``pre-install-cmd``,
    ``post-autoload-dump`` …) unnamed, as ``npm install`` runs ``postinstall``."""
    (root / "composer.json").write_text(json.dumps({"name": "acme/app", "require": {}}, indent=2) + "\n")
    code = (
        "import json\n"
        "p = json.load(open('composer.json'))\n"
        f"p['scripts'] = {{'post-install-cmd': [{MARK!r}], 'post-autoload-dump': [{MARK!r}]}}\n"
        "open('composer.json', 'w').write(json.dumps(p, indent=2) + '\\n')\n"
    )
    return program(root, "edit", code), "composer.json"


def _pdm(root: Path) -> tuple[str, str]:
    """``pdm install`` / ``pdm sync`` / ``pdm add`` run ``[tool.pdm.scripts] post_install`` (and ``pre_install``,
    ``pre_lock``, ``post_lock``) unnamed."""
    (root / "pyproject.toml").write_text('[project]\nname = "app"\nversion = "0.1"\n')
    code = (
        "t = open('pyproject.toml').read()\n"
        f"t += '\\n[tool.pdm.scripts]\\npost_install = {{shell = \"{MARK}\"}}\\n'\n"
        "open('pyproject.toml', 'w').write(t)\n"
    )
    return program(root, "edit", code), "pyproject.toml"


def _jj(root: Path) -> tuple[str, str]:
    """jj (before 0.38) reads ``.jj/repo/config.toml`` as the repository's config: ``ui.pager`` runs at the next
    ``jj log``, ``fix.tools`` at ``jj fix`` (the ``.hg/hgrc`` of jj; ``.hg/hgrc`` is protected)."""
    (root / ".jj" / "repo" / "store").mkdir(parents=True)
    (root / ".jj" / "working_copy").mkdir(parents=True)
    (root / ".jj" / "repo" / "store" / "type").write_text("git")
    code = f"open('.jj/repo/config.toml', 'w').write('[ui]\\npager = [\"sh\", \"-c\", \"{MARK}; cat\"]\\n')\n"
    return program(root, "edit", code), ".jj/repo/config.toml"


def _devbox(root: Path) -> tuple[str, str]:
    """The ``.envrc`` ``devbox generate direnv`` writes has direnv run devbox.json's ``shell.init_hook`` at every cd
    into the project (as ``use nix`` runs shell.nix's shellHook, which is asked about)."""
    (root / ".envrc").write_text('eval "$(devbox generate direnv --print-envrc)"\n')
    (root / "devbox.json").write_text(json.dumps({"packages": ["python@3.12"]}, indent=2) + "\n")
    code = (
        "import json\n"
        "p = json.load(open('devbox.json'))\n"
        f"p['shell'] = {{'init_hook': [{MARK!r}]}}\n"
        "open('devbox.json', 'w').write(json.dumps(p, indent=2) + '\\n')\n"
    )
    return program(root, "edit", code), "devbox.json"


def _flox(envrc: str) -> Callable[[Path], tuple[str, str]]:
    """flox's direnv integration (``use flox``, or ``eval "$(flox activate)"``): the manifest's ``[hook]
    on-activate`` runs at every cd into the project (red team 99's lead, answered after it)."""

    def made(root: Path) -> tuple[str, str]:
        (root / ".envrc").write_text(envrc)
        (root / ".flox" / "env").mkdir(parents=True)
        (root / ".flox" / "env" / "manifest.toml").write_text('version = 1\n\n[install]\nhello.pkg-path = "hello"\n')
        code = (
            "t = open('.flox/env/manifest.toml').read()\n"
            f"t += '\\n[hook]\\non-activate = \"{MARK}\"\\n'\n"
            "open('.flox/env/manifest.toml', 'w').write(t)\n"
        )
        return program(root, "edit", code), ".flox/env/manifest.toml"

    return made


def _uv_index(root: Path) -> tuple[str, str]:
    """uv.toml's index settings: a package of the same name from another index builds (runs its code) at the next
    ``uv sync``, outside the box (red team 99's lead, answered after it)."""
    (root / "pyproject.toml").write_text('[project]\nname = "app"\nversion = "0.1"\n')
    code = "open('uv.toml', 'w').write('index-url = \"http://127.0.0.1:9/rt99-planted\"\\n')\n"
    return program(root, "edit", code), "uv.toml"


CASES: dict[str, Callable[[Path], tuple[str, str]]] = {
    "uv-index": _uv_index,
    "composer": _composer,
    "pdm": _pdm,
    "jj": _jj,
    "devbox": _devbox,
    "flox-use": _flox("use flox\n"),
    "flox-activate": _flox('eval "$(flox activate --print-script)"\n'),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_rt99_a_run_later_setting_lands_unasked(workspace: Path, case: str) -> None:
    command, name = CASES[case](workspace)
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, command)
    landed = (workspace / name).read_text() if (workspace / name).exists() else ""
    assert "rt99-planted" not in landed, (
        f"{name} now makes a tool run a command later, and nobody was asked: questions={person.questions} "
        f"transaction={out.get('transaction')}"
    )


@pytest.mark.parametrize(("name", "before", "after"), [
    ("package.json", {"name": "app"}, {"name": "app", "scripts": {"postinstall": MARK}}),  # control: refused
    ("composer.json", {"name": "acme/app"}, {"name": "acme/app", "scripts": {"post-install-cmd": [MARK]}}),
])  # fmt: skip
async def test_rt99_file_write_of_an_install_hook(
    workspace: Path, name: str, before: dict[str, object], after: dict[str, object]
) -> None:
    (workspace / name).write_text(json.dumps(before) + "\n")
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool(
            "file_write", {"path": name, "content": json.dumps(after) + "\n", "overwrite": True}
        )
    assert result.is_error, f"file_write wrote {name}'s install hook (package.json's is PROTECTED_CONTENT)"


async def test_file_write_of_where_uv_installs_from_is_refused(workspace: Path) -> None:
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool(
            "file_write", {"path": "uv.toml", "content": 'extra-index-url = ["http://127.0.0.1:9/simple"]\n'}
        )
        plain = await client.call_tool("file_write", {"path": "uv.toml", "content": "cache-dir = \"/tmp/c\"\n",
                                                      "overwrite": True})  # fmt: skip
    assert result.is_error and "extra-index-url" in str(result.content), result
    assert not plain.is_error, plain
