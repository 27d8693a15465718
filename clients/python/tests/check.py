"""Comparing batches with the oracle (``sluice run``'s columns), value for value."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List

import numpy as np


def as_numpy(b: Any) -> Dict[str, Any]:
    """A numpy Batch or a TorchBatch as plain numpy arrays (a dict from here is returned as it is)."""
    if isinstance(b, dict):
        return b
    conv = (lambda t: t) if isinstance(b.dense, np.ndarray) else (lambda t: None if t is None else t.numpy())
    return {
        "seq": b.seq,
        "rows": b.rows,
        "dense_names": b.dense_names,
        "dense": conv(b.dense),
        "keys": b.keys,
        "lengths": conv(b.lengths),
        "values": conv(b.values),
        "offsets": conv(b.offsets),
        "labels": conv(b.labels),
    }


def check_kjt(b: Dict[str, Any]) -> None:
    """TorchRec's KeyedJaggedTensor invariants on one batch's sparse fields."""
    K, B = len(b["keys"]), b["rows"]
    lengths, offsets, values = b["lengths"], b["offsets"], b["values"]
    assert lengths.dtype == np.int32 and values.dtype == np.int64 and offsets.dtype == np.int64
    assert lengths.shape == (K * B,), "len(lengths) = keys x batch size"
    assert offsets.shape == (K * B + 1,)
    assert offsets[0] == 0 and offsets[-1] == values.shape[0]
    assert np.array_equal(np.diff(offsets), lengths), "offsets = cumulative lengths"
    assert (lengths >= 0).all()


def bits(a: np.ndarray) -> np.ndarray:
    """Float32 values as their bit patterns, so equality is exact (and NaN equals itself)."""
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def assert_matches_oracle(batches: Iterable[Any], oracle: Dict[str, Any], total: int) -> None:
    """``batches`` are every batch of the run exactly once, and their rows are ``sluice run``'s rows."""
    bs: List[Dict[str, Any]] = sorted((as_numpy(b) for b in batches), key=lambda d: d["seq"])
    seqs = [b["seq"] for b in bs]
    assert seqs == list(range(total)), f"not every batch exactly once: {seqs}"
    rows = sum(b["rows"] for b in bs)
    assert rows == oracle["__rows__"]
    names, keys = bs[0]["dense_names"], bs[0]["keys"]
    dense = np.concatenate([b["dense"] for b in bs])
    for j, name in enumerate(names):
        assert np.array_equal(bits(dense[:, j]), bits(oracle[name])), f"dense {name} differs"
    for k, key in enumerate(keys):
        lengths = np.concatenate([b["lengths"].reshape(len(keys), b["rows"])[k] for b in bs])
        values = np.concatenate([b["values"][b["offsets"][k * b["rows"]] : b["offsets"][(k + 1) * b["rows"]]] for b in bs])
        want_lengths, want_values = oracle[key]
        assert np.array_equal(lengths, want_lengths), f"lengths of {key} differ"
        assert np.array_equal(values, want_values), f"ids of {key} differ"
    labels = np.concatenate([b["labels"] for b in bs])
    assert np.array_equal(bits(labels), bits(oracle["label"]))
