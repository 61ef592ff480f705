"""One protected list and one hidden list, through the real shell_exec server in its box.

Each test names what a hostile model tried: plant code that git, a shell or an editor runs later as the
user, rewrite the guards' own policy or audit log, or read credentials. The human approves every question
here (commands and their changes alike): what stops these is the judgement of the command's effects (a
change to a protected path is never applied, by the same rule file_write uses) and the box, not the string
policy. Afterwards the test plays the user (git run outside any sandbox) and checks that no marker appears.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import ElicitRequestParams, ElicitResult

from support import error_of, serve

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]
SX = "mcp-server-shell-exec"
GIT_ENV = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"}


async def approve_everything(_ctx: Any, params: ElicitRequestParams) -> ElicitResult:
    """Yes to every question: run the command, apply its changes."""
    props = dict(params.requested_schema.get("properties", {}))  # type: ignore[union-attr]
    return ElicitResult(
        action="accept", content={name: True for name, p in props.items() if p.get("type") == "boolean"}
    )


def box(workspace: Path, *flags: str, **kw: Any) -> Any:
    return serve(SX, workspace, *flags, elicitation_callback=approve_everything, **kw)


async def run(client: Any, command: str) -> dict[str, Any]:
    with anyio.fail_after(60):
        result = await client.call_tool("shell_exec", {"command": command, "timeoutSeconds": 30})
    assert not result.is_error, result
    return dict(result.structured_content)


def refused(out: dict[str, Any]) -> list[str]:
    """The paths the judgement of the command's effects refused."""
    return [p["path"] for p in out["changes"]["paths"] if p["action"] == "refused"]


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git as the user runs it: outside any sandbox."""
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def repo(workspace: Path) -> Path:
    """The project is a git repository with one commit, made before the server starts."""
    assert git(workspace, "init", "-q", "-b", "main").returncode == 0
    (workspace / "a.txt").write_text("1\n")
    assert git(workspace, "add", "a.txt").returncode == 0
    assert git(workspace, "commit", "-qm", "one").returncode == 0
    return workspace


def hook(marker: Path) -> str:
    return f"printf '#!/bin/sh\\ntouch {marker}\\n' > h.src && chmod +x h.src"


WRITERS = {
    "cp": "cp h.src .git/hooks/pre-commit",
    "tee": "tee .git/hooks/pre-commit < h.src > /dev/null",
    "mv": "mv h.src .git/hooks/pre-commit",
    "ln": "ln -sf $PWD/h.src .git/hooks/pre-commit",
    "redirect": "cat h.src > .git/hooks/pre-commit",
    "python3": "python3 -c \"import shutil; shutil.copy('h.src', '.git/hooks/pre-commit')\"",
    "replace-the-hooks-dir": (
        "rm -r .git/hooks; mv .git/hooks .git/old; mkdir .git/hooks && cp h.src .git/hooks/pre-commit"
    ),
}


async def test_planting_a_git_hook_fails_with_every_writer(repo: Path, tmp_path: Path) -> None:
    async with box(repo) as client:
        for writer, command in WRITERS.items():
            marker = tmp_path / "outside" / f"hook-ran-{writer}"
            out = await run(client, f"{hook(marker)}; {command}; echo done")
            assert out["stdout"] == "done\n", writer
            assert not (repo / ".git" / "hooks" / "pre-commit").exists(), writer
    (repo / "a.txt").write_text("2\n")
    assert git(repo, "commit", "-qam", "two").returncode == 0
    assert not list((tmp_path / "outside").glob("hook-ran-*"))


GIT_CONFIG_ATTACKS = {
    "fsmonitor": "git config core.fsmonitor 'touch {marker}'",
    "hooksPath": "mkdir -p hk && cp h.src hk/pre-commit && git config core.hooksPath hk",
    "alias": "git config alias.st '!touch {marker}'",
    "sed-i": "sed -i 's/\\[core\\]/[core]\\n\\tfsmonitor = touch {marker}/' .git/config",
    "append": "printf '[core]\\n\\tfsmonitor = touch {marker}\\n' >> .git/config",
    "worktree elsewhere": "git config core.worktree {marker}.d",
}


async def test_git_config_that_runs_programs_cannot_be_written(repo: Path, tmp_path: Path) -> None:
    before = (repo / ".git" / "config").read_bytes()
    async with box(repo) as client:
        for attack, command in GIT_CONFIG_ATTACKS.items():
            marker = tmp_path / "outside" / f"config-ran-{attack}"
            await run(client, f"{hook(marker)}; " + command.format(marker=marker) + "; echo done")
            assert (repo / ".git" / "config").read_bytes() == before, attack
    for args in (["status"], ["st"], ["commit", "-qam", "x", "--allow-empty"]):
        git(repo, *args)
    assert not list((tmp_path / "outside").glob("config-ran-*"))


async def test_a_repo_made_by_the_command_keeps_no_hook_and_no_program_key(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "outside" / "new-repo-ran"
    plant = (
        f"{hook(marker)}; git init -q -b main sub && cp h.src sub/.git/hooks/pre-commit && "
        f"git -C sub config core.fsmonitor 'touch {marker}' && git -C sub config user.email m@x && echo planted"
    )
    async with box(workspace) as client:
        out = await run(client, plant)
    assert out["stdout"] == "planted\n"
    assert out["transaction"] == "applied"
    assert "sub/.git/hooks/pre-commit" in refused(out) and "sub/.git/config" in refused(out)
    sub = workspace / "sub"
    assert not (sub / ".git" / "hooks" / "pre-commit").exists()
    assert (sub / ".git" / "hooks" / "pre-commit.sample").exists()  # git's own samples stay
    (sub / "f").write_text("x")
    git(sub, "add", "f")
    assert git(sub, "commit", "-qm", "one").returncode == 0  # the repo still works
    assert git(sub, "config", "user.email").stdout.strip() == "m@x"
    assert "fsmonitor" not in (sub / ".git" / "config").read_text()
    assert not marker.exists()


async def test_editor_and_host_configs_created_by_a_command_never_reach_the_files(workspace: Path) -> None:
    async with box(workspace) as client:
        for target in (".vscode/tasks.json", ".mcp.json", ".cursor/mcp.json", ".claude/settings.json", ".envrc"):
            out = await run(client, f"mkdir -p $(dirname {target}) && echo '{{}}' > {target} && echo made")
            assert out["stdout"] == "made\n" and target in refused(out), (target, out["changes"])
            assert not (workspace / target).exists(), target


async def test_existing_editor_config_is_never_rewritten_by_commands(workspace: Path) -> None:
    (workspace / ".vscode").mkdir()
    (workspace / ".vscode" / "settings.json").write_text("{}")
    async with box(workspace) as client:
        out = await run(client, "echo '{\"x\": 1}' > .vscode/settings.json; echo {} > .vscode/tasks.json; echo done")
    assert out["stdout"] == "done\n"
    assert {".vscode/settings.json", ".vscode/tasks.json"} <= set(refused(out))
    assert (workspace / ".vscode" / "settings.json").read_text() == "{}"
    assert not (workspace / ".vscode" / "tasks.json").exists()


async def test_separate_git_dir_config_and_submodule_configs_are_never_rewritten(workspace: Path) -> None:
    assert git(workspace, "init", "-q", "--separate-git-dir=gitdir", "work").returncode == 0
    (workspace / "gitdir" / "modules" / "lib").mkdir(parents=True)
    (workspace / "gitdir" / "modules" / "lib" / "config").write_text("[core]\n")
    pointer = (workspace / "work" / ".git").read_text()
    async with box(workspace) as client:
        out = await run(
            client,
            "echo x >> gitdir/config; echo x >> gitdir/modules/lib/config; echo 'gitdir: /tmp' > work/.git; echo done",
        )
    assert out["stdout"] == "done\n"
    assert {"gitdir/config", "gitdir/modules/lib/config", "work/.git"} <= set(refused(out))
    assert "x" not in (workspace / "gitdir" / "config").read_text().split()
    assert (workspace / "gitdir" / "modules" / "lib" / "config").read_text() == "[core]\n"
    assert (workspace / "work" / ".git").read_text() == pointer


async def test_home_in_the_jail_keeps_its_rc_files_and_ssh_keys(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = workspace / "home"
    monkeypatch.setenv("HOME", str(home))
    home.mkdir()
    (home / ".bashrc").write_text("# mine\n")
    marker = tmp_path / "outside" / "rc-ran"
    # Written by a program, not by a redirect or a writer the string layer knows (it refuses `>> ~/.bashrc`, `tee
    # ~/.ssh/…` before anything runs): what is tested here is the judgement of what the command did.
    attack = (
        "python3 -c \"import os; h = os.path.expanduser('~'); j = os.path.join\n"
        f"open(j(h, '.bashrc'), 'a').write('touch {marker}\\\\n'); os.remove(j(h, '.bashrc'))\n"
        "os.symlink('/tmp/evil', j(h, '.bashrc'))\n"
        "os.makedirs(j(h, '.ssh'), exist_ok=True); open(j(h, '.ssh', 'authorized_keys'), 'w').write('ssh-ed25519 A')\n"
        "os.makedirs(j(h, '.config', 'git')); open(j(h, '.config', 'git', 'config'), 'w').write('[core]')\n"
        f"open(j(h, '.bash_aliases'), 'w').write('touch {marker}')\n"
        "os.makedirs(j(h, '.local', 'bin')); open(j(h, '.local', 'bin', 'git'), 'w').write('#!/bin/sh')\n"
        "os.chmod(j(h, '.local', 'bin', 'git'), 0o755)\n"
        "os.makedirs(j(h, '.config', 'nvim')); open(j(h, '.config', 'nvim', 'init.lua'), 'w').write('x')\n"
        "print('wrote')\"; "
        "echo done"
    )
    async with box(workspace) as client:
        out = await run(client, attack)
    assert out["stdout"] == "wrote\ndone\n", out["stderr"]  # the command did all of it, on its copy
    assert (home / ".bashrc").read_text() == "# mine\n" and not (home / ".bashrc").is_symlink()
    assert not (home / ".ssh" / "authorized_keys").exists()
    assert not (home / ".config" / "git" / "config").exists()
    for planted in (".bash_aliases", ".local/bin/git", ".config/nvim/init.lua"):
        assert not (home / planted).exists(), planted


async def test_a_policy_rewrite_does_not_survive_into_the_next_session(workspace: Path) -> None:
    policy = workspace / "mcp-policy.toml"
    policy.write_text("[shell_exec]\nundecidable = 'ask'\n")
    async with box(workspace, "--policy", str(policy)) as client:
        out = await run(client, "printf '[shell_exec]\\nrules = []\\n' > mcp-policy.toml; echo done")
    # Registered like the server's state (hidden from every server's commands, its own included): the write fails
    # in the box, or (were it made on the copy) is refused at the apply.
    assert "mcp-policy.toml" in refused(out) or "mcp-policy.toml: Permission denied" in out["stderr"], out
    assert policy.read_text() == "[shell_exec]\nundecidable = 'ask'\n"
    async with box(workspace, "--policy", str(policy)) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("shell_exec", {"command": "shutdown -h now"})
    assert error_of(result)["code"] == "COMMAND_DENIED"


async def test_an_audit_log_inside_the_jail_cannot_be_erased(workspace: Path) -> None:
    log = workspace / ".audit.jsonl"
    async with box(workspace, audit=log) as client:
        await run(client, "echo first")
        out = await run(client, ": > .audit.jsonl; rm -f .audit.jsonl; echo done")
    assert out["stdout"] == "done\n"
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(entries) >= 2


async def test_credentials_in_home_are_hidden_from_commands(workspace: Path, isolated_home: Path) -> None:
    (isolated_home / ".ssh").mkdir()
    (isolated_home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    (isolated_home / ".aws").mkdir()
    (isolated_home / ".aws" / "credentials").write_text("aws_secret_access_key = x\n")
    (isolated_home / ".netrc").write_text("machine x password y\n")
    async with box(workspace) as client:
        out = await run(client, "cat ~/.ssh/id_rsa ~/.aws/credentials ~/.netrc; ls -A ~/.ssh; echo done")
        # The box, not the string layer (which refuses `cd ~/.ssh && … tee id_rsa`: a directory it cannot follow)
        strict = await run(client, 'cd "$(printf %s ~/.ssh)" && echo x | tee id_rsa; echo done')
    assert "PRIVATE" not in out["stdout"] and "secret" not in out["stdout"] and "password" not in out["stdout"]
    assert out["stdout"].endswith("done\n")
    assert "Read-only file system" in strict["stderr"] or "No such file" in strict["stderr"]
    assert (isolated_home / ".ssh" / "id_rsa").read_text() == "PRIVATE KEY\n"


async def test_a_symlinked_protected_path_leads_nowhere_outside(workspace: Path, tmp_path: Path) -> None:
    # The server never follows what it finds in the tree: a write through .vscode -> outside fails in the box
    # (outside is read-only, or not there at all), and nothing of the copy is ever applied through that link.
    (tmp_path / "outside" / "vscode").mkdir()
    (workspace / ".vscode").symlink_to(tmp_path / "outside" / "vscode")
    async with box(workspace) as client:
        out = await run(client, "echo '{}' > .vscode/tasks.json; echo done")
    assert out["stdout"] == "done\n" and ".vscode/tasks.json" in out["stderr"]  # outside is not there to write
    assert list((tmp_path / "outside" / "vscode").iterdir()) == []
    assert (workspace / ".vscode").is_symlink()


async def test_everyday_git_work_still_writes_objects_refs_index_and_logs(repo: Path) -> None:
    flow = (
        "export GIT_AUTHOR_NAME=u GIT_AUTHOR_EMAIL=u@x GIT_COMMITTER_NAME=u GIT_COMMITTER_EMAIL=u@x; "
        "set -e; git checkout -qb feature; echo 2 >> a.txt; git commit -qam two; git checkout -q main; "
        "git stash list; echo 3 > b.txt; git add b.txt; git stash -q; git stash pop -q; git commit -qm three; "
        "git merge -q --no-edit feature; git tag v1; git gc -q; git log --oneline | wc -l"
    )
    async with box(repo) as client:
        out = await run(client, flow)
    assert out["exitCode"] == 0, out["stderr"]
    assert int(out["stdout"]) == 4
    assert out["transaction"] == "applied" and not refused(out)
    assert git(repo, "log", "--oneline").stdout.count("\n") == 4  # the user's git sees the work


async def test_moving_the_git_dir_away_and_making_a_new_one_plants_nothing(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "outside" / "swap-ran"
    swap = (
        f"{hook(marker)}; mv .git .git-old && git init -q -b main . && cp h.src .git/hooks/pre-commit && "
        f"git config core.fsmonitor 'touch {marker}'; echo swapped"
    )
    async with box(repo) as client:
        out = await run(client, swap)
    assert "swapped" in out["stdout"]
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()
    git(repo, "status")
    assert not marker.exists()


FSMONITOR = "printf '[core]\\n\\tfsmonitor = touch {marker}\\n' > config"
GIT_SHAPED = {
    "objects as a link to a real repository's": (
        "mkdir -p shaped && cd shaped && git rev-parse HEAD > HEAD && ln -s ../.git/objects objects && mkdir refs"
    ),
    "refs as a link": (
        "mkdir -p shaped && cd shaped && cp ../.git/HEAD HEAD && mkdir objects && ln -s ../.git/refs refs"
    ),
    "objects and refs as executable files": (
        "mkdir -p shaped && cd shaped && echo 'ref: refs/heads/main' > HEAD && touch objects refs && "
        "chmod +x objects refs"
    ),
    "a commondir link": "mkdir -p shaped && cd shaped && cp ../.git/HEAD HEAD && ln -s ../.git/commondir commondir",
}


@pytest.mark.parametrize("shape", list(GIT_SHAPED))
async def test_a_directory_git_takes_for_a_repository_through_links_gets_no_program_key(
    repo: Path, tmp_path: Path, shape: str
) -> None:
    marker = tmp_path / "outside" / "shaped-ran"
    async with box(repo) as client:
        out = await run(client, f"( {GIT_SHAPED[shape]} && {FSMONITOR.format(marker=marker)} ); echo done")
    assert out["stdout"] == "done\n"
    # Git itself, run by the user in that directory, finds no key that runs a program.
    found = git(repo / "shaped", "config", "--get", "core.fsmonitor") if (repo / "shaped").is_dir() else None
    assert found is None or found.stdout == "", (shape, out["changes"])


async def test_a_hooks_directory_replaced_by_a_link_to_project_scripts_never_lands(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "outside" / "linked-hooks-ran"
    shutil.rmtree(repo / ".git" / "hooks")  # nothing for the box to keep read-only: the judgement decides
    async with box(repo) as client:
        out = await run(
            client,
            f"{hook(marker)}; mkdir -p scripts && mv h.src scripts/pre-commit && ln -s ../scripts .git/hooks; "
            "echo done",
        )
    assert out["stdout"] == "done\n"
    assert ".git/hooks" in refused(out)
    assert not (repo / ".git" / "hooks").is_symlink()
    git(repo, "commit", "-q", "--allow-empty", "-m", "x")
    assert not marker.exists()


async def test_a_hook_in_the_users_core_hookspath_is_never_planted_by_any_writer(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "outside" / "hookspath-ran"
    (repo / ".githooks").mkdir()
    (repo / ".githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (repo / ".githooks" / "pre-commit").chmod(0o755)
    assert git(repo, "config", "core.hooksPath", ".githooks").returncode == 0
    async with box(repo) as client:
        out = await run(
            client,
            f"{hook(marker)}; cat h.src > .githooks/pre-commit; cp h.src .githooks/post-commit; echo done",
        )
        assert out["stdout"] == "done\n"
        assert {".githooks/pre-commit", ".githooks/post-commit"} <= set(refused(out))
    async with serve("mcp-server-file-write", repo) as writer:
        with anyio.fail_after(30):
            result = await writer.call_tool(
                "file_write", {"path": ".githooks/pre-commit", "content": f"touch {marker}\n"}
            )
        assert result.is_error and "hooksPath" in error_of(result)["message"]
    assert (repo / ".githooks" / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n"
    assert git(repo, "commit", "-q", "--allow-empty", "-m", "x").returncode == 0
    assert not marker.exists()


async def test_file_write_cannot_build_a_repository_file_by_file(repo: Path) -> None:
    async with serve("mcp-server-file-write", repo) as writer:

        async def write(path: str, content: str) -> Any:
            with anyio.fail_after(30):
                return await writer.call_tool("file_write", {"path": path, "content": content, "createDirs": True})

        for path, content in [
            ("src/HEAD", "ref: refs/heads/main\n"),
            ("src/config", "[core]\n\tbare = true\n[alias]\n\tst = !touch marker\n"),
            ("src/objects/info/x", ""),
        ]:
            assert not (await write(path, content)).is_error, path
        last = await write("src/refs/heads/keep", "")
        assert error_of(last)["code"] == "PROTECTED_PATH" and "git dir" in error_of(last)["message"]
    assert not (repo / "src" / "refs").exists()
    found = git(repo / "src", "rev-parse", "--absolute-git-dir")
    assert found.stdout.strip() == str(repo / ".git")  # git still finds the project's repository, not src/


async def test_a_rebase_todo_that_runs_a_command_never_lands_and_a_plain_one_does(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "outside" / "rebase-ran"
    todo = ".git/rebase-merge/git-rebase-todo"
    async with box(repo) as client:
        planted = await run(
            client, f"mkdir -p .git/rebase-merge && printf 'pick 0000 x\\n x touch {marker}\\n' > {todo}"
        )
        assert todo in refused(planted)
        plain = await run(client, f"printf 'pick 0000 x\\n' > {todo}")
        assert todo not in refused(plain) and (repo / todo).read_text() == "pick 0000 x\n"
    async with serve("mcp-server-file-write", repo) as writer:
        with anyio.fail_after(30):
            wrote = await writer.call_tool("file_write", {"path": todo, "content": "pick 1\n", "overwrite": True})
        assert error_of(wrote)["code"] == "PROTECTED_PATH"


FSMONITOR_CONFIG = '[core]\\n\\tfsmonitor = \\"touch {marker}; echo\\"\\n'


@pytest.mark.parametrize("order", ["config-first", "pointer-first"])
async def test_a_common_dir_whose_config_runs_programs_never_becomes_live_through_a_commondir(
    repo: Path, tmp_path: Path, order: str
) -> None:
    """Threat: a directory with objects/ and refs/ (a common dir) and a commondir pointing at it, the HEAD that
    makes the pointing directory a git dir added last, or the common dir's config changed after: the user's next
    git status in sub/ runs the config's program."""
    marker = tmp_path / "outside" / "common-dir-ran"
    config = FSMONITOR_CONFIG.format(marker=marker)
    async with box(repo) as client:
        await run(client, "mkdir -p evil/objects evil/refs && touch evil/objects/.k evil/refs/.k")
        if order == "config-first":
            await run(client, f"printf '{config}' > evil/config")  # taken as a git dir's: its program key dropped
            await run(client, "mkdir -p sub/.git && printf '../../evil\\n' > sub/.git/commondir")
            last = await run(client, "printf 'ref: refs/heads/main\\n' > sub/.git/HEAD")
            live = "fsmonitor" in (repo / "evil" / "config").read_text()
            assert not live or "sub/.git/HEAD" in refused(last)
        else:
            await run(client, "printf '[core]\\n\\tbare = false\\n' > evil/config")
            await run(client, "mkdir -p sub/.git && printf '../../evil\\n' > sub/.git/commondir")
            await run(client, "printf 'ref: refs/heads/main\\n' > sub/.git/HEAD")
            last = await run(client, f"printf '{config}' > evil/config")
            assert "evil/config" in refused(last)
    (repo / "sub").mkdir(exist_ok=True)
    git(repo / "sub", "status")
    assert not marker.exists()


async def test_file_write_cannot_make_a_common_dir_under_a_config_that_runs_programs(repo: Path) -> None:
    async with serve("mcp-server-file-write", repo) as writer:

        async def write(path: str, content: str) -> Any:
            with anyio.fail_after(30):
                return await writer.call_tool("file_write", {"path": path, "content": content, "createDirs": True})

        assert not (await write("evil/config", "[core]\n\tfsmonitor = touch x\n")).is_error
        assert not (await write("evil/objects/k", "")).is_error
        last = await write("evil/refs/k", "")
        assert error_of(last)["code"] == "PROTECTED_PATH"
    assert not (repo / "evil" / "refs").exists()


async def test_a_rebase_strategy_that_names_a_program_by_path_never_lands(repo: Path, tmp_path: Path) -> None:
    """Threat: rebase-merge/strategy of /x.sh: the user's git rebase --continue runs git-merge-/x.sh from the work
    tree, outside the box."""
    state = ".git/rebase-merge"
    async with box(repo) as client:
        planted = await run(client, f"mkdir -p {state} && printf '/x.sh\\n' > {state}/strategy")
        assert f"{state}/strategy" in refused(planted)
        plain = await run(client, f"printf 'ort\\n' > {state}/strategy && printf 'x\\n' > {state}/head-name")
        assert not refused(plain) and (repo / state / "strategy").read_text() == "ort\n"
