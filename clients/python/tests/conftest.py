"""Fixtures: a seeded RM1 data set, real ``sluice serve`` processes on free loopback ports, and
``sluice run``'s output for the same plan as the oracle every batch is compared with.

Node runs the CLI: ``$NODE`` or ``node`` on PATH, from the repository this file sits in (built:
``npm install`` builds it). The tests need numpy; the torch ones skip without torch, except
under ``CI=true``, where a missing module fails the run instead.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[3]
PKG = ROOT / "clients" / "python"
SLUICE = ROOT / "packages" / "core" / "bin" / "sluice.js"
TOKEN = "sekret"

if str(PKG) not in sys.path:
    sys.path.insert(0, str(PKG))


def need(module: str, install: str) -> Any:
    """Imports ``module``, or skips the calling test module with the reason (fails under CI=true)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        why = f"{module} is not importable by {sys.executable} ({e}); {install}"
        if os.environ.get("CI") == "true":
            raise RuntimeError(f"CI=true and {why}") from None
        pytest.skip(why, allow_module_level=True)


def node() -> str:
    exe = os.environ.get("NODE") or shutil.which("node")
    if exe is None:
        raise RuntimeError("the tests start `sluice serve` with Node: put node on PATH or set NODE")
    if not SLUICE.exists():
        raise RuntimeError(f"{SLUICE} is missing: run `npm install` (it builds) in {ROOT}")
    return exe


def sluice(*args: str, timeout: float = 120) -> str:
    """Runs the sluice CLI; its stderr in the exception when it fails."""
    p = subprocess.run([node(), str(SLUICE), *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"sluice {' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def rm1_plan(batch_size: int, epochs: int, seed: int) -> Dict[str, Any]:
    plan = json.loads(sluice("plan", "--preset", "rm1"))
    # The in-process reference backend: a server starts no worker pool, and every backend's batches are identical.
    plan.update(batchSize=batch_size, epochs=epochs, shuffle={"seed": seed, "bufferRows": 1000}, backend={"name": "reference"})
    return plan


class Server:
    """A ``sluice serve`` child process on a free loopback port."""

    def __init__(self, plan_file: Path, data: Path, token: Optional[str]) -> None:
        args = [node(), str(SLUICE), "serve", "--plan", str(plan_file), "--input", str(data), "--port", "0"]
        env = dict(os.environ)
        env.pop("SLUICE_TOKEN", None)
        if token is not None:
            args += ["--token", token]
        self.proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        self.lines: List[str] = []
        ready = threading.Event()
        self.url = ""

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.lines.append(line.rstrip())
                if not ready.is_set() and " at http://" in line:
                    self.url = line.split(" at ", 1)[1].split("/v1/", 1)[0].strip()
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(60) or not self.url:
            self.stop()
            raise RuntimeError(f"sluice serve did not start: {' | '.join(self.lines)}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Job:
    """A data set, its plan, and the oracle: ``sluice run``'s columns for that plan."""

    def __init__(self, root: Path, rows: int, batch_size: int, epochs: int, seed: int) -> None:
        self.dir = root
        self.data = root / "rm1.parquet"
        sluice("gen", "--preset", "rm1", "--rows", str(rows), "--out", str(self.data), "--seed", "7", "--row-group-size", str(max(1, rows // 3)), "--quiet")
        self.plan = rm1_plan(batch_size, epochs, seed)
        self.plan_file = root / "plan.json"
        self.plan_file.write_text(json.dumps(self.plan))
        self.rows_per_epoch = rows
        self.batch_size = batch_size
        self.epochs = epochs
        per_epoch = -(-rows // batch_size)
        self.batches = per_epoch * epochs
        self._oracle: Optional[Dict[str, Any]] = None

    def oracle(self) -> Dict[str, Any]:
        """``{name: array}`` for dense columns and the label, ``{name: (lengths, values)}`` for list columns."""
        if self._oracle is None:
            import numpy as np

            out = self.dir / "run.parquet"
            sluice("run", "--plan", str(self.plan_file), "--input", str(self.data), "--output", str(out), "--quiet")
            dump = self.dir / "run-dump"
            p = subprocess.run([node(), str(Path(__file__).with_name("parquet_dump.mjs")), str(out), str(dump)], cwd=ROOT, capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError(f"parquet_dump.mjs failed: {p.stderr.strip()}")
            index = json.loads((dump / "index.json").read_text())
            cols: Dict[str, Any] = {"__rows__": index["rows"]}
            for i, c in enumerate(index["columns"]):
                values = np.fromfile(dump / f"{i}.values", dtype="<i8" if c["dtype"] == "int64" else "<f4")
                cols[c["name"]] = (np.fromfile(dump / f"{i}.lengths", dtype="<i4"), values) if c["list"] else values
            self._oracle = cols
        return self._oracle

    def serve(self, token: Optional[str] = TOKEN) -> Server:
        return Server(self.plan_file, self.data, token)


@pytest.fixture(scope="session")
def job(tmp_path_factory: pytest.TempPathFactory) -> Job:
    """3,000 rows in batches of 256, two shuffled epochs: 24 batches, the last of each epoch short."""
    return Job(tmp_path_factory.mktemp("job"), rows=3000, batch_size=256, epochs=2, seed=5)


@pytest.fixture(scope="session")
def server(job: Job) -> Iterator[Server]:
    s = job.serve()
    yield s
    s.stop()


@pytest.fixture
def start_server(job: Job) -> Iterator[Callable[..., Server]]:
    """Starts more servers of the same job; each is stopped after the test."""
    started: List[Server] = []

    def start(token: Optional[str] = TOKEN) -> Server:
        s = job.serve(token)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def wait_for(cond: Callable[[], bool], timeout: float = 10) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError("condition not met")
        time.sleep(0.02)
