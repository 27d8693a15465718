"""The PyTorch dataset against a real ``sluice serve``: DataLoaders with 0, 2 and 3 workers and
two ranks yield every batch once, in order, equal to ``sluice run``'s rows; the KJT fields keep
TorchRec's invariants; the state resumes exactly in a new process with other workers and ranks."""

from __future__ import annotations

import json
import pickle
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import TOKEN, need

torch = need("torch", "apt-get install python3-torch (or pip install torch)")

from check import as_numpy, assert_matches_oracle, check_kjt  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from sluice import SluiceError, StateError  # noqa: E402
from sluice.torch import SluiceDataLoader, SluiceIterableDataset, TorchBatch  # noqa: E402

CHILD = Path(__file__).with_name("child.py")


@pytest.mark.parametrize("workers", [0, 2, 3])
def test_a_dataloader_yields_every_batch_once_in_order(server, job, workers):
    ds = SluiceIterableDataset(server.url, TOKEN, rank=0, world=1)
    got = list(DataLoader(ds, batch_size=None, num_workers=workers, pin_memory=True))
    assert [b.seq for b in got] == list(range(job.batches))
    assert all(isinstance(b, TorchBatch) for b in got)
    assert_matches_oracle(got, job.oracle(), job.batches)


def test_two_ranks_split_the_run_between_them(server, job):
    parts = []
    for rank in range(2):
        ds = SluiceIterableDataset(server.url, TOKEN, rank=rank, world=2)
        parts.append(list(DataLoader(ds, batch_size=None, num_workers=2, pin_memory=True)))
        assert [b.seq for b in parts[-1]] == list(range(rank, job.batches, 2))
    assert_matches_oracle(parts[0] + parts[1], job.oracle(), job.batches)


def test_the_kjt_fields_keep_torchrecs_invariants(server, job):
    ds = SluiceIterableDataset(server.url, TOKEN, rank=0, world=1)
    for b in DataLoader(ds, batch_size=None, num_workers=2):
        assert b.dense.dtype == torch.float32 and tuple(b.dense.shape) == (b.rows, 13)
        assert b.labels.dtype == torch.float32 and tuple(b.labels.shape) == (b.rows,)
        assert b.values.dtype == torch.int64 and b.lengths.dtype == torch.int32 and b.offsets.dtype == torch.int64
        assert b.keys == [f"B{i}" for i in range(1, 14)] + [f"C{i}" for i in range(1, 27)]
        check_kjt(as_numpy(b))
        assert torch.equal(b.offsets[1:], torch.cumsum(b.lengths.to(torch.int64), 0))


def test_the_fields_are_views_of_one_buffer(server):
    b = next(iter(SluiceIterableDataset(server.url, TOKEN, rank=0, world=1)))
    body = b._body
    lo, hi = body.data_ptr(), body.data_ptr() + body.numel()
    for name in ("dense", "labels", "values", "lengths", "offsets"):
        t = getattr(b, name)
        assert lo <= t.data_ptr() and t.data_ptr() + t.numel() * t.element_size() <= hi, name
    # Writable (torch needs that), and a write shows through: no copy between them.
    b.dense[0, 0] = 42.0
    assert body[b._layout["dense"][0] : b._layout["dense"][0] + 4].view(torch.float32).item() == 42.0
    moved = b.to("cpu")
    assert torch.equal(moved.values, b.values) and moved.keys == b.keys and moved.state == b.state


def test_a_batch_from_a_worker_arrives_as_one_shared_segment(server):
    ds = SluiceIterableDataset(server.url, TOKEN, rank=0, world=1)
    b = next(iter(DataLoader(ds, batch_size=None, num_workers=1)))
    assert b._body.is_shared()
    assert all(getattr(b, n).storage().data_ptr() == b._body.storage().data_ptr() for n in ("dense", "values", "offsets"))


def _copy(b):
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in as_numpy(b).items()}


def test_released_batches_memory_is_reused_and_held_batches_are_left_alone(server, job):
    ds = SluiceIterableDataset(server.url, TOKEN, rank=0, world=1)
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    segments, kept, copies = set(), [], []
    for _ in range(3):
        for b in loader:
            segments.add(b._buffer.data_ptr())
            if b.seq % 2 == 0:
                copies.append(_copy(b))  # read before release: after it, the memory may hold another batch
                b.release()
                b.release()  # a second release changes nothing
            else:
                kept.append(b)
    # 72 batches through at most 8 slots per worker, plus a new segment for each batch held while
    # a worker had no free slot (the 36 kept ones hold theirs until the end).
    assert len(segments) < 72
    # What was held was never written over, and what was released was right when it was read.
    odd = [_copy(b) for b in kept]
    for i in range(3):
        assert_matches_oracle(copies[12 * i : 12 * (i + 1)] + odd[12 * i : 12 * (i + 1)], job.oracle(), job.batches)


def test_released_batches_cross_as_references(server, job):
    ds = SluiceIterableDataset(server.url, TOKEN, rank=0, world=1)
    got, segments = [], set()
    for b in DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True):
        got.append(_copy(b))
        segments.add(b._buffer.data_ptr())
        b.release()
    assert_matches_oracle(got, job.oracle(), job.batches)
    # A segment that crosses whole is mapped anew (a new address each time); a reference reuses
    # the mapping this process keeps. Each worker cycles through a few slots: prefetch_factor (2)
    # waiting, one being read, one in the loop.
    assert len(segments) <= 2 * 4


@pytest.mark.skipif(not torch.cuda.is_available(), reason="pin_memory needs CUDA, and this machine has none")
def test_pin_memory_pins_the_batch(server):
    ds = SluiceIterableDataset(server.url, TOKEN, rank=0, world=1)
    for b in DataLoader(ds, batch_size=None, num_workers=2, pin_memory=True):
        assert b.dense.is_pinned() and b.offsets.is_pinned()
        g = b.to("cuda", non_blocking=True)
        assert torch.equal(g.values.cpu(), b.values)


def test_to_kjt_without_torchrec_says_what_to_install(server):
    import importlib.util

    b = next(iter(SluiceIterableDataset(server.url, TOKEN, rank=0, world=1)))
    if importlib.util.find_spec("torchrec") is None:
        with pytest.raises(SluiceError, match=r"to_kjt\(\) needs torchrec \(pip install torchrec\)"):
            b.to_kjt()
        return
    kjt = b.to_kjt()
    assert kjt.keys() == b.keys and torch.equal(kjt.offsets(), b.offsets) and torch.equal(kjt.lengths(), b.lengths)


def _child(tmp_path, url, workers, state=None, rank=None, world=None, dist_port=None, wait=True):
    out = tmp_path / f"child-{rank}-{workers}-{dist_port}.pkl"
    args = [sys.executable, str(CHILD), str(out), url, TOKEN, str(workers)]
    if state is not None:
        args += ["--state", json.dumps(state)]
    if rank is not None:
        args += ["--rank", str(rank), "--world", str(world)]
    if dist_port is not None:
        args += ["--dist-port", str(dist_port)]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not wait:
        return p, out
    _, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    return pickle.loads(out.read_bytes())


@pytest.mark.parametrize("k, workers_before, workers_after", [(1, 2, 3), (5, 0, 2), (13, 3, 0)])
def test_state_dict_resumes_in_a_new_process_with_other_workers(server, job, tmp_path, k, workers_before, workers_after):
    ds = SluiceIterableDataset(server.url, TOKEN, rank=0, world=1)
    loader = SluiceDataLoader(ds, num_workers=workers_before, pin_memory=True)
    taken = []
    for b in loader:
        taken.append(b)
        if len(taken) == k:
            break
    state = loader.state_dict()
    assert state == ds.state_dict() == taken[-1].state
    assert state["seq"] == k and state["epoch"] == k // 12
    rest = _child(tmp_path, server.url, workers_after, state=state, rank=0, world=1)
    assert [b["seq"] for b in rest["batches"]] == list(range(k, job.batches))  # the rest, in order
    assert_matches_oracle(taken + rest["batches"], job.oracle(), job.batches)
    assert rest["state"]["seq"] == job.batches


def test_state_from_two_ranks_resumes_on_one_with_three_workers(server, job, tmp_path):
    states, taken = [], []
    for rank in range(2):
        loader = SluiceDataLoader(SluiceIterableDataset(server.url, TOKEN, rank=rank, world=2), num_workers=2)
        for b in loader:
            taken.append(b)
            if len(taken) % 4 == 0:
                break
        states.append(loader.state_dict())
    assert states[0] == states[1] and states[0]["seq"] == 8
    rest = _child(tmp_path, server.url, 3, state=states[0], rank=0, world=1)
    assert_matches_oracle(taken + rest["batches"], job.oracle(), job.batches)


def test_rank_and_world_come_from_torch_distributed(server, job, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [_child(tmp_path, server.url, 2, rank=r, world=2, dist_port=port, wait=False) for r in range(2)]
    results = []
    for p, out in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        results.append(pickle.loads(out.read_bytes()))
    assert [(r["rank"], r["world"]) for r in results] == [(0, 2), (1, 2)]
    assert_matches_oracle([b for r in results for b in r["batches"]], job.oracle(), job.batches)


def test_the_dataset_counts_batches_it_can_see(server, job):
    # In this process (num_workers=0), the dataset itself knows what the loop took.
    ds = SluiceIterableDataset(server.url, TOKEN, rank=0, world=1)
    g = iter(DataLoader(ds, batch_size=None, num_workers=0))
    for _ in range(3):
        last = next(g)
    assert ds.state_dict()["seq"] == 3 == last.state["seq"]
    # A plain DataLoader's workers read it where this process cannot see: state_dict() says so.
    g = iter(DataLoader(ds, batch_size=None, num_workers=2))
    last = next(g)
    with pytest.raises(StateError, match="read by DataLoader worker processes.*SluiceDataLoader.*last batch's .state"):
        ds.state_dict()
    assert last.state["seq"] == 1  # the batch still knows the state after it
    del g
    ds.load_state_dict(last.state)
    assert [b.seq for b in SluiceDataLoader(ds, num_workers=2)] == list(range(1, job.batches))


def test_the_loader_refuses_a_batch_size(server):
    ds = SluiceIterableDataset(server.url, TOKEN, rank=0, world=1)
    with pytest.raises(SluiceError, match="takes no batch_size"):
        SluiceDataLoader(ds, batch_size=32)


def test_a_dataset_can_be_pickled(server):
    # torch.save or a spawn-started worker pickles the dataset: it travels without its shared flag.
    ds = SluiceIterableDataset(server.url, TOKEN, rank=0, world=1)
    again = pickle.loads(pickle.dumps(ds))
    assert [b.seq for b in again][:2] == [0, 1]
    assert np.array_equal(next(iter(again)).dense.numpy(), next(iter(ds)).dense.numpy())


def test_a_body_whose_arrays_cannot_be_viewed_is_copied_once(server):
    # Another sender's body (msgpack-python's: arrays unaligned) still makes a TorchBatch, from copies.
    msgpack = need("msgpack", "apt-get install python3-msgpack")
    import sluice.torch as st
    from sluice.http import Response

    c = st.Client(server.url, TOKEN)
    r = c.batch_body(3)
    m = msgpack.unpackb(bytes(memoryview(r.body)[: r.size]), raw=False)
    other = msgpack.packb({"pad": 1, **m}, use_bin_type=True)
    buf = torch.empty(len(other) + 8 * (39 * 256 + 1) + 8, dtype=torch.uint8)
    buf[: len(other)] = torch.frombuffer(bytearray(other), dtype=torch.uint8)
    with pytest.raises(st._NotInBody):
        st._to_torch(Response(200, buf.numpy(), len(other), "x"), buf, (len(other) + 7) & ~7, {}, None)
    b = st._copy_to_torch(st._decode(Response(200, bytearray(other), len(other), "x")), {})
    want = c.batch(3)
    for name in ("dense", "labels", "values", "lengths", "offsets"):
        assert np.array_equal(getattr(b, name).numpy(), getattr(want, name)), name


def test_persistent_workers_cannot_miss_a_loaded_state(server, job):
    ds = SluiceIterableDataset(server.url, TOKEN, rank=0, world=1)
    loader = SluiceDataLoader(ds, num_workers=2, persistent_workers=True)
    assert len(list(loader)) == job.batches
    assert [b.seq for b in loader][:1] == [0]  # a second pass of the same workers
    ds.load_state_dict({**loader.state_dict(), "seq": 5})
    with pytest.raises(StateError, match="persistent workers started does not reach them: make a new SluiceDataLoader"):
        next(iter(loader))
    assert [b.seq for b in SluiceDataLoader(ds, num_workers=2, persistent_workers=True)][0] == 5
