"""Git state built by hand, byte by byte (loose objects, packs whose index may lie, trees, commits), for the red-team
tests of the later-checkout judgement (red teams 79, 80); run inside a repository, cwd = its top. Payloads harmless."""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import zlib

ENV = dict(os.environ, GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@x", GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@x",
           GIT_AUTHOR_DATE="1700000000 +0000", GIT_COMMITTER_DATE="1700000000 +0000")  # fmt: skip


def git(*args: str, text: bytes | None = None) -> str:
    return subprocess.run(["git", *args], env=ENV, input=text, capture_output=True, check=True,
                          timeout=60).stdout.decode().strip()  # fmt: skip


def obj_id(kind: bytes, body: bytes) -> str:
    return hashlib.sha1(kind + b" " + str(len(body)).encode() + b"\0" + body).hexdigest()


def put_loose(kind: bytes, body: bytes, oid: str | None = None) -> str:
    data = kind + b" " + str(len(body)).encode() + b"\0" + body
    oid = oid or hashlib.sha1(data).hexdigest()
    os.makedirs(f".git/objects/{oid[:2]}", exist_ok=True)
    with open(f".git/objects/{oid[:2]}/{oid[2:]}", "wb") as f:
        f.write(zlib.compress(data))
    return oid


def _pack_header(kind: int, size: int) -> bytes:
    byte = (kind << 4) | (size & 15)
    size >>= 4
    out = b""
    while size:
        out += bytes([byte | 0x80])
        byte = size & 0x7F
        size >>= 7
    return out + bytes([byte])


def write_pack(objects: list[tuple[str, int, bytes]], name: str = "") -> str:
    """A pack of (claimed id hex, type number, body): the index lists each body under the claimed id (true or not)."""
    body = b"PACK" + struct.pack(">II", 2, len(objects))
    offsets = []
    for oid, kind, data in objects:
        offsets.append((bytes.fromhex(oid), len(body)))
        body += _pack_header(kind, len(data)) + zlib.compress(data)
    body += hashlib.sha1(body).digest()
    trailer = body[-20:]
    offsets.sort()
    idx = b"\377tOc" + struct.pack(">I", 2)
    fan = [0] * 256
    for key, _ in offsets:
        fan[key[0]] += 1
    total = 0
    for i in range(256):
        total += fan[i]
        idx += struct.pack(">I", total)
    idx += b"".join(key for key, _ in offsets)
    idx += b"".join(struct.pack(">I", 0) for _ in offsets)
    idx += b"".join(struct.pack(">I", off) for _, off in offsets)
    idx += trailer
    idx += hashlib.sha1(idx).digest()
    name = name or trailer.hex()
    os.makedirs(".git/objects/pack", exist_ok=True)
    with open(f".git/objects/pack/pack-{name}.pack", "wb") as f:
        f.write(body)
    with open(f".git/objects/pack/pack-{name}.idx", "wb") as f:
        f.write(idx)
    return name


def tree_with(entries: dict[str, tuple[str, str]]) -> str:
    """A tree (written loose) of HEAD's top entries with ``entries`` (name -> (mode, blob id)) set."""
    listing = git("ls-tree", "HEAD")
    rows = {}
    for line in listing.splitlines():
        meta, name = line.split("\t", 1)
        mode, _kind, oid = meta.split()
        rows[name] = (mode, oid)
    rows.update(entries)
    body = b"".join(f"{mode} {name}".encode() + b"\0" + bytes.fromhex(oid) for name, (mode, oid) in
                    sorted(rows.items(), key=lambda r: r[0] + ("/" if r[1][0] == "40000" else "")))  # fmt: skip
    return put_loose(b"tree", body)


def commit(tree: str, parent: str, message: str) -> str:
    return git("commit-tree", tree, "-p", parent, "-m", message)
