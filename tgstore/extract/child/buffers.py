"""The buffers a timed kernel runs on: sized from its AST where this era's helper cannot, and filled with
deterministic contents the way each era's Buffer takes host bytes.
"""

from __future__ import annotations

import array
import contextlib
import struct
from typing import Any


def global_buffers(ast: Any, dev_name: str) -> list[Any] | None:
    """Buffers sized by the AST's DEFINE_GLOBAL / PARAM pointer types, in argument order; None if a size is
    unknown."""
    from tinygrad.device import Buffer

    seen: dict[int, Any] = {}
    stack, visited = [ast], set()
    while stack:
        u = stack.pop()
        if id(u) in visited:
            continue
        visited.add(id(u))
        stack.extend(u.src)
        if getattr(u.op, "name", "") in ("DEFINE_GLOBAL", "PARAM") and isinstance(u.arg, int):
            seen[u.arg] = u
    if not seen or sorted(seen) != list(range(len(seen))):
        return None
    bufs = []
    for _, u in sorted(seen.items()):
        size = getattr(u.dtype, "size", -1)
        if not isinstance(size, int) or size <= 0:
            return None
        bufs.append(Buffer(dev_name, size, u.dtype.base))
    return bufs


def values(fmt: str, count: int) -> bytes:
    """`count` deterministic values of struct format `fmt`: small floats in [-1, 1), small non-negative integers
    (indexes stay in small buffers' bounds), alternating booleans."""
    if fmt in ("f", "d"):
        return array.array(fmt, (((i * 7919) % 2000) / 1000.0 - 1.0 for i in range(count))).tobytes()
    if fmt == "e":
        return struct.pack(f"<{count}e", *(((i * 7919) % 2000) / 1000.0 - 1.0 for i in range(count)))
    if fmt == "?":
        return bytes(i % 2 for i in range(count))
    size = struct.calcsize(fmt)
    return array.array("B", ((i * 13) % 3 if k == 0 else 0 for i in range(count) for k in range(size))).tobytes()


def fill(buf: Any) -> None:
    """Allocate `buf` and copy deterministic data in; formats struct cannot write (bfloat16, fp8, images) get
    a byte pattern of small values."""
    allocated = buf.ensure_allocated() if hasattr(buf, "ensure_allocated") else buf.allocate()
    buf = allocated or buf
    fmt = getattr(buf.dtype, "fmt", None)
    nbytes = buf.nbytes
    itemsize = getattr(buf.dtype, "itemsize", 1) or 1
    try:
        data = values(fmt, nbytes // itemsize) if fmt else None
    except Exception:
        data = None
    if data is None or len(data) != nbytes:
        data = bytes((i * 37) % 61 for i in range(nbytes))
    copy_in(buf, memoryview(bytearray(data)))


def copy_in(buf: Any, data: memoryview) -> None:
    """Host bytes into a device buffer, the way this era's Buffer offers: copyin (<= 0.14), else a copy from a
    PYTHON-device buffer wrapping the bytes (later), else the allocator's own _copyin."""
    if callable(getattr(buf, "copyin", None)):
        buf.copyin(data)
        return
    if callable(getattr(buf, "copy_from", None)):
        with contextlib.suppress(Exception):
            buf.copy_from(type(buf)("PYTHON", buf.size, buf.dtype, opaque=data))
            return
    buf.allocator._copyin(buf._buf, data)
