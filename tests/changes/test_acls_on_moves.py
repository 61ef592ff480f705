"""A project's own access control lists through moves and mode changes (red team 40q C). A file renamed or moved
keeps its ACL natively; a `chmod` rewrites its mask. Through the box the ACL was taken away from a moved file and
the result said a "system.posix_acl_access" had been "left out" — an ACL the command never set — and a `chmod` of a
file with an ACL was reported the same way. Each command runs natively on one copy and through the real shell_exec
on another: the trees (support.differential) and their ACLs must be the same, with no refusal."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

from support.acls import ACCESS, ANY, DEFAULT, WIDER_ACL, acl, acls, acls_work, project
from support.boxed import run, shell
from support.differential import Case, differentials, failed
from support.differential import native as run_natively

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]


MOVES = [
    "mv acl.txt b.txt",
    "mv acl.txt plain/",
    "mv team/f plain/g",
    "mv -f acl.txt plain/p.txt",
    "chmod 600 acl.txt",
    "chmod 600 acl.txt && echo more >> acl.txt",
    "echo more >> acl.txt && chmod 640 acl.txt && mv acl.txt team/",
    # red team 71's fuzzer, seed 7010: a renamed file re-moded under its new name
    "mv acl.txt b.txt && chmod 444 b.txt",
    "mv acl.txt plain/n.txt && chmod 600 plain/n.txt",
    # red team 40s F1: a file renamed over one with an ACL brings its own (none), and a swap moves both
    "mv -f other.txt acl.txt",
    "mv -f plain/p.txt acl.txt",
    "mv plain/p.txt t && mv acl.txt plain/p.txt && mv t acl.txt",
    # red team 4 F1: a file changed, then renamed over one with an ACL (its bytes are nobody's real file's)
    "echo more >> plain/p.txt && mv plain/p.txt acl.txt",
    "echo more >> plain/p.txt && mv plain/p.txt t && mv acl.txt plain/p.txt && mv t acl.txt",
    "mv plain/p.txt t && mv acl.txt plain/p.txt && echo more >> t && mv t acl.txt",
    "echo new > t && mv t acl.txt",
    "rm acl.txt && echo new > acl.txt",
    "python3 -c \"import os; open('t', 'w').write('new'); os.replace('t', 'acl.txt')\"",
    # a directory moved by the box's move helper, with what is in it (their ACLs name users the box maps)
    "mv shared shared2",
    "mv shared/in plain/ && chmod 750 plain/in",
    # red team 3 F5: a directory moved into one with a default ACL takes none (a rename keeps what it had)
    "mv plain shared/",
    "mkdir -p x/y && mv x shared/in/",
]


def same_acls(case: Case) -> list[str]:
    """The case's problems, its ACLs against the native copy's, and any refusal."""
    problems = list(case.found)
    if acls(case.box) != acls(case.native):
        problems.append(f"ACLs {acls(case.box)} != natively {acls(case.native)}: {case.out['changes']}")
    if case.out["changes"]["refused"]:
        problems.append(f"refused: {case.out['changes']['paths']}")
    return problems


async def test_a_projects_own_acl_stays_with_a_file_moved_or_re_moded(workspace: Path) -> None:
    """Every command through one server (each in copies of its own): each failing one is named."""
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    cases = await differentials(workspace, project, MOVES)
    assert not (problems := failed(cases, same_acls)), problems


async def test_attack_an_acl_granting_more_than_the_moved_files_is_left_out(workspace: Path) -> None:
    # A command deleting a file with an ACL of the project's and giving a new one an ACL that grants what that one
    # did not (another user, other rights) sets an ACL of its own: left out, said.
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    project(workspace)
    (workspace / ".t").mkdir()
    (workspace / ".t" / "acl.bin").write_bytes(WIDER_ACL)  # the payload, as data
    code = "import os; os.setxattr('new.txt', 'system.posix_acl_access', open('.t/acl.bin', 'rb').read())"
    async with shell(workspace) as client:
        out = await run(client, f'rm acl.txt && echo new > new.txt && python3 -c "{code}"')
    assert out["exitCode"] == 0, out
    refused = {p["path"]: p["reason"] for p in out["changes"]["paths"] if p["action"] == "refused"}
    assert "system.posix_acl_access left out" in refused.get("new.txt", ""), out["changes"]
    assert ACCESS not in os.listxattr(workspace / "new.txt")


TEAM_DIR = acl((0x01, 7, ANY), (0x02, 5, 54321), (0x04, 5, ANY), (0x10, 5, ANY), (0x20, 0, ANY))


def team_project(root: Path) -> None:
    project(root)  # shared/ has a default ACL naming our own user (one the box maps)
    (root / "team2").mkdir()
    os.setxattr(root / "team2", ACCESS, TEAM_DIR)
    os.setxattr(root / "team2", DEFAULT, TEAM_DIR)  # one naming a user the box does not map


INHERITED_MOVED_OUT = [
    "echo x > shared/new && mv shared/new plain/",
    "echo x > team2/new && mv team2/new plain/",
    "mkdir team2/d && echo x > team2/d/f && mv team2/d plain/",
    "mkdir -p team2/a/b && echo x > team2/a/b/f && mv team2/a/b/f plain/ && mv team2/a plain/",
]


async def test_an_acl_a_new_entry_inherited_stays_when_the_command_moves_it_out(workspace: Path) -> None:
    # Red team 6 A1: natively a rename keeps what the inode has; the ACL was judged against the landing directory's
    # default ACL only, taken for one the command set, and left out.
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    cases = await differentials(workspace, team_project, INHERITED_MOVED_OUT)
    assert not (problems := failed(cases, same_acls)), problems


async def test_attack_an_acl_beyond_the_default_of_a_directory_the_command_wrote_in_is_left_out(
    workspace: Path,
) -> None:
    # The rule above admits what inheritance gives: an entry made in a directory with a default ACL, and moved. An
    # ACL granting more than that default (rw for the user it names r-x) is still the command's own.
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    team_project(workspace)
    (workspace / ".t").mkdir()
    (workspace / ".t" / "acl.bin").write_bytes(WIDER_ACL)  # the payload, as data
    code = "import os; os.setxattr('plain/new', 'system.posix_acl_access', open('.t/acl.bin', 'rb').read())"
    async with shell(workspace) as client:
        out = await run(client, f'echo x > shared/n && echo x > plain/new && python3 -c "{code}"')
    assert out["exitCode"] == 0, out
    refused = {p["path"]: p["reason"] for p in out["changes"]["paths"] if p["action"] == "refused"}
    assert "system.posix_acl_access left out" in refused.get("plain/new", ""), out["changes"]
    assert ACCESS not in os.listxattr(workspace / "plain" / "new")


EXCHANGE = (
    'python3 -c "import ctypes,os; l=ctypes.CDLL(None,use_errno=True); '
    "r=l.renameat2(-100,b'{a}',-100,b'{b}',2); assert r==0, os.strerror(ctypes.get_errno())\""
)


def secret_project(root: Path) -> None:
    project(root)
    (root / "secret.txt").write_text("secret\n")
    os.chmod(root / "secret.txt", 0o600)  # only its owner reads it


SECRET_PUT = {
    # link + unlink instead of rename: red team 4 F1 without a rename call
    "link-unlink": "echo more >> secret.txt && rm acl.txt && ln secret.txt acl.txt && rm secret.txt",
    "link-kept": "echo more >> secret.txt && rm acl.txt && ln secret.txt acl.txt",
    # RENAME_EXCHANGE: the rename note sees where the source goes, not where the target goes
    "exchange": "echo more >> secret.txt && " + EXCHANGE.format(a="acl.txt", b="secret.txt"),
    "exchange-both-changed": (
        "echo more >> secret.txt && echo more >> acl.txt && " + EXCHANGE.format(a="acl.txt", b="secret.txt")
    ),
}


def _secret_kept(case: Case) -> list[str]:
    problems = [] if ACCESS not in os.listxattr(case.native / "acl.txt") else ["natively acl.txt has an ACL"]
    problems += case.found
    if acls(case.box) != acls(case.native):
        problems.append(f"ACLs {acls(case.box)} != natively {acls(case.native)}: {case.out['changes']}")
    return problems


async def test_attack_a_secret_put_at_a_name_with_an_acl_by_no_rename_does_not_take_that_acl(
    workspace: Path,
) -> None:
    # Red team 5a F1: natively the name then holds the secret's inode (mode 600, no ACL); it landed under acl.txt's
    # ACL, readable by user 54321.
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    cases = await differentials(workspace, secret_project, SECRET_PUT)
    assert not (problems := failed(cases, _secret_kept)), problems


@pytest.mark.parametrize(
    "command",
    [
        "echo more >> plain/p.txt && mv plain/p.txt acl.txt && sleep 3 && echo done > plain/q.txt",
        "echo more >> secret.txt && rm acl.txt && ln secret.txt acl.txt && rm secret.txt && sleep 3 && echo done > q",
    ],
    ids=["renamed", "linked"],
)
async def test_a_jobs_file_put_over_one_with_an_acl_brings_its_own_at_the_jobs_end(
    workspace: Path, command: str
) -> None:
    # Red team 4 F1 and 5a F1, in a background job: a look falls between the move and the job's end. The file's
    # bytes are nobody's real file's; whether it is the real one rewritten in place is known only at the end.
    if not acls_work(workspace / "probe"):
        pytest.skip("no POSIX ACLs here")
    secret_project(workspace)
    native = workspace.parent / "native"
    shutil.copytree(workspace, native, symlinks=True)
    native_out = run_natively(native, command)
    async with shell(workspace) as client:
        looks = [await run(client, command, yieldAfterSeconds=1.5)]
        assert looks[0]["status"] == "running", looks[0]
        with anyio.fail_after(60):
            while looks[-1]["status"] == "running":
                looks.append(await run(client, "", jobId=looks[0]["jobId"], yieldAfterSeconds=3))
    assert looks[-1]["exitCode"] == 0, (looks, native_out)
    assert (workspace / "acl.txt").read_text() == (native / "acl.txt").read_text()
    assert acls(workspace) == acls(native)
