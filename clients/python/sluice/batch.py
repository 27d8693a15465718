"""One batch as numpy arrays, in the layout TorchRec's KeyedJaggedTensor takes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np


@dataclass
class Batch:
    """One batch of ``rows`` rows; the arrays view the response body they were read into.

    - ``dense``: float32 ``[rows, dim]``, columns named by ``dense_names``;
    - ``keys``, ``lengths`` (int32, key-major: ``lengths[k * rows + r]`` ids of key ``k`` in row ``r``),
      ``values`` (int64 ids, key-major then row-major) and ``offsets`` (int64, ``len(lengths) + 1``
      entries, ``offsets[i + 1] - offsets[i] == lengths[i]``): a KeyedJaggedTensor's fields;
    - ``labels``: float32 ``[rows]``, or None when the plan has no label;
    - ``seq``: the batch's number in the whole run (epochs included), ``epoch``: its plan epoch.

    Example::

        b = client.batch(0)
        ids_of_key_2_row_5 = b.ids(2, 5)
        per_key = b.lengths_by_key()      # int32 [keys, rows]
    """

    seq: int
    epoch: int
    rows: int
    dense_names: List[str]
    dense: np.ndarray
    keys: List[str]
    lengths: np.ndarray
    values: np.ndarray
    offsets: np.ndarray
    labels: Optional[np.ndarray]
    #: Byte offset of each array in ``body`` (-1 where it is a copy), for views in other frameworks.
    layout: Dict[str, int] = field(default_factory=dict, repr=False)
    #: The buffer the response was read into; the arrays view it.
    body: Any = field(default=None, repr=False)
    #: The job's resume state after this batch (set by the iterators; see ``state_dict()``).
    state: Optional[Dict[str, Any]] = field(default=None, repr=False)

    def __repr__(self) -> str:
        return f"Batch(seq={self.seq}, epoch={self.epoch}, rows={self.rows}, dense={self.dense.shape}, keys={len(self.keys)}, ids={self.values.size})"

    def lengths_by_key(self) -> np.ndarray:
        """``lengths`` as an int32 ``[keys, rows]`` view.

        Example::

            nnz_per_key = b.lengths_by_key().sum(axis=1)
        """
        return self.lengths.reshape(len(self.keys), self.rows)

    def key_offsets(self) -> np.ndarray:
        """Where each key's ids start and end in ``values``: ``len(keys) + 1`` int64 entries.

        Example::

            ko = b.key_offsets(); ids_of_key_k = b.values[ko[k]:ko[k + 1]]
        """
        return self.offsets[:: self.rows] if self.rows else np.zeros(len(self.keys) + 1, dtype=np.int64)

    def ids(self, key: int, row: int) -> np.ndarray:
        """The ids of key number ``key`` in row ``row`` (a view).

        Example::

            b.ids(b.keys.index("C1"), 0)   # array([8123], dtype=int64)
        """
        i = key * self.rows + row
        return self.values[self.offsets[i] : self.offsets[i + 1]]
