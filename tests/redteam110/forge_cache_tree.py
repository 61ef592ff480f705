"""Run in a work tree's top: make a tree = HEAD's tree plus one file (name and bytes from argv / a data file), and
set the index's cache-tree (TREE extension) root to that tree. The index's entries stay what they were."""

import hashlib
import subprocess
import sys
from pathlib import Path

name, payload_file = sys.argv[1], sys.argv[2]


def git(*args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], input=data, capture_output=True, check=True).stdout


blob = git("hash-object", "-w", "--stdin", data=Path(payload_file).read_bytes()).strip().decode()
listing = git("ls-tree", "HEAD").decode()
listing += f"100644 blob {blob}\t{name}\n"
tree = git("mktree", data=listing.encode()).strip().decode()

data = bytearray(Path(".git/index").read_bytes())
body = data[:-20]
at = body.find(b"TREE")
assert at > 0, "no cache-tree in the index"
# TREE: 4-byte signature, 4-byte size, then entries: path NUL count SP subtrees LF oid(20)
start = at + 8
nul = body.index(b"\0", start)
assert nul == start, "root entry first"
lf = body.index(b"\n", nul)
count = int(body[nul + 1 : lf].split(b" ")[0])
assert count >= 0, "root invalid"
body[lf + 1 : lf + 21] = bytes.fromhex(tree)
out = bytes(body) + hashlib.sha1(bytes(body)).digest()
Path(".git/index").write_bytes(out)
print("forged root", tree)
