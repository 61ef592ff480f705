"""What other package managers run at install without a script being named (red team 99 F1): which manifests and
keys ``hook_configs.installer_hook_keys`` judges. The payloads are data: harmless echo lines."""

from __future__ import annotations

import json

from mcp_server_guard.hook_configs import installer_hook_keys, installer_manifest


def _composer(scripts: dict[str, object]) -> bytes:
    return json.dumps({"name": "a/b", "scripts": scripts}).encode()


def test_composer_and_pyproject_of_the_project_are_judged_not_installed_packages() -> None:
    assert installer_manifest("composer.json") and installer_manifest("app/pyproject.toml")
    assert not installer_manifest("vendor/a/b/composer.json")
    assert not installer_manifest(".venv/lib/python3.11/site-packages/x/pyproject.toml")
    assert not installer_manifest("package.json")


def test_a_composer_event_script_or_a_script_beside_one_changed_is_named() -> None:
    plain = _composer({"test": "phpunit"})
    assert installer_hook_keys("composer.json", plain, _composer({"test": "phpunit -v"})) == []
    hooked = _composer({"test": "phpunit", "post-install-cmd": "@build", "build": "echo built"})
    assert installer_hook_keys("composer.json", plain, hooked) == ["scripts"]
    changed = _composer({"test": "phpunit", "post-install-cmd": "@build", "build": "echo other"})
    assert installer_hook_keys("composer.json", hooked, changed) == ["scripts"]  # a hook may run it by name
    assert installer_hook_keys("composer.json", hooked, hooked) == []


def test_pdm_hooks_and_hatch_install_commands_changed_are_named() -> None:
    before = b'[project]\nname = "x"\n[tool.pdm.scripts]\ntest = "pytest"\n'
    assert installer_hook_keys("pyproject.toml", before, before.replace(b"pytest", b"pytest -q")) == []
    pdm = before + b'post_install = "echo installed"\n'
    assert installer_hook_keys("pyproject.toml", before, pdm) == ["tool.pdm.scripts"]
    hatch = before + b'[tool.hatch.envs.default]\npost-install-commands = ["echo installed"]\n'
    assert installer_hook_keys("pyproject.toml", before, hatch) == ["tool.hatch.envs.default.post-install-commands"]


def test_a_manifest_that_cannot_be_read_counts_as_changing_them_all() -> None:
    assert installer_hook_keys("pyproject.toml", b"", b"[tool.pdm\n") == ["(the whole file: it could not be read here)"]
    assert installer_hook_keys("composer.json", b"{}", b"{not json") == ["(the whole file: it could not be read here)"]
    assert installer_hook_keys("composer.json", None, b"{}") == []


def test_where_uv_installs_from_and_poetrys_required_plugins_changed_are_named() -> None:
    # uv.toml's and [tool.uv]'s indexes (a package of the same name from another index runs its build at the next
    # uv sync); Poetry 2 installs and runs the plugins a project requires.
    before = b'[project]\nname = "x"\ndependencies = ["requests"]\n'
    assert installer_hook_keys("pyproject.toml", before, before.replace(b"requests", b"httpx")) == []
    index = before + b'[[tool.uv.index]]\nname = "mirror"\nurl = "http://127.0.0.1:9/simple"\n'
    assert installer_hook_keys("pyproject.toml", before, index) == ["tool.uv.index"]
    pip = before + b'[tool.uv.pip]\nextra-index-url = ["http://127.0.0.1:9/simple"]\n'
    assert installer_hook_keys("pyproject.toml", before, pip) == ["tool.uv.pip.extra-index-url"]
    plugins = before + b'[tool.poetry.requires-plugins]\npoetry-plugin-x = ">=1"\n'
    assert installer_hook_keys("pyproject.toml", before, plugins) == ["tool.poetry.requires-plugins"]
    assert installer_manifest("uv.toml") and not installer_manifest(".venv/lib/site-packages/a/uv.toml")
    assert installer_hook_keys("uv.toml", b"", b'index-strategy = "unsafe-best-match"\n') == ["index-strategy"]
    assert installer_hook_keys("uv.toml", b"", b'cache-dir = "/tmp/c"\n') == []
    assert installer_hook_keys("uv.toml", b"", b"[not toml") == ["(the whole file: it could not be read here)"]


def test_dependencies_fetched_from_elsewhere_and_pip_index_lines_are_named() -> None:
    # Red team 101 C: a source with git or url (not a path: the project's own), an override naming a URL, the mirror
    # uv takes interpreters from, Poetry's and PDM's indexes, a requirements file's index lines.
    before = b'[project]\nname = "x"\n[tool.uv.sources]\nlib = { path = "../lib" }\n'
    assert installer_hook_keys("pyproject.toml", b"", before) == []
    git = before + b'app = { git = "http://127.0.0.1:9/a.git" }\n'
    assert installer_hook_keys("pyproject.toml", before, git) == ["tool.uv.sources"]
    assert installer_hook_keys("pyproject.toml", b"", b'[tool.poetry]\nsource = [{name = "m", url = "u"}]\n') == [
        "tool.poetry.source"
    ]
    assert installer_manifest("requirements-dev.txt") and installer_manifest("constraints.txt")
    assert not installer_manifest("notes.txt")
    assert installer_hook_keys("requirements.txt", b"requests\n", b"requests>=2\n") == []
    indexed = b"-i http://127.0.0.1:9/simple\nrequests\n"
    assert installer_hook_keys("requirements.txt", b"requests\n", indexed) == ["index-url"]
