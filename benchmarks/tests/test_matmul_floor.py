"""benchmarks/matmul_floor.py's MPI mode: the MPI step is set against its own ranks' matmuls,
measured in one mpiexec job, and only rank 0 reports."""

from __future__ import annotations

from argparse import Namespace

from benchmarks import matmul_floor as MF


def test_ranks_mode_reports_once_per_config_with_the_ranks_floor():
    args = Namespace(ranks=2, presets=["seed"], dtypes=["float32", "float64"], rounds=1)
    rows = MF.ranks_rows(args)
    # one line per config: rank 1 measures beside rank 0 but must not report
    assert [(r["preset"], r["dtype"]) for r in rows] == [("seed", "float32"),
                                                          ("seed", "float64")], rows
    for r in rows:
        assert set(r["ms"]) == {"matmuls as ranks", "MPI 2 ranks + replay"}, r
        assert all(ms > 0 for ms in r["ms"].values()), r
