"""Red team 42q F (promise 2): git's template directory (``init.templateDir`` in the user's global config, as
``pre-commit init-templatedir`` sets it up, or ``GIT_TEMPLATE_DIR``) is copied into every repository the user makes
or clones afterwards — its hooks, and its config as the new ``.git/config``. A file_write (a template config with a
``core.fsmonitor``) and a command (a marker appended to the template's hook) landed there unasked. Payloads are
harmless text, never run: the tests read the judgement and the writer's rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

POLICY = load_policy()


@pytest.mark.parametrize("spelling", ["~/.git-template", "ABSOLUTE", "environment"])
def test_attack_a_file_in_gits_template_directory_is_refused_to_the_writer(
    spelling: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    template = home / ".git-template"
    (template / "hooks").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    if spelling == "environment":
        monkeypatch.setenv("GIT_TEMPLATE_DIR", str(template))
    else:
        named = "~/.git-template" if spelling.startswith("~") else str(template)
        (home / ".gitconfig").write_text(f"[init]\n\ttemplateDir = {named}\n")
    protection = protection_for(POLICY)
    for path in (".git-template/config", ".git-template/hooks/pre-commit", ".git-template/info/exclude"):
        assert protection.write_rule([path, str(home / path)], None, [str(home)]) is not None, path
    assert protection.write_rule(["notes.txt", str(home / "notes.txt")], None, [str(home)]) is None


@pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
def test_attack_a_command_writing_gits_template_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = Copy(tmp_path)
    home = copy.root
    (home / "tpl" / "hooks").mkdir(parents=True)
    (home / "tpl" / "hooks" / "pre-commit").write_text("#!/bin/sh\n# the stub\n")
    (home / ".gitconfig").write_text("[init]\n\ttemplateDir = ~/tpl\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    script = "echo '# marker' >> tpl/hooks/pre-commit && echo '# marker' > tpl/config && echo n > notes.txt"
    judged = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(home)])
    refused = {path for _root, path in judged.refused}
    assert {"tpl/hooks/pre-commit", "tpl/config"} <= refused and "notes.txt" not in refused, judged.refused
