"""The packaged policies are read from their parsed forms only while those name the exact TOML bytes (issue 44)."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from mcp_server_guard import load_policy
from mcp_server_guard.policy import PolicyError, default_policy_path
from mcp_server_guard.policy_files import PARSED_SUFFIX, parsed_form, read_policy_toml, write_parsed

PACKAGED = default_policy_path().parent


@pytest.mark.parametrize("toml", sorted(PACKAGED.glob("*.toml")), ids=lambda p: p.name)
def test_each_packaged_policy_has_a_current_parsed_form(toml: Path) -> None:
    # Stale after an edit of the TOML: run `uv run python -m mcp_server_guard.policy_files`.
    parsed = toml.with_name(toml.stem + PARSED_SUFFIX)
    assert parsed.read_text(encoding="utf-8") == parsed_form(toml)
    assert read_policy_toml(toml, PACKAGED) == tomllib.loads(toml.read_text(encoding="utf-8"))


def _packaged_copy(tmp_path: Path) -> Path:
    directory = tmp_path / "policies"
    directory.mkdir()
    shutil.copy(PACKAGED / "default.toml", directory / "default.toml")
    write_parsed(directory)
    return directory


def _plant(parsed: Path, data: dict[str, object]) -> None:
    """The parsed form kept with its hash, its data replaced: what it says is what a reader would take."""
    form = json.loads(parsed.read_text(encoding="utf-8"))
    parsed.write_text(json.dumps({"sha256": form["sha256"], "data": data}), encoding="utf-8")


def test_a_current_parsed_form_is_what_is_read(tmp_path: Path) -> None:
    directory = _packaged_copy(tmp_path)
    _plant(directory / "default.parsed.json", {"marker": 1})  # (no reader but this one would say so)
    assert read_policy_toml(directory / "default.toml", directory) == {"marker": 1}


def test_an_edited_toml_is_parsed_whatever_its_old_parsed_form_says(tmp_path: Path) -> None:
    directory = _packaged_copy(tmp_path)
    toml = directory / "default.toml"
    _plant(directory / "default.parsed.json", {"marker": 1})
    toml.write_text(toml.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert read_policy_toml(toml, directory) == tomllib.loads(toml.read_text(encoding="utf-8"))


@pytest.mark.parametrize("content", ["", "not json", "[]", '{"sha256": 1}', '{"data": {}}'])
def test_a_missing_or_broken_parsed_form_means_the_toml_is_parsed(tmp_path: Path, content: str) -> None:
    directory = _packaged_copy(tmp_path)
    parsed = directory / "default.parsed.json"
    if content:
        parsed.write_text(content, encoding="utf-8")
    else:
        parsed.unlink()
    toml = directory / "default.toml"
    assert read_policy_toml(toml, directory) == tomllib.loads(toml.read_text(encoding="utf-8"))


def test_a_parsed_form_planted_beside_a_users_policy_is_never_read(tmp_path: Path) -> None:
    # Threat: a policy file of the user's where a command can write beside it; a JSON there with the TOML's hash
    # and rules of the command's choosing would be the policy. Only the packaged directory's forms are read.
    user = tmp_path / "mine"
    user.mkdir()
    (user / "strict.toml").write_text('[shell_exec]\nmode = "allowlist"\n', encoding="utf-8")
    write_parsed(user)
    _plant(user / "strict.parsed.json", {"shell_exec": {"mode": "denylist"}})
    assert read_policy_toml(user / "strict.toml", PACKAGED) == {"shell_exec": {"mode": "allowlist"}}
    assert load_policy(user / "strict.toml").shell_exec.mode == "allowlist"


def test_the_default_policy_loads_alike_from_either_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from_form = load_policy()
    monkeypatch.setattr("mcp_server_guard.policy_files._current_parsed", lambda _path, _raw: None)
    assert load_policy() == from_form


def test_the_start_up_records_key_names_the_packaged_policies_wherever_they_really_lie() -> None:
    # In a clone the package's ``policies`` is a link to the clone's own: an edit of a packaged policy is a new key
    # (red team 130: a start answered initialize once from a record kept under the old policy).
    from mcp_server_guard.serving.front_records import code_stamp

    named = {f"{entry[0]}/{entry[1]}".lstrip("/") for entry in code_stamp("mcp_server_shell_exec")[2:]}
    assert {"policies/default.toml", "policies/default.parsed.json"} <= named


@pytest.mark.parametrize("toml", sorted(PACKAGED.glob("*.toml")), ids=lambda p: p.name)
def test_every_packaged_rule_pattern_compiles(toml: Path) -> None:
    # (load_policy takes the packaged policy's own args_regex patterns as compiled — issue 44, not at every start —:
    # this is where they are)
    rules = tomllib.loads(toml.read_text(encoding="utf-8")).get("shell_exec", {}).get("rules", [])
    for rule in rules:
        for pattern in rule.get("args_regex", []):
            re.compile(pattern)


def test_a_policy_files_rule_whose_pattern_does_not_compile_is_refused_at_load(tmp_path: Path) -> None:
    own = tmp_path / "own.toml"
    own.write_text('[[shell_exec.rules]]\nid = "mine"\naction = "ask"\nreason = "x"\nprograms = ["x"]\n'
                   'args_regex = ["(unclosed"]\n', encoding="utf-8")  # fmt: skip
    with pytest.raises(PolicyError, match="is not a regular expression"):
        load_policy(own)
