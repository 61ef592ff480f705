"""Every bound of the hook reader names more, never less (``hook_runs.PART_READ``): a text a hook runs that is cut
at its size, past the files or bytes read, past the levels followed, or past the make reader's bounds makes all of
its directory count as what the hook runs. Threat (red team 135 F1): a Makefile's ``lint:`` past the first 64 KiB,
or a script's line past it, was never read, and the script it ran landed unasked."""

from __future__ import annotations

import os
from pathlib import Path

from mcp_server_guard.git_dirs import _hooks_rule
from mcp_server_guard.hook_runs import PART_READ, run_by_hooks
from mcp_server_guard.hook_words import code_strings, uncommented


def _found(root: Path, hook: str, files: dict[str, str]) -> list[str]:
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "hooks" / "pre-commit").write_text(f"#!/bin/sh\n{hook}\n")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return run_by_hooks([str(root / ".git" / "hooks")], os.path.realpath(root), None)


def _whole(found: list[str]) -> set[str]:
    return {p[1:] for p in found if p.startswith(PART_READ)}


def test_a_script_longer_than_what_is_read_makes_its_directory_count(tmp_path: Path) -> None:
    long = "true\n" * 60_000 + "sh tools/lint.sh\n"  # ~300 KB: past the 256 KiB read of one file
    found = _found(tmp_path, "sh scripts/pre-commit.sh", {"scripts/pre-commit.sh": long})
    real = os.path.realpath(tmp_path)
    assert _whole(found) == {f"{real}/scripts"}, _whole(found)
    assert _hooks_rule(f"{real}/scripts/anything.sh", found) is not None
    assert _hooks_rule(f"{real}/src/main.py", found) is None


def test_a_script_of_100_kilobytes_is_read_whole(tmp_path: Path) -> None:
    long = "true\n" * 20_000 + "sh tools/lint.sh\n"
    found = _found(tmp_path, "sh scripts/pre-commit.sh", {"scripts/pre-commit.sh": long, "tools/lint.sh": ""})
    assert f"%{os.path.realpath(tmp_path)}/tools/lint.sh" in found and not _whole(found)


def test_scripts_past_the_levels_make_their_directory_count(tmp_path: Path) -> None:
    chain = {f"d{i}/s.sh": f"sh d{i + 1}/s.sh\n" for i in range(10)}
    found = _found(tmp_path, "sh d0/s.sh", chain)
    assert _whole(found), found


def test_a_makefile_past_the_expanders_steps_makes_its_directory_count(tmp_path: Path) -> None:
    words = " ".join(f"w{i}" for i in range(256))
    makefile = f"W := {words}\n-include $(foreach a,$(W),$(foreach b,$(W),x))\nlint:\n\t@true\n"
    found = _found(tmp_path, "make -s lint", {"Makefile": makefile})
    assert _whole(found) == {os.path.realpath(tmp_path)}, _whole(found)


def test_an_ordinary_makefile_is_read_whole(tmp_path: Path) -> None:
    found = _found(tmp_path, "make -s lint", {"Makefile": "lint:\n\tsh scripts/lint.sh\n", "scripts/lint.sh": ""})
    assert f"%{os.path.realpath(tmp_path)}/scripts/lint.sh" in found and not _whole(found)


def test_a_hash_inside_a_word_is_no_comment() -> None:
    # Red team 135 F2: shlex began a comment at `$#`; what followed (`&& sh scripts/lint.sh`) was never read.
    assert uncommented("[ $# -eq 0 ] && sh x.sh # done") == "[ $# -eq 0 ] && sh x.sh "
    assert uncommented("echo ${B#refs/} '#' \"#\" a\\#b;# c") == "echo ${B#refs/} '#' \"#\" a\\#b;"


def test_directories_past_those_a_text_is_looked_in_count_whole(tmp_path: Path) -> None:
    hook = "; ".join(f"(cd d{i} && sh run.sh)" for i in range(40))
    found = _found(tmp_path, hook, {f"d{i}/run.sh": "" for i in range(40)})
    real = os.path.realpath(tmp_path)
    assert f"{real}/d39" in _whole(found) and f"%{real}/d0/run.sh" in found, _whole(found)


def test_hook_files_past_those_read_make_the_work_tree_count(tmp_path: Path) -> None:
    hooks = tmp_path / ".git" / "hooks"
    hooks.mkdir(parents=True)
    for i in range(70):
        (hooks / f"h{i:02d}").write_text("#!/bin/sh\ntrue\n")
    found = run_by_hooks([str(hooks)], os.path.realpath(tmp_path), None)
    assert _whole(found) == {os.path.realpath(tmp_path)}, _whole(found)


def test_a_shells_command_string_and_an_interpreters_code_string_are_read() -> None:
    # Red team 136 F3: `bash -c 'sh scripts/lint.sh'` and `node -e "require('./tools/check.js')"` were one word each.
    assert code_strings("bash -lc 'cd tools && sh ./lint.sh'") == ["cd tools && sh ./lint.sh"]
    # (each as the interpreter's operand, which it completes by its own rules: red team 146 F1)
    assert code_strings("node -e \"require('./tools/check.js')\"") == ["node ./tools/check.js"]
    assert any("tools/x.py" in x for x in code_strings("python3 -c \"import runpy; runpy.run_path('tools/x.py')\""))
    # (red team 142 F6; as a module, every file Python may take for it: red team 149 F1)
    assert "python3 -m tools.check" in code_strings("python3 -c 'import tools.check'")
    assert code_strings("sh scripts/lint.sh") == []
    # Red team 140 F3: a string of several words given to any program may be shell code it runs.
    assert code_strings("trap 'sh scripts/cleanup.sh' EXIT") == ["sh scripts/cleanup.sh"]


def test_any_word_of_a_hook_naming_a_file_is_what_it_may_run_but_not_a_configs_arguments(tmp_path: Path) -> None:
    # Red team 142: `awk -f check.awk`, `check() { sh "$1"; }; check lint` named nothing; a hook manager's YAML that
    # passes `pyproject.toml` to a formatter does not make the project's manifest a program.
    files = {
        "check.awk": "",
        "lint": "",
        "pyproject.toml": "",
        ".pre-commit-config.yaml": "repos:\n- repo: local\n  hooks:\n  - id: f\n    args:\n"
        "    - --config\n    - pyproject.toml\n",
    }
    found = _found(tmp_path, 'awk -f check.awk\ncheck() { sh "$1"; }; check lint', files)
    real = os.path.realpath(tmp_path)
    assert {f"%{real}/check.awk", f"%{real}/lint"} <= set(found), found
    assert f"%{real}/pyproject.toml" not in found


def test_names_glued_in_code_attached_to_options_or_tested_then_used_are_what_a_hook_runs(tmp_path: Path) -> None:
    # Red team 144: `subprocess.call(['./scripts/lint'])`, `sed -nfcheck.sed`, `[ -f x.tcl ] && tclsh x.tcl` (made
    # later); a name only tested (`[ -f package.json ] && npm test`) is not a program.
    hook = "subprocess.call(['./scripts/lint'])\nsed -nfcheck.sed\n[ -f x.tcl ] && tclsh x.tcl\n"
    hook += "[ -f package.json ] && true"
    found = _found(tmp_path, hook, {"scripts/lint": "", "check.sed": "", "package.json": "{}"})
    real = os.path.realpath(tmp_path)
    assert {f"%{real}/scripts/lint", f"%{real}/check.sed", f"%{real}/x.tcl"} <= set(found), found
    assert f"%{real}/package.json" not in found
