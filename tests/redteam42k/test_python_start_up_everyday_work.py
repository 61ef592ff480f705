"""The other side of red team 6 L5/L6: what installers and everyday work do to a virtual environment is not asked
about. A new environment is the installer's whole (``python3 -m venv``, a ``_virtualenv.pth`` with its module, as
``uv venv`` writes them); in one that existed, an installer's ``.pth`` line whose module the call did not write
stays unasked (a reinstall rewriting the same line), and so do a package's files. Start-up code in any form is
asked wherever it lies, a project's ``src/sitecustomize.py`` too (an editable install puts ``src`` on the path)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

FINDER = "import __editable___app_1_0_finder; __editable___app_1_0_finder.install('/x')\n"


def _venv(path: Path) -> Path:
    python = shutil.which("python3") or sys.executable
    subprocess.run([python, "-m", "venv", "--without-pip", str(path)], check=True, capture_output=True)
    return next((path / "lib").glob("python3*/site-packages"))


async def _questions(workspace: Path, code: str) -> tuple[list[str], dict[str, object]]:
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, program(workspace, "work", code))
    assert out["exitCode"] == 0, out
    return person.questions, out


async def test_a_new_virtual_environment_with_an_installers_start_up_lines_is_not_asked_about(workspace: Path) -> None:
    code = (
        "import subprocess, glob\n"
        "subprocess.run([sys.executable, '-m', 'venv', '--without-pip', '.venv'], check=True)\n"
        "site = glob.glob('.venv/lib/python3*/site-packages')[0]\n"
        "open(site + '/_virtualenv.py', 'w').write('x = 1\\n')\n"
        "open(site + '/_virtualenv.pth', 'w').write('import _virtualenv\\n')\n"
    )
    questions, out = await _questions(workspace, code)
    assert questions == [], questions
    assert (workspace / ".venv" / "pyvenv.cfg").exists(), out


async def test_an_installers_line_rewritten_in_an_existing_environment_is_not_asked_about(workspace: Path) -> None:
    site = _venv(workspace / ".venv")
    (site / "__editable___app_1_0_finder.py").write_text("def install(p): pass\n")
    (site / "__editable__.app-1.0.pth").write_text(FINDER)  # (pip install -e . again: the same line rewritten)
    rel = site.relative_to(workspace)
    code = (
        f"open('{rel}/__editable__.app-1.0.pth', 'w').write({FINDER!r})\n"
        f"os.makedirs('{rel}/app-1.0.dist-info')\nopen('{rel}/app-1.0.dist-info/RECORD', 'w').write('x\\n')\n"
    )
    questions, _out = await _questions(workspace, code)
    assert questions == [], questions


async def test_an_installers_line_whose_module_the_call_wrote_in_an_existing_environment_is_asked(
    workspace: Path,
) -> None:
    site = _venv(workspace / ".venv")
    rel = site.relative_to(workspace)
    code = (
        f"open('{rel}/__editable___app_1_0_finder.py', 'w').write('def install(p): pass\\n')\n"
        f"open('{rel}/__editable__.app-1.0.pth', 'w').write({FINDER!r})\n"
    )
    questions, out = await _questions(workspace, code)
    assert any("every start of the Python" in q for q in questions), (questions, out)
    assert not (site / "__editable__.app-1.0.pth").exists()


@pytest.mark.parametrize(
    "path", ["src/sitecustomize.py", "lib/usercustomize/__init__.py", "src/__pycache__/sitecustomize.cpython-311.pyc"]
)
async def test_attack_start_up_module_outside_site_packages_is_asked(workspace: Path, path: str) -> None:
    code = f"os.makedirs(os.path.dirname({path!r}), exist_ok=True)\nopen({path!r}, 'w').write('x = 1\\n')\n"
    questions, out = await _questions(workspace, code)
    assert any("Python start-up module" in q for q in questions), (questions, out)
    assert not (workspace / path).exists()


async def test_attack_pyvenv_cfg_pointed_at_another_interpreter_is_asked(workspace: Path) -> None:
    _venv(workspace / ".venv")
    code = "open('.venv/pyvenv.cfg', 'a').write('home = /work/elsewhere/bin\\n')\n"
    questions, out = await _questions(workspace, code)
    assert any("every activation, start or install of the environment" in q for q in questions), (questions, out)
    assert "elsewhere" not in (workspace / ".venv" / "pyvenv.cfg").read_text()


@pytest.mark.parametrize(
    ("path", "content", "refused"),
    [
        ("src/sitecustomize.py", "x = 1\n", True),
        ("SITE/zz.pth", "# paths\rimport os\n", True),
        ("SITE/zz.pth", "import _virtualenv\n", True),  # a model writing an installer's line is no installer
        ("SITE/plain.pth", "/work/somewhere\n", False),
        (".venv/bin/activate", "echo hi\n", True),
        (".venv/pyvenv.cfg", "home = /elsewhere\n", True),
        ("other/bin/activate", "echo hi\n", False),  # no pyvenv.cfg: not a virtual environment
        ("SITE/app/__init__.py", "x = 1\n", False),
    ],
)
async def test_attack_file_write_refuses_python_start_up_code_as_shell_exec_asks(
    workspace: Path, tmp_path: Path, path: str, content: str, refused: bool
) -> None:
    from support import serve

    site = _venv(workspace / ".venv")
    (workspace / "other" / "bin").mkdir(parents=True)
    path = path.replace("SITE", str(site.relative_to(workspace)))
    (workspace / path).parent.mkdir(parents=True, exist_ok=True)
    async with serve("mcp-server-file-write", workspace, "--history-dir", str(tmp_path / "history")) as client:
        result = await client.call_tool("file_write", {"path": path, "content": content, "overwrite": True})
    assert result.is_error is refused, result
    if refused:
        assert "PROTECTED_CONTENT" in str(result.content), result
    else:
        assert (workspace / path).read_text() == content
