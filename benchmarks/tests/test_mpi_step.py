"""The whole-machine configuration "minitorch MPI, N ranks" (benchmarks/mpi_step.py) inside the
harness: its worker runs under mpiexec, its first step is the single-process step's, the other
rank's CPU counts as the measured work's (not as outside load), and no rank outlives the run."""

from __future__ import annotations

import psutil

from benchmarks import measure as M
from benchmarks.measure import Job

ARGS = ["seed", "float64", 4, 16]  # a small global batch: 2 rows per rank


def _measure_workers() -> list[str]:
    """Command lines of running harness workers (an MPI job's ranks included)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "benchmarks.measure" in cmd:
            found.append(cmd)
    return found


def test_mpi_job_steps_like_one_process_and_its_ranks_are_not_outside_load():
    jobs = [Job("mpi", "benchmarks.mpi_step:make_step", ARGS, "tuned", ranks=2),
            Job("one", "benchmarks.peers:make_step", ["minitorch", *ARGS, 1, True], "tuned")]
    out = M.measure(jobs, rounds=3, target_s=0.3, max_load=10.0)
    first = out["first"]
    assert abs(first["mpi"] - first["one"]) <= 1e-12 * abs(first["one"]), first
    loads = [x for x in out["times"]["mpi"]["loads"] if x is not None]
    assert loads, out["times"]["mpi"]
    # rank 1 computes beside rank 0 throughout each sample (~1 core): counted as the work's own
    assert max(loads) < 0.6, f"rank 1 seen as outside load: {loads}"
    assert not _measure_workers(), "a worker (or a rank of the MPI one) outlived the harness"
