"""Overwrite a lowp-run input file (same length) with the given values, cycled.

Usage: fill-scales.py FILE f32|byte V[,V...]  (f32: little-endian floats; byte: codes)
"""
import os
import struct
import sys

path, kind, values = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
size = os.path.getsize(path)
if kind == "f32":
    data = b"".join(struct.pack("<f", float(values[i % len(values)])) for i in range(size // 4))
elif kind == "byte":
    data = bytes(int(values[i % len(values)], 0) for i in range(size))
else:
    sys.exit(f"fill-scales.py: unknown kind {kind!r} (f32 or byte)")
with open(path, "wb") as f:
    f.write(data)
