"""What a later checkout writes (a branch, the index, the stash a command left) is judged as a write of those paths
now would be (red team 78 F2, ``changes.checkouts``): laid out in a scratch directory of the server's own, never
outside it (a tree built by hand may name ``..``); everyday branch work asks nothing, and a file the command wrote
with the same bytes is not judged twice."""

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
GIT = "git -c user.name=u -c user.email=u@example.invalid -c commit.gpgsign=false"


def _repo(copy: Copy) -> None:
    (copy.root / "src").mkdir()
    (copy.root / "src" / "a.py").write_text("a = 1\n")
    (copy.root / "package.json").write_text('{"name": "app", "scripts": {"build": "tsc"}}\n')
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "one"]):
        subprocess.run([*GIT.split(), "-C", str(copy.root), *args], check=True, capture_output=True, timeout=30)


def _asks(copy: Copy, script: str) -> list[str]:
    changes = copy.run(script)
    return judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)]).asks


# A commit whose tree has a directory named ".." holding a file, built byte by byte (git's own tools refuse to):
# laid out as it is, the judgement would write outside its scratch directory. The payload is a harmless line.
DOTDOT = """
import hashlib, os, subprocess, zlib
def put(kind, body):
    data = kind + b' ' + str(len(body)).encode() + b'\\0' + body
    oid = hashlib.sha1(data).hexdigest()
    os.makedirs('.git/objects/' + oid[:2], exist_ok=True)
    with open('.git/objects/' + oid[:2] + '/' + oid[2:], 'wb') as f:
        f.write(zlib.compress(data))
    return oid
blob = put(b'blob', b'escaped\\n')
inner = put(b'tree', b'100644 escaped-by-the-judge\\0' + bytes.fromhex(blob))
top = put(b'tree', b'40000 ..\\0' + bytes.fromhex(inner))
env = dict(os.environ, GIT_AUTHOR_NAME='u', GIT_AUTHOR_EMAIL='u@x', GIT_COMMITTER_NAME='u', GIT_COMMITTER_EMAIL='u@x')
commit = subprocess.run(['git', 'commit-tree', top, '-m', 'x'], env=env, capture_output=True, text=True,
                        check=True).stdout.strip()
subprocess.run(['git', 'update-ref', 'refs/heads/odd', commit], check=True)
"""


def test_attack_a_tree_naming_dotdot_is_asked_and_laid_out_nowhere(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    (tmp_path / "dotdot.py").write_text(DOTDOT)
    asks = _asks(copy, f"python3 {tmp_path / 'dotdot.py'}")
    assert any("refs/heads/odd" in a and "git itself refuses" in a for a in asks), asks
    assert not list(tmp_path.rglob("escaped-by-the-judge")), list(tmp_path.rglob("escaped-by-the-judge"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dotdot.py", "root", "upper", "work"]


@pytest.mark.parametrize(
    "script",
    [
        # a branch of its own, committed, and back
        f"{GIT} checkout -q -b feature && echo b = 2 > src/b.py && {GIT} add src/b.py && {GIT} commit -qm b && "
        f"{GIT} checkout -q main",
        # the stash, then popped on another branch
        f"echo more >> src/a.py && {GIT} stash -q && {GIT} checkout -q -b other && {GIT} stash pop -q",
        # a package.json script changed in the work tree and committed: judged once, as the work tree's write
        f'echo \'{{"name": "app", "scripts": {{"build": "tsc -b"}}}}\' > package.json && {GIT} commit -qam s',
    ],
)
def test_everyday_branch_work_asks_nothing_of_later_checkouts(tmp_path: Path, script: str) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    asks = _asks(copy, script)
    assert not asks, asks


def test_a_file_written_and_committed_with_the_same_bytes_is_asked_once(tmp_path: Path) -> None:
    # The work tree's write of a lifecycle script is asked; the commit of those very bytes adds no second question.
    copy = Copy(tmp_path)
    _repo(copy)
    hooked = tmp_path / "hooked.json"
    hooked.write_text('{"name": "app", "scripts": {"build": "tsc", "postinstall": "echo hi"}}\n')
    asks = _asks(copy, f"cp {hooked} package.json && {GIT} commit -qam hooked")
    assert len([a for a in asks if "postinstall" in a]) == 1, asks
    assert not [a for a in asks if "checkout" in a], asks


def test_everyday_commits_in_a_row_on_a_branch_ask_nothing(tmp_path: Path) -> None:
    # Every new commit behind a moved branch is judged (red team 79 F4); ordinary ones ask nothing.
    copy = Copy(tmp_path)
    _repo(copy)
    steps = " && ".join(f"echo v{i} > src/c{i}.py && {GIT} add src && {GIT} commit -qm c{i}" for i in range(4))
    asks = _asks(copy, f"{GIT} checkout -q -b feature && {steps} && {GIT} checkout -q main")
    assert not asks, asks


def test_a_branch_with_more_new_commits_than_are_judged_is_asked(tmp_path: Path) -> None:
    # Past the bound, what the branch's history writes is not judged: asked, never let through unread.
    copy = Copy(tmp_path)
    _repo(copy)
    stream = ["reset refs/heads/long", "from refs/heads/main"]
    for i in range(300):
        stream += ["commit refs/heads/long", f"committer u <u@x> {1_700_000_000 + i} +0000", "data 2", "c", ""]
    (tmp_path / "stream").write_text("\n".join(stream) + "\n")
    asks = _asks(copy, f"git fast-import --quiet < {tmp_path / 'stream'}")
    assert any("refs/heads/long" in a and "more than 256 new commits" in a for a in asks), asks


# A git-lfs pointer committed for package.json, and the object it names planted in .git/lfs by the command: the
# user's checkout (git-lfs installed) writes the object's bytes. The payload is a harmless line.
LFS = """
import hashlib, os, subprocess
planted = b'{"name": "app", "scripts": {"build": "tsc", "postinstall": "echo hi"}}\\n'
hexid = hashlib.sha256(planted).hexdigest()
os.makedirs(f'.git/lfs/objects/{hexid[:2]}/{hexid[2:4]}', exist_ok=True)
with open(f'.git/lfs/objects/{hexid[:2]}/{hexid[2:4]}/{hexid}', 'wb') as f:
    f.write(planted)
pointer = f'version https://git-lfs.github.com/spec/v1\\noid sha256:{hexid}\\nsize {len(planted)}\\n'
blob = subprocess.run(['git', 'hash-object', '-w', '--stdin'], input=pointer, capture_output=True, text=True,
                      check=True).stdout.strip()
subprocess.run(['git', 'update-index', '--cacheinfo', f'100644,{blob},package.json'], check=True)
"""


def test_attack_an_lfs_pointer_whose_planted_object_adds_a_lifecycle_script_is_asked(tmp_path: Path) -> None:
    copy = Copy(tmp_path)
    _repo(copy)
    (tmp_path / "lfs.py").write_text(LFS)
    asks = _asks(copy, f"python3 {tmp_path / 'lfs.py'}")
    assert any("the index" in a and "postinstall" in a for a in asks), asks


@pytest.mark.parametrize(
    "path",
    [
        ".git/objects/info/alternates",
        ".git/info/grafts",
        ".git/objects/pack/multi-pack-index",
        ".git/objects/pack/multi-pack-index.d/multi-pack-index-chain",
    ],
)
def test_attack_a_file_that_makes_git_read_other_objects_is_refused(tmp_path: Path, path: str) -> None:
    # Threat: git then reads other objects or another history for the ones it has (an incremental multi-pack index
    # chain included, git 2.47): what a checkout writes is no longer what the objects the judgement read say.
    copy = Copy(tmp_path)
    _repo(copy)
    changes = copy.run(f"mkdir -p {path.rsplit('/', 1)[0]} && echo x > {path}")
    refused = judge([changes], protection_for(POLICY), POLICY.effects, [str(copy.root)]).refused
    assert (str(copy.root), path) in refused, refused


def _two_branches(copy: Copy) -> None:
    _repo(copy)
    lines = [
        f"{GIT} checkout -q -b side",
        "echo side >> src/a.py",
        f"{GIT} commit -qam side",
        f"{GIT} checkout -q main",
    ]
    for line in [*lines, "echo main > src/b.py", f"{GIT} add src", f"{GIT} commit -qm main"]:
        subprocess.run(line, shell=True, cwd=copy.root, check=True, capture_output=True, timeout=30)


@pytest.mark.parametrize(
    "line",
    [
        f"echo x >> src/a.py && {GIT} commit -qam c && ({GIT} merge -q --no-edit side || true)",
        f"echo x >> src/a.py && {GIT} commit -qam c && ({GIT} rebase -q side || true)",
        f"echo x >> src/a.py && {GIT} commit -qam c && ({GIT} cherry-pick side || true)",
        f"{GIT} bisect start HEAD HEAD~2 >/dev/null",
        f"echo y > new.txt && {GIT} stash -q -u",
        f"{GIT} notes add -m hello HEAD && {GIT} tag -a -m v v1",
        f"{GIT} gc -q --aggressive && {GIT} commit-graph write",
        f"{GIT} config rerere.enabled true; echo x >> src/a.py && {GIT} commit -qam c && ({GIT} merge -q side || true)",
    ],
)
def test_everyday_git_state_asks_nothing(tmp_path: Path, line: str) -> None:
    # Git's state files the judgement knows (a merge's, a rebase's, a bisect's, rerere's preimages, the stash, notes,
    # gc's packs): none is asked; an unknown one would be.
    copy = Copy(tmp_path)
    _two_branches(copy)
    asks = _asks(copy, line)
    assert not asks, asks


def test_attack_a_state_file_the_judgement_does_not_read_is_asked(tmp_path: Path) -> None:
    # Threat (red team 80 F2): git reads more of its dir than the judgement names (info/attributes sets a filter
    # on package.json; a tool's own state): one it does not know, that names no commit, is asked.
    copy = Copy(tmp_path)
    _repo(copy)
    asks = _asks(copy, "echo 'package.json filter=lfs' > .git/info/attributes")
    assert any("info/attributes" in a and "does not judge" in a for a in asks), asks


def test_committing_the_users_own_edits_asks_nothing_and_reads_no_object(tmp_path: Path) -> None:
    # The user's edit (a lifecycle script, made before the call, theirs) committed by the command: the checkout of
    # that commit writes nothing the tree does not hold already — no question, and no object laid out to judge.
    copy = Copy(tmp_path)
    _repo(copy)
    (copy.root / "package.json").write_text('{"name": "app", "scripts": {"postinstall": "echo theirs"}}\n')
    asks = _asks(copy, f"{GIT} add -A && {GIT} commit -qm theirs")
    assert not asks, asks
