"""Red team 42q L: git hooks configured in a package.json. husky 4 runs ``husky.hooks``, lint-staged the commands of
its key (from the hook husky or simple-git-hooks installed) — at the user's next ``git commit``, outside the box. The
hook files and the managers' own config files were protected; the keys, in a file every project edits, were not.
Now a change that sets or alters them is asked about when a command makes it, and refused to file_write (which
cannot ask); any other edit of package.json applies. The hook commands here are harmless data."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard.hook_configs import changed_hook_keys, judged_package_json
from support import error_of, serve
from support.boxed import Person, program, run, shell

PACKAGE = {"name": "app", "version": "1.0.0", "dependencies": {"left-pad": "1.3.0"}, "lint-staged": {"*.js": "eslint"}}


def _bytes(value: Any) -> bytes:
    return json.dumps(value, indent=2).encode()


def test_the_hook_keys_a_new_package_json_sets_or_changes_are_named() -> None:
    old = _bytes(PACKAGE)
    assert changed_hook_keys(old, _bytes({**PACKAGE, "dependencies": {}})) == []
    assert changed_hook_keys(old, _bytes({**PACKAGE, "lint-staged": {"*.js": "echo changed"}})) == ["lint-staged"]
    assert changed_hook_keys(old, _bytes({**PACKAGE, "husky": {"hooks": {"pre-commit": "echo x"}}})) == ["husky"]
    scripts = {**PACKAGE, "scripts": {"test": "jest", "precommit": "echo x"}, "config": {"ghooks": {"pre-push": "x"}}}
    assert changed_hook_keys(old, _bytes(scripts)) == ["config.ghooks", "scripts.precommit"]
    # scripts.test where a hook runs it (husky init's hook: npm test), or the npm pre-commit package lists none
    assert changed_hook_keys(old, _bytes(scripts), ["npm test\n"]) == ["config.ghooks", "scripts.precommit",
                                                                       "scripts.test"]  # fmt: skip
    listed_none = changed_hook_keys(old, _bytes({**scripts, "pre-commit": True}))
    assert listed_none == ["config.ghooks", "pre-commit", "scripts.precommit", "scripts.test"]
    assert changed_hook_keys(old, _bytes({"name": "app"})) == []  # a key taken out runs nothing new
    assert changed_hook_keys(None, _bytes({"simple-git-hooks": {"pre-commit": "x"}})) == ["simple-git-hooks"]
    assert changed_hook_keys(None, b"\xef\xbb\xbf" + _bytes({"gitHooks": {"pre-commit": "x"}})) == ["gitHooks"]
    # not read here: judged as setting them (npm refuses it too, but what Node reads and this does not must not pass)
    assert changed_hook_keys(old, b"{ not json") == ["(the whole file: it could not be read as JSON here)"]
    # the same key twice: the last wins, as Node reads it
    assert changed_hook_keys(old, b'{"lint-staged": {"*.js": "eslint"}, "lint-staged": {"*": "x"}}') == ["lint-staged"]
    assert judged_package_json("package.json") and judged_package_json("packages/web/package.json")
    assert not judged_package_json("node_modules/husky/package.json") and not judged_package_json("package.json5")


@pytest.mark.anyio
async def test_attack_file_write_adding_a_lint_staged_command_is_refused(workspace: Path, tmp_path: Path) -> None:
    (workspace / "package.json").write_bytes(_bytes(PACKAGE))
    planted = {**PACKAGE, "lint-staged": {"*": "echo planted"}}
    edited = {**PACKAGE, "dependencies": {"left-pad": "1.3.0", "is-number": "7.0.0"}}
    async with serve("mcp-server-file-write", workspace, "--history-dir", str(tmp_path / "history")) as client:
        refused = await client.call_tool(
            "file_write", {"path": "package.json", "content": json.dumps(planted), "overwrite": True}
        )
        new = await client.call_tool(
            "file_write",
            {"path": "web/package.json", "content": json.dumps({"husky": {"hooks": {}}}), "createDirs": True},
        )
        fine = await client.call_tool(
            "file_write", {"path": "package.json", "content": json.dumps(edited), "overwrite": True}
        )
    assert error_of(refused)["code"] == "PROTECTED_CONTENT" and "lint-staged" in error_of(refused)["message"]
    assert error_of(new)["code"] == "PROTECTED_CONTENT" and not (workspace / "web" / "package.json").exists()
    assert not fine.is_error and json.loads((workspace / "package.json").read_text()) == edited


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_attack_a_command_adding_a_husky_hook_to_package_json_is_asked_first(workspace: Path) -> None:
    (workspace / "package.json").write_bytes(_bytes(PACKAGE))
    (workspace / "hooked.json").write_bytes(_bytes({**PACKAGE, "husky": {"hooks": {"pre-commit": "echo planted"}}}))
    plant = program(workspace, "plant", "open('package.json', 'w').write(open('hooked.json').read())\n")
    add = program(workspace, "add", "import json\nd = json.load(open('package.json'))\nd['version'] = '1.0.1'\n"
                  "json.dump(d, open('package.json', 'w'))\n")  # fmt: skip
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        planted = await run(client, plant)
        edited = await run(client, add)
    assert any("git hooks and package managers run from package.json (husky)" in q for q in person.questions), (
        person.questions
    )
    assert planted["transaction"] != "applied" and "husky" not in json.loads((workspace / "package.json").read_text())
    assert edited["transaction"] == "applied" and json.loads((workspace / "package.json").read_text())["version"] == (
        "1.0.1"
    )
    assert len(person.questions) == 1, person.questions
