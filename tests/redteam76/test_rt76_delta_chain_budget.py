"""Red team 76 (issue 42, a46186f): ``changes/git_objects.py`` bounds what it reads by a budget of inflated bytes
(64 MiB), a 32 MiB object cap and a 64-deep delta chain — but the budget is charged only with each *final* object's
size (``Objects.get``), never with the bases a delta chain inflates and patches on the way (``Objects._at``), and
those bases are not cached. A command writes one small pack (tens of KiB): a 30 MiB blob of zeros, 62 deltas each
copying it whole, and N small trees each a delta on the last one; a loose root tree naming the N trees; a loose
commit of it; a branch. Reading each small tree inflates and copies ~63 x 30 MiB; N of them cost N times that, the
budget untouched. The judgement of one call takes minutes (the server holds the call — and its tree lock — meanwhile).

Passes when judging the call takes a bounded time (here: under 20 s for N = 40; today ~1.1-1.4 s per small tree,
so N = 40 takes ~45-56 s, and a 3 MiB root tree of 100,000 such trees, days)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from support.boxed import Person, program, run, shell
from support.hooked import git

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is missing")]

PLANT = """
import hashlib, struct, subprocess, zlib
def g(*a):
    return subprocess.run(['git', *a], capture_output=True, text=True, check=True).stdout.strip()

def oid(kind, body):
    return hashlib.sha1(kind + b' ' + str(len(body)).encode() + b'\\0' + body).digest()

def loose(kind, body):
    name = oid(kind, body).hex()
    os.makedirs('.git/objects/' + name[:2], exist_ok=True)
    with open('.git/objects/' + name[:2] + '/' + name[2:], 'wb') as f:
        f.write(zlib.compress(kind + b' ' + str(len(body)).encode() + b'\\0' + body))
    return name

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)

def header(kind, size):
    b = (kind << 4) | (size & 0x0F)
    size >>= 4
    out = bytearray()
    while size:
        out.append(b | 0x80)
        b = size & 0x7F
        size >>= 7
    out.append(b)
    return bytes(out)

def ofs(back):
    out = [back & 0x7F]
    back >>= 7
    while back:
        back -= 1
        out.append(0x80 | (back & 0x7F))
        back >>= 7
    return bytes(reversed(out))

def copy(offset, length):
    op, args = 0x80, bytearray()
    for i in range(4):
        if offset >> (8 * i) & 0xFF:
            op |= 1 << i
            args.append(offset >> (8 * i) & 0xFF)
    for i in range(3):
        if length >> (8 * i) & 0xFF:
            op |= 1 << (4 + i)
            args.append(length >> (8 * i) & 0xFF)
    return bytes([op]) + bytes(args)

SIZE = 30 << 20
pack = bytearray(b'PACK' + struct.pack('>II', 2, 0))
base_at = len(pack)
pack += header(2, SIZE) + zlib.compress(bytes(SIZE), 9)
prev = base_at
whole = varint(SIZE) + varint(SIZE) + copy(0, 0xFFFFFF) + copy(0xFFFFFF, SIZE - 0xFFFFFF)
for _ in range(62):
    at = len(pack)
    pack += header(6, len(whole)) + ofs(at - prev) + zlib.compress(whole)
    prev = at
index = []
subs = []
for i in range(N):
    body = b'100644 f' + str(i).encode() + b'\\0' + bytes(20)
    delta = varint(SIZE) + varint(len(body)) + bytes([len(body)]) + body
    at = len(pack)
    pack += header(6, len(delta)) + ofs(at - prev) + zlib.compress(delta)
    sid = oid(b'tree', body)
    index.append((sid, at))
    subs.append(sid)
count = 62 + 1 + N
pack[8:12] = struct.pack('>I', count)
pack += hashlib.sha1(pack).digest()
index.sort()
idx = bytearray(b'\\xfftOc' + struct.pack('>I', 2))
for first in range(256):
    idx += struct.pack('>I', sum(1 for o, _ in index if o[0] <= first))
for o, _ in index:
    idx += o
for _ in index:
    idx += struct.pack('>I', 0)
for _, at in index:
    idx += struct.pack('>I', at)
idx += pack[-20:]
idx += hashlib.sha1(idx).digest()
os.makedirs('.git/objects/pack', exist_ok=True)
name = 'pack-' + pack[-20:].hex()
with open('.git/objects/pack/' + name + '.pack', 'wb') as f:
    f.write(pack)
with open('.git/objects/pack/' + name + '.idx', 'wb') as f:
    f.write(idx)
root = b''.join(b'40000 d' + str(i).encode() + b'\\0' + sid for i, sid in enumerate(subs))
tree = loose(b'tree', root)
head = g('rev-parse', 'HEAD')
who = 'a <a@x> 0 +0000\\n'
commit = loose(b'commit', ('tree ' + tree + '\\nparent ' + head + '\\nauthor ' + who + 'committer ' + who
                           + '\\nbig\\n').encode())
with open('.git/refs/heads/big', 'w') as f:
    f.write(commit + '\\n')
print('planted', len(pack), 'bytes of pack')
"""

N = 40


def repository(workspace: Path) -> None:
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--no-verify", "-m", "init")


async def test_attack_delta_chains_are_read_outside_the_budget(workspace: Path) -> None:
    repository(workspace)
    plant = program(workspace, "plant", f"N = {N}\n" + PLANT)
    person = Person(answer=False)
    async with shell(workspace, person) as client:
        started = time.monotonic()
        out = await run(client, plant, timeout=900)
        took = time.monotonic() - started
    assert "planted" in (out.get("stdout") or ""), out

    assert took < 20, (
        f"judging one call that left a {out.get('stdout')!r} took {took:.0f} s (the command itself "
        f"{out.get('durationMs')} ms): questions={person.questions} transaction={out.get('transaction')}"
    )
