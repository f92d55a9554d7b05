"""Each rank's RSS stays flat over 300 data-parallel steps under `mpiexec -n 2` (seed GPT,
float64, global batch 4: 2 rows per rank), judged by the suite's own verdict
(measure.flatness); a rank that keeps every step's gradients (the negative control, on rank 1
only) must be reported as growing while rank 0 of the same job stays flat.

Each job is a real `mpiexec -n 2` subprocess, one BLAS thread per rank; every rank reads its
RSS after every step and rank 0 writes all ranks' series as JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .measure import flatness

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MPIEXEC = shutil.which("mpiexec", path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
       "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_mpi_yield_when_idle": "1",
       "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
       "PYTHONPATH": str(ROOT)}
RANK = """
import io, json, sys
import numpy as np, psutil
from minitorch.distributed import world
from minitorch.train import Trainer, resolve
out, steps, leak = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "leak"
dist = world()
cfg = resolve(None, {"dtype": "float64", "batch_size": 4, "iters": steps, "ckpt_interval": 0,
                     "eval_iters": 1, "plot": False, "out_dir": out})
t = Trainer(cfg, stream=io.StringIO(), dist=dist)
proc, kept, rss = psutil.Process(), [], []
for _ in range(steps):
    t.train_step()
    if leak and dist.rank == 1:  # the control: every step's gradients kept alive
        kept.append([p.grad.data.copy() for p in t.model.parameters()])
    rss.append(proc.memory_info().rss / 2**20)
series = dist.allgather(rss)
if dist.is_root:
    json.dump(series, open(out + "/rss.json", "w"))
"""


def _ranks_rss(tmp_path: Path, steps: int, leak: bool) -> list[list[float]]:
    out = tmp_path / "run"
    out.mkdir()
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    p = subprocess.run([MPIEXEC, "-n", "2", sys.executable, str(script), str(out), str(steps),
                        "leak" if leak else "clean"], env=ENV, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads((out / "rss.json").read_text())


def test_mem_mpi_rss_flat_on_every_rank(tmp_path):
    series = _ranks_rss(tmp_path, 300, leak=False)
    assert len(series) == 2 and all(len(s) == 300 for s in series)
    verdicts = [flatness(s) for s in series]
    for r, v in enumerate(verdicts):
        assert v["flat"], (f"rank {r}: RSS grows {v['slope_mb_per_step']:.4f} MB/step, medians "
                           f"{v['head_median_mb']:.1f} -> {v['tail_median_mb']:.1f} MB")


@pytest.mark.slow
def test_mem_mpi_leaking_rank_is_caught(tmp_path):
    series = _ranks_rss(tmp_path, 60, leak=True)
    rank0, rank1 = (flatness(s, fit_from=10, window=10) for s in series)
    assert rank0["flat"] and not rank1["flat"]
    assert rank1["slope_mb_per_step"] > rank1["slope_max_mb_per_step"]
