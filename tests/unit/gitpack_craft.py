#!/usr/bin/env python3
"""Write a hostile pack and its idx v2 (what git itself will not write),
for test_gitodb.c: craft.py KIND OUTPREFIX writes OUTPREFIX.pack/.idx.

KIND:
  ofs-self    an OFS_DELTA whose base offset is itself (distance 0)
  ref-self    a REF_DELTA whose base id is its own
  cross-a/-b  two packs: X in a is a REF_DELTA on Y, Y in b one on X
  bomb        a blob whose header declares 2^40 bytes over a tiny stream
  delta-bomb  a blob and an OFS_DELTA on it declaring a 2^40-byte result
"""
import struct
import sys
import zlib

X, Y, Z = b'\x11' * 20, b'\x22' * 20, b'\x33' * 20


def header(kind, size):
    out = bytearray()
    c = (kind << 4) | (size & 15)
    size >>= 4
    while size:
        out.append(c | 0x80)
        c = size & 0x7f
        size >>= 7
    out.append(c)
    return bytes(out)


def ofs(distance):
    out = [distance & 0x7f]
    distance >>= 7
    while distance:
        distance -= 1
        out.insert(0, 0x80 | (distance & 0x7f))
        distance >>= 7
    return bytes(out)


def varint(n):
    out = bytearray()
    while True:
        c = n & 0x7f
        n >>= 7
        out.append(c | (0x80 if n else 0))
        if not n:
            return bytes(out)


def write(prefix, entries):
    """entries: (id, raw bytes of the entry after its offset is known)."""
    body = bytearray(b'PACK' + struct.pack('>II', 2, len(entries)))
    offsets = {}
    for oid, make in entries:
        offsets[oid] = len(body)
        body += make(len(body))
    body += b'\0' * 20  # the trailing checksum (the reader checks ids, not it)
    open(prefix + '.pack', 'wb').write(body)
    ids = sorted(offsets)
    fan = [0] * 256
    for oid in ids:
        for b in range(oid[0], 256):
            fan[b] += 1
    idx = bytearray(b'\377tOc' + struct.pack('>I', 2))
    idx += b''.join(struct.pack('>I', n) for n in fan)
    idx += b''.join(ids)
    idx += b'\0\0\0\0' * len(ids)
    idx += b''.join(struct.pack('>I', offsets[oid]) for oid in ids)
    idx += b'\0' * 40
    open(prefix + '.idx', 'wb').write(idx)


def delta(src, dst, ops=b''):
    return varint(src) + varint(dst) + ops


def main():
    kind, prefix = sys.argv[1], sys.argv[2]
    small = zlib.compress(delta(5, 5, b'\x05hello'))
    if kind == 'ofs-self':
        write(prefix, [(X, lambda at: header(6, 8) + ofs(0) + small)])
    elif kind == 'ref-self':
        write(prefix, [(X, lambda at: header(7, 8) + X + small)])
    elif kind == 'cross-a':
        write(prefix, [(X, lambda at: header(7, 8) + Y + small)])
    elif kind == 'cross-b':
        write(prefix, [(Y, lambda at: header(7, 8) + X + small)])
    elif kind == 'bomb':
        write(prefix, [(X, lambda at: header(3, 1 << 40) + zlib.compress(b'tiny'))])
    elif kind == 'delta-bomb':
        base = header(3, 5) + zlib.compress(b'hello')
        big = zlib.compress(delta(5, 1 << 40, b'\x90\x05'))
        write(prefix, [(X, lambda at: base),
                       (Y, lambda at: header(6, len(zlib.decompress(big))) + ofs(at - 12) + big)])
    else:
        sys.exit('unknown kind ' + kind)


main()
