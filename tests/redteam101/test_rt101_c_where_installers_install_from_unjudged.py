"""Red team 101 C: db56021 judges "where uv installs from" (uv.toml and [tool.uv] ``index``, ``index-url``,
``extra-index-url``, ``find-links``, ``index-strategy``), because a package of the same name from another place
builds and runs its code at the next ``uv sync``, outside the box. The same redirection through the other keys
that say where a package or an interpreter comes from is not judged. Each such change is neither asked about on a
copy nor refused to file_write:

- ``[tool.uv.sources]`` ``requests = { git = ... }`` / ``{ url = ... }``: an existing dependency is taken from a
  repository or an archive the command chose (a ``path`` source is the project's own code, left out). ``uv sync``
  builds it and runs its build backend.
- ``[tool.uv] override-dependencies = ["requests @ https://..."]``: the same, through an override.
- ``[tool.uv] python-install-mirror``: the interpreter that ``uv sync`` / ``uv run`` download and then run.
- ``[[tool.poetry.source]]`` (``priority = "primary"``) and ``[[tool.pdm.source]]``: those tools' indexes. Poetry's
  plugins are judged since db56021, its index is not.
- ``requirements.txt`` with ``--index-url`` / ``--extra-index-url``: what ``pip install -r`` and
  ``uv pip sync`` read. It is not an installer manifest at all, and its name is "plain" for the item-7 log too.

The control (``[tool.uv] index-url``) is named. URLs point at 127.0.0.1:9, a closed port; nothing runs here."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.errors import GuardError
from mcp_server_guard.files import writing
from mcp_server_guard.files.jail import Jail
from mcp_server_guard.hook_configs import installer_hook_keys, installer_manifest
from mcp_server_guard.policy import load_policy

BEFORE = b'[project]\nname = "app"\nversion = "0.1"\ndependencies = ["requests"]\n'
MIRROR = "http://127.0.0.1:9"
CASES = {
    "control: tool.uv index-url": ("pyproject.toml", BEFORE + f'[tool.uv]\nindex-url = "{MIRROR}/simple"\n'.encode()),
    "tool.uv.sources git": ("pyproject.toml", BEFORE + f'[tool.uv.sources]\nrequests = {{ git = "{MIRROR}/r.git" }}\n'.encode()),  # noqa: E501
    "tool.uv.sources url": ("pyproject.toml", BEFORE + f'[tool.uv.sources]\nrequests = {{ url = "{MIRROR}/r.tar.gz" }}\n'.encode()),  # noqa: E501
    "tool.uv override-dependencies url": (
        "pyproject.toml", BEFORE + f'[tool.uv]\noverride-dependencies = ["requests @ {MIRROR}/r.tar.gz"]\n'.encode()),
    "tool.uv python-install-mirror": ("pyproject.toml", BEFORE + f'[tool.uv]\npython-install-mirror = "{MIRROR}"\n'.encode()),  # noqa: E501
    "uv.toml python-install-mirror": ("uv.toml", f'python-install-mirror = "{MIRROR}"\n'.encode()),
    "uv.toml sources": ("uv.toml", f'[sources]\nrequests = {{ git = "{MIRROR}/r.git" }}\n'.encode()),
    "tool.poetry.source primary": (
        "pyproject.toml", BEFORE + f'[[tool.poetry.source]]\nname = "m"\nurl = "{MIRROR}/simple"\npriority = "primary"\n'.encode()),  # noqa: E501
    "tool.pdm.source": ("pyproject.toml", BEFORE + f'[[tool.pdm.source]]\nname = "pypi"\nurl = "{MIRROR}/simple"\n'.encode()),  # noqa: E501
    "requirements.txt index-url": ("requirements.txt", f"--index-url {MIRROR}/simple\nrequests\n".encode()),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_attack_a_changed_package_source_is_named_as_an_install_hook(case: str) -> None:
    path, new = CASES[case]
    old = BEFORE if path == "pyproject.toml" else b"requests\n" if path.endswith(".txt") else b""
    assert installer_manifest(path), f"{path} is not judged as what an installer reads"
    assert installer_hook_keys(path, old, new), f"{case}: not named"


@pytest.mark.parametrize("case", sorted(CASES))
def test_attack_file_write_lands_a_changed_package_source(case: str, tmp_path: Path) -> None:
    path, new = CASES[case]
    root = tmp_path / "root"
    root.mkdir()
    (root / path).write_bytes(BEFORE if path == "pyproject.toml" else b"requests\n" if path.endswith(".txt") else b"")
    (tmp_path / "policy.toml").write_text("")
    writer = writing.open_writer(Jail(str(root), [str(root)]), load_policy(tmp_path / "policy.toml"),
                                 tmp_path / "audit.jsonl", tmp_path / "history")  # fmt: skip
    try:
        with pytest.raises(GuardError):  # refused, as [tool.uv] index-url is
            writer.write(path, new, overwrite=True)
    finally:
        writer.close()
    assert (root / path).read_bytes() != new
