"""Run in a work tree's top. The index's entries and every tree id in its cache tree (TREE extension) stay as git
wrote them; only two counts change: the top's entry is made invalid (count -1, as git leaves it after any
``git add`` of a top-level file) and the sub-tree named by argv[1] is said to cover one index entry more than it
does. Git trusts a valid sub-tree's count to step over the index entries it stands for, so the next entry after
that directory (the user's ``b.txt``) is left out of every tree git writes from the index: commit and stash."""

import hashlib
import sys
from pathlib import Path

sub = sys.argv[1].encode()
data = bytearray(Path(".git/index").read_bytes())
body = data[:-20]
at = body.find(b"TREE")
assert at > 0, "no cache-tree in the index"
size = int.from_bytes(body[at + 4 : at + 8], "big")
start, end = at + 8, at + 8 + size
ext = bytes(body[start:end])

out = bytearray()
pos = 0
first = True
while pos < len(ext):
    nul = ext.index(b"\0", pos)
    lf = ext.index(b"\n", nul)
    name = ext[pos:nul]
    count, subtrees = (int(w) for w in ext[nul + 1 : lf].split(b" "))
    pos = lf + 1
    oid = b""
    if count >= 0:
        oid = ext[pos : pos + 20]
        pos += 20
    if first:
        out += name + b"\0" + b"-1 " + str(subtrees).encode() + b"\n"  # the top: invalid, no id
        first = False
        continue
    if name == sub and count >= 0:
        count += 1
    out += name + b"\0" + f"{count} {subtrees}".encode() + b"\n" + oid

new_body = body[:at] + b"TREE" + len(out).to_bytes(4, "big") + out + body[end:]
Path(".git/index").write_bytes(bytes(new_body) + hashlib.sha1(bytes(new_body)).digest())
print("forged counts")
