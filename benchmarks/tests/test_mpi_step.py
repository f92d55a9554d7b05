"""The whole-machine configuration "minitorch MPI, N ranks" (benchmarks/mpi_step.py) inside the
harness: its worker runs under mpiexec, its first step is the single-process step's, the other
rank is registered as the worker's companion (machine.COMPANIONS: its CPU counts as the measured
work's, not as outside load; test_machine.py checks the meter's arithmetic on injected readings),
and no rank outlives the run. Nothing here reads the machine's load."""

from __future__ import annotations

import psutil

from benchmarks import measure as M
from benchmarks.measure import Job

ARGS = ["seed", "float64", 4, 16]  # a small global batch: 2 rows per rank
STEPS = 5  # per sample: the same steps in both jobs, so each sample ends on the same step


def _measure_workers() -> list[str]:
    """Command lines of running harness workers (an MPI job's ranks included) started from this
    checkout's folder: a benchmark run from another checkout beside the suite is not counted,
    an orphaned rank of this test's job is."""
    found, here = [], str(M.ROOT)  # the folder the harness starts its workers in
    for p in psutil.process_iter(["cmdline", "cwd"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "benchmarks.measure" in cmd and p.info["cwd"] == here:
            found.append(cmd)
    return found


def test_mpi_job_steps_like_one_process_and_its_other_rank_is_a_companion():
    before = set(_measure_workers())
    jobs = [Job("mpi", "benchmarks.mpi_step:make_step", ARGS, "tuned", ranks=2),
            Job("one", "benchmarks.peers:make_step", ["minitorch", *ARGS, 1, True], "tuned"),
            Job("who", "benchmarks.tests.workloads:companions", [], ranks=2)]
    # STEPS steps per sample in both jobs (first, 2 warm-up, 1 calibration, then STEPS per
    # round), so each sample's loss is the same step's in both; the load check is off
    out = M.measure(jobs, rounds=3, target_s=1e-6, min_steps=STEPS, max_load=float("inf"))
    assert out["steps_per_sample"] == {"mpi": STEPS, "one": STEPS, "who": STEPS}
    mpi, one = ([out["first"][k], *out["times"][k]["results"]] for k in ("mpi", "one"))
    assert abs(mpi[0] - one[0]) <= 1e-12 * abs(one[0]), (mpi, one)  # the global mean loss
    # after Adam steps on averaged gradients, the same weights to rounding: a rank stepping on
    # its own rows' gradients drifts away from the one-process run at once
    assert max(abs(a - b) / abs(b) for a, b in zip(mpi, one, strict=True)) <= 1e-9, (mpi, one)
    # rank 0 of an MPI worker counts rank 1 (another process running the worker's command) as
    # its companion, so rank 1's CPU is the work's own in every sample's load
    who = out["first"]["who"]
    (pid, cmd), = who["companions"]
    assert pid != who["pid"] and "-m benchmarks.measure" in cmd, who
    left = set(_measure_workers()) - before
    assert not left, f"a worker (or a rank of the MPI one) outlived the harness: {left}"
