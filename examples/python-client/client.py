#!/usr/bin/env python3
"""Fetch and decode batches from `sluice serve` with no Sluice code: urllib, msgpack and numpy.

  python3 examples/python-client/client.py http://127.0.0.1:8080 [--token T] [--rank R --world W] [--seq N --json]

Debian/Ubuntu: apt-get install python3-msgpack python3-numpy
"""
import argparse
import json
import sys
import urllib.error
import urllib.request

import msgpack
import numpy as np


class ServerError(Exception):
    """The server answered with an error (its message included)."""


def fetch(url, seq, token=None):
    """Batch `seq` as numpy arrays, or None past the end of the sequence."""
    headers = {"Accept": "application/msgpack"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(f"{url}/v1/batches/{seq}", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            body = r.read()
    except urllib.error.HTTPError as e:
        text = e.read().decode("utf-8", "replace")
        try:
            answer = json.loads(text or "{}")
        except ValueError:
            answer = {}
        if e.code == 404 and answer.get("end"):
            return None
        # The server says what went wrong (a bad token, a file it cannot decode, ...).
        raise ServerError(f"{url}/v1/batches/{seq}: HTTP {e.code}: {answer.get('error', text or e.reason)}") from None
    m = msgpack.unpackb(body, raw=False)
    rows, dim = m["dense"]["shape"]
    keys = m["sparse"]["keys"]
    # Little-endian arrays; sparse lengths are key-major: lengths[k, r].
    lengths = np.frombuffer(m["sparse"]["lengths"]["data"], dtype="<i4").reshape(len(keys), rows)
    values = np.frombuffer(m["sparse"]["values"]["data"], dtype="<i8")
    offsets = np.concatenate([[0], np.cumsum(lengths.sum(axis=1))])
    return {
        "seq": m["seq"],
        "rows": rows,
        "names": m["dense"]["names"],
        "dense": np.frombuffer(m["dense"]["data"], dtype="<f4").reshape(rows, dim),
        "keys": keys,
        "lengths": lengths,
        "values": values,
        "offsets": offsets,
        "labels": None if m["labels"] is None else np.frombuffer(m["labels"]["data"], dtype="<f4"),
    }


def as_json(b):
    """A batch as plain JSON (int64 ids as strings), per key a list of id lists per row."""
    sparse = {}
    for k, key in enumerate(b["keys"]):
        ends = b["offsets"][k] + np.cumsum(b["lengths"][k])
        starts = ends - b["lengths"][k]
        sparse[key] = [[str(v) for v in b["values"][s:e]] for s, e in zip(starts, ends)]
    return {
        "seq": b["seq"],
        "rows": b["rows"],
        "names": b["names"],
        "dense": b["dense"].tolist(),
        "sparse": sparse,
        "labels": None if b["labels"] is None else b["labels"].tolist(),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("--token")
    ap.add_argument("--seq", type=int, help="fetch one batch")
    ap.add_argument("--json", action="store_true", help="print the batch as JSON (with --seq)")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--world", type=int, default=1)
    a = ap.parse_args()
    if a.seq is not None:
        b = fetch(a.url, a.seq, a.token)
        if b is None:
            print(f"batch {a.seq} is past the end", file=sys.stderr)
            return 1
        if a.json:
            json.dump(as_json(b), sys.stdout)
        else:
            print(f"batch {b['seq']}: {b['rows']} rows, dense {b['dense'].shape}, {len(b['keys'])} sparse keys, {len(b['values'])} ids")
        return 0
    seq, n, rows = a.rank, 0, 0
    while True:
        b = fetch(a.url, seq, a.token)
        if b is None:
            break
        n += 1
        rows += b["rows"]
        pos = float(b["labels"].mean()) if b["labels"] is not None else float("nan")
        print(f"batch {b['seq']}: {b['rows']} rows, dense mean {b['dense'].mean():.4f}, {len(b['values'])} ids, positive rate {pos:.3f}")
        seq += a.world
    print(f"rank {a.rank}/{a.world}: {n} batches, {rows} rows")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ServerError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    except urllib.error.URLError as e:
        print(f"error: cannot reach the server: {e.reason}", file=sys.stderr)
        sys.exit(1)
