"""The numpy client: :class:`Client` (info, one batch, a stride of batches) and
:class:`SluiceBatches`, the resumable iterator over this rank's batches for users without torch."""

from __future__ import annotations

import itertools
import os
from concurrent.futures import Future, ThreadPoolExecutor
from collections import deque
from typing import Any, Callable, Deque, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, TypeVar, Union

import numpy as np

from .batch import Batch
from .errors import SluiceError
from .http import Alloc, Response, Transport, fail
from .state import check_job, check_state, job_id, make_state, reader_seqs
from .wire import decode_batch

T = TypeVar("T")

MSGPACK = "application/msgpack"


def _empty(n: int) -> np.ndarray:
    # Uninitialised memory: the body overwrites every byte, so zeroing it (bytearray) is wasted work.
    return np.empty(n, dtype=np.uint8)


class Client:
    """A connection to ``sluice serve`` (one URL, or several serving the same plan).

    ``token`` defaults to the ``SLUICE_TOKEN`` environment variable. Transient failures
    (connection errors, a body cut off, 5xx) are retried ``retries`` times with a back-off that
    starts at ``retry_delay`` seconds and doubles, moving to the next URL each time; redirects are
    followed (the bearer token goes along, so list only servers you trust).

    Example::

        c = Client("http://127.0.0.1:8080", token="T")
        print(c.info()["batches"])
        b = c.batch(0)                      # a Batch of numpy views, or None past the end
    """

    def __init__(
        self,
        urls: Union[str, Sequence[str]],
        token: Optional[str] = None,
        *,
        retries: int = 5,
        retry_delay: float = 0.1,
        timeout: float = 60.0,
    ) -> None:
        if token is None:
            token = os.environ.get("SLUICE_TOKEN") or None
        self.transport = Transport(urls, token, retries, retry_delay, timeout)
        self._info: Optional[Dict[str, Any]] = None
        self._job: Optional[str] = None

    @property
    def urls(self) -> List[str]:
        """The base URLs, in the order given.

        Example::

            Client("http://h:8080").urls   # ['http://h:8080']
        """
        return self.transport.urls

    def info(self) -> Dict[str, Any]:
        """``GET /v1/info`` (fetched once): ``batches``, ``batchSize``, ``epochs``, ``dense``, ``sparse``, ...

        With several URLs, each is asked and they must serve the same job.

        Example::

            info = c.info(); dim, keys = info["dense"]["dim"], info["sparse"]["keys"]
        """
        if self._info is None:
            infos = []
            for i, url in enumerate(self.urls):
                r = self.transport.get("/v1/info", "application/json", primary=i) if len(self.urls) > 1 else self.transport.get("/v1/info", "application/json")
                if r.status != 200:
                    raise fail(r, url)
                try:
                    infos.append((r.url, r.json()))
                except ValueError:
                    raise SluiceError(f"{r.url}: the answer is not JSON (is {url} a sluice serve?)") from None
            jobs = {job_id(i) for _, i in infos}
            if len(jobs) > 1:
                raise SluiceError(f"the URLs serve different jobs ({', '.join(f'{u}: {job_id(i)}' for u, i in infos)}): give servers of one plan and data set")
            self._info = infos[0][1]
        return self._info

    @property
    def job(self) -> str:
        """The served job's id (see :func:`sluice.state.job_id`).

        Example::

            c.job   # 'a3f1c2d4e5f60718'
        """
        if self._job is None:
            self._job = job_id(self.info())
        return self._job

    def batch_body(self, seq: int, alloc: Alloc = _empty, primary: int = 0) -> Optional[Response]:
        """Batch ``seq``'s msgpack body read into ``alloc(content_length)``, or None past the end.

        Example::

            r = c.batch_body(0); body = memoryview(r.body)[:r.size]
        """
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            raise SluiceError(f"seq must be a non-negative integer, got {seq!r}")
        r = self.transport.get(f"/v1/batches/{seq}", MSGPACK, alloc, primary)
        if r.status == 404:
            try:
                if r.json().get("end") is True:
                    return None
            except (ValueError, AttributeError):
                pass
        if r.status != 200:
            raise fail(r, self.urls[primary % len(self.urls)])
        return r

    def batch(self, seq: int, primary: int = 0) -> Optional[Batch]:
        """Batch ``seq`` as numpy arrays viewing its body, or None past the end of the run.

        Example::

            b = c.batch(3); b.dense.shape   # (8192, 13)
        """
        r = self.batch_body(seq, primary=primary)
        if r is None:
            return None
        return _decode(r)

    def batches(self, start: int = 0, step: int = 1, prefetch: int = 1) -> Iterator[Batch]:
        """Batches ``start, start + step, ...`` until the end, ``prefetch`` requests in flight.

        Example::

            for b in c.batches(start=rank, step=world): train(b)
        """
        if not isinstance(step, int) or step < 1:
            raise SluiceError(f"step must be a positive integer, got {step!r}")
        return ordered(lambda s: self.batch(s), itertools.count(start, step), prefetch)

    def close(self) -> None:
        """Closes this thread's connections (others close when their threads end).

        Example::

            c.close()
        """
        self.transport.close()


def _decode(r: Response, offsets_out: Optional[np.ndarray] = None) -> Batch:
    from .errors import ProtocolError

    try:
        b = decode_batch(r.body, r.size, offsets_out)
    except ProtocolError as e:
        raise ProtocolError(f"{r.url}: {e}") from None
    b.body = r.body
    return b


def ordered(fetch: Callable[[int], Optional[T]], seqs: Iterable[int], prefetch: int, discard: Optional[Callable[[T], None]] = None) -> Iterator[T]:
    """``fetch(seq)`` for each seq in order until one returns None, ``prefetch`` calls running ahead in threads.

    Results fetched ahead but never yielded (the loop stopped early) go to ``discard``.

    Example::

        for b in ordered(client.batch, range(0, 100, 4), prefetch=2): ...
    """
    if not isinstance(prefetch, int) or prefetch < 0:
        raise SluiceError(f"prefetch must be a non-negative integer, got {prefetch!r}")
    it = iter(seqs)
    if prefetch == 0:
        for s in it:
            got = fetch(s)
            if got is None:
                return
            yield got
        return
    pool = ThreadPoolExecutor(max_workers=prefetch, thread_name_prefix="sluice-fetch")
    ahead: Deque[Future] = deque()
    try:
        for s in itertools.islice(it, prefetch):
            ahead.append(pool.submit(fetch, s))
        while ahead:
            got = ahead.popleft().result()
            if got is None:
                return
            nxt = next(it, None)
            if nxt is not None:
                ahead.append(pool.submit(fetch, nxt))
            yield got
    finally:
        # Requests still in flight finish in their threads; their results and errors are dropped.
        for f in ahead:
            if not f.cancel() and discard is not None:
                f.add_done_callback(lambda done: _discard(done, discard))
        pool.shutdown(wait=False)


def _discard(f: "Future[Any]", discard: Callable[[Any], None]) -> None:
    if f.exception() is None and f.result() is not None:
        discard(f.result())


def rank_world(rank: Optional[int], world: Optional[int]) -> Tuple[int, int]:
    """This process's rank and the world size: as given, else ``RANK``/``WORLD_SIZE`` (torchrun sets them), else 0 of 1.

    Example::

        rank_world(None, None)   # (0, 1) outside torchrun
    """
    if rank is None and world is None:
        rank = int(os.environ.get("RANK", "0") or 0)
        world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    elif rank is None or world is None:
        raise SluiceError("give both rank and world, or neither")
    if not (isinstance(rank, int) and isinstance(world, int) and world >= 1 and 0 <= rank < world):
        raise SluiceError(f"rank and world must be integers with 0 <= rank < world, got rank={rank!r} world={world!r}")
    return rank, world


class SluiceBatches:
    """This rank's batches as numpy :class:`Batch` objects, resumable; for users without torch.

    Rank ``r`` of ``world`` takes batches ``start + r``, ``start + r + world``, ... (see
    :mod:`sluice.state`); ``state_dict()``/``load_state_dict()`` save and restore the position of
    the whole job, so a restart with another world size resumes exactly.

    Example::

        it = SluiceBatches("http://127.0.0.1:8080", rank=0, world=1)
        for step, b in enumerate(it):
            train(b.dense, b.values, b.offsets, b.labels)
            if step % 100 == 0: save(it.state_dict())
    """

    def __init__(
        self,
        urls: Union[str, Sequence[str]],
        token: Optional[str] = None,
        rank: Optional[int] = None,
        world: Optional[int] = None,
        start: int = 0,
        *,
        prefetch: int = 1,
        retries: int = 5,
        retry_delay: float = 0.1,
        timeout: float = 60.0,
    ) -> None:
        self.client = Client(urls, token, retries=retries, retry_delay=retry_delay, timeout=timeout)
        self.rank, self.world = rank_world(rank, world)
        if not isinstance(start, int) or isinstance(start, bool) or start < 0:
            raise SluiceError(f"start must be a non-negative integer, got {start!r}")
        if not isinstance(prefetch, int) or prefetch < 0:
            raise SluiceError(f"prefetch must be a non-negative integer, got {prefetch!r}")
        self.prefetch = prefetch
        self._base = start
        self._next = start

    def _state_at(self, seq: int) -> Dict[str, Any]:
        info = self.client.info()
        return make_state(self.client.job, seq, int(info["batches"]), int(info.get("epochs", 1)))

    def __iter__(self) -> Iterator[Batch]:
        base = self._base
        self._next = base
        taken = 0
        for b in ordered(lambda s: self.client.batch(s, primary=self.rank), reader_seqs(base, self.rank, self.world), self.prefetch):
            taken += 1
            self._next = base + self.world * taken
            b.state = self._state_at(self._next)
            yield b

    def state_dict(self) -> Dict[str, Any]:
        """The job's position after the batches this rank has taken: ``{version, job, seq, epoch, batches}``.

        Example::

            torch.save({"model": m.state_dict(), "data": it.state_dict()}, "ckpt.pt")
        """
        return self._state_at(self._next)

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """The next iteration starts where ``state`` left off (checked against the served job).

        Example::

            it.load_state_dict(torch.load("ckpt.pt")["data"])
        """
        seq = check_state(state)
        check_job(state, self.client.job, self.client.urls[0])
        self._base = self._next = seq
