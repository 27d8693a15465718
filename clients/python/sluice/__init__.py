"""Python client of ``sluice serve``: ready training batches over HTTP, as numpy arrays or, with
PyTorch, as an IterableDataset of TorchRec-shaped batches that resumes exactly.

- :class:`Client`, :class:`SluiceBatches`, :class:`Batch`: numpy only (``pip install numpy``);
- :class:`SluiceIterableDataset`, :class:`SluiceDataLoader`, :class:`TorchBatch`: in
  :mod:`sluice.torch`, also importable from here (loading torch on first use).

Example::

    from sluice import SluiceIterableDataset, SluiceDataLoader
    loader = SluiceDataLoader(SluiceIterableDataset("http://127.0.0.1:8080"), num_workers=2)
    for b in loader:
        train(b.dense, b.to_kjt(), b.labels)
"""

from typing import Any

from .batch import Batch
from .client import Client, SluiceBatches
from .errors import (
    AuthError,
    BadRequestError,
    HTTPError,
    NotFoundError,
    ProtocolError,
    ServerError,
    SluiceError,
    StateError,
    UnreachableError,
)

__version__ = "0.1.0"

_TORCH_NAMES = ("SluiceIterableDataset", "SluiceDataLoader", "TorchBatch")

__all__ = [
    "Batch",
    "Client",
    "SluiceBatches",
    "SluiceError",
    "HTTPError",
    "AuthError",
    "NotFoundError",
    "BadRequestError",
    "ServerError",
    "UnreachableError",
    "ProtocolError",
    "StateError",
    *_TORCH_NAMES,
]


def __getattr__(name: str) -> Any:
    # torch loads only for the names that need it, so numpy-only users never import it.
    if name in _TORCH_NAMES:
        try:
            from . import torch as _torch
        except ImportError as e:
            if getattr(e, "name", None) == "torch":
                raise ImportError(f"sluice.{name} needs PyTorch (pip install torch); sluice.SluiceBatches reads batches with numpy only") from None
            raise
        return getattr(_torch, name)
    raise AttributeError(f"module 'sluice' has no attribute {name!r}")
