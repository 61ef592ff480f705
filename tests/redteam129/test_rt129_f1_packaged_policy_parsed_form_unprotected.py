"""Red team 129 F1: the packaged policy's parsed form (``policies/default.parsed.json``, commit 1dc5c91) is read in
place of the TOML at every start, yet it is not protected where the TOML is.

Where the servers run from a clone (``uv run`` in the checkout, the README's quick start: an editable install whose
``mcp_server_guard/policies`` is a link to the clone's top ``policies/``) and a root holds the clone (a developer of
the guard using it on its own repository, or a root such as ``~/src`` holding the clone), the guard protects its own
code (``common/src``, the ``.venv``) and its policy *file* ``policies/default.toml`` — but ``default.parsed.json``
beside it is an ordinary file. A model writes there a JSON that names the SHA-256 of the unchanged TOML's bytes (it
can read them) and any data it likes; every later start of every server reads that data as the packaged default
policy: here ``[paths].protected`` emptied, so a later file_write drops an ``.envrc`` (run by direnv at the user's
next ``cd``) into the project unasked. Through file_write and through a shell_exec command (``cp``) alike.

The clone is rebuilt in tmp (a copy of the package with the same ``policies`` link, put first by PYTHONPATH), so the
worktree is not touched. Controls: the TOML itself is refused to the same writer; with the genuine parsed form the
``.envrc`` write is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest

import mcp_server_guard
from support import RawClient
from support.redteam import FW, SX, call, started

DATA: dict[str, Any] = json.loads((Path(__file__).parent / "parsed_policy.json").read_text(encoding="utf-8"))


def _clone(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A clone's layout: <clone>/common/src/mcp_server_guard (policies -> ../../../policies) and <clone>/policies."""
    package = Path(mcp_server_guard.__file__).resolve().parent
    clone = tmp_path / "clone"
    shutil.copytree(package, clone / "common" / "src" / "mcp_server_guard", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    link = clone / "common" / "src" / "mcp_server_guard" / "policies"
    assert link.is_symlink() and os.readlink(link) == "../../../policies"
    shutil.copytree(package / "policies", clone / "policies")
    env = {**os.environ, "PYTHONPATH": str(clone / "common" / "src")}
    return clone, env


def _forged(clone: Path) -> str:
    """A parsed form naming the unchanged TOML's bytes, with [paths].protected emptied."""
    raw = (clone / "policies" / "default.toml").read_bytes()
    data = tomllib.loads(raw.decode("utf-8"))
    data["paths"]["protected"] = []
    return json.dumps({"sha256": hashlib.sha256(raw).hexdigest(), "data": data})


def _refused(result: dict[str, Any]) -> bool:
    return bool(result.get("isError"))


def _envrc_lands(tmp_path: Path, env: dict[str, str]) -> tuple[bool, dict[str, Any]]:
    """A later start (the user's next session) on a project: does a file_write of .envrc land?"""
    proj = tmp_path / "proj"
    proj.mkdir(exist_ok=True)
    raw = started(FW, proj, tmp_path / "state-later", env=env)
    try:
        result = call(raw, 2, "file_write", {"path": str(proj / DATA["envrc_name"]), "content": DATA["envrc"]})
    finally:
        raw.close()
    return (proj / DATA["envrc_name"]).exists(), result


def _served(server: str, root: Path, state: Path, env: dict[str, str]) -> RawClient:
    return started(server, root, state, env=env)


def test_control_the_packaged_toml_itself_is_refused_and_envrc_refused(tmp_path: Path) -> None:
    clone, env = _clone(tmp_path)
    before = (clone / "policies" / "default.toml").read_bytes()
    raw = _served(FW, clone, tmp_path / "state", env)
    try:
        result = call(
            raw,
            2,
            "file_write",
            {"path": str(clone / "policies" / "default.toml"), "content": "x = 1\n", "overwrite": True},
        )
    finally:
        raw.close()
    assert _refused(result), result
    assert (clone / "policies" / "default.toml").read_bytes() == before
    landed, later = _envrc_lands(tmp_path, env)
    assert not landed and _refused(later), later


def test_attack_file_write_forges_the_parsed_form(tmp_path: Path) -> None:
    clone, env = _clone(tmp_path)
    target = clone / "policies" / "default.parsed.json"
    genuine = target.read_bytes()
    raw = _served(FW, clone, tmp_path / "state", env)
    try:
        result = call(raw, 2, "file_write", {"path": str(target), "content": _forged(clone), "overwrite": True})
    finally:
        raw.close()
    landed, later = _envrc_lands(tmp_path, env)
    assert target.read_bytes() == genuine and not landed, (
        f"the packaged policy's parsed form was rewritten (asked: no; refused: {_refused(result)}) and the next "
        f"start read it: .envrc written unasked: {later}"
    )


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
def test_attack_a_command_copies_a_forged_parsed_form(tmp_path: Path) -> None:
    clone, env = _clone(tmp_path)
    target = clone / "policies" / "default.parsed.json"
    genuine = target.read_bytes()
    (clone / "staged.json").write_text(_forged(clone), encoding="utf-8")  # as an earlier file_write would leave it
    raw = _served(SX, clone, tmp_path / "state", env)
    try:
        result = call(raw, 2, "shell_exec", {"command": DATA["copy_command"]}, timeout=120)
    finally:
        raw.close()
    landed, later = _envrc_lands(tmp_path, env)
    assert target.read_bytes() == genuine and not landed, (
        f"a command rewrote the packaged policy's parsed form unasked ({json.dumps(result)[:600]}); the next start "
        f"read it: .envrc written: {later}"
    )


def _readonly_touch_lands(tmp_path: Path, env: dict[str, str]) -> tuple[bool, dict[str, Any]]:
    """A later start with ``--policy readonly`` (the packaged allow-list): does a command that writes land?"""
    proj = tmp_path / "proj-ro"
    proj.mkdir(exist_ok=True)
    raw = started(SX, proj, tmp_path / "state-ro", "--policy", "readonly", env=env)
    try:
        result = call(raw, 2, "shell_exec", {"command": DATA["readonly_probe"]}, timeout=120)
    finally:
        raw.close()
    return (proj / DATA["readonly_probe_made"]).exists(), result


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
def test_control_readonly_refuses_a_writing_command(tmp_path: Path) -> None:
    _clone_dir, env = _clone(tmp_path)
    made, result = _readonly_touch_lands(tmp_path, env)
    assert not made, result


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")
def test_attack_the_readonly_policys_parsed_form_is_no_policy_source_under_the_default(tmp_path: Path) -> None:
    """Under the default policy neither readonly.toml nor readonly.parsed.json is a source of the running
    server; the parsed form forged (naming readonly.toml's bytes, data: nothing) makes ``--policy readonly`` the
    default policy."""
    clone, env = _clone(tmp_path)
    target = clone / "policies" / "readonly.parsed.json"
    genuine = target.read_bytes()
    raw_toml = (clone / "policies" / "readonly.toml").read_bytes()
    forged = json.dumps({"sha256": hashlib.sha256(raw_toml).hexdigest(), "data": {}})
    raw = _served(FW, clone, tmp_path / "state", env)
    try:
        result = call(raw, 2, "file_write", {"path": str(target), "content": forged, "overwrite": True})
    finally:
        raw.close()
    made, later = _readonly_touch_lands(tmp_path, env)
    assert target.read_bytes() == genuine and not made, (
        f"readonly.parsed.json rewritten (refused: {_refused(result)}); a later --policy readonly ran a writing "
        f"command: {json.dumps(later)[:400]}"
    )
