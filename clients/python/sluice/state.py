"""Which batches a reader takes, and the resume state: small, global, independent of ranks and workers.

The server numbers every batch of the run (all epochs) ``0, 1, 2, ...``. Reading from ``base``,
rank ``r`` of ``world`` takes the batches ``base + r + world * i`` (``i = 0, 1, ...``), and
DataLoader worker ``w`` of ``k`` takes those ``i`` with ``i % k == w``; the DataLoader asks its
workers in turn, so each rank sees its batches in order.

Data-parallel ranks step together, so after each rank has taken ``c`` batches the whole job has
taken ``base .. base + world * c - 1``: the state is that next seq, which means the same whatever
the number of ranks and workers that read it, and a restart with other numbers resumes exactly.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, Iterator, Mapping

from .errors import StateError

STATE_VERSION = 1

# What /v1/info says that decides the batches' content; the backend is left out because every
# backend's batches are bit-identical.
_JOB_FIELDS = ("batchSize", "batches", "rowsPerEpoch", "epochs", "dropLast", "shuffle", "label", "features", "dense", "sparse")


def job_id(info: Mapping[str, Any]) -> str:
    """A short fingerprint of the served job (the plan's shape and data), or the server's own ``job`` id.

    Example::

        job_id(client.info())   # 'a3f1c2...' (16 hex digits)
    """
    if isinstance(info.get("job"), str) and info["job"]:
        return info["job"]
    canon = json.dumps({k: info.get(k) for k in _JOB_FIELDS}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()[:16]


def reader_seqs(base: int, rank: int, world: int, worker: int = 0, workers: int = 1) -> Iterator[int]:
    """The seqs one reader asks for, in order (unbounded: the server's end marker stops it).

    Example::

        list(itertools.islice(reader_seqs(0, 1, 2, 0, 2), 3))   # [1, 5, 9]
    """
    seq = base + rank + world * worker
    step = world * workers
    while True:
        yield seq
        seq += step


def make_state(job: str, seq: int, batches: int, epochs: int) -> Dict[str, Any]:
    """The resume state whose next batch is ``seq`` (clamped to the end of the run).

    Example::

        make_state("a3f1", 12, 20, 2)   # {'version': 1, 'job': 'a3f1', 'seq': 12, 'epoch': 1, 'batches': 20}
    """
    seq = min(seq, batches)
    per_epoch = max(1, batches // max(1, epochs))
    return {"version": STATE_VERSION, "job": job, "seq": seq, "epoch": min(seq // per_epoch, epochs), "batches": batches}


def check_state(state: Any) -> int:
    """The next seq of a state from :func:`make_state`, or a StateError naming what is wrong.

    Example::

        check_state({"version": 1, "job": "a3f1", "seq": 12, "epoch": 1, "batches": 20})   # 12
    """
    if not isinstance(state, Mapping):
        raise StateError(f"a resume state is a dict from state_dict(), got {type(state).__name__}")
    if state.get("version") != STATE_VERSION:
        raise StateError(f"resume state version {state.get('version')!r} is not {STATE_VERSION} (was it saved by state_dict()?)")
    seq = state.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise StateError(f"resume state seq must be a non-negative integer, got {seq!r}")
    if not isinstance(state.get("job"), str):
        raise StateError("resume state has no job id")
    return seq


def check_job(state: Mapping[str, Any], job: str, where: str) -> None:
    """Refuses a state saved against another job: another plan or data would give other batches.

    Example::

        check_job(saved, job_id(client.info()), client.urls[0])
    """
    if state["job"] != job:
        raise StateError(
            f"the resume state was saved for job {state['job']} but {where} serves job {job}: another plan or data set, "
            "whose batches at the same seq are different ones"
        )
