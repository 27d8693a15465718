"""Decoding a batch body (``Accept: application/msgpack``) into numpy arrays that view it.

The body is one MessagePack map whose binary arrays start on 8-byte boundaries (docs/serving.md).
msgpack-python always copies a ``bin`` into a new immutable ``bytes``: the arrays would then be
read-only copies, and PyTorch, which needs writable memory, would copy them again. So this module
reads MessagePack's format itself and hands out ``Bin`` references (offset, length) into the body;
the arrays are ``numpy.frombuffer`` views of the buffer the response was read into, with no copy.
Everything MessagePack defines except ``ext`` is read; the tests check the result against msgpack-python.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .batch import Batch
from .errors import ProtocolError

# Deep nesting only comes from a hostile or broken body; the server's is three levels deep.
_MAX_DEPTH = 16


@dataclass(frozen=True)
class Bin:
    """A MessagePack ``bin`` inside the body: where its bytes start and how many there are."""

    offset: int
    length: int


class _Reader:
    __slots__ = ("buf", "n", "pos")

    def __init__(self, buf: memoryview) -> None:
        self.buf = buf
        self.n = len(buf)
        self.pos = 0

    def _take(self, k: int) -> int:
        p = self.pos
        if p + k > self.n:
            raise ProtocolError(f"body ends at byte {self.n}, inside a value at byte {p} that needs {k} more")
        self.pos = p + k
        return p

    def _unpack(self, fmt: str, k: int) -> Any:
        return struct.unpack_from(fmt, self.buf, self._take(k))[0]

    def _str(self, k: int) -> str:
        p = self._take(k)
        try:
            return str(self.buf[p : p + k], "utf-8")
        except UnicodeDecodeError:
            raise ProtocolError(f"a string at byte {p} is not UTF-8") from None

    def value(self, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise ProtocolError(f"values nested more than {_MAX_DEPTH} deep")
        at = self._take(1)
        t = self.buf[at]
        if t <= 0x7F:
            return t
        if t >= 0xE0:
            return t - 0x100
        if 0x80 <= t <= 0x8F:
            return self._map(t & 0x0F, depth)
        if 0x90 <= t <= 0x9F:
            return self._array(t & 0x0F, depth)
        if 0xA0 <= t <= 0xBF:
            return self._str(t & 0x1F)
        if t == 0xC0:
            return None
        if t == 0xC2:
            return False
        if t == 0xC3:
            return True
        if t in (0xC4, 0xC5, 0xC6):
            k = self._unpack((">B", ">H", ">I")[t - 0xC4], (1, 2, 4)[t - 0xC4])
            return Bin(self._take(k), k)
        if t == 0xCA:
            return self._unpack(">f", 4)
        if t == 0xCB:
            return self._unpack(">d", 8)
        if 0xCC <= t <= 0xCF:
            return self._unpack((">B", ">H", ">I", ">Q")[t - 0xCC], 1 << (t - 0xCC))
        if 0xD0 <= t <= 0xD3:
            return self._unpack((">b", ">h", ">i", ">q")[t - 0xD0], 1 << (t - 0xD0))
        if t in (0xD9, 0xDA, 0xDB):
            return self._str(self._unpack((">B", ">H", ">I")[t - 0xD9], (1, 2, 4)[t - 0xD9]))
        if t in (0xDC, 0xDD):
            return self._array(self._unpack((">H", ">I")[t - 0xDC], 2 if t == 0xDC else 4), depth)
        if t in (0xDE, 0xDF):
            return self._map(self._unpack((">H", ">I")[t - 0xDE], 2 if t == 0xDE else 4), depth)
        raise ProtocolError(f"MessagePack type byte 0x{t:02x} at byte {at} is not one sluice serve writes")

    def _array(self, k: int, depth: int) -> List[Any]:
        if k > self.n - self.pos:  # every element takes at least one byte
            raise ProtocolError(f"an array of {k} elements at byte {self.pos} is longer than the body")
        return [self.value(depth + 1) for _ in range(k)]

    def _map(self, k: int, depth: int) -> Dict[Any, Any]:
        if 2 * k > self.n - self.pos:
            raise ProtocolError(f"a map of {k} entries at byte {self.pos} is longer than the body")
        out: Dict[Any, Any] = {}
        for _ in range(k):
            key = self.value(depth + 1)
            if not isinstance(key, (str, int)):
                raise ProtocolError(f"a map key before byte {self.pos} is not a string")
            out[key] = self.value(depth + 1)
        return out


def unpack(buf: Any) -> Any:
    """One MessagePack value from ``buf`` (any buffer), ``bin`` values as :class:`Bin` references.

    Example::

        m = unpack(body)                   # {"seq": 0, "dense": {"data": Bin(offset=216, length=...)}, ...}
        raw = body[m["dense"]["data"].offset:]
    """
    r = _Reader(memoryview(buf).cast("B"))
    v = r.value()
    if r.pos != r.n:
        raise ProtocolError(f"{r.n - r.pos} bytes after the end of the message (at byte {r.pos})")
    return v


# name -> (numpy dtype, bytes per element)
_DTYPES = {"float32": np.dtype("<f4"), "int32": np.dtype("<i4"), "int64": np.dtype("<i8")}


def _field(m: Any, path: str) -> Any:
    cur = m
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise ProtocolError(f'the batch has no "{path}"')
        cur = cur[part]
    return cur


def _uint(m: Any, path: str) -> int:
    v = _field(m, path)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise ProtocolError(f'"{path}" is {v!r}, not a non-negative integer')
    return v


def _view(buf: Any, arr: Any, path: str, dtype: str, count: int) -> Tuple[np.ndarray, int]:
    """The binary array ``arr`` of the body as ``count`` elements of ``dtype``: a view when aligned, else a copy."""
    if not isinstance(arr, dict) or not isinstance(arr.get("data"), Bin):
        raise ProtocolError(f'"{path}" is not an array with binary "data"')
    got = arr.get("dtype", dtype)
    if got != dtype:
        raise ProtocolError(f'"{path}" has dtype {got!r}, expected {dtype!r}')
    dt = _DTYPES[dtype]
    b: Bin = arr["data"]
    if b.length != count * dt.itemsize:
        raise ProtocolError(f'"{path}" holds {b.length} bytes, expected {count} x {dt.itemsize}')
    off = b.offset
    if off % dt.itemsize == 0:
        return np.frombuffer(buf, dtype=dt, count=count, offset=off), off
    # The server aligns every array; another sender may not. numpy could view it unaligned, but
    # torch and most kernels want aligned memory: an aligned copy.
    return np.frombuffer(buf, dtype=np.uint8, count=b.length, offset=off).copy().view(dt), -1


def decode_batch(buf: Any, size: Optional[int] = None, offsets_out: Optional[np.ndarray] = None) -> Batch:
    """Decodes the first ``size`` bytes of ``buf`` (all of it by default) as a batch body.

    ``offsets`` (TorchRec's: ``len(lengths) + 1`` entries, the running sum of ``lengths``) is
    written into ``offsets_out`` when it is given and large enough, else into a new array.

    Example::

        body = bytearray(urllib.request.urlopen(req).read())
        d = decode_batch(body)            # d.dense is a float32 [rows, dim] view of body
    """
    mv = memoryview(buf).cast("B")
    if size is None:
        size = len(mv)
    m = unpack(mv[:size])
    if not isinstance(m, dict):
        raise ProtocolError("the body is not a MessagePack map")
    seq, epoch, rows = _uint(m, "seq"), _uint(m, "epoch"), _uint(m, "rows")
    layout: Dict[str, int] = {}
    shape = _field(m, "dense.shape")
    if not (isinstance(shape, list) and len(shape) == 2 and all(isinstance(x, int) and x >= 0 for x in shape)) or shape[0] != rows:
        raise ProtocolError(f'"dense.shape" is {shape!r}, expected [{rows}, dim]')
    dim = shape[1]
    names = _field(m, "dense.names")
    if not isinstance(names, list) or len(names) != dim or not all(isinstance(s, str) for s in names):
        raise ProtocolError(f'"dense.names" is not a list of {dim} strings')
    dense, layout["dense"] = _view(buf, m["dense"], "dense", "float32", rows * dim)
    keys = _field(m, "sparse.keys")
    if not isinstance(keys, list) or not all(isinstance(s, str) for s in keys):
        raise ProtocolError('"sparse.keys" is not a list of strings')
    n_len = len(keys) * rows
    lengths, layout["lengths"] = _view(buf, _field(m, "sparse.lengths"), "sparse.lengths", "int32", n_len)
    values_arr = _field(m, "sparse.values")
    nnz = values_arr["data"].length // 8 if isinstance(values_arr, dict) and isinstance(values_arr.get("data"), Bin) else -1
    values, layout["values"] = _view(buf, values_arr, "sparse.values", "int64", nnz)
    labels: Optional[np.ndarray] = None
    if m.get("labels") is not None:
        labels, layout["labels"] = _view(buf, m["labels"], "labels", "float32", rows)
    if n_len and int(lengths.min()) < 0:
        raise ProtocolError(f"sparse.lengths has a negative length ({int(lengths.min())})")
    if offsets_out is not None and offsets_out.dtype == np.int64 and offsets_out.shape[0] >= n_len + 1:
        offsets = offsets_out[: n_len + 1]
    else:
        offsets = np.empty(n_len + 1, dtype=np.int64)
    offsets[0] = 0
    np.cumsum(lengths, dtype=np.int64, out=offsets[1:])
    if int(offsets[-1]) != nnz:
        raise ProtocolError(f"sparse.lengths add up to {int(offsets[-1])} ids but sparse.values holds {nnz}")
    return Batch(
        seq=seq,
        epoch=epoch,
        rows=rows,
        dense_names=names,
        dense=dense.reshape(rows, dim),
        keys=keys,
        lengths=lengths,
        values=values,
        offsets=offsets,
        labels=labels,
        layout=layout,
    )
