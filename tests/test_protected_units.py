"""Unit tests of the protected and hidden lists: git's layout, the git config sanitizer, the survey."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_server_guard import registry
from mcp_server_guard.dirwatch import resolve as _resolve
from mcp_server_guard.errors import SecurityError
from mcp_server_guard.git_dirs import git_runnable
from mcp_server_guard.globs import SuffixMatcher, glob_regex
from mcp_server_guard.policy import PolicyError, load_policy
from mcp_server_guard.protected import (
    Protection,
    is_git_dir,
    pointer_text,
    safe_git_config,
    unsafe_git_entries,
)


@pytest.mark.parametrize(
    ("rel", "runnable"),
    [
        ("config", True),
        ("hooks/pre-commit", True),
        ("hooks", True),
        ("commondir", True),
        ("modules/a/b/modules/c/config", True),
        ("modules/lib/hooks/post-checkout", True),
        ("worktrees/w/config.worktree", True),
        ("objects/ab/cdef", False),
        ("refs/heads/main", False),
        ("index", False),
        ("logs/HEAD", False),
        ("description", False),
    ],
)
def test_git_runnable_entries_are_config_hooks_and_pointers_only(rel: str, runnable: bool) -> None:
    assert git_runnable(rel) is runnable


def test_program_keys_are_dropped_from_a_git_config_and_safe_ones_kept() -> None:
    text = (
        b"[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch /x\n\thooksPath = hk\n"
        b'[alias]\n\tst = !touch /x\n[user]\n\temail = a@b\n[remote "origin"]\n\turl = https://h/r\n'
        b'\tfetch = +refs/heads/*:refs/remotes/origin/*\n[includeIf "gitdir:/"]\n\tpath = /evil\n'
        b'[filter "x"]\n\tclean = touch /x\n[core] pager = touch /x\n[diff "d"]\n\ttextconv = a \\\n\tb\n'
    )
    safe = safe_git_config(text)
    assert safe is not None
    for gone in (b"fsmonitor", b"hooksPath", b"!touch", b"/evil", b"clean", b"pager", b"textconv"):
        assert gone not in safe
    assert b'email = "a@b"' in safe and b'url = "https://h/r"' in safe and b"repositoryformatversion" in safe
    unsafe = unsafe_git_entries(text)
    assert unsafe is not None and len(unsafe) == 7


def test_a_git_config_is_read_the_way_git_reads_it_not_the_way_it_looks() -> None:
    # A backslash at the end of a comment does not continue a line for git; a form feed does not end one.
    hidden_by_comments = b'[user]\n\tname = x ; \\\n[core] ; \\\n\tfsmonitor = "touch /m; false" ; \\\n'
    hidden_by_form_feed = b"[core] ; \x0c[advice]\n\tfsmonitor = touch /m\n"
    for text in (hidden_by_comments, hidden_by_form_feed):
        unsafe = unsafe_git_entries(text)
        assert unsafe is not None and any(entry.startswith("core.fsmonitor=") for entry in unsafe), text
        safe = safe_git_config(text)
        assert safe is not None and b"fsmonitor" not in safe


def test_git_knows_a_git_dir_by_its_layout_not_its_name(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "anything")], check=True)
    assert is_git_dir(str(tmp_path / "anything"))
    assert not is_git_dir(str(tmp_path))
    linked = tmp_path / "linked"
    for part in ("objects", "refs/heads"):
        (linked / part).mkdir(parents=True)
    (linked / "HEAD").symlink_to("refs/heads/main")  # git takes a HEAD symlink to refs/ (dangling or not)
    assert is_git_dir(str(linked))


def test_the_survey_mounts_what_exists_read_only(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path / "proj")], check=True)
    (tmp_path / "proj" / ".vscode").mkdir()
    survey = Protection(load_policy().paths.protected).survey([str(tmp_path / "proj")])
    root = tmp_path / "proj"
    assert {str(root / ".git" / "config"), str(root / ".git" / "hooks"), str(root / ".vscode")} <= set(survey.read_only)
    assert str(root / ".mcp.json") not in survey.read_only  # nothing there to mount


def test_an_unreadable_git_file_fails_closed(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".git").write_text("not a pointer\n")
    with pytest.raises(SecurityError) as refused:
        Protection([]).survey([str(tmp_path)])
    assert refused.value.code == "PROTECTION_UNAVAILABLE"


def test_hidden_never_covers_home_a_root_or_the_python_runtime(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    protection = Protection([], ["~/.ssh", "~", str(tmp_path), "/usr"], home=str(home))
    assert protection.hidden_paths([str(tmp_path / "proj")]) == [str(home / ".ssh")]


def test_the_old_protected_paths_key_names_its_new_place(tmp_path: Path) -> None:
    old = tmp_path / "old.toml"
    old.write_text("[file_write]\nprotected_paths = ['x']\n")
    with pytest.raises(PolicyError, match=r"\[paths\]\.protected"):
        load_policy(old)


# -- the hidden list is looked up once and kept while the kernel reports no change (inotify) ---------------


def _tree(root: Path, seed: int) -> None:
    """Directories, files and relative/absolute symlinks (no loops), some dangling."""
    import random

    rnd = random.Random(seed)
    names = ["a", "b", "c"]
    made: list[Path] = []
    for _ in range(10):
        path = root.joinpath(*[rnd.choice(names) for _ in range(rnd.randint(1, 3))])
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            kind = rnd.random()
            if kind < 0.4:
                path.mkdir(exist_ok=True)
            elif kind < 0.6:
                path.touch()
            elif made:  # a link only to something made before it (and so never to itself): no loops
                target = rnd.choice(made)
                os.symlink(target if rnd.random() < 0.5 else os.path.relpath(target, path.parent), path)
            else:
                os.symlink(root / "nowhere", path)  # dangling
            made.append(path)
        except OSError:
            pass


@pytest.mark.parametrize("seed", range(40))
def test_the_hidden_lookup_resolves_paths_as_the_kernel_does(tmp_path: Path, seed: int) -> None:
    import random

    _tree(tmp_path, seed)
    rnd = random.Random(seed)
    for _ in range(30):
        path = str(tmp_path.joinpath(*[rnd.choice(["a", "b", "c", "..", "."]) for _ in range(rnd.randint(1, 4))]))
        assert _resolve(path, {}) == (os.path.realpath(path), os.path.lexists(path)), path


def _protection(home: Path, *hidden: str) -> Protection:
    return Protection([], hidden, home=str(home))


def test_a_hidden_dir_created_after_a_lookup_is_hidden_at_once(tmp_path: Path) -> None:
    # The attack: the lookup is kept between calls; a credential directory that appears later must not be
    # readable through the kept answer.
    home = tmp_path / "home"
    home.mkdir()
    protection = _protection(home, "~/.ssh")
    key = home / ".ssh" / "id_ed25519"
    assert protection.hidden_rule(str(key)) is None
    assert protection.hidden_rule(str(key)) is None  # kept
    key.parent.mkdir()
    key.write_text("secret")
    assert protection.hidden_rule(str(key)) == str(home / ".ssh")


def test_a_hidden_link_retargeted_through_an_intermediate_link_is_followed_at_once(tmp_path: Path) -> None:
    # The attack: ~/.ssh -> /x/link/keys and /x/link -> /a; retargeting /x/link (a directory the lookup only
    # passed through) moves the credentials to /b: the kept answer must not keep hiding /a alone.
    home, x, a, b = tmp_path / "home", tmp_path / "x", tmp_path / "a", tmp_path / "b"
    for d in (home, x, a / "keys", b / "keys"):
        d.mkdir(parents=True)
    (x / "link").symlink_to(a)
    (home / ".ssh").symlink_to(x / "link" / "keys")
    protection = _protection(home, "~/.ssh")
    assert protection.hidden_paths() == [str(a / "keys")]
    assert protection.hidden_rule(str(b / "keys" / "id")) is None
    (x / "new").symlink_to(b)
    os.replace(x / "new", x / "link")
    assert protection.hidden_rule(str(b / "keys" / "id")) == str(b / "keys")
    assert protection.hidden_paths() == [str(b / "keys")]


def test_a_hidden_glob_sees_a_new_match_at_once(tmp_path: Path) -> None:
    users = tmp_path / "users"
    (users / "alice").mkdir(parents=True)
    protection = _protection(tmp_path / "me", str(users / "*"))
    assert protection.hidden_paths() == [str(users / "alice")]
    (users / "bob").mkdir()
    assert protection.hidden_paths() == [str(users / "alice"), str(users / "bob")]


def _count_lstat(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path ``os.lstat`` is asked about from now on (the hidden lookup's own work), but the one look at the
    servers' registry each lookup makes (whether another server's state directory was registered)."""
    looked: list[str] = []
    real_lstat = os.lstat
    registry_dir = str(registry.directory())

    def counted_lstat(p: Any, *a: Any, **k: Any) -> os.stat_result:
        if str(p) != registry_dir:
            looked.append(str(p))
        return real_lstat(p, *a, **k)

    monkeypatch.setattr(os, "lstat", counted_lstat)
    return looked


def test_an_unchanged_hidden_list_is_not_looked_up_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    protection = _protection(home, "~/.ssh", "~/.aws", "~/.config/gh")
    first = protection.hidden_paths()
    looked = _count_lstat(monkeypatch)
    assert protection.hidden_paths() == first == [str(home / ".aws")]
    assert looked == []
    (home / ".config").mkdir()  # a directory the lookup consulted (~/.config/gh's parent) appears
    protection.hidden_paths()
    assert looked


def test_a_lookup_begun_at_start_up_is_the_one_the_first_call_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 44: the first call of shell_exec waited ~20 ms for this lookup (inotify marks every name the kernel keeps
    # of a watched directory: /tmp); the server starts it in a thread of its own while the rest loads.
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    protection = _protection(home, "~/.ssh", "~/.aws")
    protection.look_ahead()
    deadline = time.monotonic() + 10
    while protection._hidden_cache is None and time.monotonic() < deadline:
        time.sleep(0.01)  # (bounded: the thread's lookup is a few lstat calls)
    looked = _count_lstat(monkeypatch)
    assert protection.hidden_paths() == [str(home / ".aws")]
    assert looked == []  # found kept: the first call looks nothing up


def test_a_lookup_ahead_that_fails_leaves_the_first_call_to_look_and_say_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    protection = _protection(tmp_path / "home", "~/.ssh")
    failed = threading.Event()

    def broken(_consulted: object) -> tuple[tuple[str, ...], bool]:
        failed.set()
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(protection, "_look_up_hidden", broken)
    protection.look_ahead()
    assert failed.wait(10)
    with pytest.raises(OSError, match="Input/output"):
        protection.hidden_paths()


def test_other_entries_of_a_consulted_directory_changing_keep_the_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # /tmp and $HOME change all the time (a build, a browser, a shell's history): only the entries the lookup
    # consulted matter. Before, any change there made every call look the whole list up again (10-40 ms).
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    protection = _protection(home, "~/.ssh", "~/.aws", "~/.config/gh")
    first = protection.hidden_paths()
    looked = _count_lstat(monkeypatch)
    for name in ("notes.txt", ".bash_history", ".sshx"):
        (home / name).write_text("x")
    (home / "notes.txt").rename(home / "notes2.txt")
    (home / ".aws" / "credentials").write_text("inside a hidden entry: not a consulted entry")
    assert protection.hidden_paths() == first == [str(home / ".aws")]
    assert looked == []
    (home / ".ssh").mkdir()  # a consulted entry appears
    assert protection.hidden_paths() == [str(home / ".aws"), str(home / ".ssh")]


def test_a_file_below_an_entry_that_holds_home_is_not_taken_for_a_hidden_one(tmp_path: Path) -> None:
    # "/home/*" and "/root" hold the server's own HOME there: never hidden, so what is in them is not remembered
    # as hidden (a hard link of ~/notes.txt elsewhere was refused as "hidden", and the lookup walked all of HOME).
    users, elsewhere = tmp_path / "users", tmp_path / "elsewhere"
    home = users / "me"
    home.mkdir(parents=True)
    elsewhere.mkdir()
    (home / "notes.txt").write_text("mine")
    os.link(home / "notes.txt", elsewhere / "notes.txt")
    protection = _protection(home, str(users / "*"), str(users))
    assert protection.hidden_paths() == []
    assert protection.hidden_rule(str(elsewhere / "notes.txt")) is None


def test_a_hard_link_of_a_credential_written_after_the_lookup_is_hidden(tmp_path: Path) -> None:
    # The attack: a key made in ~/.ssh (or credentials a tool rewrote by renaming a new file over them) after the
    # hidden list was looked up, then hard-linked elsewhere: no name the lookup consulted changed, so the list is
    # kept, but the new file is still the hidden one.
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("old")
    protection = _protection(home, "~/.ssh", "~/.aws")
    assert protection.hidden_paths() == [str(home / ".aws"), str(home / ".ssh")]
    (home / ".ssh" / "id_new").write_text("NEW PRIVATE KEY")
    os.link(home / ".ssh" / "id_new", home / "key.txt")
    (home / ".aws" / "new").write_text("rotated")
    os.replace(home / ".aws" / "new", home / ".aws" / "credentials")
    os.link(home / ".aws" / "credentials", home / "c.txt")
    assert protection.hidden_rule(str(home / "key.txt")) == str(home / ".ssh")
    assert protection.hidden_rule(str(home / "c.txt")) == str(home / ".aws")


def test_hard_links_are_judged_from_many_threads_while_the_hidden_entry_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # file_read judges paths from worker threads, while files come and go in the hidden entry (each change makes
    # the next hard-linked path walk it again): every answer is the hidden entry, and no thread fails.
    import threading

    from mcp_server_guard import protected

    monkeypatch.setattr(protected, "_RECENT_NS", 0)  # every listed directory compared by its time

    home = tmp_path / "home"
    for j in range(40):  # a walk lists many directories: another thread meets its list half made
        (home / ".ssh" / f"d{j}").mkdir(parents=True)
    (home / ".ssh" / "id").write_text("KEY")
    os.link(home / ".ssh" / "id", home / "key.txt")
    protection = _protection(home, "~/.ssh")
    answers: list[str | None] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def churn() -> None:
        i = 0
        while not stop.is_set():
            (home / ".ssh" / f"d{i % 40}" / "k").write_text("x")
            i += 1

    def judge() -> None:
        try:
            for _ in range(150):
                answers.append(protection.hidden_rule(str(home / "key.txt")))
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    writer = threading.Thread(target=churn)
    judges = [threading.Thread(target=judge) for _ in range(6)]
    writer.start()
    for t in judges:
        t.start()
    for t in judges:
        t.join(timeout=60)
    stop.set()
    writer.join(timeout=10)
    assert not errors, errors
    assert answers == [str(home / ".ssh")] * 900


def test_a_retargeted_link_with_a_name_the_locale_cannot_spell_is_followed(tmp_path: Path) -> None:
    # Names are compared as the file system gives them (os.fsdecode): under a C locale a non-ASCII link name in
    # the lookup's path must still match its own change.
    script = """
import os, sys
from mcp_server_guard.protected import Protection
base = os.fsencode(sys.argv[1])
home = base + b"/home"
os.makedirs(home); os.makedirs(base + b"/a/keys"); os.makedirs(base + b"/b/keys")
link = base + b"/cl\\xc3\\xa9s"
os.symlink(base + b"/a", link)
os.symlink(link + b"/keys", home + b"/.ssh")
p = Protection([], ["~/.ssh"], home=os.fsdecode(home))
assert p.hidden_paths() == [os.fsdecode(base + b"/a/keys")], p.hidden_paths()
os.symlink(base + b"/b", base + b"/new")
os.replace(base + b"/new", link)
print(p.hidden_paths() == [os.fsdecode(base + b"/b/keys")], sys.getfilesystemencoding())
"""
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    run = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "ascii"], run.stdout


def test_a_glob_with_a_wildcard_above_its_last_component_sees_every_change(tmp_path: Path) -> None:
    # "users/*/.ssh" lists directories whose own contents change with the matches: not watchable, so looked up
    # each time — and the entries after it in the list (a user's policy, the server's own state) are too.
    users, home = tmp_path / "users", tmp_path / "home"
    (users / "alice" / ".ssh").mkdir(parents=True)
    (users / "bob").mkdir()
    home.mkdir()
    protection = _protection(home, str(users / "*" / ".ssh"), "~/.aws")
    assert protection.hidden_paths() == [str(users / "alice" / ".ssh")]
    (users / "bob" / ".ssh").mkdir()
    (home / ".aws").mkdir()
    assert protection.hidden_rule(str(users / "bob" / ".ssh" / "id_rsa")) == str(users / "bob" / ".ssh")
    assert protection.hidden_rule(str(home / ".aws" / "credentials")) == str(home / ".aws")


def test_one_directory_watched_under_two_paths_keeps_what_matters_under_either(tmp_path: Path) -> None:
    # A bind mount (or any alias) makes two watched paths one watch: a glob's "every entry" must not be narrowed
    # to the other path's one name.
    from mcp_server_guard.dirwatch import DirWatch

    real = tmp_path / "users"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)  # inotify follows it: the same watch
    watch = DirWatch()
    consulted: dict[str, set[str] | None] = {str(real): None, str(tmp_path / "alias"): {".ssh"}}
    # inotify instances are few per user (128), and the servers of a full test run hold many: wait for one (bounded).
    deadline = time.monotonic() + 30
    while not watch.arm(consulted) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert watch.arm(consulted)
    assert watch.unchanged()
    (real / "bob").mkdir()
    assert not watch.unchanged()
    watch.close()


GITFILES = [
    b"gitdir: ../real\n",
    b"gitdir: ../real \n",  # git keeps the space: another directory
    b"gitdir: ../real\r\n",
    b"gitdir:../real\n",  # no space: git takes it for no pointer at all
    b"gitdir: ../real\nsecond line\n",  # git reads the whole file
    b"gitdir: ../real\0 \n",
    b"  gitdir: ../real\n",
]


@pytest.mark.parametrize("content", GITFILES)
def test_a_git_file_names_the_directory_git_itself_takes(tmp_path: Path, content: bytes) -> None:
    for name in ("real", "real "):
        subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / name)], check=True, timeout=30)
    work = tmp_path / "work"
    work.mkdir()
    (work / ".git").write_bytes(content)
    env = {"PATH": os.defpath, "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    env["GIT_CEILING_DIRECTORIES"] = str(tmp_path)
    done = subprocess.run(
        ["git", "rev-parse", "--absolute-git-dir"], cwd=work, env=env, capture_output=True, timeout=30, check=False
    )
    ours = pointer_text(content, gitfile=True)
    if done.returncode == 0:
        assert ours is not None and os.path.realpath(work / ours) == os.fsdecode(done.stdout.rstrip(b"\n"))
    else:
        assert ours is None or not (work / ours).is_dir(), (content, done.stderr)


def test_protected_patterns_match_by_component_suffix_exactly_as_a_search_of_their_alternation() -> None:
    import random
    import re

    patterns = load_policy().paths.protected
    alternation = re.compile("|".join(f"(?:{glob_regex(p)})" for p in patterns), re.IGNORECASE)
    fast = SuffixMatcher(patterns)
    rng = random.Random(4040)
    parts = [".git", "hooks", "config", ".env", ".ENVRC", "a", "src", ".vscode", "tasks.json", ".ssh", "id_rsa"]
    parts += ["x.pem", ".bashrc", "b\n", "", "~", ".config", "git", "autostart", "bin", ".local", "modules", "sub"]
    paths = ["/".join(rng.choice(parts) for _ in range(rng.randint(1, 7))) for _ in range(4000)]
    paths += [f"/home/u/{p}" for p in paths[:2000]]
    # (Long and deep paths: a few of each shape — the alternation takes ~0.1 s over one; the suite's time is kept.)
    paths += ["/".join(rng.choice(parts) + "x" * rng.randint(0, 300) for _ in range(120)) for _ in range(12)]
    paths += [f"{'deep/' * 120}{p}" for p in paths[:120]]
    assert sum(1 for p in paths if alternation.search(p)) > 200  # the sample reaches the patterns
    for path in paths:
        assert fast.search(path) == bool(alternation.search(path)), path


def test_a_suffix_matcher_compiles_its_patterns_at_its_first_search_once_even_from_many_threads() -> None:
    # Issue 44: a server's start makes its Protection and its first call may ask nothing of it; the compiling waits
    # for the first search, which gives the same answers (the test above) whichever thread makes it.
    import re
    import threading

    patterns = load_policy().paths.protected
    alternation = re.compile("|".join(f"(?:{glob_regex(p)})" for p in patterns), re.IGNORECASE)
    matcher = SuffixMatcher(iter(patterns))  # (taken at once: an iterator is read when the matcher is made)
    assert not matcher._built
    paths = ["/p/.git/config", "/p/src/main.py", "/home/u/.ssh/id_rsa", "/p/.vscode/x/tasks.json", "/p/a"] * 40
    answers: list[list[bool]] = []
    start = threading.Barrier(8)

    def ask() -> None:
        start.wait(timeout=30)
        answers.append([matcher.search(p) for p in paths])

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert matcher._built
    assert answers == [[bool(alternation.search(p)) for p in paths]] * 8


def test_a_path_is_within_a_set_of_directories_exactly_as_within_any_says_at_any_depth() -> None:
    import random

    from mcp_server_guard.paths import parent_set, within_any, within_set

    rng = random.Random(4242)
    parts = ["a", "b", "home", "u", ".local", "state", "x" * 200, "", "."]
    parents = ["/", "/home/u/.local/state", "/a/b/", "a/b", "/a", *("/" + "/".join(["b"] * n) for n in range(1, 30))]
    for _ in range(3000):
        chosen = rng.sample(parents, rng.randint(1, 8))
        child = ("/" if rng.random() < 0.8 else "") + "/".join(rng.choice(parts) for _ in range(rng.randint(1, 130)))
        assert within_set(child, parent_set(chosen)) == within_any(child, chosen), (child[:80], chosen)


def test_attack_a_name_with_a_newline_below_a_protected_directory_is_protected_too() -> None:
    # ``.config/autostart/**`` once meant "below it, no newline in the name": ``x\ny.desktop`` there ran at login.
    protection = Protection(load_policy().paths.protected)
    for path in (".config/autostart/x\ny.desktop", ".vscode/a\nb/tasks.json", "p/.git/hooks/pre\ncommit"):
        assert protection.write_rule([path], None, []) is not None, path
