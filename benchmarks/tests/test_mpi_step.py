"""The whole-machine configuration "minitorch MPI, N ranks" (benchmarks/mpi_step.py) inside the
harness: its worker runs under mpiexec, its first step is the single-process step's, the other
rank's CPU counts as the measured work's (not as outside load), and no rank outlives the run."""

from __future__ import annotations

import psutil

from benchmarks import measure as M
from benchmarks.measure import Job

ARGS = ["seed", "float64", 4, 16]  # a small global batch: 2 rows per rank
STEPS = 40  # per sample: long enough (~0.1 s) for /proc/stat's 10 ms ticks to give its load


def _measure_workers() -> list[str]:
    """Command lines of running harness workers (an MPI job's ranks included)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "benchmarks.measure" in cmd:
            found.append(cmd)
    return found


def test_mpi_job_steps_like_one_process_and_its_ranks_are_not_outside_load():
    before = set(_measure_workers())
    jobs = [Job("mpi", "benchmarks.mpi_step:make_step", ARGS, "tuned", ranks=2),
            Job("one", "benchmarks.peers:make_step", ["minitorch", *ARGS, 1, True], "tuned")]
    # STEPS steps per sample in both jobs (first, 2 warm-up, 1 calibration, then STEPS per
    # round), so each sample's loss is the same step's in both
    out = M.measure(jobs, rounds=3, target_s=1e-6, min_steps=STEPS, max_load=10.0)
    assert out["steps_per_sample"] == {"mpi": STEPS, "one": STEPS}, out["steps_per_sample"]
    mpi, one = ([out["first"][k], *out["times"][k]["results"]] for k in ("mpi", "one"))
    assert abs(mpi[0] - one[0]) <= 1e-12 * abs(one[0]), (mpi, one)  # the global mean loss
    # after Adam steps on averaged gradients, the same weights to rounding: a rank stepping on
    # its own rows' gradients drifts away from the one-process run at once
    assert max(abs(a - b) / abs(b) for a, b in zip(mpi, one, strict=True)) <= 1e-9, (mpi, one)
    loads = sorted(x for x in out["times"]["mpi"]["loads"] if x is not None)
    assert loads, out["times"]["mpi"]
    # rank 1 computes beside rank 0 throughout each sample (~1 core): counted as the work's own
    assert loads[len(loads) // 2] < 0.6, f"rank 1 seen as outside load: {loads}"
    left = set(_measure_workers()) - before
    assert not left, f"a worker (or a rank of the MPI one) outlived the harness: {left}"
