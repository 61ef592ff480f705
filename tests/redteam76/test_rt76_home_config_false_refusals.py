"""Red team 76 (issue 42, fe4f5e9): in an allowed HOME "every file under ~/.config (not configstore/)" is now the
user's configuration, refused to every tool. But everyday tools write their *data* there on every run, the way
update notifiers write ``configstore/`` (the one exception made):

- Go 1.23+ keeps its local telemetry counters in ``os.UserConfigDir()/go/telemetry/local/*.count``, created and
  updated by every ``go build`` / ``go test`` / ``go vet`` (local mode is the default);
- Cloudflare's wrangler writes a debug log per run under ``~/.config/.wrangler/logs/`` (and ``metrics.json``);
- sindresorhus' ``conf`` (configstore's successor) keeps a tool's state in ``~/.config/<name>-nodejs/``: Next.js
  writes its telemetry id and notice there at its first ``next build`` / ``next dev``;
- Eclipse JGit (Gradle and Maven plugins: spotless, axion-release, git-commit-id) writes the file-system timestamp
  resolution it measured into ``~/.config/jgit/config``;
- Yarn 1's ``yarn global add`` installs into ``~/.config/yarn/global/``.

Each is refused in every call (a refusal listed in each result, the tool's state never kept). Payload-free: the test
asks the one rule every writer uses. Passes when none of these is protected where HOME is an allowed directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.home_rule import home_write_rule

EVERY_RUN = [
    ".config/go/telemetry/local/go@go1.23.4-go1.23.4-linux-amd64-2026-12-06.v1.count",
    ".config/go/telemetry/local/weekends",
    ".config/.wrangler/logs/wrangler-2026-12-06_01-02-03_456.log",
    ".config/.wrangler/metrics.json",
    ".config/nextjs-nodejs/config.json",
]
# (Not data: jgit's config is a configuration; ``yarn global add`` installs programs the user runs by name. Both stay
# protected.)


@pytest.mark.parametrize("path", EVERY_RUN)
def test_what_everyday_tools_write_in_config_at_every_run_is_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    assert home_write_rule(tmp_path, monkeypatch, path) is None, path
