"""Red team 67's fuzzer of owner-denying modes (chmod 000/0200/0300/0444/0555/0600/0311 of files and directories at
random points, ``chmod -R``, ``umask``, read-only trees removed, renamed, written in, linked out of, ``user.*``
attributes), its seeds 0–29 kept as data (rt67_fuzz_seeds.json, made by /work/notes/rt67/tests/fuzz_modes.py):
each script natively on a copy and through one real server, trees compared (read without a chmod), then every call
undone and redone — as a user, without CAP_DAC_OVERRIDE (``support.as_a_user``). Before the fixes of red team 67,
16 of 60 seeds differed; a batch of 30 through one server found the undo refused by a ctime chain followed one way
only (``name_changes.only_names``)."""

from __future__ import annotations

import json
import shutil
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path

import pytest

import support.differential as differential_module
from support.as_a_user import again_as_a_user, as_a_user, snapshot_unopened
from support.differential import differentials, failed

SEEDS = {name: "\n".join(lines) for name, lines in
         json.loads((Path(__file__).parent / "rt67_fuzz_seeds.json").read_text()).items()}  # fmt: skip
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("unshare") is None, reason="no bwrap, unshare"),
]


def test_fuzz_seeds_as_a_user(tmp_path: Path) -> None:
    again_as_a_user(__file__, tmp_path)


_spec = spec_from_file_location("rt67_owner_modes", Path(__file__).with_name("test_rt67_owner_modes.py"))
assert _spec is not None and _spec.loader is not None
_modes = module_from_spec(_spec)  # (the project the findings' cases run on)
_spec.loader.exec_module(_modes)


@as_a_user
async def test_attack_seeded_scripts_of_owner_denying_modes_land_undo_and_redo_as_natively(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(differential_module, "snapshot", snapshot_unopened)
    monkeypatch.setattr(differential_module, "symlink_groups", lambda root: set())  # (its os.walk cannot enter 000)
    cases = await differentials(workspace, _modes.project, SEEDS)
    assert not (problems := failed(cases, lambda c: c.found)), problems
    assert not [(c.name, c.out["changes"]) for c in cases if c.out["changes"]["conflicts"]]
