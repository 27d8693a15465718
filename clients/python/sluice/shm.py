"""Shared memory that DataLoader workers read batch bodies into, recycled once the trainer is done.

A worker hands a batch to the training process in shared memory. Two costs come with a new
segment per batch: the kernel allocates and zeroes its pages as they are first written (on the
development VM ~10 ms for a 4.3 MB RM1 batch, more than reading it from the socket), and the
segment's file descriptor is passed to the trainer process (~0.5 ms of CPU between the two). So
each worker keeps a few segments, *slots*, and reuses one when the trainer has released its batch
(``TorchBatch.release()``, which ``pin_memory()`` calls itself once it has copied the batch). The
trainer process keeps each slot's segment mapped, so a batch in a reused slot crosses as a
reference to it: a few hundred bytes, no descriptor. Measurements: bench/README.md, "python_client.py".

The slots' states live in an array of int64 in shared memory, made with the dataset and inherited
by its workers; ``token`` names one segment of one worker process:

- ``0``: free;
- ``token``: a batch in this segment is in flight or held by the trainer;
- ``-token``: released by the trainer, which holds this segment mapped (a reference will do).

A worker takes only a slot that is not in use, and sends a reference only when the trainer's own
release says it holds that very segment; everything else crosses whole. A batch never released
keeps its slot, and its worker makes new segments when it has no free slot.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import uuid
import weakref
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import torch

SLOTS_PER_WORKER = 8  # batches a worker may have in flight or held by the trainer, and still recycle
MAX_POOLED_WORKERS = 64  # workers beyond this one make a new segment per batch


class Slot(NamedTuple):
    """Where a batch's segment sits: the pool, the slot's index, the segment's token, and whether
    the trainer process already holds the segment (then the batch crosses as a reference)."""

    pool: str
    index: int
    token: int
    mapped: bool


# In the process that made a pool (the trainer's): its flags, and each slot's segment as received.
_FLAGS: Dict[str, Any] = {}
_MAPPED: Dict[Tuple[str, int], Tuple[int, torch.Tensor]] = {}
# In a worker process: its pools, kept across iterations of the dataset.
_POOLS: Dict[Tuple[str, int], "WorkerPool"] = {}


def new_flags(owner: object) -> Tuple[str, Any]:
    """A pool id and its flags in shared memory, forgotten (with the segments mapped for it) when ``owner`` is.

    Example::

        self._pool_id, self._pool_flags = new_flags(self)   # in the dataset, before workers start
    """
    pool_id = uuid.uuid4().hex
    flags = multiprocessing.RawArray("q", SLOTS_PER_WORKER * MAX_POOLED_WORKERS)
    _FLAGS[pool_id] = flags
    weakref.finalize(owner, _forget, pool_id)
    return pool_id, flags


def _forget(pool_id: str) -> None:
    _FLAGS.pop(pool_id, None)
    for key in [k for k in _MAPPED if k[0] == pool_id]:
        del _MAPPED[key]


def release(slot: Optional[Slot]) -> None:
    """The trainer is done with the batch in ``slot``: its worker may reuse the segment (no-op for None or another process's pool).

    Example::

        release(batch_slot)
    """
    if slot is None:
        return
    flags = _FLAGS.get(slot.pool)
    if flags is not None:
        got = _MAPPED.get((slot.pool, slot.index))
        flags[slot.index] = -slot.token if got is not None and got[0] == slot.token else 0


def received(slot: Slot, body: torch.Tensor) -> None:
    """Keeps the segment of a batch that arrived whole, for references to it later.

    Example::

        received(slot, buffer)   # while unpickling in the trainer process
    """
    if slot.pool in _FLAGS:
        _MAPPED[(slot.pool, slot.index)] = (slot.token, body)


def mapped(slot: Slot) -> torch.Tensor:
    """The segment a reference names (it arrived whole before: see the module's comment).

    Example::

        buffer = mapped(slot)
    """
    got = _MAPPED.get((slot.pool, slot.index))
    if got is None or got[0] != slot.token:
        # Cannot happen while release() is the only writer of -token; refuse rather than read other memory.
        raise RuntimeError(f"sluice: shared-memory slot {slot.index} holds no segment {slot.token:x} in this process")
    return got[1]


def shared_bytes(n: int) -> torch.Tensor:
    """``n`` bytes of new shared memory as a uint8 tensor.

    Example::

        t = shared_bytes(1 << 20); t.is_shared()   # True
    """
    storage_cls = getattr(torch, "UntypedStorage", None)
    new_shared = getattr(storage_cls, "_new_shared", None)
    if new_shared is not None:
        return torch.empty(0, dtype=torch.uint8).set_(new_shared(n))
    return torch.empty(n, dtype=torch.uint8).share_memory_()


class WorkerPool:
    """A worker's slots: segments it reads bodies into and takes again once they are released.

    Example::

        pool = WorkerPool.of(pool_id, flags, worker=0)
        buffer, slot = pool.take(4_300_000)
    """

    def __init__(self, pool_id: str, flags: Any, worker: int) -> None:
        self.pool_id = pool_id
        self.flags = flags
        self.base = worker * SLOTS_PER_WORKER
        self.enabled = flags is not None and worker < MAX_POOLED_WORKERS
        self.bufs: List[Optional[torch.Tensor]] = [None] * SLOTS_PER_WORKER
        self.tokens = [0] * SLOTS_PER_WORKER
        self.made = 0
        self.lock = threading.Lock()

    @classmethod
    def of(cls, pool_id: str, flags: Any, worker: int) -> "WorkerPool":
        """This process's pool for the worker (made once, then kept across iterations).

        Example::

            WorkerPool.of(pool_id, flags, 0) is WorkerPool.of(pool_id, flags, 0)   # True
        """
        key = (pool_id, worker)
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = cls(pool_id, flags, worker)
        return pool

    def take(self, n: int) -> Tuple[torch.Tensor, Optional[Slot]]:
        """A segment of at least ``n`` bytes and its slot (None when every slot is in use).

        Example::

            buffer, slot = pool.take(n)
        """
        if self.enabled:
            with self.lock:
                for i in range(SLOTS_PER_WORKER):
                    state = self.flags[self.base + i]
                    if state > 0:
                        continue
                    buf = self.bufs[i]
                    if buf is None or buf.numel() < n:
                        # Room for a somewhat larger batch later (bodies vary with their ids).
                        buf = self.bufs[i] = shared_bytes(n + n // 4)
                        self.made += 1
                        self.tokens[i] = (os.getpid() << 24) | (self.made & 0xFFFFFF)
                    token = self.tokens[i]
                    self.flags[self.base + i] = token
                    return buf, Slot(self.pool_id, self.base + i, token, state == -token)
        return shared_bytes(n), None

    def give_back(self, slot: Optional[Slot]) -> None:
        """Frees a slot this worker took but did not send (a failed or retried request).

        Example::

            pool.give_back(slot)
        """
        if slot is not None and slot.pool == self.pool_id:
            self.flags[slot.index] = -slot.token if slot.mapped else 0
