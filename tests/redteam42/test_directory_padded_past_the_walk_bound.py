"""Red team 42n (promise 1, a bound that failed open): ``chmod 777 DIR`` where DIR holds a nested repository is
refused — anyone could move the repository away and put their own, with hooks, in its place — but the walk that
looks for it stops after 5,000 entries: with 5,000 files before it, the re-mode landed unasked in a scratch
directory and was only asked elsewhere. A walk cut short now refuses."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()


@pytest.mark.parametrize("top", ["_deps", "vendor"])
def test_attack_a_directory_padded_past_the_walk_is_refused_as_if_it_held_a_repository(
    tmp_path: Path, top: str
) -> None:
    copy = Copy(tmp_path)
    filler = copy.root / top / "a"
    filler.mkdir(parents=True)
    for i in range(5_000):
        (filler / f"f{i:05}").touch()
    (copy.root / top / "zlib").mkdir()
    subprocess.run(["git", "init", "-q", str(copy.root / top / "zlib")], check=True)
    judged = judge([copy.run(f"chmod 777 {top}")], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    refused = dict(judged.refused)
    assert (str(copy.root), top) in refused, (refused, judged.asks)
    assert "writable by others" in refused[(str(copy.root), top)]


def test_a_small_directory_made_writable_by_others_is_only_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    (copy.root / "shared").mkdir()
    for i in range(10):
        (copy.root / "shared" / f"f{i}").touch()
    judged = judge([copy.run("chmod 777 shared")], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert not judged.refused
    assert any("shared" in ask for ask in judged.asks), judged.asks


def test_attack_taking_the_sticky_bit_off_a_world_writable_directory_holding_a_repository_is_refused(
    tmp_path: Path,
) -> None:
    # Red team 42o E: ``chmod 1777 d`` (allowed: the sticky bit), then ``chmod o-t d``: the second call added no
    # bit, so nothing was judged; the state it leaves is judged now.
    copy = Copy(tmp_path)
    (copy.root / "d" / "zlib").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(copy.root / "d" / "zlib")], check=True)
    (copy.root / "d").chmod(0o1777)
    judged = judge([copy.run("chmod o-t d")], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert (str(copy.root), "d") in dict(judged.refused), (judged.refused, judged.asks)


def test_attack_a_repository_made_in_a_directory_others_may_write_is_refused(tmp_path: Path) -> None:
    # Red team 42o E: the directory made 0777 first (nothing guarded in it then), ``git init`` in it after.
    copy = Copy(tmp_path)
    (copy.root / "shared").mkdir()
    (copy.root / "shared").chmod(0o777)
    (copy.root / "sticky").mkdir()
    (copy.root / "sticky").chmod(0o1777)
    script = "git init -q shared/repo && git init -q sticky/repo && git init -q plain"
    judged = judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    refused = dict(judged.refused)
    assert (str(copy.root), "shared/repo/.git") in refused, refused
    assert not any(path.startswith(("sticky/", "plain")) for _root, path in refused), refused


@pytest.mark.parametrize("link", ["gitlink", "repolink"])
def test_attack_a_directory_holding_a_link_to_a_repository_is_refused_when_made_writable_by_others(
    tmp_path: Path, link: str
) -> None:
    # Red team 42o F: the walk yielded no links: ``_deps/x/.git -> elsewhere`` or ``_deps/zlib -> ../zlib-src``
    # (anyone could re-point it at their own repository) was made 0777 unasked in a build directory.
    copy = Copy(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    subprocess.run(["git", "init", "-q", str(elsewhere)], check=True)
    (copy.root / "_deps" / "x").mkdir(parents=True)
    if link == "gitlink":
        (copy.root / "_deps" / "x" / ".git").symlink_to(elsewhere / ".git")
    else:
        (copy.root / "_deps" / "zlib").symlink_to(elsewhere)
    judged = judge([copy.run("chmod 777 _deps")], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert (str(copy.root), "_deps") in dict(judged.refused), (judged.refused, judged.asks)


@pytest.mark.parametrize("mode", ["1777", "1770", "777"])
def test_attack_a_directory_holding_a_repository_made_writable_by_others_even_sticky_is_refused(
    tmp_path: Path, mode: str
) -> None:
    # Red team 5b (LOW): with the sticky bit others cannot replace what is there, but they can make a protected name
    # that is missing (an included config not there yet, a hook git would run): refused as without it.
    copy = Copy(tmp_path)
    (copy.root / "d" / "zlib").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(copy.root / "d" / "zlib")], check=True)
    judged = judge([copy.run(f"chmod {mode} d")], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert (str(copy.root), "d") in dict(judged.refused), (judged.refused, judged.asks)


def test_a_sticky_directory_holding_nothing_protected_is_only_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    (copy.root / "drop").mkdir()
    judged = judge([copy.run("chmod 1777 drop")], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    assert not judged.refused
    assert any("drop" in ask for ask in judged.asks), judged.asks
