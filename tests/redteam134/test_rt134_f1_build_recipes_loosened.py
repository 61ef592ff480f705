"""Red team 134 F1 (issue 42 item 1, after red teams 106 F1 and 107 F3): files in a build or cache directory that
the user's next build *runs or links* — a CMake build tree's ``Makefile``/``build.ninja``/``build.make`` (their
recipes are shell commands ``make -C build`` / ``ninja -C build`` / ``cmake --build build`` run), the
``CMakeCache.txt`` (it names the compiler), object files and static or Rust libraries (linked into the next binary),
wheels and sdists in ``dist/`` (``pip install dist/*``, ``twine upload``), a Mix dependency's ``mix.exs``, a
Terraform module's ``main.tf`` (``local-exec``) — made writable by others with no question.

``refusals._loosened`` lets a group- or other-writable grant in a scratch directory through unless the path is a
directory, an executable, code by a short list of suffixes (``.js``, ``.so``, ``.py`` …) or lies in
``__pycache__``/``node_modules``/``vendor/bundle``. A Makefile, a ``.ninja``, ``.o``, ``.a``, ``.rlib``, ``.whl``,
``.tar.gz``, ``.exs``, ``.tf`` is none of those: anyone on the machine may then put their recipe or object there and
the user's next build, outside the box, runs it. The same grant on the project's own ``Makefile`` (control) and on
``dist/index.js`` (control: red team 107's answer) is asked.

The command lines travel as data (build_recipes_loosened.json). A person declines every question; a case fails
when the grant landed with no question."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.planted import loosened_by, written

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

LINES: dict[str, str] = json.loads((Path(__file__).resolve().parent / "build_recipes_loosened.json").read_text())

FILES: dict[str, bytes] = {
    "Makefile": b"all:\n\tcmake --build build\n",
    "CMakeLists.txt": b"project(app C)\nadd_executable(app main.c)\n",
    "main.c": b"int main(void) { return 0; }\n",
    "build/Makefile": b"all:\n\t$(MAKE) -f CMakeFiles/Makefile2 all\n",
    "build/build.ninja": b"rule cc\n  command = cc -c $in -o $out\n",
    "build/CMakeCache.txt": b"CMAKE_C_COMPILER:FILEPATH=/usr/bin/cc\n",
    "build/CMakeFiles/app.dir/build.make": b"app: main.c.o\n\tcc -o app main.c.o\n",
    "build/CMakeFiles/app.dir/main.c.o": b"\x7fELF" + b"\0" * 60,
    "build/libutil.a": b"!<arch>\n",
    "target/debug/deps/libutil-0123abcd.rlib": b"!<arch>\n",
    "target/CACHEDIR.TAG": b"Signature: 8a477f597d28d172789f06886806bc55\n",
    "dist/app-0.1.0-py3-none-any.whl": b"PK\x05\x06" + b"\0" * 18,
    "dist/app-0.1.0.tar.gz": b"\x1f\x8b\x08\x00" + b"\0" * 16,
    "dist/index.js": b"console.log('hi');\n",
    "mix.exs": b"defmodule App.MixProject do\nend\n",
    "deps/plug/mix.exs": b"defmodule Plug.MixProject do\nend\n",
    "main.tf": b'module "net" {\n  source = "./modules/net"\n}\n',
    ".terraform/modules/net/main.tf": b'resource "null_resource" "x" {}\n',
    "build/_deps/fmt-src/CMakeLists.txt": b"project(fmt CXX)\n",
    "target/app.war": b"PK\x05\x06" + b"\0" * 18,
}


def _project(root: Path) -> None:
    written(root, FILES)


@pytest.mark.parametrize("case", sorted(LINES))
async def test_a_build_recipe_or_linked_object_made_writable_by_others_is_asked(workspace: Path, case: str) -> None:
    _project(workspace)
    loosened, person, out = await loosened_by(workspace, LINES[case])
    assert not loosened or person.questions, (case, loosened, out.get("transaction"), out.get("changes"))
