#!/usr/bin/env python3
"""Trains a small DLRM-style model (a bottom MLP on the dense features, one embedding bag per
sparse key, DLRM's pairwise dot interaction, a top MLP) on the batches of a `sluice serve`,
printing the loss per step; checkpoints and resumes, data position included.

  npx sluice gen --preset rm1 --rows 20000 --out rm1.parquet
  npx sluice plan --preset rm1 > plan.json          # then set "batchSize": 512, "epochs": 2
  npx sluice serve --plan plan.json --input rm1.parquet --port 8080 &
  /usr/bin/python3 examples/train_torch.py http://127.0.0.1:8080 [--workers 2] [--token T]
      [--checkpoint ckpt.pt [--save-every 20] [--stop-after N] [--resume]]

With --checkpoint, the model, the optimiser and the loader's resume state are saved every
--save-every steps; --stop-after N stops after N steps (as a crash would, after a save), and
--resume continues from the checkpoint with the next batch, whatever --workers is then.

The generated data's labels are random (about 25% positive), so the loss falls from ln 2 to about
the labels' entropy (0.57) as the model learns the base rate, and lower as it memorises ids.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# The package from this checkout, when it is not installed (pip install ./clients/python).
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "clients" / "python"))

try:
    import torch
    from torch import nn
except ImportError:
    sys.exit("error: this example needs PyTorch: apt-get install python3-torch, or pip install torch")

from sluice import SluiceError
from sluice.torch import SluiceDataLoader, SluiceIterableDataset, TorchBatch

BUCKETS = 4096  # hashed rows per key's table
DIM = 8  # embedding width


class DLRM(nn.Module):
    """DLRM (Naumov et al., 2019) in miniature: all keys' tables in one EmbeddingBag, offset per key."""

    def __init__(self, dense_dim: int, keys: int) -> None:
        super().__init__()
        self.keys = keys
        self.bottom = nn.Sequential(nn.Linear(dense_dim, 32), nn.ReLU(), nn.Linear(32, DIM), nn.ReLU())
        self.tables = nn.EmbeddingBag(keys * BUCKETS, DIM, mode="sum", include_last_offset=True)
        pairs = (keys + 1) * keys // 2
        self.top = nn.Sequential(nn.Linear(DIM + pairs, 32), nn.ReLU(), nn.Linear(32, 1))
        self.register_buffer("triu", torch.triu_indices(keys + 1, keys + 1, offset=1), persistent=False)

    def forward(self, b: TorchBatch) -> torch.Tensor:
        rows = b.rows
        x = self.bottom(b.dense)
        # KJT layout: bag k*rows + r holds key k's ids of row r; ids hash into key k's share of the table.
        per_key = b.offsets[rows :: rows] - b.offsets[0 : -1 : rows]
        key_of_id = torch.repeat_interleave(torch.arange(self.keys, device=x.device), per_key)
        ids = torch.remainder(b.values, BUCKETS) + key_of_id * BUCKETS
        bags = self.tables(ids, b.offsets).view(self.keys, rows, DIM).transpose(0, 1)
        z = torch.cat([x.unsqueeze(1), bags], dim=1)
        dots = torch.bmm(z, z.transpose(1, 2))[:, self.triu[0], self.triu[1]]
        return self.top(torch.cat([x, dots], dim=1)).squeeze(1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url", nargs="+", help="base URL(s) of sluice serve (several: replicas of one plan)")
    ap.add_argument("--token", default=os.environ.get("SLUICE_TOKEN"))
    ap.add_argument("--workers", type=int, default=2, help="DataLoader worker processes (default 2)")
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--checkpoint", type=Path)
    ap.add_argument("--save-every", type=int, default=20)
    ap.add_argument("--stop-after", type=int, help="stop after this many steps (after saving a checkpoint)")
    ap.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    a = ap.parse_args()
    if a.resume and a.checkpoint is None:
        ap.error("--resume needs --checkpoint")

    torch.manual_seed(a.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    ds = SluiceIterableDataset(a.url, a.token)
    info = ds.client.info()
    model = DLRM(info["dense"]["dim"], len(info["sparse"]["keys"])).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    step = 0
    if a.resume:
        ckpt = torch.load(a.checkpoint)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        ds.load_state_dict(ckpt["data"])
        step = ckpt["step"]
        print(f"resumed at step {step}, batch {ckpt['data']['seq']} of {ckpt['data']['batches']} (epoch {ckpt['data']['epoch']})")

    loader = SluiceDataLoader(ds, num_workers=a.workers, pin_memory=device == "cuda")
    loss_fn = nn.BCEWithLogitsLoss()
    losses = []

    def save() -> None:
        if a.checkpoint is not None:
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "data": loader.state_dict(), "step": step}, a.checkpoint)

    for b in loader:
        b = b.to(device, non_blocking=True)
        loss = loss_fn(model(b), b.labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        losses.append(loss.item())
        print(f"step {step} batch {b.seq} epoch {b.epoch} loss {losses[-1]:.6f}", flush=True)
        if step % a.save_every == 0:
            save()
        if a.stop_after is not None and step >= a.stop_after:
            save()
            print(f"stopped after step {step}; --resume continues from batch {loader.state_dict()['seq']}")
            return 0
    save()
    if not losses:
        print("no batches left to train on")
        return 0
    k = max(1, min(10, len(losses) // 4))
    first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
    print(f"{len(losses)} steps: mean loss of the first {k} {first:.4f}, of the last {k} {last:.4f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SluiceError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
