#!/usr/bin/env python3
"""NumPy peers of Sluice's stateless kernels, for bench/kernels.ts (BENCHMARKS.md: "NumPy,
vectorized, one thread").

Usage: python3 bench/numpy_kernels.py MANIFEST.json

The manifest lists ops; each names raw little-endian input files written by kernels.ts (the same
seeded data the TypeScript kernels run on) and, optionally, the reference output. For each op this
times the kernel only (best of `reps`), and counts how many outputs differ from Sluice's reference.
Prints one JSON object: {"numpy": version, "ops": {name: {"seconds", "mismatches"}}}.
Single-threaded by construction (NumPy ufuncs do not thread); BLAS threads are pinned to 1 anyway.
"""

import json
import os
import sys
import time

for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402

DTYPES = {"int32": np.int32, "float32": np.float32, "float64": np.float64, "int64": np.int64, "uint8": np.uint8}

K_MUL = np.uint64(0x9DDFEA08EB382D69)


def twang_mix64(k):
    """folly twang_mix64 on uint64 arrays (wrapping arithmetic)."""
    k = (~k) + (k << np.uint64(21))
    k ^= k >> np.uint64(24)
    k = k + (k << np.uint64(3)) + (k << np.uint64(8))
    k ^= k >> np.uint64(14)
    k = k + (k << np.uint64(2)) + (k << np.uint64(4))
    k ^= k >> np.uint64(28)
    return k + (k << np.uint64(31))


def hash_128_to_64(upper, lower):
    """folly hash_128_to_64 on uint64 arrays."""
    a = (lower ^ upper) * K_MUL
    a ^= a >> np.uint64(47)
    b = (upper ^ a) * K_MUL
    b ^= b >> np.uint64(47)
    return b * K_MUL


HEX_LUT = np.full(256, 255, dtype=np.uint8)
for _c in range(10):
    HEX_LUT[48 + _c] = _c
for _c in range(6):
    HEX_LUT[65 + _c] = HEX_LUT[97 + _c] = 10 + _c


def hex2int_fixed8(chars, valid):
    """8-char hex ids (n x 8 bytes) -> int64: nibble lookup, pack pairs, read big-endian u32."""
    nib = HEX_LUT[chars]
    bad = (nib == 255).any(axis=1) & valid
    if bad.any():
        raise ValueError(f"invalid hex at row {int(np.argmax(bad))}")
    packed = (nib[:, 0::2] << np.uint8(4)) | nib[:, 1::2]
    out = np.ascontiguousarray(packed).view(">u4").reshape(-1).astype(np.int64)
    return np.where(valid, out, 0)


def make_kernel(op, params, inputs, mode=None):
    x = inputs.get("x")
    valid = inputs.get("valid")
    if op == "fillNull":
        fill = x.dtype.type(params["value"])
        return lambda: np.where(valid, x, fill)
    if op == "neg2zero":
        if valid is None:
            return lambda: np.where(x < 0, x.dtype.type(0), x)
        return lambda: np.where((x < 0) | ~valid, x.dtype.type(0), x)
    if op == "clamp":
        lo, hi = x.dtype.type(params["min"]), x.dtype.type(params["max"])
        if valid is None:
            return lambda: np.clip(x, lo, hi)
        return lambda: np.where(valid, np.clip(x, lo, hi), x.dtype.type(0))
    if op == "log":
        off = params.get("offset", 1)
        if mode == "float64":
            # Sluice's log: ln(x + offset) in float64, stored as float32 (widening is part of the work).
            if off == 1:
                return lambda: np.log1p(x.astype(np.float64)).astype(np.float32)
            return lambda: np.log(x.astype(np.float64) + off).astype(np.float32)
        if off == 1:
            return lambda: np.log1p(x)
        return lambda: np.log(x + x.dtype.type(off))
    if op == "bucketize":
        borders = np.asarray(params["borders"], dtype=np.float64)
        side = "right" if params.get("right") else "left"
        return lambda: np.searchsorted(borders, x, side=side).astype(np.int32)
    if op == "hex2int":
        chars = inputs["chars"].reshape(-1, 8)
        return lambda: hex2int_fixed8(chars, valid)
    if op == "sigridHash":
        salt = np.uint64(int(params.get("salt", 0)) % (1 << 64))
        mx = np.int64(int(params["max"]))
        xu = x.view(np.uint64)

        def sigrid():
            h = hash_128_to_64(salt, twang_mix64(xu)).view(np.int64)
            r = np.mod(h, mx)  # floor mod, result in [0, max)
            return r if valid is None else np.where(valid, r, 0)

        return sigrid
    if op == "modulus":
        m = x.dtype.type(int(params["m"]))
        if valid is None:
            return lambda: np.mod(x, m)
        return lambda: np.where(valid, np.mod(x, m), x.dtype.type(0))
    raise ValueError(f"unknown op {op}")


def load(spec):
    arr = np.fromfile(spec["path"], dtype=DTYPES[spec["dtype"]])
    if spec["dtype"] == "uint8" and spec.get("bool"):
        return arr.astype(bool)
    return arr


def main():
    with open(sys.argv[1]) as f:
        manifest = json.load(f)
    reps = int(manifest.get("reps", 5))
    results = {}
    for entry in manifest["ops"]:
        inputs = {name: load(spec) for name, spec in entry["inputs"].items()}
        kernel = make_kernel(entry["op"], entry["params"], inputs, entry.get("mode"))
        out = kernel()  # warm-up, and the result to compare
        best = float("inf")
        for _ in range(reps):
            t = time.perf_counter()
            kernel()
            best = min(best, time.perf_counter() - t)
        mismatches = None
        if "expect" in entry:
            want = load(entry["expect"])
            got = np.asarray(out).reshape(-1)
            if got.dtype == np.float32:
                mismatches = int(np.count_nonzero(got.view(np.uint32) != want.view(np.uint32)))
            else:
                mismatches = int(np.count_nonzero(got.astype(want.dtype) != want))
        results[entry["name"]] = {"seconds": best, "mismatches": mismatches}
    json.dump({"numpy": np.__version__, "ops": results}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
