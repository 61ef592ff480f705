"""What a git hook runs, to the files those run in turn (``hook_configs.run_by_hooks``), and the npm scripts a
line runs by name (``scripts_run_by``): the class behind red team 6 L2–L4 and L3's monorepo runners, in units.
Each file found is protected like the hook; what is not found stays ordinary work (a Makefile's other targets, a
Python program's own text)."""

from __future__ import annotations

import os
from pathlib import Path

from mcp_server_guard.direnv_files import direnv_evaluates
from mcp_server_guard.git_dirs import _hooks_rule
from mcp_server_guard.hook_configs import scripts_run_by
from mcp_server_guard.hook_runs import hook_modules, hook_names, path_dirs, run_by_hooks


def _repo(root: Path, hook: str, files: dict[str, str]) -> set[str]:
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "hooks" / "pre-commit").write_text(f"#!/bin/sh\n{hook}\n")
    (root / ".git" / "hooks" / "pre-push.sample").write_text("#!/bin/sh\nsh sample.sh\n")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    found = run_by_hooks([str(root / ".git" / "hooks")], str(root), None)
    real = os.path.realpath(root)
    return {os.path.relpath(p[1:], real) for p in found if p.startswith("%" + real + "/")}


def test_a_script_a_hook_names_without_a_slash_is_what_the_hook_runs(tmp_path: Path) -> None:
    found = _repo(tmp_path, "python3 check.py && sh precommit.sh", {"check.py": "", "precommit.sh": ""})
    assert {"check.py", "precommit.sh"} <= found
    assert "sample.sh" not in found  # git never runs a *.sample hook


def test_make_in_a_hook_protects_the_makefile_and_what_the_goals_recipes_run_only(tmp_path: Path) -> None:
    makefile = (
        "PY = python3\n"
        "lint: fmt\n\t@$(PY) tools/lint.py\n"
        "fmt:\n\t./scripts/fmt.sh\n"
        "run:\n\tpython3 src/app/main.py\n"
        "include extra.mk\n"
    )
    found = _repo(tmp_path, "make -s lint", {"Makefile": makefile, "scripts/fmt.sh": "sh deeper.sh\n"})
    assert {"Makefile", "tools/lint.py", "scripts/fmt.sh", "extra.mk"} <= found
    assert "deeper.sh" in found or "scripts/deeper.sh" in found  # a shell script is read in turn
    assert "src/app/main.py" not in found  # another target's recipe: the hook does not run it


def test_a_make_with_no_goal_runs_the_first_rule(tmp_path: Path) -> None:
    found = _repo(tmp_path, "make", {"Makefile": ".PHONY: all\nall:\n\tsh a.sh\nother:\n\tsh b.sh\n"})
    assert "a.sh" in found and "b.sh" not in found


def test_a_program_the_hooks_program_runs_is_found_and_a_python_programs_text_is_not_read(tmp_path: Path) -> None:
    files = {"scripts/pre-commit": "#!/bin/sh\npython3 tools/check.py\n", "tools/check.py": "open('docs/x.md')\n"}
    found = _repo(tmp_path, "exec ./scripts/pre-commit", files)
    assert {"scripts/pre-commit", "tools/check.py"} <= found
    assert "docs/x.md" not in found


def test_scripts_lefthook_and_pre_commit_configs_name_are_what_hooks_run(tmp_path: Path) -> None:
    files = {
        "lefthook.yml": "pre-commit:\n  commands:\n    lint:\n      run: ./scripts/lint.sh {staged_files}\n",
        ".pre-commit-config.yaml": "repos:\n- repo: local\n  hooks:\n  - id: c\n    entry: python3 check.py\n",
    }
    found = _repo(tmp_path, "lefthook run pre-commit", files)
    assert {"scripts/lint.sh", "check.py"} <= found


def test_the_reading_is_bounded_by_levels_and_files(tmp_path: Path) -> None:
    chain = {f"s{i}.sh": f"sh s{i + 1}.sh\n" for i in range(10)}
    found = _repo(tmp_path, "sh s0.sh", chain)
    assert "s0.sh" in found and "s9.sh" not in found


def test_monorepo_runners_name_the_scripts_they_run() -> None:
    lines = [
        "npm run lint --workspaces",
        "pnpm --filter web check",
        "pnpm -r typecheck",
        "turbo run build",
        "lerna run prep --stream",
        "nx run-many -t e2e,unit",
        "yarn workspaces foreach -A run fmt",
        "npm t",
    ]
    found = scripts_run_by(lines)
    assert {"lint", "check", "typecheck", "build", "prep", "e2e", "unit", "fmt", "test"} <= found


def test_an_environments_activate_script_envrc_sources_is_left_to_its_question_not_refused(tmp_path: Path) -> None:
    # `.envrc`: `source .venv/bin/activate`. A command remaking the environment rewrites it: asked (changes.later),
    # not refused as a file a hook runs; the same name outside an environment is protected.
    (tmp_path / ".envrc").write_text("source .venv/bin/activate\nsource tools/bin/activate\n")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "tools" / "bin").mkdir(parents=True)
    found = _repo(tmp_path, "true", {})
    assert ".venv/bin/activate" not in found and "tools/bin/activate" in found, found


def test_a_module_an_environments_python_runs_is_found_in_its_site_packages(tmp_path: Path) -> None:
    """pre-commit's own hook: ``INSTALL_PYTHON=<venv>/bin/python3`` then ``exec "$INSTALL_PYTHON" -mpre_commit``."""
    site = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages"
    (site / "pre_commit").mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / ".venv" / "bin").mkdir()
    (tmp_path / ".venv" / "bin" / "python3").symlink_to("/usr/bin/python3")  # resolves outside the environment
    hook = f'INSTALL_PYTHON={tmp_path}/.venv/bin/python3\nexec "$INSTALL_PYTHON" -mpre_commit hook-impl'
    found = _repo(tmp_path, hook, {f"{site}/pre_commit/__main__.py": "", f"{site}/pre_commit/__init__.py": ""})
    prefix = ".venv/lib/python3.11/site-packages/pre_commit"
    assert {f"{prefix}/__main__.py", f"{prefix}/__init__.py"} <= found
    assert not any(p.startswith(f"{prefix}/") and p.endswith("util.py") for p in found)  # its other modules: not


def test_a_variable_left_inside_a_path_matches_any_name_there(tmp_path: Path) -> None:
    """lefthook's own hook runs ``"$dir/node_modules/lefthook-${osArch}-${cpuArch}/bin/lefthook"``."""
    hook = 'dir="$(git rev-parse --show-toplevel)"\n"$dir/node_modules/lefthook-${osArch}-${cpuArch}/bin/lefthook" run'
    found = _repo(tmp_path, hook, {"node_modules/lefthook-linux-x64/bin/lefthook": "#!/bin/sh\n"})
    assert "node_modules/lefthook-linux-x64/bin/lefthook" in found


def test_the_path_a_hooks_own_text_exports_is_a_path_directory(tmp_path: Path) -> None:
    """husky 9's ``.husky/_/h``: ``export PATH="node_modules/.bin:$PATH"`` before it runs the hook."""
    (tmp_path / ".husky" / "_").mkdir(parents=True)
    (tmp_path / ".husky" / "_" / "h").write_text('export PATH="node_modules/.bin:$PATH"\nsh -e "$s"\n')
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "hooks" / "pre-push.sample").write_text('PATH="tools:$PATH"\n')  # never run: not read
    assert path_dirs(str(tmp_path)) == frozenset({"node_modules/.bin"})


def test_a_path_built_with_variables_protects_files_made_there_later_and_any_name_a_variable_gives(
    tmp_path: Path,
) -> None:
    """Red team 49 F4: lefthook's platform binary where lefthook came as another package (the path is free); red
    team 138 F3: a file named by a variable (``sh "scripts/checks/$c"``) is any file of its directory."""
    hook = '"$dir/node_modules/lefthook-${osArch}-${cpuArch}/bin/lefthook" run\n"$dir/scripts/$name" x'
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "hooks" / "pre-commit").write_text(f"#!/bin/sh\n{hook}\n")
    found = run_by_hooks([str(tmp_path / ".git" / "hooks")], str(tmp_path), None)
    real = os.path.realpath(tmp_path)
    assert _hooks_rule(f"{real}/node_modules/lefthook-linux-x64/bin/lefthook", found) is not None
    assert _hooks_rule(f"{real}/node_modules/lefthook-linux-x64/bin/other", found) is None
    assert _hooks_rule(f"{real}/node_modules/lefthook-a/b-c/bin/lefthook", found) is None  # a * spans no /
    assert _hooks_rule(f"{real}/scripts/anything", found) is not None  # "$dir/scripts/$name": any file there
    assert _hooks_rule(f"{real}/scripts/deeper/x", found) is None


def test_a_quoted_value_with_a_blank_is_expanded_where_the_hook_uses_it(tmp_path: Path) -> None:
    """Red team 49 F5: pre-commit quotes INSTALL_PYTHON as shlex does (a project path with a blank)."""
    root = tmp_path / "my proj"
    site = root / ".venv" / "lib" / "python3.11" / "site-packages"
    (site / "pre_commit").mkdir(parents=True)
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    hook = f"INSTALL_PYTHON='{root}/.venv/bin/python3'\nexec \"$INSTALL_PYTHON\" -mpre_commit hook-impl"
    found = _repo(root, hook, {f"{site}/pre_commit/__main__.py": ""})
    assert ".venv/lib/python3.11/site-packages/pre_commit/__main__.py" in found


def test_a_program_named_alone_is_looked_for_where_a_hook_puts_a_directory_first_on_path(tmp_path: Path) -> None:
    """Red team 49 F3: husky 9 exports node_modules/.bin first; ``.husky/pre-commit`` says ``lint-staged``."""
    (tmp_path / ".husky" / "_").mkdir(parents=True)
    (tmp_path / ".husky" / "_" / "h").write_text('export PATH="node_modules/.bin:$PATH"\nsh -e "$s"\n')
    (tmp_path / ".husky" / "pre-commit").write_text("lint-staged\n")
    (tmp_path / "node_modules" / "lint-staged" / "bin").mkdir(parents=True)
    (tmp_path / "node_modules" / "lint-staged" / "bin" / "cli.js").write_text("")
    (tmp_path / "node_modules" / ".bin").mkdir()
    (tmp_path / "node_modules" / ".bin" / "lint-staged").symlink_to("../lint-staged/bin/cli.js")
    found = run_by_hooks([str(tmp_path / ".husky")], str(tmp_path), None)
    real = os.path.realpath(tmp_path)
    assert "%" + f"{real}/node_modules/lint-staged/bin/cli.js" in found  # what runs
    assert "%" + f"{real}/node_modules/.bin/lint-staged" in found  # and the link it runs through


def test_what_puts_an_environments_bin_first_on_path_is_read_as_a_path_directory(tmp_path: Path) -> None:
    """Red team 50 F2: direnv's ``layout node``, an activate script sourced, ``VIRTUAL_ENV`` with ``layout python``,
    mise's ``_.python.venv``."""
    cases = {
        "layout node\n": "node_modules/.bin",
        "source .venv/bin/activate\n": ".venv/bin",
        "export VIRTUAL_ENV=env\nlayout python\n": "env/bin",
    }
    for text, wanted in cases.items():
        (tmp_path / ".envrc").write_text(text)
        assert wanted in path_dirs(str(tmp_path)), text
    (tmp_path / ".envrc").unlink()
    (tmp_path / "mise.toml").write_text('[env]\n_.python.venv = { path = "venv2", create = true }\n')
    assert "venv2/bin" in path_dirs(str(tmp_path))


def test_the_names_hooks_run_alone_and_their_python_modules_are_known(tmp_path: Path) -> None:
    (tmp_path / ".husky").mkdir()
    (tmp_path / ".husky" / "pre-commit").write_text("# prettier is optional\ncommand -v prettier && prettier -c .\n")
    assert "prettier" in hook_names(str(tmp_path))
    assert not hook_modules(str(tmp_path))
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "hooks" / "pre-commit").write_text('exec "$INSTALL_PYTHON" -mpre_commit hook-impl\n')
    (tmp_path / ".git" / "hooks" / "commit-msg.sample").write_text("python3 -m never\n")
    assert {"argparse", "json"} <= hook_modules(str(tmp_path))


def test_what_direnv_evaluates_is_named_by_the_envrcs_use_lines(tmp_path: Path) -> None:
    assert direnv_evaluates(str(tmp_path)) == frozenset()
    (tmp_path / ".envrc").write_text("use flake\n")
    assert direnv_evaluates(str(tmp_path)) == {"flake.nix", "flake.lock"}
    (tmp_path / ".envrc").write_text("use flox -d tools\n")
    assert direnv_evaluates(str(tmp_path)) == {"tools/.flox/env/manifest.toml", "tools/.flox/env/manifest.lock"}
    (tmp_path / ".envrc").write_text("use flox --dir=tools\n")
    assert direnv_evaluates(str(tmp_path)) == {"tools/.flox/env/manifest.toml", "tools/.flox/env/manifest.lock"}
    (tmp_path / ".envrc").write_text('eval "$(flox activate --print-script)"\n')
    assert direnv_evaluates(str(tmp_path)) == {".flox/env/manifest.toml", ".flox/env/manifest.lock"}


def test_a_directory_envrc_puts_on_path_is_no_program_it_runs(tmp_path: Path) -> None:
    (tmp_path / ".envrc").write_text("PATH_add .venv/bin\nsource_env_if_exists .envrc.local\n")
    found = run_by_hooks([], str(tmp_path), None)
    real = os.path.realpath(tmp_path)
    assert "%" + f"{real}/.venv/bin" not in found
    assert "%" + f"{real}/.envrc.local" in found
