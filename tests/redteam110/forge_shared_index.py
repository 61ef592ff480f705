"""Run in a work tree's top whose index is split (``core.splitIndex``): rewrite, in place, the shared index the index
names (``.git/sharedindex.<id>``) so that it holds HEAD's tree plus one file (name and bytes from argv / a data
file). Its last 20 bytes, which git takes as its id (the name), stay; ``.git/index`` is not touched."""

import os
import subprocess
import sys
from pathlib import Path

name, payload_file = sys.argv[1], sys.argv[2]


def git(*args: str, data: bytes | None = None, env: dict[str, str] | None = None) -> bytes:
    return subprocess.run(
        ["git", *args], input=data, capture_output=True, check=True, env={**os.environ, **(env or {})}
    ).stdout


index = Path(".git/index").read_bytes()
at = index.find(b"link\x00\x00\x00")
assert at > 0, "the index is not split"
base = index[at + 8 : at + 28].hex()
shared = f".git/sharedindex.{base}"
old = Path(shared).read_bytes()

blob = git("hash-object", "-w", "--stdin", data=Path(payload_file).read_bytes()).strip().decode()
listing = git("ls-tree", "HEAD").decode() + f"100644 blob {blob}\t{name}\n"
tree = git("mktree", data=listing.encode()).strip().decode()
scratch = ".git/rt-scratch-index"
git("read-tree", tree, env={"GIT_INDEX_FILE": scratch, "GIT_TEST_SPLIT_INDEX": "0"})
new = Path(scratch).read_bytes()
os.unlink(scratch)
os.chmod(shared, 0o644)  # (git leaves it read-only)
with open(shared, "r+b") as f:  # in place: the same file, other entries, the old id at its end
    f.write(new[:-20] + old[-20:])
    f.truncate()
os.chmod(shared, 0o444)
print("rewrote", shared)
