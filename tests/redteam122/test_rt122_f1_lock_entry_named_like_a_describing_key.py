"""Red team 122 F1 (HIGH): a lock entry whose *key is a package name* equal to a describing word (``license``,
``funding``, ``homepage``, ``repository``, ``bugs``, ``author``, ``description`` …) is skipped whole by
``package_locks._strings``: the package moved to a host or a repository the model chose lands unasked, and the
user's next ``npm install`` fetches it and runs its ``postinstall`` outside the box.

``package_locks._strings`` leaves out every key of ``_DESCRIBING`` at any depth of a JSON or TOML lock (meant for
npm v3's ``"funding": {...}``/``"license": "MIT"`` inside an entry). But several locks key their entries by the
package's name: npm's lockfileVersion 1 ``dependencies`` (which npm 11 still reads: ``npm ci`` and ``npm install``
take it with an "old lockfile" warning), Pipfile.lock's ``default``/``develop``, bun.lock's ``packages``. An entry
named ``license`` there is never looked at: ``lock_places`` is ``set()`` for the whole moved lock. This is red team
120 F5's class (describing keys skipped where a key is a dependency's name), on the lock side, which its answer
(``_DESCRIBED`` in package_sources.py) did not reach.

Checked with this machine's npm 11.19 (``test_npm_install_runs_the_moved_entrys_postinstall`` below, no network: a
local http server stands in for the model's host): after file_write lands the moved lock, ``npm install`` fetches
the tarball from that host and runs its ``postinstall`` (a marker written); ``npm ci`` fetches and installs the
model's tarball as the package (its code is what ``require('license')`` runs). pipenv and bun are not installed here
(same reader, same skip).

Controls that pass: the same moves under a package named ``licensed`` are refused by file_write and asked by
shell_exec. Texts travel as data (lock_named_entries.json, npm_end_to_end.json).
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from support import serve
from support.boxed import Person, run, shell

pytestmark = [pytest.mark.anyio]

HERE = Path(__file__).resolve().parent
CASES: dict[str, dict[str, Any]] = json.loads((HERE / "lock_named_entries.json").read_text(encoding="utf-8"))["cases"]
NPM: dict[str, Any] = json.loads((HERE / "npm_end_to_end.json").read_text(encoding="utf-8"))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=2) + "\n"


def _set_up(workspace: Path, case: dict[str, Any]) -> Path:
    for name, value in dict(case.get("also") or {}).items():
        (workspace / name).write_text(_text(value), encoding="utf-8")
    path = workspace / str(case["path"])
    path.write_text(_text(case["before"]), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(CASES))
async def test_file_write_refuses_a_lock_entry_moved_to_another_host(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    async with serve("mcp-server-file-write", workspace) as client:
        result = await client.call_tool("file_write", {"path": case["path"], "content": _text(case["after"]),
                                                       "overwrite": True})  # fmt: skip
    assert path.read_text(encoding="utf-8") == _text(case["before"]), (name, result.content)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("name", sorted(CASES))
async def test_shell_exec_asks_before_a_lock_entry_moved_to_another_host(workspace: Path, name: str) -> None:
    case = CASES[name]
    path = _set_up(workspace, case)
    (workspace / "new.dat").write_text(_text(case["after"]), encoding="utf-8")
    person = Person(False)
    async with shell(workspace, person) as client:
        out = await run(client, f"cp new.dat {case['path']}", cwd=str(workspace))
    assert person.questions and path.read_text(encoding="utf-8") == _text(case["before"]), (name, out.get("changes"))


@contextmanager
def _host(directory: Path) -> Iterator[str]:
    """A local http server over ``directory`` (the model's host, without a network)."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(directory), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is missing")
async def test_npm_install_runs_the_moved_entrys_postinstall(workspace: Path, tmp_path: Path) -> None:
    served = tmp_path / "served"
    (served / "src").mkdir(parents=True)
    (served / "src" / "package.json").write_text(json.dumps(NPM["package_in_tarball"]), encoding="utf-8")
    tarball = served / "evil.tgz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(served / "src" / "package.json", arcname="package/package.json")
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    (workspace / "package.json").write_text(_text(NPM["project_package_json"]), encoding="utf-8")
    lock = workspace / "package-lock.json"
    lock.write_text(_text(NPM["lock_before"]), encoding="utf-8")
    marker = tmp_path / "marker"
    with _host(served) as url:
        after = _text(NPM["lock_after_template"]).replace("{URL}", f"{url}/evil.tgz").replace("{INTEGRITY}", integrity)
        async with serve("mcp-server-file-write", workspace) as client:
            result = await client.call_tool("file_write", {"path": "package-lock.json", "content": after,
                                                           "overwrite": True})  # fmt: skip
        landed = lock.read_text(encoding="utf-8") == after
        if landed:  # the user's next install, outside any box (a fake HOME, no registry reachable)
            npm_home = tmp_path / "npm-home"
            npm_home.mkdir()
            env = {"PATH": os.environ["PATH"], "HOME": str(npm_home), "RT122_MARKER": str(marker),
                   "npm_config_cache": str(tmp_path / "npm-cache"), "npm_config_registry": "http://127.0.0.1:9/",
                   "npm_config_fetch_retries": "0", "npm_config_audit": "false", "npm_config_fund": "false",
                   "npm_config_update_notifier": "false"}  # fmt: skip
            subprocess.run(["npm", "install"], cwd=workspace, env=env, capture_output=True, timeout=300, check=False)
    assert not landed and not marker.exists(), (
        f"the lock moved to {url} landed ({result.content}); npm install ran the model's postinstall: "
        f"{marker.exists() and marker.read_text()!r}"
    )
