"""Differential fidelity: seeded scripts of everyday file operations, run natively on one copy of a project and
through shell_exec on another, and the two trees compared exactly.

* :func:`seed_project` makes the project both runs start from (files, directories, a hard-link pair, a relative
  symlink, ``user.*`` extended attributes, old modification times, a git repository with a second branch);
* :func:`script_for` makes the script of one seed: 5-25 operations drawn from a model of the tree, so that most of
  them are valid (create, write, append, truncate, mkdir/rmdir, rm, ``mv`` of files and directories within and
  across directories and over existing targets, chains, swaps through a temporary name, hard links, relative
  symlinks, ``cp -a``, chmod and ``touch -d`` of files and directories, ``user.*`` xattrs set and removed, a file
  replaced by a directory and back, ``git mv``/``checkout``/``commit``);
* :func:`snapshot` reads a tree (names, types, bytes, modes, symlink targets, modification times, ``user.*``
  extended attributes, hard-link groups, and whether any overlayfs bookkeeping is there) and :func:`differences`
  compares two; :func:`reduce` shrinks a failing script to a minimal one (delta debugging).

Every line a script holds is an ordinary file operation inside the project; nothing here deletes or writes
outside the directory it is given.
"""

from __future__ import annotations

import copy
import hashlib
import os
import random
import re
import shlex
import stat
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "OLD",
    "SNAPSHOT_SCRIPT",
    "Entry",
    "Tree",
    "differences",
    "git_state",
    "reduce",
    "run_native",
    "script_for",
    "seed_project",
    "snapshot",
    "snapshot_text",
    "stale_in_view",
]

OLD = 1_300_000_000 * 10**9  # mtimes before 2011 were set on purpose (touch -d), and compare across runs
_EPOCH_2001 = "2001-02-03 04:05:06"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "u",
    "GIT_AUTHOR_EMAIL": "u@x",
    "GIT_COMMITTER_NAME": "u",
    "GIT_COMMITTER_EMAIL": "u@x",
    "GIT_AUTHOR_DATE": "2001-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2001-01-01T00:00:00Z",
}
SNAPSHOT_NAME = ".snap.py"  # in every project: the command prints the tree it sees with it, as its last step

# The snapshot as a program (the box runs it as the command's last step: what the command itself saw); the same
# code as :func:`snapshot`, in words a plain python3 runs.
SNAPSHOT_SCRIPT = r"""
import hashlib, json, os, stat, sys
root = sys.argv[1] if len(sys.argv) > 1 else "."
out = {}
def xattrs(p):
    try:
        names = os.listxattr(p, follow_symlinks=False)
    except OSError:
        return {}
    return {n: os.getxattr(p, n, follow_symlinks=False).hex() for n in sorted(names) if n.startswith("user.")}
unreadable = []  # what a script made the command unable to read (``chmod 664 d``, ``chmod 000 d``)
def add(rel, p):
    try:
        st = os.lstat(p)
    except PermissionError:
        unreadable.append(rel)
        return
    if stat.S_ISLNK(st.st_mode):
        kind, body = "link", os.readlink(p)
    elif stat.S_ISREG(st.st_mode):
        try:
            kind, body = "file", hashlib.sha256(open(p, "rb").read()).hexdigest()
        except PermissionError:
            unreadable.append(rel)
            return
    elif stat.S_ISDIR(st.st_mode):
        kind, body = "dir", ""
    else:
        kind, body = "other", oct(stat.S_IFMT(st.st_mode))
    out[rel] = [kind, body, stat.S_IMODE(st.st_mode), st.st_mtime_ns, xattrs(p)]
add(".", root)
def closed(error):
    unreadable.append(os.path.relpath(error.filename, root) + "/")
for d, dirs, files in os.walk(root, onerror=closed):
    dirs[:] = sorted(x for x in dirs if not (d == root and x == ".git"))
    for n in sorted(dirs + files):
        p = os.path.join(d, n)
        add(os.path.relpath(p, root), p)
print("UNREADABLE " + json.dumps(sorted(unreadable)))
print("SNAPSHOT " + json.dumps(out, sort_keys=True))
"""


@dataclass(frozen=True)
class Entry:
    kind: str  # file, dir, link, other
    body: str  # a file's SHA-256, a link's target
    mode: int  # permission bits (0 for a link)
    mtime_ns: int
    xattrs: tuple[tuple[str, str], ...]  # user.* names and hex values


@dataclass
class Tree:
    entries: dict[str, Entry] = field(default_factory=dict)
    links: set[frozenset[str]] = field(default_factory=set)  # hard-link groups of regular files (two names or more)
    bookkeeping: list[str] = field(default_factory=list)  # paths carrying overlayfs's own xattrs
    unreadable: list[str] = field(default_factory=list)  # what the command could not read ("d/": below d)

    def hidden(self, paths: Iterable[str]) -> frozenset[str]:
        """Those of ``paths`` the command could not see (its own modes kept it out: as natively)."""
        return frozenset(p for p in paths for u in self.unreadable if p == u or (u.endswith("/") and p.startswith(u)))


def _xattrs(path: str) -> tuple[dict[str, str], list[str]]:
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return {}, []
    found = {n: os.getxattr(path, n, follow_symlinks=False).hex() for n in sorted(names) if n.startswith("user.")}
    ours = [n for n in names if n.startswith(("trusted.overlay.", "user.overlay.origin", "user.overlay.opaque",
                                              "user.overlay.impure", "user.overlay.redirect"))]  # fmt: skip
    return found, ours


def snapshot(root: Path, *, skip_git: bool = True) -> Tree:
    """What ``root`` holds (no link followed; ``.git`` left out unless ``skip_git`` is False)."""
    tree = Tree()
    inodes: dict[tuple[int, int], list[str]] = {}

    def add(rel: str, path: str) -> None:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            kind, body = "link", os.readlink(path)
        elif stat.S_ISREG(st.st_mode):
            kind, body = "file", hashlib.sha256(Path(path).read_bytes()).hexdigest()
            inodes.setdefault((st.st_dev, st.st_ino), []).append(rel)
        elif stat.S_ISDIR(st.st_mode):
            kind, body = "dir", ""
        else:
            kind, body = "other", oct(stat.S_IFMT(st.st_mode))
        xattrs, ours = _xattrs(path)
        if ours:
            tree.bookkeeping.append(f"{rel}: {', '.join(ours)}")
        mode = 0 if kind == "link" else stat.S_IMODE(st.st_mode)
        tree.entries[rel] = Entry(kind, body, mode, st.st_mtime_ns, tuple(sorted(xattrs.items())))

    top = str(root)
    add(".", top)
    for directory, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if not (skip_git and directory == top and d == ".git"))
        for name in sorted(dirs + files):
            path = os.path.join(directory, name)
            add(os.path.relpath(path, top), path)
    tree.links = {frozenset(names) for names in inodes.values() if len(names) > 1}
    return tree


def snapshot_text(text: str) -> Tree | None:
    """The tree a command printed with :data:`SNAPSHOT_SCRIPT` (None when its output holds none)."""
    import json

    for line in reversed(text.splitlines()):
        if line.startswith("SNAPSHOT "):
            raw = json.loads(line[len("SNAPSHOT ") :])
            tree = Tree()
            for rel, (kind, body, mode, mtime, xattrs) in raw.items():
                tree.entries[rel] = Entry(
                    kind, body, 0 if kind == "link" else mode, mtime, tuple(sorted(xattrs.items()))
                )
            for other in text.splitlines():
                if other.startswith("UNREADABLE "):
                    tree.unreadable = json.loads(other[len("UNREADABLE ") :])
            return tree
    return None


def differences(
    native: Tree, boxed: Tree, *, all_mtimes: bool = False, links: bool = True, skip: frozenset[str] = frozenset()
) -> list[str]:
    """How ``boxed`` differs from ``native``. Modification times compare when set on purpose (before 2011), or
    always with ``all_mtimes``; hard-link groups compare unless ``links`` is False; ``skip``: paths left out."""
    found: list[str] = []
    for rel in sorted((set(native.entries) | set(boxed.entries)) - skip):
        a, b = native.entries.get(rel), boxed.entries.get(rel)
        if a is None:
            found.append(f"{rel}: not there natively" + (" (a conflict copy)" if ".mcp-guard-" in rel else ""))
            continue
        if b is None:
            found.append(f"{rel}: missing")
            continue
        what = []
        if a.kind != b.kind:
            what.append(f"type {a.kind} != {b.kind}")
        elif a.body != b.body:
            what.append("target" if a.kind == "link" else "bytes")
        if a.mode != b.mode:
            what.append(f"mode {a.mode:o} != {b.mode:o}")
        if all_mtimes:
            if a.mtime_ns != b.mtime_ns:
                what.append(f"mtime {a.mtime_ns} != {b.mtime_ns}")
        elif (a.mtime_ns < OLD or b.mtime_ns < OLD) and a.mtime_ns != b.mtime_ns:
            what.append(f"mtime {a.mtime_ns} != {b.mtime_ns}")
        if a.xattrs != b.xattrs:
            what.append(f"xattrs {dict(a.xattrs)} != {dict(b.xattrs)}")
        if what:
            found.append(f"{rel}: {', '.join(what)}")
    if links and native.links != boxed.links:
        found.append(f"hard links {sorted(map(sorted, native.links))} != {sorted(map(sorted, boxed.links))}")
    found += [f"overlayfs bookkeeping: {b}" for b in boxed.bookkeeping]
    return found


def stale_in_view(before: Tree, after: Tree) -> frozenset[str]:
    """Names a command on the copy may see stale: the other names of a file that had several before the call.
    Overlayfs in a user namespace has no index, so a file changed through one of its names is a new file on the
    copy while its other names still show the old one (the final tree is right: it is compared with the native
    run)."""
    old = {path for group in before.links for path in group}
    return frozenset(old | {path for group in after.links if group & old for path in group})


def _git(root: Path, *args: str) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root), **GIT_ENV}
    # --no-optional-locks: git status would refresh the index (a change of our own between the call and its undo).
    done = subprocess.run(["git", "--no-optional-locks", *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    return done.stdout + done.stderr


def git_state(root: Path) -> str:
    """What git says of the project (its branch, index and status): compared as text."""
    return "\n".join(
        (
            _git(root, "rev-parse", "--abbrev-ref", "HEAD"),
            _git(root, "ls-files", "-s"),
            _git(root, "status", "--porcelain"),
        )
    )


def seed_project(root: Path) -> None:
    """The project every script starts from (the same for every seed)."""
    root.mkdir(parents=True)
    for name in ("a.txt", "b.txt", "c.txt", "e.txt", "x.txt"):
        (root / name).write_text(f"{name} line 1\n{name} line 2\n")
    (root / "d" / "sub").mkdir(parents=True)
    (root / "d" / "f.txt").write_text("f\n")
    (root / "d" / "g.txt").write_text("g\n" * 50)
    (root / "d" / "sub" / "h.txt").write_text("h\n")
    (root / "empty").mkdir()
    (root / "h1.txt").write_text("linked\n")
    os.link(root / "h1.txt", root / "h2.txt")
    os.symlink("a.txt", root / "ln.txt")
    os.symlink("../a.txt", root / "d" / "up.txt")
    (root / "run.py").write_text("print('hi')\n")
    (root / "run.py").chmod(0o755)
    os.setxattr(root / "e.txt", "user.gone", b"1")
    os.setxattr(root / "x.txt", "user.keep", b"kept")
    (root / SNAPSHOT_NAME).write_text(SNAPSHOT_SCRIPT)
    (root / ".gitignore").write_text("")
    os.utime(root / "c.txt", ns=(OLD - 10**18, OLD - 10**18))
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.name", "u")
    _git(root, "config", "user.email", "u@x")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "seed")
    _git(root, "checkout", "-q", "-b", "other")
    (root / "b.txt").write_text("b on other\n")
    (root / "o.txt").write_text("o\n")
    _git(root, "rm", "-q", "c.txt")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "other")
    _git(root, "checkout", "-q", "main")
    os.utime(root / "c.txt", ns=(OLD - 10**18, OLD - 10**18))


@dataclass
class _Model:
    """What the script's tree holds so far, as far as the generator knows (enough to pick valid operations)."""

    files: set[str] = field(default_factory=set)
    dirs: set[str] = field(default_factory=set)
    links: set[str] = field(default_factory=set)
    counter: int = 0
    # The names of the file that had two names before the call, and how the script has used them so far: its mode,
    # time or attributes changed through any of its names ("meta"), and its bytes through one name
    # ("inplace:<name>"), renamed, linked, copied, replaced or read ("names"), or read and written back by git
    # ("git"). A script does one of these (docs/shell_exec.md: a file with several names that the copy cannot show
    # as one).
    shared: set[str] = field(default_factory=lambda: {"h1.txt", "h2.txt"})
    shared_use: str = ""
    meta_through: dict[str, str] = field(default_factory=dict)  # a mode, time or attribute change: the name it used
    linked: set[str] = field(default_factory=set)  # names the script gave a file another name with (ln)
    made: set[str] = field(default_factory=set)  # files the script made (git's rewrites too): no copy of the project's

    def uses_shared(self, line: str) -> set[str]:
        """The names of the shared file a line reaches (every one, for git: it reads the whole tree)."""
        if line.startswith("git "):
            return set(self.shared)
        if "python3" in line:
            words = set(re.findall(r"\(([^,]*),", line))
            words = {w.strip(" '\"") for w in words}
        else:
            words = set(shlex.split(line.replace("&&", " ").replace(";", " "), posix=True))
        return {name for word in words for name in self.shared if word == name or name.startswith(word + "/")}

    def fresh(self, rng: random.Random, directory: str | None = None) -> str:
        self.counter += 1
        where = directory if directory is not None else rng.choice(["", *sorted(self.dirs)])
        name = f"n{self.counter}{rng.choice(['.txt', '', '.md'])}"
        return f"{where}/{name}" if where else name

    def remove(self, path: str) -> None:
        self.shared = {p for p in self.shared if p != path and not p.startswith(path + "/")}
        self.made = {p for p in self.made if p != path and not p.startswith(path + "/")}
        self.files.discard(path)
        self.links.discard(path)
        self.dirs.discard(path)
        for group in (self.files, self.links, self.dirs):
            for p in [p for p in group if p.startswith(path + "/")]:
                group.discard(p)

    def move(self, old: str, new: str) -> None:
        self.shared = {new + p[len(old) :] if p == old or p.startswith(old + "/") else p for p in self.shared}
        self.made = {new + p[len(old) :] if p == old or p.startswith(old + "/") else p for p in self.made}
        self.linked = {new + p[len(old) :] if p == old or p.startswith(old + "/") else p for p in self.linked}
        for group in (self.files, self.links, self.dirs):
            for p in [p for p in group if p == old or p.startswith(old + "/")]:
                group.discard(p)
                group.add(new + p[len(old) :])


def _q(path: str) -> str:
    return shlex.quote(path)


def script_for(seed: int, *, git: bool = True) -> list[str]:
    """The operations of one seed's script (5-25 lines), valid for :func:`seed_project`'s tree as far as the model
    goes (a line that fails fails the same way natively and on the copy)."""
    rng = random.Random(seed)
    m = _Model(
        files={"a.txt", "b.txt", "c.txt", "e.txt", "x.txt", "d/f.txt", "d/g.txt", "d/sub/h.txt", "h1.txt", "h2.txt",
               "run.py"},
        dirs={"d", "d/sub", "empty"},
        links={"ln.txt", "d/up.txt"},
    )  # fmt: skip
    lines: list[str] = []

    def any_file() -> str | None:
        return rng.choice(sorted(m.files)) if m.files else None

    def any_dir() -> str | None:
        return rng.choice(sorted(m.dirs)) if m.dirs else None

    def op_create() -> str:
        path = m.fresh(rng)
        m.files.add(path)
        m.made.add(path)
        return f"printf 'new {m.counter}\\n' > {_q(path)}"

    def op_write() -> str | None:
        f = any_file()
        return None if f is None else f"printf 'rewritten {rng.randrange(1000)}\\n' > {_q(f)}"

    def op_append() -> str | None:
        f = any_file()
        return None if f is None else f"printf 'more\\n' >> {_q(f)}"

    def op_truncate() -> str | None:
        f = any_file()
        return None if f is None else rng.choice([f": > {_q(f)}", f"truncate -s 3 {_q(f)}"])

    def op_mkdir() -> str:
        path = m.fresh(rng)
        m.dirs.add(path)
        if rng.random() < 0.3:
            inner = f"{path}/i{m.counter}"
            m.dirs.add(inner)
            return f"mkdir -p {_q(inner)}"
        return f"mkdir {_q(path)}"

    def op_rmdir() -> str | None:
        empty = [d for d in m.dirs if not any(p.startswith(d + "/") for g in (m.files, m.dirs, m.links) for p in g)]
        if not empty:
            return None
        d = rng.choice(sorted(empty))
        m.remove(d)
        return f"rmdir {_q(d)}"

    def op_rm() -> str | None:
        if rng.random() < 0.25 and m.dirs:
            d = any_dir()
            assert d is not None
            m.remove(d)
            return f"rm -r {_q(d)}"
        choices = sorted(m.files | m.links)
        if not choices:
            return None
        f = rng.choice(choices)
        m.remove(f)
        return f"rm {_q(f)}"

    def op_mv() -> str | None:
        kind = rng.random()
        if kind < 0.2 and m.dirs:
            d = any_dir()
            assert d is not None
            target = m.fresh(rng, directory=rng.choice(["", *sorted(x for x in m.dirs if not x.startswith(d))]))
            m.move(d, target)
            return f"mv {_q(d)} {_q(target)}"
        f = rng.choice(sorted(m.files | m.links)) if m.files or m.links else None
        if f is None:
            return None
        if kind < 0.45 and len(m.files) > 1:  # over an existing file
            target = rng.choice(sorted(m.files - {f}))
            if target in m.shared and (f in m.made or f in m.shared):
                # Taken for the shared file rewritten in place; or a rename onto another name of the same file, which
                # the copy shows as another file (docs/shell_exec.md).
                return None
            m.remove(target)
            m.move(f, target)
            return f"mv -f {_q(f)} {_q(target)}"
        if kind < 0.6:  # a chain
            middle, target = m.fresh(rng), m.fresh(rng)
            m.move(f, target)
            return f"mv {_q(f)} {_q(middle)} && mv {_q(middle)} {_q(target)}"
        if kind < 0.75 and len(m.files) > 1:  # a swap through a temporary name
            other = rng.choice(sorted(m.files - {f}))
            if f not in m.files:
                return None
            temp = m.fresh(rng, directory="")
            if (f in m.shared and other in m.made) or (other in m.shared and f in m.made):
                return None  # taken for the shared file rewritten in place (docs/shell_exec.md)
            for group in (m.shared, m.made):
                if (f in group) != (other in group):
                    group ^= {f, other}
            return f"mv {_q(f)} {_q(temp)} && mv {_q(other)} {_q(f)} && mv {_q(temp)} {_q(other)}"
        target = m.fresh(rng)
        m.move(f, target)
        return f"mv {_q(f)} {_q(target)}"

    def op_ln() -> str | None:
        f = any_file()
        if f is None:
            return None
        target = m.fresh(rng)
        m.files.add(target)
        m.linked |= {f, target}
        if f in m.shared:
            m.shared.add(target)
        return f"ln {_q(f)} {_q(target)}"

    def op_symlink() -> str | None:
        f = any_file()
        if f is None:
            return None
        target = m.fresh(rng)
        m.links.add(target)
        rel = os.path.relpath(f, os.path.dirname(target) or ".")
        return f"ln -s {_q(rel)} {_q(target)}"

    def op_cp() -> str | None:
        if rng.random() < 0.3 and m.dirs:
            d = any_dir()
            assert d is not None
            if any(p.startswith(d + "/") for p in m.linked | m.shared):
                # The copy shows two names the command linked as two files: cp -a copies them apart
                # (docs/shell_exec.md).
                return None
            target = m.fresh(rng, directory="")
            for group in (m.files, m.links, m.dirs):
                group |= {target + p[len(d) :] for p in group if p == d or p.startswith(d + "/")}
            m.made |= {target + p[len(d) :] for p in m.files if p.startswith(d + "/")}
            return f"cp -a {_q(d)} {_q(target)}"
        f = any_file()
        if f is None or f in m.shared or f in m.linked:
            # A copy that keeps every attribute of a file with several names looks, on the copy, like that file
            # renamed when another of its names goes; and a name the command linked shows the file as the copy
            # had it before (docs/shell_exec.md).
            return None
        target = m.fresh(rng)
        m.files.add(target)
        m.made.add(target)
        return f"cp -a {_q(f)} {_q(target)}"

    def op_chmod() -> str | None:
        if rng.random() < 0.35 and m.dirs:
            d = any_dir()
            return f"chmod {rng.choice(['700', '750', '755', '775'])} {_q(d or '.')}"
        f = any_file()
        return None if f is None else f"chmod {rng.choice(['600', '640', '644', '664', '755', '700'])} {_q(f)}"

    def op_touch() -> str | None:
        pick = any_dir() if rng.random() < 0.35 else any_file()
        if pick is None:
            return None
        stamp = rng.choice([_EPOCH_2001, "1999-12-31 23:59:59", "2005-06-07 08:09:10.123456789"])
        return f"touch -d {_q(stamp)} {_q(pick)}"

    def op_xattr() -> str | None:
        pick = any_dir() if rng.random() < 0.2 else any_file()
        if pick is None:
            return None
        if rng.random() < 0.35:
            name = rng.choice(["user.gone", "user.keep", "user.k"])
            return f"python3 -c {_q(f'import os; os.removexattr({pick!r}, {name!r})')} 2>/dev/null; true"
        name = rng.choice(["user.k", "user.keep"])
        value = f"v{rng.randrange(100)}".encode()
        return f"python3 -c {_q(f'import os; os.setxattr({pick!r}, {name!r}, {value!r})')}"

    def op_replace() -> str | None:
        if rng.random() < 0.5:
            f = rng.choice(sorted(m.files)) if m.files else None
            if f is None:
                return None
            m.remove(f)
            m.dirs.add(f)
            inner = f"{f}/in.txt"
            m.files.add(inner)
            m.made.add(inner)
            return f"rm {_q(f)} && mkdir {_q(f)} && printf 'in\\n' > {_q(inner)}"
        d = any_dir()
        if d is None:
            return None
        m.remove(d)
        m.files.add(d)
        m.made.add(d)
        return f"rm -r {_q(d)} && printf 'was a dir\\n' > {_q(d)}"

    def op_git() -> str | None:
        pick = rng.random()
        m.made |= m.files  # git writes files anew (checkout, stash)
        tracked = sorted(f for f in m.files if f in {"a.txt", "b.txt", "e.txt", "x.txt", "d/f.txt", "d/g.txt"})
        if pick < 0.35 and tracked:
            f = rng.choice(tracked)
            target = m.fresh(rng)
            m.move(f, target)
            return f"git mv {_q(f)} {_q(target)}"
        if pick < 0.6:
            return "git add -A && git commit -qm step"
        if pick < 0.8:
            # The branch differs in b.txt, o.txt and c.txt; local changes there make git refuse (the same natively).
            m.files |= {"o.txt"}
            m.files.discard("c.txt")
            return "git checkout -q other"
        return "git status --porcelain >/dev/null && git stash -q 2>/dev/null; true"

    ops: list[tuple[float, Callable[[], str | None]]] = [
        (3, op_create), (2, op_write), (2, op_append), (1, op_truncate), (2, op_mkdir), (1, op_rmdir), (2, op_rm),
        (4, op_mv), (2, op_ln), (1, op_symlink), (1.5, op_cp), (2, op_chmod), (1.5, op_touch), (2, op_xattr),
        (1, op_replace), (1.5 if git else 0, op_git),
    ]  # fmt: skip
    weights = [w for w, _ in ops]
    in_place = {op_write, op_append, op_truncate}
    meta_ops = {op_chmod, op_touch, op_xattr}  # through any of its names: each reaches the one file
    count = rng.randint(5, 25)
    while len(lines) < count:
        _, op = rng.choices(ops, weights)[0]
        before = copy.deepcopy(m)
        line = op()
        if line is None:
            m = before
            continue
        used = before.uses_shared(line)
        if op is op_git:
            if before.shared_use not in ("", "git"):
                m = before  # git may write a name of the shared file back (checkout, stash)
                continue
            m.shared_use = "git"
        elif used:
            use = "names"
            if op in meta_ops:
                use = m.shared_use if m.shared_use.startswith("inplace:") else "meta"
                if len(used) > 1 or m.meta_through.setdefault(op.__name__, min(used)) != min(used):
                    m = before  # the same thing changed through two names: the copy cannot tell which came last
                    continue
            elif op in in_place and len(used) == 1:
                use = f"inplace:{min(used)}"
                if m.meta_through.setdefault("op_touch", min(used)) != min(used):
                    m = before  # a write sets the time too: as a touch through another name, which came last?
                    continue
            if m.shared_use and m.shared_use != use and not (m.shared_use == "meta" and use.startswith("inplace:")):
                m = before  # the copy cannot show what this would do natively (see _Model.shared)
                continue
            m.shared_use = use
        lines.append(line)
    return lines


NO_CAPABILITIES = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"] if os.getuid() == 0 else []


def run_native(root: Path, lines: list[str]) -> str:
    """Run a script natively in ``root`` (each line on its own: one that fails does not stop the rest)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root.parent), "LANG": "C.UTF-8", **GIT_ENV}
    # The box's command has no capability even where the server runs as root (docs/shell_exec.md): natively none
    # either, or a directory the script made unsearchable (``chmod 664 d``) would still be read natively.
    done = subprocess.run([*NO_CAPABILITIES, "bash", "-c", as_command(lines)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    return done.stdout + done.stderr


def as_command(lines: list[str]) -> str:
    """A script as one command line: each operation on its own line (a failing one does not stop the rest)."""
    return "\n".join([*lines, f"python3 {SNAPSHOT_NAME}"])


def reduce(lines: list[str], fails: Callable[[list[str]], bool], budget: int = 120) -> list[str]:
    """A smaller script that still ``fails`` (delta debugging: chunks, then single lines, dropped while the failure
    stays), within ``budget`` tries."""
    current = list(lines)
    chunk = max(1, len(current) // 2)
    tries = 0
    while chunk >= 1 and tries < budget:
        start, shrunk = 0, False
        while start < len(current) and tries < budget:
            candidate = current[:start] + current[start + chunk :]
            tries += 1
            if candidate and fails(candidate):
                current, shrunk = candidate, True
            else:
                start += chunk
        if not shrunk:
            chunk //= 2
    return current


if __name__ == "__main__":  # (``support.as_a_user.snapshot_unopened``: the tree as JSON, no package imported)
    import dataclasses
    import json
    import sys

    found = snapshot(Path(sys.argv[1]), skip_git=sys.argv[2] == "1")
    entries = {k: dataclasses.astuple(e) for k, e in found.entries.items()}
    links = [sorted(group) for group in found.links]
    print(json.dumps({"entries": entries, "links": links, "bookkeeping": found.bookkeeping}))
