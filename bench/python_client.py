#!/usr/bin/env python3
"""The Python client's throughput against the TypeScript client's, over loopback, in one run.

One `sluice serve` serves RM1 batches (8,192 rows by default) of a run small enough that every
encoded body stays in the server's cache (32 batches) once it has been read: after a warm-up, both
clients read the same bodies from memory, so what is measured is the client and the transport, not
the pipeline making batches. Each contender is a process of its own that reads every batch of the
run `--passes` times after one untimed pass (DataLoader workers start then), and the contenders
take turns, `--rounds` times, in alternating order. The figure is the median batches/s of each,
and the ratio of the DataLoader with 2 workers to the TS client (issue 33's target: >= 0.8x).

  npm run bench:python                                  # builds, then runs this with /usr/bin/python3
  /usr/bin/python3 bench/python_client.py [--rows 196608] [--batch-size 8192] [--rounds 5]
      [--passes 3] [--workers 2] [--json]

Contenders: the TS client (`@sluice/client`, `batches()` with its default prefetch of 2, each
batch released after use), `DataLoader(SluiceIterableDataset, batch_size=None, num_workers=2,
pin_memory=True, persistent_workers=True)`, and for context the same with no worker processes and
the numpy `SluiceBatches` (prefetch 1). Needs Node and the built repository (`npm run build`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parents[1]
SLUICE = ROOT / "packages" / "core" / "bin" / "sluice.js"
sys.path.insert(0, str(ROOT / "clients" / "python"))

# The TS client's loop: one untimed pass, then `passes` timed ones; prints batches, seconds and CPU seconds.
TS_CHILD = """
import { createClient } from '@sluice/client';
const [url, passes] = process.argv.slice(1);
const c = createClient(url);
const pass = async () => { let n = 0; for await (const b of c.batches()) { n++; b.release?.(); } return n; };
await pass();
const t0 = performance.now();
const cpu0 = process.cpuUsage();
let n = 0;
for (let p = 0; p < Number(passes); p++) n += await pass();
const cpu = process.cpuUsage(cpu0);
console.log(JSON.stringify({ batches: n, seconds: (performance.now() - t0) / 1000, cpu_seconds: (cpu.user + cpu.system) / 1e6 }));
await c.close();
"""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def node() -> str:
    exe = os.environ.get("NODE") or shutil.which("node")
    if exe is None:
        sys.exit("error: the benchmark needs Node (node on PATH, or NODE=...) to run sluice serve and the TS client")
    if not SLUICE.exists():
        sys.exit(f"error: {SLUICE} is missing: run `npm run build` first")
    return exe


def sluice(*args: str) -> str:
    p = subprocess.run([node(), str(SLUICE), *args], cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"error: sluice {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout


def dataset(rows: int) -> Path:
    """Seeded RM1 rows in the benchmarks' cache, generated once (as bench/lib.ts does)."""
    cache = Path(os.environ.get("SLUICE_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sluice") / "bench"
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / f"rm1-r{rows}-s42-g100000.parquet"
    if not out.exists():
        log(f"generating {rows:,} RM1 rows into {out}")
        tmp = out.with_name(out.name + f".tmp-{os.getpid()}")
        sluice("gen", "--preset", "rm1", "--rows", str(rows), "--out", str(tmp), "--seed", "42", "--row-group-size", "100000", "--quiet")
        tmp.rename(out)
    return out


class Server:
    def __init__(self, plan: Path, data: Path) -> None:
        self.proc = subprocess.Popen([node(), str(SLUICE), "serve", "--plan", str(plan), "--input", str(data), "--port", "0"], cwd=ROOT, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        if " at http://" not in line:
            sys.exit(f"error: sluice serve did not start: {line.strip()} {self.proc.stderr.read().strip()}")
        self.url = line.split(" at ", 1)[1].split("/v1/", 1)[0].strip()
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(15)


def child(mode: str, url: str, passes: int, workers: int) -> Dict[str, Any]:
    """One contender in a process of its own; its JSON result."""
    if mode == "ts":
        args = [node(), "--input-type=module", "-e", TS_CHILD, url, str(passes)]
    else:
        args = [sys.executable, __file__, "--child", mode, "--url", url, "--passes", str(passes), "--workers", str(workers)]
    p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"error: the {mode} contender failed: {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_child(mode: str, url: str, passes: int, workers: int) -> None:
    """The Python contenders' loops: one untimed pass, then `passes` timed ones."""
    if mode == "numpy":
        from sluice import SluiceBatches

        it: Any = SluiceBatches(url, rank=0, world=1, prefetch=1)
    else:
        from torch.utils.data import DataLoader

        from sluice.torch import SluiceIterableDataset

        ds = SluiceIterableDataset(url, rank=0, world=1)
        it = DataLoader(ds, batch_size=None, num_workers=workers, pin_memory=True, persistent_workers=workers > 0)
    def one_pass() -> int:
        n = 0
        for b in it:
            n += 1
            # As the TS loop does: done with the batch, so its memory may hold a later one.
            if hasattr(b, "release"):
                b.release()
        return n

    t_start = time.perf_counter()
    one_pass()
    first = time.perf_counter() - t_start
    # The loop's processes: this one and the DataLoader's workers (alive between passes).
    workers = getattr(getattr(it, "_iterator", None), "_workers", [])
    pids = [os.getpid(), *(w.pid for w in workers)]
    cpu0, t0 = cpu_seconds(pids), time.perf_counter()
    n = sum(one_pass() for _ in range(passes))
    seconds = time.perf_counter() - t0
    print(json.dumps({"batches": n, "seconds": seconds, "cpu_seconds": cpu_seconds(pids) - cpu0, "first_pass_seconds": first}))


def cpu_seconds(pids: List[int]) -> float:
    """User + system CPU time of the processes so far (Linux /proc)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=196608, help="RM1 rows (default 196,608: 24 batches of 8,192)")
    ap.add_argument("--batch-size", type=int, default=8192)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--passes", type=int, default=3, help="timed passes over the run per measurement")
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers of the main contender")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        run_child(a.child, a.url, a.passes, a.workers)
        return 0
    batches = -(-a.rows // a.batch_size)
    if batches > 32:
        sys.exit(f"error: {batches} batches would not all stay in the server's cache (32): lower --rows or raise --batch-size")

    data = dataset(a.rows)
    plan = json.loads(sluice("plan", "--preset", "rm1"))
    plan.update(batchSize=a.batch_size, backend={"name": "reference"})
    plan_file = ROOT / "scratch" / f"bench-python-plan-{os.getpid()}.json"
    plan_file.parent.mkdir(exist_ok=True)
    plan_file.write_text(json.dumps(plan))
    server = Server(plan_file, data)
    try:
        from sluice import Client

        c = Client(server.url)
        log(f"server {server.url}: {c.info()['batches']} batches; making them once (the warm-up)")
        body_bytes = [c.batch_body(s).size for s in range(batches)]
        mb = statistics.mean(body_bytes) / 1e6
        contenders = [("ts", "TS client (@sluice/client, prefetch 2)", 0), ("loader", f"DataLoader, {a.workers} workers", a.workers)]
        context = [("loader", "DataLoader, 0 workers", 0), ("numpy", "numpy SluiceBatches, prefetch 1", 0)]
        rates: Dict[str, List[float]] = {name: [] for _, name, _ in contenders + context}
        cpu_ms: Dict[str, List[float]] = {name: [] for _, name, _ in contenders + context}
        for r in range(a.rounds):
            order = contenders if r % 2 == 0 else contenders[::-1]
            for mode, name, workers in order + context:
                got = child(mode, server.url, a.passes, workers)
                rates[name].append(got["batches"] / got["seconds"])
                cpu_ms[name].append(1e3 * got["cpu_seconds"] / got["batches"])
                log(f"round {r + 1}/{a.rounds}: {name}: {rates[name][-1]:.1f} batches/s, client CPU {cpu_ms[name][-1]:.2f} ms/batch")
    finally:
        server.stop()
        plan_file.unlink(missing_ok=True)

    ts_name, main_name = contenders[0][1], contenders[1][1]
    med = {k: statistics.median(v) for k, v in rates.items()}
    cpu = {k: statistics.median(v) for k, v in cpu_ms.items()}
    per_round = [p / t for p, t in zip(rates[main_name], rates[ts_name])]
    ratio = med[main_name] / med[ts_name]
    host = f"{platform.node()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, Python {platform.python_version()}"
    if a.json:
        print(json.dumps({"bench": "python_client", "host": host, "batchRows": a.batch_size, "bodyMB": mb, "batches": batches, "medianBatchesPerSecond": med, "medianClientCpuMsPerBatch": cpu, "ratio": ratio, "ratioPerRound": per_round}))
        return 0
    print(f"\npython_client.py: RM1 batches of {a.batch_size:,} rows ({mb:.2f} MB msgpack), {batches} per pass, served from the server's cache over loopback")
    print(f"{host}; median of {a.rounds} rounds x {a.passes} passes\n")
    w = max(len(k) for k in med)
    print(f"{'contender':<{w}}  {'batches/s':>9}  {'MB/s':>7}  {'vs TS':>6}  {'client CPU ms/batch':>19}")
    print(f"{'-' * w}  {'-' * 9}  {'-' * 7}  {'-' * 6}  {'-' * 19}")
    for name, v in med.items():
        print(f"{name:<{w}}  {v:9.1f}  {v * mb:7.0f}  {v / med[ts_name]:5.2f}x  {cpu[name]:19.2f}")
    print(f"\n{main_name} / TS client: {ratio:.2f}x (per round: {', '.join(f'{x:.2f}' for x in per_round)}); target >= 0.80x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
