"""Modes are judged by what they grant: set-id bits refused on files and asked on directories, anything made
writable by others asked (refused where the guards look after it), protected directories neither made nor
re-moded by a command, and every path whose mode changes named in the summary. On real upper layers."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_server_guard.changes.effects import Judgement, judge
from mcp_server_guard.policy import load_policy
from mcp_server_guard.protected import protection_for
from support.copies import Copy, overlays_work

pytestmark = pytest.mark.skipif(not overlays_work(), reason="no user namespaces for an overlay here")
POLICY = load_policy()


def judged(tmp_path: Path, script: str, *, git: bool = False) -> Judgement:
    copy = Copy(tmp_path)
    (copy.root / "edit.txt").write_text("text\n")
    (copy.root / "src").mkdir()
    (copy.root / "build").mkdir()
    (copy.root / "bin").mkdir(exist_ok=True)
    (copy.root / "bin" / "run").write_text("#!/bin/sh\necho run\n")
    (copy.root / "bin" / "run").chmod(0o755)
    (copy.root / ".vscode").mkdir()
    if git:
        subprocess.run(["git", "init", "-q", str(copy.root)], check=True)
    old = os.umask(0o022)  # the user's umask: what a new path gets without a chmod
    try:
        return judge([copy.run(script)], protection_for(POLICY), POLICY.effects, [str(copy.root)])
    finally:
        os.umask(old)


def refused(judgement: Judgement) -> dict[str, str]:
    return {path: why for (_root, path), why in judgement.refused.items()}


def test_attack_setuid_copy_of_a_shell_is_refused(tmp_path: Path) -> None:
    why = refused(judged(tmp_path, "cp /bin/sh bin/tool && chmod 4755 bin/tool"))
    assert "setuid" in why.get("bin/tool", ""), why


def test_attack_setuid_and_setgid_added_to_an_existing_executable_are_refused(tmp_path: Path) -> None:
    why = refused(judged(tmp_path, "chmod u+s,g+s bin/run"))
    assert "setuid" in why.get("bin/run", ""), why


@pytest.mark.parametrize(
    "script",
    [
        "cat /bin/sh > bin/helper && chmod 4755 bin/helper",
        "cp /bin/sh bin/new && chmod 4755 bin/new && mv bin/new bin/helper",
    ],
    ids=["rewritten", "replaced"],
)
def test_attack_a_setuid_programs_bytes_replaced_with_the_bit_kept_are_refused(tmp_path: Path, script: str) -> None:
    # Red team 42q B: the user's own setuid helper; the command's bytes under the bit it had (the mode left equals
    # the old one: no bit looked "added").
    helper = tmp_path / "root" / "bin" / "helper"
    helper.parent.mkdir(parents=True)
    helper.write_text("#!/bin/sh\n# the user's helper\n")
    helper.chmod(0o4755)
    why = refused(judged(tmp_path, script))
    assert "setuid" in why.get("bin/helper", ""), why


def test_a_setgid_refusal_names_the_groups_rights(tmp_path: Path) -> None:
    why = refused(judged(tmp_path, "chmod g+s bin/run"))
    assert "setgid" in why.get("bin/run", "") and "its group's rights" in why["bin/run"], why


def test_attack_git_dir_hooks_and_config_made_writable_by_others_are_refused(tmp_path: Path) -> None:
    why = refused(judged(tmp_path, "chmod 777 .git .git/hooks && chmod 666 .git/config", git=True))
    assert {".git", ".git/hooks", ".git/config"} <= set(why), why
    assert all("writable by others" in why[p] for p in (".git", ".git/hooks", ".git/config")), why


def test_attack_protected_directories_made_or_remoded_by_a_command_are_refused(tmp_path: Path) -> None:
    why = refused(judged(tmp_path, "mkdir -p .config/autostart .local/bin && chmod 700 .vscode"))
    assert {".config/autostart", ".local/bin", ".vscode"} <= set(why), why


def test_git_init_in_the_copy_still_makes_its_git_dir(tmp_path: Path) -> None:
    judgement = judged(tmp_path, "git init -q sub")
    assert not [p for p in refused(judgement) if p.startswith("sub/.git") and not p.endswith("config")], refused(
        judgement
    )


def test_attack_setgid_world_writable_source_directory_asks_and_is_named(tmp_path: Path) -> None:
    judgement = judged(tmp_path, "chmod 2777 src")
    assert any("setgid or setuid bit of the directory src (2777)" in a for a in judgement.asks), judgement.asks
    assert "src/ to 2777" in judgement.summary, judgement.summary


def test_a_directory_made_in_a_setgid_directory_takes_its_bit_unasked_as_natively(tmp_path: Path) -> None:
    # Red team 40q E: the kernel gives a new directory the setgid bit of the directory it is made in (a team's
    # shared directory, chmod g+s): that is not the command's to be asked about.
    shared = tmp_path / "root" / "shared"
    shared.mkdir(parents=True)
    shared.chmod(0o2755)
    judgement = judged(tmp_path, "mkdir shared/sub && mkdir -p shared/a/b && mkdir plain && chmod g+s plain")
    asked = " ".join(judgement.asks)
    assert "the directory plain (2755)" in asked and "shared/" not in asked, judgement.asks


def test_a_file_made_group_writable_asks_new_files_do_not_and_a_build_directory_says_what_reads_there(
    tmp_path: Path,
) -> None:
    # (a build directory opened to others: what the user runs from it next may be theirs — red team 107 F3)
    judgement = judged(tmp_path, "chmod 664 edit.txt && echo new > new.txt && chmod 777 build")
    assert judgement.refused == {}
    assert [a for a in judgement.asks if "writable" in a] == [
        "It makes build (0777) writable by others: a build, an install or a program may read or run what lies there, "
        "makes edit.txt (0664) "
        "writable by its group."
    ], judgement.asks
    assert "edit.txt to 0664" in judgement.summary and "build/ to 0777" in judgement.summary


def test_attack_a_file_with_no_telling_name_in_a_build_directory_made_writable_is_asked(tmp_path: Path) -> None:
    # Red team 134 F1: a generated recipe (build/Makefile, build.ninja), an object linked next (*.o) or a package
    # archive given to others landed unasked: no name tells what a build reads, so every such grant is asked.
    script = "mkdir -p build && echo x > build/build.make && echo y > build/report.txt && chmod 666 build/*"
    asked = " ".join(judged(tmp_path, script).asks)
    assert "build/build.make (0666)" in asked and "build/report.txt (0666)" in asked, asked


def test_new_files_in_a_build_directory_under_the_users_umask_are_not_asked(tmp_path: Path) -> None:
    judgement = judged(tmp_path, "mkdir -p build && echo x > build/report.txt && chmod 644 build/report.txt")
    assert not [a for a in judgement.asks if "writable" in a], judgement.asks


def test_attack_a_protected_directory_given_a_git_dirs_shape_is_neither_made_nor_written(tmp_path: Path) -> None:
    # Red team 42k: objects/ and refs/ made a protected directory "git's own", and a file named like git's (config)
    # in it was judged by the git rules alone: `.config/git/config` (the user's global git config under HOME) landed.
    script = (
        "mkdir -p .config/git/objects .config/git/refs newdir/.idea/objects newdir/.idea/refs && "
        "printf '[user]\\n\\tname = x\\n' > .config/git/config && echo x > .vscode/config && "
        "mkdir -p .vscode/objects .vscode/refs && echo x > newdir/.idea/HEAD"
    )
    why = refused(judged(tmp_path, script))
    for path in (".config/git/config", ".vscode/config", "newdir/.idea/HEAD", ".config/git", "newdir/.idea"):
        assert path in why, (path, why)
    # A bare repository of an ordinary name is still git's own and made freely (what is in it judged by git's rules).
    bare = refused(judged(tmp_path / "bare", "git init -q --bare lib.git && git -C lib.git config user.name x"))
    assert not [p for p in bare if p.startswith("lib.git")], bare


def test_attack_a_link_into_a_directory_anyone_may_write_is_asked(tmp_path: Path) -> None:
    # Red team 141 F1: a link to a name in /tmp gives another user what a write grant gives; a link to the system's
    # own program does not — to a user who may not write it (red team 150 F3: to root it is root's own, asked).
    asked = " ".join(judged(tmp_path, "ln -s /tmp/x-rt141.mk build/Makefile && ln -s /usr/bin/env tool").asks)
    assert "links build/Makefile to /tmp/x-rt141.mk" in asked, asked
    assert ("links tool to" in asked) == os.access("/usr/bin/env", os.W_OK), asked


def test_a_venv_made_from_any_python_is_neither_refused_nor_asked(tmp_path: Path) -> None:
    # Its links lead to the interpreter outside the roots (pyenv's, uv's, the system's): a program a link runs, not a
    # file a build writes through it — whatever protection that path has for writing.
    judgement = judged(tmp_path, f"{shlex.quote(sys.executable)} -m venv --without-pip .venv")
    assert judgement.refused == {} and not [a for a in judgement.asks if "links" in a], (
        judgement.refused,
        judgement.asks,
    )


def test_attack_links_through_proc_or_to_a_directory_outside_are_refused_or_asked(tmp_path: Path) -> None:
    # Red team 147: `/proc/self/cwd/x` ends where the process that follows it runs (the server's `/` here, the
    # user's build in the project there); `up -> /` reaches everything below it, links made earlier too.
    judgement = judged(tmp_path, "ln -s /proc/self/cwd/githooks/pre-commit hook.txt && ln -s / up")
    assert "hook.txt" in " ".join(p for _root, p in judgement.refused), judgement.refused
    assert "links up to the directory /" in " ".join(judgement.asks), judgement.asks
