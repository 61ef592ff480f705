"""Red team 101 D: what an ``.envrc`` has direnv evaluate at every ``cd`` (9d8c4b5: flox's integration) is judged
only for some of the ways an ``.envrc`` names it:

- ``eval "$(flox activate -d tools)"`` (flox's own documented direnv line, with ``-d``/``--dir``) is matched by
  ``hook_runs._FLOX``. That adds only ``./.flox/env/manifest.toml``, never ``tools/.flox/env/manifest.toml``, so a
  command that adds ``[hook] on-activate`` to the manifest of the environment the ``.envrc`` activates is not asked
  about (``use flox -d tools`` is, the control).
- ``use nix dev-shell.txt``: nix-shell evaluates any file it is given, whatever its name (its ``shellHook`` runs at
  every cd). ``direnv_evaluates`` lists it, but ``changes.later._evaluated_by_direnv`` returns False first for a name
  that is neither a DIRENV_USE_FILES name nor ``*.nix``, so a change to it is never asked about.

The ``.envrc`` lines are data written here; nothing is evaluated."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.changes.later import _evaluated_by_direnv
from mcp_server_guard.direnv_files import direnv_evaluates

FLOX_LINES = {
    "control: use flox -d tools": "use flox -d tools\n",
    "eval flox activate -d tools": 'eval "$(flox activate -d tools)"\n',
    "eval flox activate --dir tools": 'eval "$(flox activate --dir tools)"\n',
    "eval flox activate --dir=tools": 'eval "$(flox activate --dir=tools)"\n',
}


@pytest.mark.parametrize("case", sorted(FLOX_LINES))
def test_attack_the_flox_environment_an_envrc_activates_by_dir_is_judged(case: str, tmp_path: Path) -> None:
    (tmp_path / ".envrc").write_text(FLOX_LINES[case])
    manifest = "tools/.flox/env/manifest.toml"
    assert manifest in direnv_evaluates(str(tmp_path)), case
    assert _evaluated_by_direnv(str(tmp_path), manifest, {}), case


def test_attack_a_nix_file_an_envrc_names_without_the_nix_suffix_is_judged(tmp_path: Path) -> None:
    (tmp_path / ".envrc").write_text("use nix dev-shell.txt\n")
    assert "dev-shell.txt" in direnv_evaluates(str(tmp_path))  # (direnv_evaluates knows it ...)
    assert _evaluated_by_direnv(str(tmp_path), "dev-shell.txt", {})  # (... the judgement never asks)
