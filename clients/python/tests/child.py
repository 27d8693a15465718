"""A fresh trainer process for the resume and distributed tests: reads batches and pickles them.

  python child.py OUT.pkl URL TOKEN WORKERS [--state STATE_JSON] [--rank R --world W] [--dist-port P]

With ``--dist-port`` it joins a gloo process group of ``--world`` ranks on that port, and the
dataset takes its rank and world from torch.distributed (RANK/WORLD_SIZE are unset first).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from check import as_numpy  # noqa: E402

from sluice.torch import SluiceDataLoader, SluiceIterableDataset  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("url")
ap.add_argument("token")
ap.add_argument("workers", type=int)
ap.add_argument("--state")
ap.add_argument("--rank", type=int)
ap.add_argument("--world", type=int)
ap.add_argument("--dist-port", type=int)
a = ap.parse_args()

if a.dist_port is not None:
    os.environ.pop("RANK", None)
    os.environ.pop("WORLD_SIZE", None)
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.dist_port}", rank=a.rank, world_size=a.world)
    ds = SluiceIterableDataset(a.url, a.token)
else:
    ds = SluiceIterableDataset(a.url, a.token, rank=a.rank, world=a.world)
if a.state:
    ds.load_state_dict(json.loads(a.state))
loader = SluiceDataLoader(ds, num_workers=a.workers, pin_memory=True)
got = [as_numpy(b) for b in loader]
Path(a.out).write_bytes(pickle.dumps({"rank": ds.rank, "world": ds.world, "batches": got, "state": loader.state_dict()}))
if a.dist_port is not None:
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
