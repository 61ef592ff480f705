"""Red team 42q D (promise 3): the hidden list names credential places whose tools run programs from their config
(``~/.kube/config``'s ``exec``, ``~/.aws/config``'s ``credential_process``, gpg-agent's ``pinentry-program``,
docker's ``credsStore``). Where they did not exist yet, a command and file_write created them (HOME allowed): the
hidden list was looked up as existing paths only. Payloads are harmless text, never run."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()
NOT_MADE_YET = [".kube/config", ".aws/config", ".gnupg/gpg-agent.conf", ".docker/config.json",
                ".codeium/windsurf/mcp_config.json", ".config/gh/hosts.yml"]  # fmt: skip


@pytest.mark.parametrize("path", NOT_MADE_YET)
def test_attack_a_hidden_path_that_does_not_exist_yet_is_refused_to_the_writer(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    protection = protection_for(POLICY)
    assert protection.write_rule([path, str(home / path)], None, [str(home)]) == "a hidden path"


def test_a_hidden_entry_that_holds_an_allowed_root_is_the_users_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    protection = protection_for(POLICY)
    root = str(home / ".aws")
    assert protection.write_rule(["config", f"{root}/config"], None, [root]) is None
    assert protection.write_rule(["notes.txt", str(home / "notes.txt")], None, [str(home)]) is None


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_attack_a_command_making_hidden_paths_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = Copy(tmp_path)
    home = copy.root
    monkeypatch.setenv("HOME", str(home))
    script = "mkdir -p .kube .aws && echo '# marker' > .kube/config && echo '# marker' > .aws/config && echo n > n.txt"
    judged = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(home)])
    refused = {path for _root, path in judged.refused}
    assert {".kube/config", ".aws/config"} <= refused and "n.txt" not in refused, judged.refused
