"""The batch body decoder: views of the body, equal to msgpack-python's decoding, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import TOKEN, need

msgpack = need("msgpack", "apt-get install python3-msgpack (or pip install msgpack): the tests decode with it as a second opinion")

from check import check_kjt  # noqa: E402
from sluice import Client, ProtocolError  # noqa: E402
from sluice.wire import Bin, decode_batch, unpack  # noqa: E402


@pytest.fixture(scope="module")
def bodies(server):
    c = Client(server.url, TOKEN)
    out = []
    for seq in (0, 11, 12, 23):  # first, the short last batch of epoch 0, the first of epoch 1, the last
        r = c.batch_body(seq)
        out.append(bytearray(memoryview(r.body)[: r.size]))
    return out


def test_the_arrays_view_the_body_and_equal_msgpack_python(bodies):
    for body in bodies:
        b = decode_batch(body)
        m = msgpack.unpackb(bytes(body), raw=False)
        assert (b.seq, b.epoch, b.rows) == (m["seq"], m["epoch"], m["rows"])
        assert b.dense_names == m["dense"]["names"] and b.keys == m["sparse"]["keys"]
        assert np.array_equal(b.dense.reshape(-1).view(np.uint32), np.frombuffer(m["dense"]["data"], "<u4"))
        assert np.array_equal(b.lengths, np.frombuffer(m["sparse"]["lengths"]["data"], "<i4"))
        assert np.array_equal(b.values, np.frombuffer(m["sparse"]["values"]["data"], "<i8"))
        assert np.array_equal(b.labels, np.frombuffer(m["labels"]["data"], "<f4"))
        # Views, not copies: writing through the array changes the body.
        for name in ("dense", "lengths", "values", "labels"):
            arr = getattr(b, name)
            assert np.shares_memory(arr, np.frombuffer(body, np.uint8)), name
            assert arr.flags.writeable and arr.flags.aligned
        check_kjt(vars(b))


def test_batches_have_their_shapes(bodies):
    rows = [decode_batch(body).rows for body in bodies]
    assert rows == [256, 3000 - 11 * 256, 256, 3000 - 11 * 256]
    b = decode_batch(bodies[1])
    assert b.dense.shape == (b.rows, 13) and len(b.keys) == 39
    ko = b.key_offsets()
    assert ko.shape == (40,) and ko[-1] == b.values.size
    assert np.array_equal(b.lengths_by_key().sum(axis=1), np.diff(ko))
    assert np.array_equal(b.ids(3, 7), b.values[b.offsets[3 * b.rows + 7] : b.offsets[3 * b.rows + 8]])


def test_a_body_written_by_msgpack_python_decodes_too(bodies):
    # Another sender: standard msgpack, arrays not aligned, keys in another order; copies where unaligned.
    m = msgpack.unpackb(bytes(bodies[0]), raw=False)
    other = bytearray(msgpack.packb({"x": 1, **dict(reversed(list(m.items())))}, use_bin_type=True))
    a, b = decode_batch(bodies[0]), decode_batch(other)
    for name in ("dense", "lengths", "values", "offsets", "labels"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert getattr(b, name).flags.aligned


def test_unpack_reads_every_msgpack_type_the_way_msgpack_python_does():
    value = {
        "ints": [0, 1, 127, 128, 255, 256, 65535, 65536, 2**32, 2**64 - 1, -1, -32, -33, -128, -129, -(2**15), -(2**31) - 1, -(2**63)],
        "floats": [0.5, -1e300],
        "strs": ["", "a" * 31, "b" * 32, "c" * 300, "é" * 40000],
        "misc": [None, True, False],
        "nested": {"list": list(range(20)), "map": {str(i): i for i in range(20)}},
    }
    packed = msgpack.packb(value, use_bin_type=True)
    assert unpack(packed) == msgpack.unpackb(packed, raw=False)
    assert unpack(msgpack.packb(np.float32(1.5).item(), use_single_float=True)) == 1.5
    got = unpack(msgpack.packb({"b": b"xyz" * 100}, use_bin_type=True))
    assert isinstance(got["b"], Bin) and got["b"].length == 300


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda b: b[: len(b) // 2], "body ends at byte"),
        (lambda b: b + b"\x00", "1 bytes after the end"),
        (lambda b: b"\xc1" + b[1:], "type byte 0xc1"),
        (lambda b: bytes(msgpack.packb([1, 2])), "not a MessagePack map"),
        (lambda b: bytes(msgpack.packb({"seq": 0})), 'no "epoch"'),
        (lambda b: b"\xdd\xff\xff\xff\xff", "longer than the body"),
        (lambda b: b"\x91" * 40 + b"\x00", "nested more than"),
    ],
)
def test_a_broken_body_is_one_clear_line(bodies, mutate, message):
    with pytest.raises(ProtocolError) as e:
        decode_batch(bytearray(mutate(bytes(bodies[0]))))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_inconsistent_arrays_are_refused(bodies):
    m = msgpack.unpackb(bytes(bodies[0]), raw=False)
    bad = dict(m)
    lengths = np.frombuffer(m["sparse"]["lengths"]["data"], "<i4").copy()
    lengths[0] += 1
    bad["sparse"] = {**m["sparse"], "lengths": {**m["sparse"]["lengths"], "data": lengths.tobytes()}}
    with pytest.raises(ProtocolError, match=r"lengths add up to \d+ ids but sparse.values holds \d+"):
        decode_batch(bytearray(msgpack.packb(bad, use_bin_type=True)))
    bad = {**m, "dense": {**m["dense"], "dtype": "float64"}}
    with pytest.raises(ProtocolError, match="dtype 'float64', expected 'float32'"):
        decode_batch(bytearray(msgpack.packb(bad, use_bin_type=True)))
    bad = {**m, "labels": {**m["labels"], "data": m["labels"]["data"][:-4]}}
    with pytest.raises(ProtocolError, match='"labels" holds 1020 bytes, expected 256 x 4'):
        decode_batch(bytearray(msgpack.packb(bad, use_bin_type=True)))
