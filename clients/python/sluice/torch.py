"""PyTorch: :class:`SluiceIterableDataset` (batches split across ranks and DataLoader workers,
resumable), the :class:`TorchBatch` it yields, and :class:`SluiceDataLoader`, a DataLoader that
keeps the dataset's resume state while worker processes do the reading.

Each batch's response body is read into one uint8 tensor (in a worker, one in shared memory), the
KJT ``offsets`` are written after it, and every field is a view of that tensor: nothing is copied
in the process that reads it, a worker hands the batch to the trainer as one shared-memory segment,
and ``pin_memory()`` / ``.to(device)`` copy it once.
"""

from __future__ import annotations

import math
import multiprocessing
import multiprocessing.context
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.utils.data

from . import shm
from .client import Client, _decode, ordered, rank_world
from .errors import SluiceError, StateError
from .state import check_job, check_state, make_state, reader_seqs

_TORCH_DTYPES = {np.dtype("<f4"): torch.float32, np.dtype("<i4"): torch.int32, np.dtype("<i8"): torch.int64}
_ITEMSIZE = {torch.float32: 4, torch.int32: 4, torch.int64: 8}
_FIELDS = ("dense", "labels", "values", "lengths", "offsets")


def _round8(n: int) -> int:
    return (n + 7) & ~7


class TorchBatch:
    """One batch as tensors: ``dense`` float32 ``[B, D]``, ``labels`` float32 ``[B]`` (or None), and
    the sparse part as TorchRec's KeyedJaggedTensor takes it: ``keys``, ``values`` int64,
    ``lengths`` int32 key-major (``lengths[k * B + r]``), ``offsets`` int64 (``len(lengths) + 1``).

    ``seq``/``epoch`` place it in the run; ``state`` is the job's resume state after it.

    Example::

        for b in loader:
            b = b.to("cuda", non_blocking=True)
            loss = model(b.dense, b.to_kjt(), b.labels)
    """

    def __init__(
        self,
        buffer: torch.Tensor,
        used: int,
        layout: Dict[str, Tuple[int, torch.dtype, Tuple[int, ...]]],
        meta: Dict[str, Any],
        slot: Optional[shm.Slot] = None,
        arrived: bool = False,
    ) -> None:
        self._buffer = buffer  # the memory the body was read into (a worker's slot may be larger)
        self._used = used
        self._body = buffer[:used]
        self._layout = layout
        self._slot = slot
        self._arrived = arrived  # in the process it was sent to (so a copy made here owns no slot)
        self.seq: int = meta["seq"]
        self.epoch: int = meta["epoch"]
        self.rows: int = meta["rows"]
        self.dense_names: List[str] = meta["dense_names"]
        self.keys: List[str] = meta["keys"]
        self.state: Optional[Dict[str, Any]] = meta["state"]
        self._meta = meta
        self.labels: Optional[torch.Tensor] = None
        for name, (off, dtype, shape) in layout.items():
            n = math.prod(shape) * _ITEMSIZE[dtype]
            setattr(self, name, buffer[off : off + n].view(dtype).view(shape))
        self.dense: torch.Tensor
        self.values: torch.Tensor
        self.lengths: torch.Tensor
        self.offsets: torch.Tensor

    def __repr__(self) -> str:
        return f"TorchBatch(seq={self.seq}, rows={self.rows}, dense={tuple(self.dense.shape)}, keys={len(self.keys)}, ids={self.values.numel()})"

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        # From a worker: one segment crosses (its views are rebuilt there), or only a reference to
        # it when the trainer process already holds it (see sluice.shm). Anywhere else: a plain copy.
        slot = self._slot
        if slot is not None and not self._arrived:
            if slot.mapped:
                return (_by_reference, (slot, self._used, self._layout, self._meta))
            return (_whole, (self._buffer, slot, self._used, self._layout, self._meta))
        return (TorchBatch, (self._body, self._used, self._layout, self._meta))

    def _with_body(self, body: torch.Tensor) -> "TorchBatch":
        return TorchBatch(body, self._used, self._layout, self._meta)  # other memory: no slot of its own

    def release(self) -> None:
        """Done with this batch: its worker may read a later batch into its memory, and nothing may read it after.

        Optional, as ``@sluice/client``'s ``release()``: a batch never released is freed as usual,
        and its worker makes new shared memory instead (slower: see :mod:`sluice.shm`).

        Example::

            loss = step(b); b.release()
        """
        slot, self._slot = self._slot, None
        shm.release(slot)

    def pin_memory(self) -> "TorchBatch":
        """The batch copied into page-locked memory (the DataLoader calls this with ``pin_memory=True``);
        this batch is released, as the copy is what the loop gets.

        Example::

            b = b.pin_memory().to("cuda", non_blocking=True)
        """
        pinned = self._with_body(self._body.pin_memory())
        self.release()
        return pinned

    def to(self, device: Union[str, torch.device], non_blocking: bool = False) -> "TorchBatch":
        """The batch on ``device``: one copy of its memory, the fields views of it there.

        Example::

            b = b.to("cuda:0", non_blocking=True)
        """
        return self._with_body(self._body.to(device, non_blocking=non_blocking))

    def to_kjt(self) -> Any:
        """The sparse part as ``torchrec.KeyedJaggedTensor`` (needs ``torchrec``).

        Example::

            kjt = b.to_kjt(); kjt["C1"].values()
        """
        try:
            from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
        except ImportError:
            raise SluiceError("to_kjt() needs torchrec (pip install torchrec); keys, values, lengths and offsets are its fields") from None
        return KeyedJaggedTensor(keys=self.keys, values=self.values, lengths=self.lengths, offsets=self.offsets)


def _whole(buffer: torch.Tensor, slot: shm.Slot, used: int, layout: Any, meta: Dict[str, Any]) -> TorchBatch:
    shm.received(slot, buffer)
    return TorchBatch(buffer, used, layout, meta, slot, arrived=True)


def _by_reference(slot: shm.Slot, used: int, layout: Any, meta: Dict[str, Any]) -> TorchBatch:
    return TorchBatch(shm.mapped(slot), used, layout, meta, slot, arrived=True)



def _to_torch(r: Any, body: torch.Tensor, offsets_at: int, state: Dict[str, Any], slot: Optional[shm.Slot]) -> TorchBatch:
    """Decodes the body read into ``body`` (offsets written at byte ``offsets_at``) as a TorchBatch of views."""
    room = (body.numel() - offsets_at) // 8
    offsets_out = body[offsets_at : offsets_at + 8 * room].numpy().view(np.int64) if room > 0 else None
    b = _decode(r, offsets_out)
    layout: Dict[str, Tuple[int, torch.dtype, Tuple[int, ...]]] = {}
    for name in _FIELDS:
        arr = getattr(b, name)
        if arr is None:
            continue
        off = offsets_at if name == "offsets" and offsets_out is not None and np.shares_memory(arr, offsets_out) else b.layout.get(name, -1)
        if off < 0:
            # Not a view of the body (an unaligned array from another sender, no room for offsets): copies.
            raise _NotInBody()
        layout[name] = (off, _TORCH_DTYPES[arr.dtype], tuple(arr.shape))
    meta = {"seq": b.seq, "epoch": b.epoch, "rows": b.rows, "dense_names": b.dense_names, "keys": b.keys, "state": state}
    end = max(off + math.prod(shape) * _ITEMSIZE[dtype] for off, dtype, shape in layout.values())
    return TorchBatch(body, end, layout, meta, slot)


class _NotInBody(Exception):
    pass


def _copy_to_torch(b: Any, state: Any) -> TorchBatch:
    """A TorchBatch holding copies, for a body whose arrays cannot be viewed in place."""
    arrays = [(name, getattr(b, name)) for name in _FIELDS if getattr(b, name) is not None]
    total = sum(_round8(a.nbytes) for _, a in arrays)
    body = torch.empty(total, dtype=torch.uint8)
    layout: Dict[str, Tuple[int, torch.dtype, Tuple[int, ...]]] = {}
    at = 0
    raw = body.numpy()
    for name, a in arrays:
        raw[at : at + a.nbytes] = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
        layout[name] = (at, _TORCH_DTYPES[a.dtype], tuple(a.shape))
        at += _round8(a.nbytes)
    return TorchBatch(body, total, layout, {"seq": b.seq, "epoch": b.epoch, "rows": b.rows, "dense_names": b.dense_names, "keys": b.keys, "state": state})


class SluiceIterableDataset(torch.utils.data.IterableDataset):
    """``sluice serve``'s batches as a PyTorch IterableDataset of :class:`TorchBatch`.

    Rank ``r`` of ``world`` takes batches ``start + r + world * i``, and DataLoader worker ``w`` of
    ``k`` those with ``i % k == w``: ``DataLoader(ds, batch_size=None, num_workers=k)`` yields each
    of this rank's batches once, in order. ``rank``/``world`` default to torch.distributed's when it
    is initialised, else ``RANK``/``WORLD_SIZE``, else 0 of 1. ``token`` defaults to
    ``SLUICE_TOKEN``. ``urls`` may list several servers of the same plan (replicas, a cluster's
    entry points): each reader starts on a different one and moves on when one fails.
    ``prefetch`` is the requests a reader keeps ahead: by default 1 in this process, 0 in a
    DataLoader worker (the DataLoader reads ahead itself, ``prefetch_factor``).

    Call ``batch.release()`` when a step is done with a batch (``pin_memory=True`` does it for
    you): its worker then reads a later batch into the same shared memory (:mod:`sluice.shm`).

    ``state_dict()``/``load_state_dict()`` follow torchdata's Stateful convention; the state is
    the whole job's (``{version, job, seq, epoch, batches}``), so a restart with another number of
    workers or ranks resumes exactly. With worker processes, iterate through
    :class:`SluiceDataLoader` (or save ``batch.state``): only the loader sees which batches reached
    the training loop.

    Example::

        ds = SluiceIterableDataset("http://127.0.0.1:8080", token="T")
        loader = SluiceDataLoader(ds, num_workers=2, pin_memory=True)
        for b in loader:
            step(b.dense, b.to_kjt(), b.labels)
    """

    def __init__(
        self,
        urls: Union[str, Sequence[str]],
        token: Optional[str] = None,
        rank: Optional[int] = None,
        world: Optional[int] = None,
        start: int = 0,
        *,
        prefetch: Optional[int] = None,
        retries: int = 5,
        retry_delay: float = 0.1,
        timeout: float = 60.0,
    ) -> None:
        super().__init__()
        self.client = Client(urls, token, retries=retries, retry_delay=retry_delay, timeout=timeout)
        if rank is None and world is None and torch.distributed.is_available() and torch.distributed.is_initialized():
            rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
        self.rank, self.world = rank_world(rank, world)
        if not isinstance(start, int) or isinstance(start, bool) or start < 0:
            raise SluiceError(f"start must be a non-negative integer, got {start!r}")
        if prefetch is not None and (not isinstance(prefetch, int) or prefetch < 0):
            raise SluiceError(f"prefetch must be a non-negative integer, got {prefetch!r}")
        self.prefetch = prefetch
        self._base = start
        self._next = start
        # Flags of the shared memory that workers recycle (see sluice.shm).
        self._pool_id, self._pool_flags = shm.new_flags(self)
        # Set to 1 by the worker processes of a plain DataLoader (shared memory, inherited by them):
        # this process then cannot know which batches reached the loop, and state_dict() says so.
        self._in_workers: Any = multiprocessing.RawValue("b", 0)
        # True in the copies SluiceDataLoader's workers get: that loader does the counting.
        self._via_loader = False

    def __getstate__(self) -> Dict[str, Any]:
        d = dict(self.__dict__)
        if multiprocessing.context.get_spawning_popen() is None:
            d["_in_workers"] = d["_pool_flags"] = None  # shared memory crosses only to a child being started
        return d

    def _state_at(self, seq: int) -> Dict[str, Any]:
        info = self.client.info()
        return make_state(self.client.job, seq, int(info["batches"]), int(info.get("epochs", 1)))

    def __iter__(self) -> Iterator[TorchBatch]:
        wi = torch.utils.data.get_worker_info()
        worker, workers = (wi.id, wi.num_workers) if wi is not None else (0, 1)
        if self._in_workers is not None:
            self._in_workers.value = 1 if wi is not None and not self._via_loader else 0
        info = self.client.info()
        # Room after the body for the int64 offsets of the largest batch.
        extra = 8 * (len(info["sparse"]["keys"]) * int(info["batchSize"]) + 1)
        base, world, rank = self._base, self.world, self.rank
        pool = shm.WorkerPool.of(self._pool_id, self._pool_flags, worker) if wi is not None else None
        reader = rank * workers + worker
        if wi is None:
            self._next = base

        def fetch(seq: int) -> Optional[TorchBatch]:
            held: List[Tuple[torch.Tensor, Optional[shm.Slot]]] = []

            def into(n: int) -> np.ndarray:
                if pool is None:
                    t, slot = torch.empty(_round8(n) + extra, dtype=torch.uint8), None
                else:
                    if held:
                        pool.give_back(held[-1][1])  # a retry reads the body again: the first try's slot is free
                    t, slot = pool.take(_round8(n) + extra)
                held.append((t, slot))
                return t.numpy()

            try:
                r = self.client.batch_body(seq, into, primary=reader)
                if r is None:
                    if held and pool is not None:
                        pool.give_back(held[-1][1])
                    return None
                # This batch is the rank's i-th: the job has taken base .. base + world * (i + 1) - 1 after it.
                i = (seq - base - rank) // world
                after = self._state_at(base + world * (i + 1))
                body, slot = held[-1]
                try:
                    return _to_torch(r, body, _round8(r.size), after, slot)
                except _NotInBody:
                    if pool is not None:
                        pool.give_back(slot)
                    return _copy_to_torch(_decode(r), after)
            except BaseException:
                if held and pool is not None:
                    pool.give_back(held[-1][1])
                raise

        # A DataLoader's workers already read ahead (prefetch_factor); a thread of their own would
        # only contend for the GIL. Read in this process, one request ahead overlaps the network.
        prefetch = self.prefetch if self.prefetch is not None else (0 if wi is not None else 1)
        for b in ordered(fetch, reader_seqs(base, rank, world, worker, workers), prefetch, TorchBatch.release):
            if wi is None:
                self._note(b)
            yield b

    def _note(self, b: TorchBatch) -> None:
        """The loop has batch ``b``: the state moves past it (in-process iteration, SluiceDataLoader)."""
        if b.state is not None:
            self._next = b.state["seq"]

    def state_dict(self) -> Dict[str, Any]:
        """The job's position after the batches this rank's loop has taken: ``{version, job, seq, epoch, batches}``.

        Example::

            torch.save({"model": model.state_dict(), "data": ds.state_dict()}, "ckpt.pt")
        """
        if self._in_workers is not None and self._in_workers.value:
            raise StateError(
                "this dataset was read by DataLoader worker processes, so this process cannot tell which batches reached "
                "the loop: iterate it with sluice.torch.SluiceDataLoader, or save the last batch's .state"
            )
        return self._state_at(self._next)

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """The next iteration starts where ``state`` left off; call it before creating the loader's iterator.

        Example::

            ds.load_state_dict(torch.load("ckpt.pt")["data"])
        """
        seq = check_state(state)
        check_job(state, self.client.job, self.client.urls[0])
        self._base = self._next = seq
        if self._in_workers is not None:
            self._in_workers.value = 0


class SluiceDataLoader(torch.utils.data.DataLoader):
    """A DataLoader over a :class:`SluiceIterableDataset` (``batch_size=None``: the batches are
    made) that notes each batch it hands to the loop, so ``state_dict()`` is exact with worker processes.

    Example::

        loader = SluiceDataLoader(ds, num_workers=2, pin_memory=True)
        for step, b in enumerate(loader):
            ...
            if step % 1000 == 0: torch.save({"data": loader.state_dict()}, "ckpt.pt")
    """

    def __init__(self, dataset: SluiceIterableDataset, num_workers: int = 0, pin_memory: bool = False, **kwargs: Any) -> None:
        if not isinstance(dataset, SluiceIterableDataset):
            raise SluiceError(f"SluiceDataLoader takes a SluiceIterableDataset, got {type(dataset).__name__}")
        if kwargs.get("batch_size") is not None:
            raise SluiceError("the server makes the batches: SluiceDataLoader takes no batch_size (set batchSize in the plan)")
        kwargs["batch_size"] = None
        super().__init__(dataset, num_workers=num_workers, pin_memory=pin_memory, **kwargs)

    def __iter__(self) -> Iterator[TorchBatch]:  # type: ignore[override]
        ds: SluiceIterableDataset = self.dataset  # type: ignore[assignment]
        started = getattr(self, "_sluice_started_at", None)
        if self.persistent_workers and started is not None and started != ds._base:
            # Persistent workers keep the dataset copy they were started with, and its start.
            raise StateError(
                "load_state_dict() after this loader's persistent workers started does not reach them: make a new SluiceDataLoader"
            )
        ds._next = ds._base
        if ds._in_workers is not None:
            ds._in_workers.value = 0
        # The workers start (and copy the dataset) when the iterator is made: their copies know
        # this loader counts, and the dataset itself goes back to not knowing for any other loader.
        ds._via_loader = True
        try:
            it = super().__iter__()
        finally:
            ds._via_loader = False
        self._sluice_started_at = ds._base
        for b in it:
            ds._note(b)
            yield b

    def state_dict(self) -> Dict[str, Any]:
        """The dataset's resume state after the last batch this loader yielded.

        Example::

            ckpt = {"data": loader.state_dict()}
        """
        return self.dataset.state_dict()  # type: ignore[attr-defined,no-any-return]

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Resume from ``state`` at the next ``iter()`` (any number of workers or ranks).

        Example::

            loader.load_state_dict(ckpt["data"])
        """
        self.dataset.load_state_dict(state)  # type: ignore[attr-defined]
