"""Red team 3: ways a git hook got into a package.json unjudged, each now asked about (shell_exec) or refused
(file_write). A file Node reads and the judge's reader did not (an integer of 5,000 digits, nesting 3,000 deep, a
byte that is not UTF-8, a file past what is read) was taken for one with no hook; package.json made a link, or given
another name, was written through unjudged; the manifests and config files the same tools read besides package.json
were not protected. The hook command is harmless data (``echo planted``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mcp_server_guard.hook_configs import changed_hook_keys
from support import error_of, serve
from support.boxed import Person, program, run, shell

pytestmark = pytest.mark.anyio
PACKAGE = {"name": "app", "version": "1.0.0", "lint-staged": {"*.js": "eslint"}}
HOOK = '{"husky": {"hooks": {"pre-commit": "echo planted"}}}'
HOOK_AFTER = '"husky": {"hooks": {"pre-commit": "echo planted"}}}'
WRITES = {
    "not-utf8": f"open('package.json', 'wb').write(b'{{\"d\": \"\\\\xff\", ' + b'{HOOK_AFTER}')\n",
    "long-integer": f"open('package.json', 'w').write('{{\"n\": ' + '1' * 5000 + ', ' + '{HOOK_AFTER}')\n",
    "deep": f"open('package.json', 'w').write('{{\"d\": ' + '[' * 3000 + ']' * 3000 + ', ' + '{HOOK_AFTER}')\n",
    "past-4-mib": f"open('package.json', 'w').write('{HOOK[:-1]}, \"pad\": \"' + 'a' * (5 << 20) + '\"}}')\n",
    "symlink": f"open('pkg.json', 'w').write('{HOOK}')\nos.remove('package.json')\n"
    "os.symlink('pkg.json', 'package.json')\n",
    "hard-link": f"open('pkg.json', 'w').write('{HOOK}')\nos.remove('package.json')\n"
    "os.link('pkg.json', 'package.json')\n",
}


def test_a_package_json_the_reader_cannot_read_as_node_does_counts_as_setting_hooks() -> None:
    old = json.dumps(PACKAGE).encode()
    hooked = HOOK_AFTER.encode()
    for new in (
        b'{"n": ' + b"1" * 5000 + b", " + hooked,
        b'{"d": ' + b"[" * 3000 + b"]" * 3000 + b", " + hooked,
        b'{"pad": "' + b"a" * (5 << 20) + b'", ' + hooked,
    ):
        assert changed_hook_keys(old, new), new[:40]
    assert changed_hook_keys(old, b'{"d": "\xff", ' + hooked) == ["husky"]  # read as Node reads it
    assert changed_hook_keys(old, b'{"n": ' + b"1" * 5000 + b', "version": "2"}') == []  # a long number is fine


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("how", sorted(WRITES))
async def test_attack_a_hook_in_a_package_json_the_judge_could_not_read_is_asked_about(
    workspace: Path, how: str
) -> None:
    (workspace / "package.json").write_text(json.dumps(PACKAGE, indent=2))
    plant = program(workspace, "plant", WRITES[how])
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        out = await run(client, plant)
    assert person.questions and out["transaction"] != "applied", out
    assert "planted" not in (workspace / "package.json").read_text(errors="replace")


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
@pytest.mark.parametrize("linked_by", ["project", "command"])
async def test_attack_a_second_name_of_package_json_rewritten_in_place_is_asked_about(
    workspace: Path, linked_by: str
) -> None:
    (workspace / "package.json").write_text(json.dumps(PACKAGE, indent=2))
    if linked_by == "project":
        (workspace / "pj").hardlink_to(workspace / "package.json")
    link = program(workspace, "link", "os.link('package.json', 'pj')\n")
    plant = program(workspace, "plant", f"f = open('pj', 'r+')\nf.truncate(0)\nf.write({HOOK!r})\nf.close()\n")
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        if linked_by == "command":
            await run(client, link)  # asked too (another name of package.json), and declined
            (workspace / "pj").hardlink_to(workspace / "package.json")  # as if the person had said yes
        await run(client, plant)
    assert person.questions and "planted" not in (workspace / "package.json").read_text()


@pytest.mark.parametrize(
    ("path", "content"),
    [
        (
            "package.json",
            json.dumps({"n": int("1" * 40), "lint-staged": {"*": "echo planted"}}).replace("1" * 40, "1" * 5000),
        ),
        ("web/package.json", '{"d": ' + "[" * 3000 + "]" * 3000 + ", " + HOOK_AFTER),
        ("package.json", json.dumps({**PACKAGE, "commitlint": {"extends": ["./tools/cl.js"]}})),
        ("package.yaml", "name: app\nlint-staged:\n  '*': echo planted\n"),
        ("package.json5", "{name: 'app', 'lint-staged': {'*': 'echo planted'}}\n"),
        (".nano-staged.json", '{"*": "echo planted"}'),
        (".config/commitlintrc.json", '{"extends": ["./tools/cl.js"]}'),
    ],
)
async def test_attack_file_write_of_hook_settings_in_any_form_is_refused(
    workspace: Path, tmp_path: Path, path: str, content: str
) -> None:
    (workspace / "package.json").write_text(json.dumps(PACKAGE))
    async with serve("mcp-server-file-write", workspace, "--history-dir", str(tmp_path / "history")) as client:
        result = await client.call_tool(
            "file_write", {"path": path, "content": content, "overwrite": True, "createDirs": True}
        )
    assert result.is_error and error_of(result)["code"] in ("PROTECTED_CONTENT", "PROTECTED_PATH"), result


async def test_file_write_of_a_package_json_that_is_not_json_says_so(workspace: Path, tmp_path: Path) -> None:
    async with serve("mcp-server-file-write", workspace, "--history-dir", str(tmp_path / "history")) as client:
        result = await client.call_tool("file_write", {"path": "package.json", "content": '{"name": "app",}'})
    assert error_of(result)["code"] == "PROTECTED_CONTENT" and "not JSON as written" in error_of(result)["message"]


FLIP = (
    "import time, shutil\nend = time.time() + 5\ni = 0\nwhile time.time() < end:\n"
    "    shutil.copy('.t/a.json' if i % 2 == 0 else '.t/b.json', 'pj.tmp')\n"
    "    os.rename('pj.tmp', 'package.json')\n    i += 1\n"
    "shutil.copy('.t/b.json', 'pj.tmp')\nos.rename('pj.tmp', 'package.json')\n"
)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
async def test_attack_a_job_swapping_a_hooked_package_json_in_between_looks_never_lands_it(workspace: Path) -> None:
    # Red team 4 F0: a look judged package.json (no hook at that instant), then copied what the job had swapped in
    # a moment later. A package.json now waits for the job's end whatever a look finds; there it is judged whole.
    plain = {"name": "app", "version": "1.0.0"}
    (workspace / "package.json").write_text(json.dumps(plain))
    (workspace / ".t").mkdir()
    (workspace / ".t" / "a.json").write_text(json.dumps({**plain, "version": "1.0.1"}))
    (workspace / ".t" / "b.json").write_text(json.dumps({**plain, "lint-staged": {"*": "echo planted"}}))
    flip = program(workspace, "flip", FLIP)
    seen: list[bool] = []
    async with shell(workspace, Person(answer=False)) as client:
        out = await run(client, flip, yieldAfterSeconds=1)
        for _ in range(60):
            if out["status"] != "running":
                break
            out = await run(client, "", jobId=out["jobId"], yieldAfterSeconds=0.3)
            seen.append("planted" in (workspace / "package.json").read_text(errors="replace"))
    assert not any(seen) and "planted" not in (workspace / "package.json").read_text(errors="replace")
