"""Red team 119 F1: a lock file's url is keyed by ``urllib.parse`` and a regex, but npm (WHATWG URL,
npm-package-arg) reads it otherwise — a lock entry moved off the registry lands unasked.

``package_sources.lock_places`` keys each url of a lock by ``urlsplit(url).hostname`` (a code host's by the first two
path segments) and archives by a case-sensitive regex. The package manager reads the same text otherwise:

- ``http://127.0.0.1:9\\@registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz``: urllib's netloc runs to the first ``/``,
  so its hostname is what follows the last ``@`` — ``registry.npmjs.org`` (the registry, a place the lock named
  already). WHATWG URL (npm, Node's fetch; Rust's ``url`` crate in uv and Cargo alike) takes ``\\`` as ``/`` in an
  http(s) url: the host is ``127.0.0.1:9``. Checked by hand (scratch/verify_npm.py in the notes): ``npm ci`` fetched
  ``/@registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz`` from the local server the url names and ran its
  ``postinstall``.
- ``http://registry.npmjs.org,@127.0.0.1:9/left-pad``: the url regex stops at ``,`` (the registry); WHATWG URL takes
  ``registry.npmjs.org,`` for a user name: the host is ``127.0.0.1:9`` — checked by hand as above (``npm ci`` fetched
  ``/left-pad`` from the local server and ran its ``postinstall``);
- the first with its ``\\`` a ``/`` written as the JSON escape ``\\u002f``: a lock with no ``license``/``funding``
  key left (they are optional) is read as raw text, not as its JSON values;
- ``https://registry.npmjs.org<TAB>.evil.example/…`` (a package-lock has ``license`` keys, so its strings are read
  parsed): the regex stops at the tab (the registry); WHATWG URL drops tabs and newlines: host
  ``registry.npmjs.org.evil.example``;
- ``file:vendor/left-pad-1.3.0.TGZ`` and ``….tar``: the archive regex is case-sensitive and lacks ``.tar``;
  npm-package-arg's ``isFilename`` is ``/[.](?:tgz|tar.gz|tar)$/i`` — checked by hand: ``npm ci`` installed each
  tarball by its path and ran its ``postinstall`` (a tarball's package.json is never judged);
- a code host's ``owner/repo/../../someone/evil/…``: keyed ``owner/repo`` (a place named before); every fetcher
  removes the dot segments: ``someone/evil``.

Each lock lands unasked from shell_exec with a person who declines everything, and file_write writes it. Controls:
the same moves spelled plainly (``http://127.0.0.1:9/…``, ``.tgz``, ``someone/evil``) are asked and refused. Texts
travel as data (lock_url_spellings.json, made by scratch/make_lock_cases.py); urls name a closed port or
``.example``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

CASES: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parent / "lock_url_spellings.json").read_text()
)["cases"]


def _set_up(workspace: Path, case: dict[str, Any]) -> Path:
    for name, text in dict(case.get("also") or {}).items():
        (workspace / name).write_text(text)
    path = workspace / str(case["path"])
    path.write_text(str(case["before"]))
    return path


@pytest.mark.parametrize("name", sorted(CASES))
async def test_file_write_refuses_a_lock_moved_elsewhere(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": case["path"], "content": case["after"],
                                                       "overwrite": True})  # fmt: skip
    assert path.read_text() == case["before"], (name, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("name", sorted(CASES))
async def test_shell_exec_asks_before_a_lock_moved_elsewhere(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    (workspace / "new.dat").write_text(str(case["after"]))
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, f"cp new.dat {case['path']}", cwd=str(workspace))
    assert person.questions and path.read_text() == case["before"], (name, out.get("changes"))
