"""Issue 45 item 2: lines that only look something up are not asked — a package search or query (``pacman -Ss``,
``-Si``, ``-Q*``, ``-F``), the list of login shells (``chsh -l``), a publish's dry run (``cargo publish -n``) — on a
copy or not; the installs, shell changes and publishes beside them still are."""

from __future__ import annotations

import pytest

from mcp_server_guard.policy import load_policy
from mcp_server_guard.shell.strings.rules import PolicyEngine

POLICY = load_policy().shell_exec
ENGINES = [PolicyEngine(POLICY), PolicyEngine(POLICY, effects=True)]


@pytest.mark.parametrize(
    "line",
    [
        'pacman -Ss "search_pattern"',
        "pacman -S --search foo",
        "pacman -S -s foo",
        "pacman -Si foo",
        "pacman -Sl",
        "pacman -Sg",
        "pacman -Sp foo",
        "pacman -Qs foo",
        "pacman -Qi foo",
        "pacman -Qdt",
        "pacman -F foo",
        "pacman -Fl foo",
        "yay -Ss foo",
        "paru -Ss foo",
    ],
)
def test_a_package_search_or_query_is_not_asked(line: str) -> None:
    assert [e.decide(line).action for e in ENGINES] == ["allow", "allow"], line


@pytest.mark.parametrize(
    "line",
    [
        "pacman -S git",
        "pacman -Syu",
        "pacman -Sy",
        "pacman -Ssy foo",
        "pacman -Sc",
        "pacman -Sw foo",
        "pacman -Fy",
        "pacman -Rs nginx",
        "pacman -Rns nginx",
        "pacman -U pkg.tar.zst",
        "yay -S foo",
    ],
)
def test_a_package_install_removal_or_refresh_is_still_asked(line: str) -> None:
    assert [e.decide(line).action for e in ENGINES] == ["ask", "ask"], line


@pytest.mark.parametrize("line", ["chsh -l", "chsh --list-shells"])
def test_listing_the_login_shells_is_not_asked(line: str) -> None:
    assert [e.decide(line).action for e in ENGINES] == ["allow", "allow"], line


@pytest.mark.parametrize(
    "line", ["chsh", "chsh -s /bin/zsh", "chsh -s /bin/zsh -l", "chsh -l /Local/Default -s /bin/zsh", "usermod -l b a"]
)
def test_changing_a_login_shell_or_user_is_still_asked(line: str) -> None:
    assert [e.decide(line).action for e in ENGINES] == ["ask", "ask"], line


@pytest.mark.parametrize(
    "line", ["cargo publish -n", "cargo publish --dry-run", "cargo publish -n --allow-dirty", "cargo publish -vn"]
)
def test_a_cargo_publish_dry_run_is_not_asked(line: str) -> None:
    assert [e.decide(line).action for e in ENGINES] == ["allow", "allow"], line


@pytest.mark.parametrize(
    "line",
    [
        "cargo publish",
        "cargo publish --no-verify",
        "cargo publish -pn",
        "cargo publish -p n",
        "cargo publish --package n",
        "cargo yank --version 1.0.0",
        "uv publish -n",
        "poetry publish -n",
    ],
)
def test_a_publish_that_uploads_is_still_asked(line: str) -> None:
    """``-pn`` is ``--package n``; uv's and poetry's ``-n`` are no dry run (no cache, no interaction)."""
    assert [e.decide(line).action for e in ENGINES] == ["ask", "ask"], line
