"""asv: data-parallel training step of the seed preset (global batch 32 x 64) on 1 rank and on
2 ranks under mpiexec, 1 BLAS thread each, and the 2-rank scaling efficiency t1 / (2 t2), from
benchmarks/mpi_scaling.py's workers (each configuration its own process, launched once)."""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from . import mpi_scaling


class DataParallel:
    timeout = 900

    def setup_cache(self):
        args = argparse.Namespace(steps=10, warmup=3, presets=["seed"], dtypes=["float32"])
        with tempfile.TemporaryDirectory() as tmp:
            return {n: statistics.median(mpi_scaling._launch(n, args, Path(tmp) / f"{n}.json")
                                         [0]["step_s"]) for n in (1, 2)}

    def track_step_ms_1_rank(self, steps):
        return 1e3 * steps[1]

    def track_step_ms_2_ranks(self, steps):
        return 1e3 * steps[2]

    def track_efficiency_2_ranks(self, steps):
        return steps[1] / (2 * steps[2])


DataParallel.track_step_ms_1_rank.unit = "ms"
DataParallel.track_step_ms_2_ranks.unit = "ms"
DataParallel.track_efficiency_2_ranks.unit = "t1 / (2 t2)"
