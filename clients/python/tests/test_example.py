"""examples/train_torch.py against a real ``sluice serve``: the loss goes down, and a run stopped
after a checkpoint and resumed with another number of workers prints the same steps as one that
never stopped."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import List, Tuple

import pytest
from conftest import ROOT, TOKEN, Job, need

need("torch", "apt-get install python3-torch (or pip install torch)")

EXAMPLE = ROOT / "examples" / "train_torch.py"
STEP = re.compile(r"^step (\d+) batch (\d+) epoch (\d+) loss (\d+\.\d+)$", re.M)


@pytest.fixture(scope="module")
def example_server(tmp_path_factory):
    # 20,000 rows in batches of 512 for two shuffled epochs: 80 steps.
    job = Job(tmp_path_factory.mktemp("example"), rows=20000, batch_size=512, epochs=2, seed=1)
    s = job.serve()
    yield s
    s.stop()


def run(*args: str) -> Tuple[str, List[Tuple[int, int, int, float]]]:
    p = subprocess.run([sys.executable, str(EXAMPLE), *args, "--token", TOKEN], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout, [(int(a), int(b), int(c), float(d)) for a, b, c, d in STEP.findall(p.stdout)]


def test_the_loss_goes_down(example_server):
    out, steps = run(example_server.url, "--workers", "2")
    print(out)  # the run's output, for the record
    assert [s[1] for s in steps] == list(range(80)) and [s[0] for s in steps] == list(range(1, 81))
    losses = [s[3] for s in steps]
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    assert last < first - 0.03, f"loss {first:.4f} -> {last:.4f}"
    assert f"80 steps: mean loss of the first 10 {first:.4f}, of the last 10 {last:.4f}" in out


def test_a_stopped_run_resumes_where_it_stopped(example_server, tmp_path):
    ckpt = tmp_path / "ckpt.pt"
    _, full = run(example_server.url, "--workers", "2")
    out, before = run(example_server.url, "--workers", "2", "--checkpoint", str(ckpt), "--stop-after", "30")
    assert "stopped after step 30; --resume continues from batch 30" in out
    out, after = run(example_server.url, "--workers", "0", "--checkpoint", str(ckpt), "--resume")
    assert "resumed at step 30, batch 30 of 80 (epoch 0)" in out
    # The same batches in the same order, and (the model and optimiser restored too) the same losses.
    assert before + after == full


def test_a_wrong_token_is_one_line(example_server):
    p = subprocess.run([sys.executable, str(EXAMPLE), example_server.url, "--token", "wrong"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    assert p.stderr.strip() == f"error: {example_server.url}/v1/info: HTTP 401: missing or wrong bearer token (give the server's token: token=... or the SLUICE_TOKEN environment variable)"
