"""What a start reads of the installed distributions without ``importlib.metadata`` (``serving.distributions``):
the same answers as ``importlib.metadata``, which is asked wherever the plain reading is not sure; pydantic's plugins
still found; a served session that never imports it (issue 44: a tenth of a first answer).
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import textwrap
import zipfile
from importlib import resources
from pathlib import Path

import pytest

from mcp_server_guard.policy import default_policy_path
from mcp_server_guard.serving import distributions
from mcp_server_guard.serving.launch import package_version
from support import RawClient, console_script


def test_every_installed_distributions_version_is_read_as_importlib_metadata_reads_it() -> None:
    names = {d.metadata["Name"] for d in importlib.metadata.distributions()}
    assert {"mcp-server-guard", "mcp-server-shell-exec", "pydantic"} <= names
    for name in sorted(names):
        assert distributions.version_of(name) == importlib.metadata.version(name), name
    for name in ("mcp-server-guard", "mcp_server_file_read", "MCP.Server.File-Write"):
        assert package_version(name) == importlib.metadata.version(name)
    assert distributions.version_of("no-such-distribution-here") is None
    assert package_version("no-such-distribution-here") == "0+unknown"


def _dist(root: Path, dirname: str, metadata: str, entry_points: str | None = None) -> Path:
    info = root / dirname
    info.mkdir(parents=True)
    (info / "METADATA").write_text(metadata, encoding="utf-8")
    if entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    return info


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ("Metadata-Version: 2.1\nName: demo\nVersion: 1.2.3\n\nbody\n", "1.2.3"),
        ("Metadata-Version: 2.1\nName: demo\nversion:\t4.0rc1\n", "4.0rc1"),
        ("Metadata-Version: 2.1\r\nName: demo\r\nVersion: 1.0\r\n", "1.0"),
        # Not read plainly here: importlib.metadata is asked (and may say something else).
        ("Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n  folded\n", None),
        ("Metadata-Version: 2.1\nName: demo\nVersion: 1.0 \n", None),
        ("Metadata-Version: 2.1\n\nVersion: 1.0\n", None),
        ("From someone\nVersion: 1.0\n", None),
        ("Metadata-Version: 2.1\nnot a header\nVersion: 1.0\n", None),
        ("Metadata-Version: 2.1\nName: demo\n", None),
    ],
)
def test_a_version_header_is_read_only_when_plain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, metadata: str, expected: str | None
) -> None:
    _dist(tmp_path, "demo_dist-1.0.dist-info", metadata)
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert distributions.version_of("Demo.Dist") == expected
    if expected is not None:
        assert importlib.metadata.version("Demo.Dist") == expected


def test_where_the_plain_reading_is_not_sure_importlib_metadata_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"
    first, second = tmp_path / "first", tmp_path / "second"
    _dist(first, "demo-1.0.dist-info", plain)
    _dist(second, "demo-2.0.dist-info", plain.replace("1.0", "2.0"))
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(first), str(second)])
    assert distributions.version_of("demo") == "1.0"  # the first directory that has it, as importlib.metadata
    assert importlib.metadata.version("demo") == "1.0"
    _dist(first, "Demo-1.1.dist-info", plain.replace("1.0", "1.1"))  # two in one directory: listing order decides
    assert distributions.version_of("demo") is None
    egg = tmp_path / "egg"
    _dist(egg, "demo-1.0.egg-info", plain)
    monkeypatch.setattr(sys, "path", [str(egg)])
    assert distributions.version_of("demo") is None
    archive = tmp_path / "dists.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("demo-3.0.dist-info/METADATA", plain.replace("1.0", "3.0"))
    monkeypatch.setattr(sys, "path", [str(archive), str(second)])
    assert distributions.version_of("demo") is None
    assert distributions.plugins_declared()
    assert importlib.metadata.version("demo") == "3.0"  # (what the plain reading would have missed)


def test_a_finder_of_distributions_of_its_own_is_left_to_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Finder:
        def find_spec(self, *_: object) -> None:
            return None

        def find_distributions(self, *_: object) -> list[object]:
            return []

    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert not distributions.plugins_declared()
    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    assert distributions.version_of("demo") is None
    assert distributions.plugins_declared()


def test_plugins_are_declared_only_where_an_entry_points_file_names_the_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not distributions.plugins_declared()  # this environment: none (so the servers never import the loader)
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    _dist(tmp_path, "other-1.0.dist-info", "Version: 1.0\n", "[console_scripts]\nother = other:main\n")
    assert not distributions.plugins_declared()
    _dist(tmp_path, "plug-1.0.dist-info", "Version: 1.0\n", "[Pydantic]\nmine = plug:plugin\n")
    assert distributions.plugins_declared()


def _python(code: str, cwd: Path, extra_path: Path | None = None, *, disabled: bool = False) -> list[str]:
    prelude = "import sys\n" + (f"sys.path.insert(0, {str(extra_path)!r})\n" if extra_path else "")
    prelude += "import os\nos.environ['PYDANTIC_DISABLE_PLUGINS'] = '1'\n" if disabled else ""
    prelude += "from mcp_server_guard.serving import distributions\ndistributions.defer_plugin_search()\n"
    run = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def test_with_no_plugin_pydantic_models_build_without_importlib_metadata(tmp_path: Path) -> None:
    out = _python(
        """
        from pydantic import BaseModel
        class M(BaseModel):
            x: int
        assert M(x="3").x == 3
        from pydantic.plugin._loader import get_plugins
        print(list(get_plugins()), "importlib.metadata" in sys.modules, "email" in sys.modules)
        """,
        tmp_path,
    )
    assert out == ["[]", "False", "False"]


def test_a_declared_pydantic_plugin_is_loaded_and_used_as_without_the_stand_in(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _dist(site, "seen_plugin-1.0.dist-info", "Name: seen-plugin\nVersion: 1.0\n", "[pydantic]\nseen = seen:plugin\n")
    (site / "seen.py").write_text(
        textwrap.dedent(
            """
            SEEN = []
            class Plugin:
                def new_schema_validator(self, schema, schema_type, schema_type_path, schema_kind, config, settings):
                    SEEN.append(schema_type_path.name)
                    return None, None, None
            plugin = Plugin()
            """
        ),
        encoding="utf-8",
    )
    code = """
        from pydantic import BaseModel
        class M(BaseModel):
            x: int
        import seen
        print(seen.SEEN, type(sys.modules["pydantic.plugin._loader"]).__name__)
        """
    assert _python(code, tmp_path, site) == ["['M']", "module"]
    assert _python(code, tmp_path, site, disabled=True) == ["[]", "_Loader"]  # PYDANTIC_DISABLE_PLUGINS=1


def test_the_packaged_policy_is_where_importlib_resources_finds_it() -> None:
    assert str(default_policy_path()) == str(resources.files("mcp_server_guard") / "policies" / "default.toml")
    assert default_policy_path().is_file()


@pytest.mark.parametrize("script", ["mcp-server-file-read", "mcp-server-file-write", "mcp-server-shell-exec"])
def test_a_first_call_served_by_the_front_never_imports_importlib_metadata(
    script: str, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text("hello\n")
    err = tmp_path / "stderr.txt"
    client = RawClient([sys.executable, "-X", "importtime", console_script(script)], workspace, stderr=err)
    call = {"name": "shell_exec", "arguments": {"command": "cat a.txt"}}
    if script == "mcp-server-file-read":
        call = {"name": "file_read", "arguments": {"path": "a.txt"}}
    elif script == "mcp-server-file-write":
        call = {"name": "file_write", "arguments": {"path": "b.txt", "content": "x"}}
    try:
        client.initialize()
        result = client.request(1, "tools/call", call, timeout=60)["result"]
        assert not result.get("isError"), result
        client.end_input()
    finally:
        client.close()
    loaded = client.imported()
    # (-X importtime lists what import statements import: importlib.import_module's own module is not listed.)
    assert "pydantic._internal._model_construction" in loaded  # the tool's models were built
    assert not [m for m in loaded if m.startswith("mcp.")]  # the front served the session alone: the SDK never loaded
    assert "importlib.metadata" not in loaded
    assert "email" not in loaded
