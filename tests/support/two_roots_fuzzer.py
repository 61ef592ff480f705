"""Red team 71: a differential fuzzer of its own against shell_exec's copy (issue 40).

Vocabulary the suite's fuzzer lacks: two roots (A, the launch directory, and B given with --allow-path), moves of
files and directories across roots, hard links inside and across directories then renamed, directories renamed
into / over (empty) directories, ``cp -a`` / ``cp -al`` of trees, ACLs the project has (access and default,
naming our own uid) carried by renames, rewrites, chmods and removed, ``user.*`` and the project's own
``user.overlay.*`` attributes, chmod of directories to owner-denying modes restored later, ``touch -d`` deep after
renames, symlinks (relative, dangling, to directories, across roots) renamed, files truncated / extended, git in a
repository below the root.

Each seed's script runs natively on one copy (``<work>/nat/{A,B}/s<seed>``) and through one real server on the
other (``<work>/box/{A,B}/s<seed>``): trees compared (names, types, bytes, modes, link targets, hard-link groups
across both roots, mtimes set on purpose — every entry starts at an old time —, user.* xattrs, ACL xattrs), then
``mcp-guard undo`` and the undo of that undo compared exactly (every mtime).

Run: PYTHONPATH=tests uv run python tests/support/two_roots_fuzzer.py FIRST COUNT [--reduce] [--out failures.json]
Every line of a script is an ordinary file operation inside the per-seed directories.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import shlex
import stat
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OLD_NS = 1_000_000_000 * 10**9  # 2001-09-09: every entry of the setup starts at this time
OLD = 1_300_000_000 * 10**9
GIT_ENV = {
    "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x",
    "GIT_AUTHOR_DATE": "2001-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2001-01-01T00:00:00Z",
}  # fmt: skip
ANY = 0xFFFFFFFF


def acl(*entries: tuple[int, int, int]) -> bytes:
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, i) for t, p, i in entries)


UID = os.getuid()
FILE_ACL = acl((0x01, 6, ANY), (0x02, 4, UID), (0x04, 4, ANY), (0x10, 4, ANY), (0x20, 4, ANY))
DIR_DEFAULT = acl((0x01, 7, ANY), (0x02, 5, UID), (0x04, 5, ANY), (0x10, 5, ANY), (0x20, 5, ANY))
DIR_ACCESS = acl((0x01, 7, ANY), (0x02, 5, UID), (0x04, 5, ANY), (0x10, 5, ANY), (0x20, 5, ANY))

# helpers the scripts call, kept in each copy's B root (.t is left out of the comparison)
HELPER = r"""
import os, sys
op = sys.argv[1]
if op == "setx":
    os.setxattr(sys.argv[2], sys.argv[3], sys.argv[4].encode(), follow_symlinks=False)
elif op == "rmx":
    try:
        os.removexattr(sys.argv[2], sys.argv[3], follow_symlinks=False)
    except OSError:
        pass
elif op == "rmacl":
    for n in ("system.posix_acl_access", "system.posix_acl_default"):
        try:
            os.removexattr(sys.argv[2], n)
        except OSError:
            pass
elif op == "exchange":
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    AT = -100
    r = libc.renameat2(AT, sys.argv[2].encode(), AT, sys.argv[3].encode(), 2)
    if r != 0:
        print("exchange failed", ctypes.get_errno(), file=sys.stderr)
"""


def setup_a(root: Path) -> None:
    (root / "d" / "sub" / "deep").mkdir(parents=True)
    (root / "e").mkdir()
    (root / "e2").mkdir()
    for rel, text in [
        ("a.txt", "a\n"),
        ("b.txt", "b\n" * 30),
        ("d/f.txt", "f\n"),
        ("d/sub/h.txt", "h\n"),
        ("d/sub/deep/k.txt", "k\n"),
        ("x.txt", "x\n"),
        ("acl.txt", "acl\n"),
        ("ov.txt", "ov\n"),
    ]:
        (root / rel).write_text(text)
    os.link(root / "a.txt", root / "d" / "ha.txt")  # a two-name file across directories
    os.symlink("a.txt", root / "ln")
    os.symlink("d/sub", root / "dl")
    os.symlink("nowhere", root / "dang")
    os.setxattr(root / "x.txt", "user.k", b"kx")
    os.setxattr(root / "d", "user.dk", b"dd")
    os.setxattr(root / "ov.txt", "user.overlay.mine", b"data")
    os.setxattr(root / "acl.txt", "system.posix_acl_access", FILE_ACL)
    (root / "dacl").mkdir()
    os.setxattr(root / "dacl", "system.posix_acl_default", DIR_DEFAULT)
    os.setxattr(root / "dacl", "system.posix_acl_access", DIR_ACCESS)
    (root / "dacl" / "in.txt").write_text("in\n")  # inherits the default
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    repo = root / "repo"
    repo.mkdir()
    (repo / "r1.txt").write_text("r1\n")
    (repo / "rd").mkdir()
    (repo / "rd" / "r2.txt").write_text("r2\n")
    env = {**os.environ, **GIT_ENV, "HOME": str(root)}
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["commit", "-qm", "one"],
        ["checkout", "-q", "-b", "side"],
    ):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, timeout=60)
    (repo / "r1.txt").write_text("r1 on side\n")
    (repo / "s.txt").write_text("s\n")
    for args in (["add", "-A"], ["commit", "-qm", "two"], ["checkout", "-q", "main"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, timeout=60)


def setup_b(root: Path) -> None:
    (root / "bd" / "bsub").mkdir(parents=True)
    (root / "b1.txt").write_text("b1\n")
    (root / "bd" / "b2.txt").write_text("b2\n")
    (root / "bd" / "bsub" / "b3.txt").write_text("b3\n")
    os.link(root / "b1.txt", root / "bd" / "bh.txt")
    os.symlink("bd", root / "bdl")
    os.setxattr(root / "bd" / "b2.txt", "user.b", b"vb")
    (root / ".t").mkdir()
    (root / ".t" / "h.py").write_text(HELPER)


def old_times(root: Path) -> None:
    for d, dirs, files in os.walk(root, topdown=False):
        for n in files + dirs:
            p = os.path.join(d, n)
            os.utime(p, ns=(OLD_NS, OLD_NS), follow_symlinks=False)
        os.utime(d, ns=(OLD_NS, OLD_NS))


# ---------------------------------------------------------------- the snapshot (both roots as one tree)


@dataclass(frozen=True)
class Entry:
    kind: str
    body: str
    mode: int
    mtime_ns: int
    xattrs: tuple[tuple[str, str], ...]


@dataclass
class Tree:
    entries: dict[str, Entry] = field(default_factory=dict)
    links: set[frozenset[str]] = field(default_factory=set)
    bookkeeping: list[str] = field(default_factory=list)


KEEP_X = ("user.", "system.posix_acl_")
BOOK = ("trusted.overlay.", "user.overlay.origin", "user.overlay.opaque", "user.overlay.impure",
        "user.overlay.redirect", "user.overlay.whiteout", "user.overlay.metacopy", "user.overlay.nlink",
        "user.overlay.upper", "user.overlay.uuid")  # fmt: skip


def snapshot(tops: dict[str, Path], skip: tuple[str, ...] = (".t",)) -> Tree:
    tree = Tree()
    inodes: dict[tuple[int, int], list[str]] = {}
    for label, top in tops.items():
        for dirpath, dirnames, found_files, dirfd in os.fwalk(str(top)):
            filenames = found_files
            if dirpath == str(top):
                dirnames[:] = [x for x in dirnames if x not in skip]
                filenames = [x for x in found_files if x not in skip]
                names = ["."]
            else:
                names = []
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, str(top))
            for name in names + sorted(dirnames + filenames):
                if name == ".":
                    st = os.stat(dirfd)
                    rel = f"{label}"
                    path = dirpath
                else:
                    st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
                    rel = f"{label}/{os.path.normpath(os.path.join(rel_dir, name))}"
                    path = os.path.join(dirpath, name)
                if stat.S_ISLNK(st.st_mode):
                    kind, body = "link", os.readlink(path)
                elif stat.S_ISREG(st.st_mode):
                    try:
                        body = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                    except PermissionError:
                        body = "unreadable"
                    kind = "file"
                    inodes.setdefault((st.st_dev, st.st_ino), []).append(rel)
                elif stat.S_ISDIR(st.st_mode):
                    kind, body = "dir", ""
                else:
                    kind, body = "other", oct(stat.S_IFMT(st.st_mode))
                xs: dict[str, str] = {}
                if kind != "link":
                    try:
                        names_x = os.listxattr(path, follow_symlinks=False)
                    except OSError:
                        names_x = []
                    for n in sorted(names_x):
                        if n.startswith(BOOK):
                            tree.bookkeeping.append(f"{rel}: {n}")
                        if n.startswith(KEEP_X):
                            try:
                                xs[n] = os.getxattr(path, n, follow_symlinks=False).hex()
                            except OSError as exc:
                                xs[n] = f"err{exc.errno}"
                mode = 0 if kind == "link" else stat.S_IMODE(st.st_mode)
                tree.entries[rel] = Entry(kind, body, mode, st.st_mtime_ns, tuple(sorted(xs.items())))
    tree.links = {frozenset(v) for v in inodes.values() if len(v) > 1}
    return tree


def differences(
    native: Tree, boxed: Tree, *, all_mtimes: bool = False, skip: frozenset[str] = frozenset()
) -> list[str]:
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
            what.append(f"target {a.body} != {b.body}" if a.kind == "link" else "bytes")
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
    if native.links != boxed.links:
        found.append(f"hard links {sorted(map(sorted, native.links))} != {sorted(map(sorted, boxed.links))}")
    nb = set(native.bookkeeping)
    found += [f"overlayfs bookkeeping: {b}" for b in boxed.bookkeeping if b not in nb]
    return found


# ---------------------------------------------------------------- the generator


@dataclass
class Model:
    files: set[str] = field(default_factory=set)
    dirs: set[str] = field(default_factory=set)
    links: set[str] = field(default_factory=set)
    n: int = 0
    denied: dict[str, str] = field(default_factory=dict)  # a directory chmod'ed to deny, and its mode to restore
    multi: set[str] = field(default_factory=set)  # names of files with several names (pre-existing or made)
    acly: set[str] = field(default_factory=set)  # entries with an ACL (a move across roots drops it: said, finding 1)
    made_dirs: set[str] = field(default_factory=set)
    multi_used: bool = False  # a multi-name file has been used in a way the doc restricts

    def fresh(self, rng: random.Random, where: str | None = None) -> str:
        self.n += 1
        if where is None:
            where = rng.choice(["", "$B/", *[d + "/" for d in sorted(self.dirs)]])
        elif where and not where.endswith("/"):
            where += "/"
        return f"{where}n{self.n}{rng.choice(['.txt', '', '.md'])}"

    def move(self, old: str, new: str) -> None:
        for group in (self.files, self.dirs, self.links, self.multi, self.acly, self.made_dirs):
            for p in [p for p in group if p == old or p.startswith(old + "/")]:
                group.discard(p)
                group.add(new + p[len(old) :])
        for p in [p for p in self.denied if p == old or p.startswith(old + "/")]:
            self.denied[new + p[len(old) :]] = self.denied.pop(p)

    def remove(self, path: str) -> None:
        for group in (self.files, self.dirs, self.links, self.multi, self.acly, self.made_dirs):
            for p in [p for p in group if p == path or p.startswith(path + "/")]:
                group.discard(p)
        for p in [p for p in self.denied if p == path or p.startswith(path + "/")]:
            self.denied.pop(p)

    def under(self, d: str) -> list[str]:
        return [p for g in (self.files, self.dirs, self.links) for p in g if p.startswith(d + "/")]

    def root_of(self, p: str) -> str:
        return "B" if p.startswith("$B") else "A"


def q(p: str) -> str:
    if p.startswith("$B"):
        return '"$B"' + shlex.quote(p[2:]) if p[2:] else '"$B"'
    return shlex.quote(p)


def script_for(
    seed: int,
    *,
    git: bool = True,
    deny: bool = True,
    acl_ops: bool = True,
    cross_acl: bool = False,
    exchange: bool = True,
) -> list[str]:
    rng = random.Random(seed * 7919 + 71)
    m = Model(
        files={"a.txt", "b.txt", "d/f.txt", "d/sub/h.txt", "d/sub/deep/k.txt", "x.txt", "acl.txt", "ov.txt",
               "dacl/in.txt", "run.sh", "d/ha.txt", "$B/b1.txt", "$B/bd/b2.txt", "$B/bd/bsub/b3.txt", "$B/bd/bh.txt"},
        dirs={"d", "d/sub", "d/sub/deep", "e", "e2", "dacl", "$B/bd", "$B/bd/bsub"},
        links={"ln", "dl", "dang", "$B/bdl"},
        multi={"a.txt", "d/ha.txt", "$B/b1.txt", "$B/bd/bh.txt"},
        acly=set() if cross_acl else {"acl.txt", "dacl", "dacl/in.txt"},
    )  # fmt: skip
    lines: list[str] = []

    def pick(group: set[str], root: str | None = None) -> str | None:
        c = sorted(p for p in group if root is None or m.root_of(p) == root)
        c = [p for p in c if not any(p.startswith(d + "/") for d in m.denied)]
        return rng.choice(c) if c else None

    def cross_multi(p: str) -> bool:
        return p in m.multi | m.acly or any(x.startswith(p + "/") for x in m.multi | m.acly)

    def single_files() -> set[str]:
        return m.files - m.multi

    def op_create() -> str | None:
        p = m.fresh(rng)
        if any(p.startswith(d + "/") for d in m.denied):
            return None
        m.files.add(p)
        return f"printf 'new {m.n}\\n' > {q(p)}"

    def op_write() -> str | None:
        f = pick(single_files())
        if f is None:
            return None
        return rng.choice(
            [
                f"printf 'w{m.n}\\n' > {q(f)}",
                f"printf 'more\\n' >> {q(f)}",
                f"truncate -s {rng.choice([0, 1, 2, 5000])} {q(f)}",
                f"truncate -s +{rng.choice([3, 70000])} {q(f)}",
            ]
        )

    def op_mkdir() -> str | None:
        p = m.fresh(rng)
        if any(p.startswith(d + "/") for d in m.denied):
            return None
        m.dirs.add(p)
        m.made_dirs.add(p)
        if rng.random() < 0.4:
            inner = f"{p}/i{m.n}/j{m.n}"
            m.dirs |= {f"{p}/i{m.n}", inner}
            m.made_dirs |= {f"{p}/i{m.n}", inner}
            return f"mkdir -p {q(inner)}"
        return f"mkdir {q(p)}"

    def op_mv_file() -> str | None:
        f = pick(single_files() | m.links)
        if f is None:
            return None
        r = rng.random()
        if r < 0.3 and not cross_multi(f):  # across roots
            other = "A" if m.root_of(f) == "B" else "B"
            where = rng.choice([d for d in ["", *sorted(m.dirs)] if (other == "B") == d.startswith("$B")] or [""])
            if other == "B" and where == "":
                where = "$B"
            if where and any(where == d or where.startswith(d + "/") for d in m.denied):
                return None
            fresh = m.fresh(rng, where)
            m.move(f, fresh)
            return f"mv {q(f)} {q(fresh)}"
        if r < 0.5:  # over an existing file
            t = pick(single_files() - {f})
            if t is None or (m.root_of(t) != m.root_of(f) and cross_multi(f)):
                return None
            m.remove(t)
            m.move(f, t)
            return f"mv -f {q(f)} {q(t)}"
        t = m.fresh(rng)
        if any(t.startswith(d + "/") for d in m.denied) or (m.root_of(t) != m.root_of(f) and cross_multi(f)):
            return None
        m.move(f, t)
        return f"mv {q(f)} {q(t)}"

    def op_mv_dir() -> str | None:
        d = pick(m.dirs)
        if d is None:
            return None
        r = rng.random()
        targets = sorted(x for x in m.dirs if not (x == d or x.startswith(d + "/")) and x not in m.denied)
        if r < 0.35 and targets:  # into another directory
            into = rng.choice(targets)
            if any(into.startswith(x + "/") for x in m.denied):
                return None
            t = f"{into}/{d.rsplit('/', 1)[-1]}"
            if t in m.files | m.dirs | m.links or (m.root_of(t) != m.root_of(d) and cross_multi(d)):
                return None
            m.move(d, t)
            return f"mv {q(d)} {q(into)}/"
        if r < 0.55:  # over an empty directory
            empties = [
                x
                for x in targets
                if not m.under(x)
                and not d.startswith(x + "/")
                and not (m.root_of(x) != m.root_of(d) and cross_multi(d))
            ]
            if not empties:
                return None
            t = rng.choice(empties)
            m.remove(t)
            m.move(d, t)
            return f"mv -T {q(d)} {q(t)}"
        if r < 0.75 and not cross_multi(d):  # across roots (documented: names of one file in two roots are two)
            where = "$B" if m.root_of(d) == "A" else ""
            t = m.fresh(rng, where)
            m.move(d, t)
            return f"mv {q(d)} {q(t)}"
        t = m.fresh(rng, None)
        if (
            t.startswith(d + "/")
            or any(t.startswith(x + "/") for x in m.denied)
            or (m.root_of(t) != m.root_of(d) and cross_multi(d))
        ):
            return None
        m.move(d, t)
        return f"mv {q(d)} {q(t)}"

    def op_ln() -> str | None:
        f = pick(single_files())
        if f is None or m.multi_used:
            return None
        where = rng.choice([d for d in ["", *sorted(m.dirs)] if d.startswith("$B") == (m.root_of(f) == "B")] or [""])
        if m.root_of(f) == "B" and where == "":
            where = "$B"
        if any(where == x or where.startswith(x + "/") for x in m.denied):
            return None
        t = m.fresh(rng, where)
        m.files.add(t)
        m.multi |= {f, t}
        m.multi_used = True
        then = ""
        if rng.random() < 0.5:  # then renamed
            t2 = m.fresh(rng, where)
            m.move(t, t2)
            then = f" && mv {q(t)} {q(t2)}"
        return f"ln {q(f)} {q(t)}{then}"

    def op_symlink() -> str | None:
        t = m.fresh(rng)
        if any(t.startswith(x + "/") for x in m.denied):
            return None
        kind = rng.random()
        tdir = os.path.dirname(t.replace("$B", "../B")) if not t.startswith("$B") else None
        if t.startswith("$B"):
            target = rng.choice(["nowhere", "bd", "b1.txt", "../A/x"])
        else:
            base = os.path.dirname(t) or "."
            dest = pick(m.files | m.dirs, "A") or "a.txt"
            target = os.path.relpath(dest, base) if kind < 0.7 else rng.choice(["missing", "../gone/x"])
        del tdir
        m.links.add(t)
        return f"ln -s {shlex.quote(target)} {q(t)}"

    def op_cp() -> str | None:
        d = pick(m.dirs)
        if d is None or any(d.startswith(x + "/") or d == x for x in m.denied):
            return None
        if any(p.startswith(d + "/") for p in m.multi):
            return None  # documented: cp -a of names of one file copies them apart
        flag = rng.choice(["-a", "-al", "-a"])
        if flag == "-al" and m.multi_used:
            return None
        where = "$B" if m.root_of(d) == "B" else ""
        t = m.fresh(rng, where)
        new = {t + p[len(d) :] for p in m.files if p.startswith(d + "/")}
        if any(p.startswith(x + "/") for p in m.denied for x in [d]):
            return None
        m.files |= new
        m.dirs |= {t} | {t + p[len(d) :] for p in m.dirs if p.startswith(d + "/")}
        m.links |= {t + p[len(d) :] for p in m.links if p.startswith(d + "/")}
        if flag == "-al":
            m.multi |= new | {p for p in m.files if p.startswith(d + "/")}
            m.multi_used = True
        return f"cp {flag} {q(d)} {q(t)}"

    def op_chmod_dir() -> str | None:
        if not deny:
            return None
        if m.denied and rng.random() < 0.6:
            back = rng.choice(sorted(m.denied))
            mode = m.denied.pop(back)
            return f"chmod {mode} {q(back)}"
        d = pick(m.dirs)
        if d is None:
            return None
        mode = rng.choice(["0300", "0500", "0000", "0700", "0555", "0711"])
        if mode in ("0700", "0711"):
            return f"chmod {mode} {q(d)}"
        m.denied[d] = "0755"
        return f"chmod {mode} {q(d)}"

    def op_chmod_file() -> str | None:
        f = pick(single_files())
        return (
            None
            if f is None
            else f"chmod {rng.choice(['600', '640', '644', '664', '755', '700', '444', '000'])} {q(f)}"
        )

    def op_touch() -> str | None:
        p = pick(m.dirs | m.files) if rng.random() < 0.8 else pick(m.links)
        if p is None:
            return None
        stamp = rng.choice(["2001-02-03 04:05:06", "1999-12-31 23:59:59", "2005-06-07 08:09:10.123456789", "@0"])
        h = " -h" if p in m.links else ""
        return f"touch{h} -d {shlex.quote(stamp)} {q(p)}"

    def op_xattr() -> str | None:
        p = pick(m.dirs | single_files())
        if p is None:
            return None
        r = rng.random()
        if r < 0.3:
            return f'python3 "$B"/.t/h.py rmx {q(p)} {rng.choice(["user.k", "user.dk", "user.b", "user.overlay.mine"])}'
        if r < 0.4 and acl_ops:
            return f'python3 "$B"/.t/h.py rmacl {q(p)}'
        return f'python3 "$B"/.t/h.py setx {q(p)} {rng.choice(["user.k", "user.new", "user.dk"])} v{rng.randrange(99)}'

    def op_rm() -> str | None:
        if rng.random() < 0.3:
            d = pick(m.dirs)
            if (
                d is None
                or any(d.startswith(x + "/") or d == x for x in m.denied)
                or any(x.startswith(d + "/") for x in m.denied)
            ):
                return None
            m.remove(d)
            return f"rm -rf {q(d)}"
        f = pick(m.files | m.links)
        if f is None:
            return None
        m.remove(f)
        return f"rm -f {q(f)}"

    def op_replace() -> str | None:
        f = pick(single_files())
        if f is None:
            return None
        m.remove(f)
        m.dirs.add(f)
        m.files.add(f + "/in")
        return f"rm {q(f)} && mkdir {q(f)} && echo in > {q(f + '/in')}"

    def op_git() -> str | None:
        if not git or "repo" not in m.dirs or any(x == "repo" or "repo".startswith(x + "/") for x in m.denied):
            return None
        r = rng.random()
        if r < 0.2:
            return "git -C repo add -A && git -C repo commit -qm step"
        if r < 0.35:
            return "git -C repo checkout -q -b b$RANDOM 2>/dev/null; git -C repo checkout -q side 2>/dev/null; true"
        if r < 0.5:
            if "repo/r1.txt" not in m.files:
                return None
            m.move("repo/r1.txt", "repo/moved.txt")
            return "git -C repo mv r1.txt moved.txt"
        if r < 0.6:
            return "echo dirty >> repo/rd/r2.txt; git -C repo stash -q; true"
        if r < 0.7:
            m.remove("repo/rd/r2.txt")
            return "git -C repo rm -q rd/r2.txt"
        if r < 0.8:
            return "git -C repo stash pop -q 2>/dev/null; true"
        m.files.add("repo/new.txt")
        return "echo n > repo/new.txt && git -C repo add new.txt && git -C repo commit -qm add"

    def op_exchange() -> str | None:
        if not exchange:
            return None
        f = pick(single_files() | m.dirs | m.links)
        if f is None:
            return None
        g = pick((single_files() | m.dirs | m.links) - {f}, m.root_of(f))
        if g is None or g.startswith(f + "/") or f.startswith(g + "/"):
            return None
        if (f in m.dirs or g in m.dirs) and not (f in m.made_dirs and g in m.made_dirs | m.files | m.links):
            return None  # documented: RENAME_EXCHANGE with a directory of the project fails with EXDEV
        tmp = "\0"
        m.move(f, tmp)
        m.move(g, f)
        m.move(tmp, g)
        return f'python3 "$B"/.t/h.py exchange {q(f)} {q(g)}'

    ops = [(1, op_exchange), (3, op_create), (3, op_write), (2, op_mkdir), (4, op_mv_file), (3, op_mv_dir),
           (1.5, op_ln), (1.5, op_symlink), (1.5, op_cp), (2, op_chmod_dir), (1.5, op_chmod_file), (2.5, op_touch),
           (2, op_xattr), (1.5, op_rm), (1, op_replace), (1.5, op_git)]  # fmt: skip
    weights = [w for w, _ in ops]
    count = rng.randint(4, 18)
    tries = 0
    while len(lines) < count and tries < 500:
        tries += 1
        _, op = rng.choices(ops, weights)[0]
        before = copy.deepcopy(m)
        line = op()
        if line is None:
            m = before
            continue
        lines.append(line)
    for d, mode in sorted(m.denied.items(), key=lambda kv: -len(kv[0])):  # restored before the end, deepest first
        lines.append(f"chmod {mode} {q(d)}")
    return lines


# ---------------------------------------------------------------- running


def preamble(b: Path) -> str:
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in GIT_ENV.items())
    return f"export {exports}\nexport TZ=UTC\numask 022\nB={shlex.quote(str(b))}\n"


NOCAPS = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"] if os.getuid() == 0 else []


def run_native(a: Path, b: Path, lines: list[str], home: Path) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}
    # the box's command has no capability even when the server is root (docs/shell_exec.md): natively none either
    done = subprocess.run([*NOCAPS, "bash", "-c", preamble(b) + "\n".join(lines)], cwd=a, env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    return f"rc={done.returncode} {done.stdout}{done.stderr}"


class Lab:
    def __init__(self, work: Path, client: Any) -> None:
        self.work, self.client, self.count = work, client, 0
        self.base = work / "base"
        if not self.base.exists():
            (self.base / "A").mkdir(parents=True)
            (self.base / "B").mkdir(parents=True)
            setup_a(self.base / "A")
            setup_b(self.base / "B")
            old_times(self.base)

    def prepare(self, n: int) -> None:
        """Copies made before the server starts (the server finds a project's own user.overlay.* attributes by a
        walk from its start: ones a program makes while it runs are seen after its next start, as documented)."""
        self.pool = [self._make() for _ in range(n)]

    def fresh(self) -> tuple[Path, Path, Path, Path]:
        if getattr(self, "pool", None):
            return self.pool.pop(0)
        return self._make()

    def _make(self) -> tuple[Path, Path, Path, Path]:
        self.count += 1
        out = []
        for side in ("nat", "box"):
            for r in ("A", "B"):
                t = self.work / side / r / f"s{self.count}"
                subprocess.run(["cp", "-a", str(self.base / r), str(t)], check=True, timeout=60)
                out.append(t)
        return out[0], out[1], out[2], out[3]

    async def problems(self, lines: list[str], *, undo_too: bool = True) -> tuple[list[str], dict[str, Any]]:
        from support.boxed import undo

        na, nb, ba, bb = self.fresh()
        tops_n, tops_b = {"A": na, "B": nb}, {"A": ba, "B": bb}
        before = snapshot(tops_b)
        nat_out = await anyio.to_thread.run_sync(run_native, na, nb, lines, self.work / "home")
        with anyio.fail_after(150):
            result = await self.client.call_tool("shell_exec", {
                "command": preamble(bb) + "\n".join(lines), "cwd": str(ba), "timeoutSeconds": 90,
                "maxOutputBytes": 1 << 20})  # fmt: skip
        out = dict(result.structured_content or {})
        if result.is_error:
            return [f"tool error: {result}"], out
        after = snapshot(tops_b)
        found = differences(snapshot(tops_n), after)
        if out.get("transaction") not in ("applied", "unchanged"):
            found.append(f"transaction {out.get('transaction')}: {out.get('changes')}")
        if (out.get("changes") or {}).get("conflicts"):
            found.append(f"conflicts: {out['changes']['conflicts']}")
        if found:
            found.append(f"native: {nat_out[-600:]!r}; boxed rc={out.get('exitCode')} stdout "
                         f"{str(out.get('stdout'))[-400:]!r} stderr {str(out.get('stderr'))[-600:]!r}")  # fmt: skip
        elif undo_too and out.get("transaction") == "applied":
            undo_id, why = await anyio.to_thread.run_sync(undo, str(out["auditId"]))
            if not undo_id:
                found.append(f"undo failed: {why[-800:]}")
            else:
                found += [f"after undo: {d}" for d in differences(before, snapshot(tops_b), all_mtimes=True)]
                redo_id, why = await anyio.to_thread.run_sync(undo, undo_id)
                if not redo_id:
                    found.append(f"redo failed: {why[-800:]}")
                else:
                    found += [f"after redo: {d}" for d in differences(after, snapshot(tops_b), all_mtimes=True)]
        return found, out


def reduce(lines: list[str], fails: Any, budget: int = 60) -> list[str]:
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


async def main_async(work: Path, seeds: list[int], do_reduce: bool, out_path: Path | None, kw: dict[str, bool]) -> None:
    from support import serve
    from support.boxed import Person

    for side in ("nat", "box"):
        for r in ("A", "B"):
            (work / side / r).mkdir(parents=True, exist_ok=True)
    (work / "home").mkdir(exist_ok=True)
    failures: list[dict[str, Any]] = []
    t0 = time.monotonic()
    named = json.loads(Path(os.environ["RT71_SCRIPTS"]).read_text()) if os.environ.get("RT71_SCRIPTS") else None
    lab = Lab(work, None)
    lab.prepare(len(named) if named else len(seeds))
    async with serve("mcp-server-shell-exec", work / "box" / "A", "--allow-path", str(work / "box" / "B"),
                     audit=work / "audit.jsonl", elicitation_callback=Person()) as client:  # fmt: skip
        lab.client = client
        for seed in list(named) if named else seeds:
            lines = named[seed] if named else script_for(seed, **kw)
            found, _ = await lab.problems(lines)
            if found:
                print(f"seed {seed}: {len(found)} problems: {found[0][:200]}", flush=True)
                failures.append({"seed": seed, "lines": lines, "problems": found, "changes": _.get("changes")})
        print(f"{len(failures)} of {len(seeds)} seeds differ ({time.monotonic() - t0:.0f}s)", flush=True)
        if do_reduce:
            for f in failures[:8]:

                def fails(candidate: list[str]) -> bool:
                    return bool(anyio.from_thread.run(lab.problems, candidate)[0])

                lines = list(f["lines"])
                shrunk = await anyio.to_thread.run_sync(lambda: reduce(lines, fails))  # noqa: B023 (awaited here)
                f["minimal"] = shrunk
                f["minimal_problems"] = (await lab.problems(shrunk))[0]
                print(f"seed {f['seed']} minimal:\n  " + "\n  ".join(shrunk) + "\n    " +
                      "\n    ".join(p[:400] for p in f["minimal_problems"]), flush=True)  # fmt: skip
    if out_path:
        out_path.write_text(json.dumps(failures, indent=1))


def main() -> None:
    args = sys.argv[1:]
    first, count = int(args[0]), int(args[1])
    do_reduce = "--reduce" in args
    out_path = Path(args[args.index("--out") + 1]) if "--out" in args else None
    kw = {
        "git": "--no-git" not in args,
        "deny": "--no-deny" not in args,
        "acl_ops": "--no-acl" not in args,
        "cross_acl": "--cross-acl" in args,
        "exchange": "--no-exchange" not in args,
    }
    seeds = list(range(first, first + count))
    if "--seeds" in args:
        seeds = [int(x) for x in args[args.index("--seeds") + 1].split(",")]
    work = Path(tempfile.mkdtemp(prefix="rt71-fuzz-"))
    home = work / "srvhome"
    (home / ".local" / "state").mkdir(parents=True)
    os.environ.update(HOME=str(home), XDG_STATE_HOME=str(home / ".local" / "state"))
    print(f"work {work}", flush=True)
    anyio.run(main_async, work, seeds, do_reduce, out_path, kw)


if __name__ == "__main__":
    main()
