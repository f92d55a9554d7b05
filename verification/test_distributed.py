"""Data-parallel training over MPI: a 2-rank run equals the 1-rank run (float64, 20 Adam steps,
losses, evaluations, weights and optimizer moments at every step to 1e-12 relative); planted
faults are caught (a skipped allreduce as drift naming the step, an unweighted evaluation mean
and summed gradients by the parity check); resume across rank counts; a rank killed with kill -9
or failing alone ends the whole job with a line naming it, and the checkpoint left behind
resumes bit-identically; one-line errors for a batch that does not divide.

Every MPI run is a real `mpiexec -n 2` subprocess (Open MPI from the pinned wheel, allowed to
run as root and to oversubscribe, one BLAS thread per rank). The subprocess timeouts only
detect a hang; nothing here is timed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from minitorch import cli
from minitorch.distributed import flat_span, shard, weights_checksum
from minitorch.io import load_checkpoint
from verification import reliability

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
MPIEXEC = shutil.which("mpiexec", path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
MPI_ENV = {
    **os.environ,
    "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",  # CI runs as root
    "OMPI_MCA_rmaps_base_oversubscribe": "1",  # 2 ranks on a machine that may have 1 free core
    "OMPI_MCA_mpi_yield_when_idle": "1",  # a waiting rank yields its core instead of spinning
    "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    "PYTHONPATH": str(ROOT),
}
HANG = 180  # seconds: only a hung job takes this long
TOL = 1e-12
# 20 Adam steps in float64 with clipping, a checkpoint (kept) at every step, 3 eval batches
# (2 on rank 0, 1 on rank 1: the weighting of the evaluation mean matters).
ARGS = ["--n_layer", "1", "--n_embd", "32", "--n_hidden", "64", "--block_size", "32",
        "--batch_size", "8", "--iters", "20", "--dtype", "float64", "--lr", "3e-3",
        "--grad_clip", "1.0", "--eval_interval", "5", "--eval_iters", "3", "--ckpt_interval", "1",
        "--keep_last", "20", "--sample_tokens", "8", "--plot", "False", "--no-tune-allocator"]


@pytest.fixture(scope="module", autouse=True)
def _publish():
    yield
    reliability.publish()


def mpirun(n: int, args: list[str], plant: str | None = None, **kw) -> subprocess.CompletedProcess:
    """`mpiexec -n n minitorch <args>` (through the test driver when a fault is planted)."""
    cmd = [MPIEXEC, "-n", str(n), sys.executable, "-m", "verification.mpi_driver",
           *(["--plant", plant] if plant else []), *args]
    return subprocess.run(cmd, env=MPI_ENV, capture_output=True, text=True,
                          timeout=HANG, **kw)


def train_1rank(out: Path, *extra: str) -> None:
    assert cli.main(["train", "--out", str(out), *ARGS, *extra]) == 0


def losses(out: Path) -> dict[tuple, float]:
    """{(kind, step, field): value} for every loss the run logged."""
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {(r["kind"], r["step"], k): r[k] for r in rows for k in ("loss", "train", "val")
            if k in r}


def state(folder: Path) -> dict[str, np.ndarray]:
    """A checkpoint's weights and Adam moments by name."""
    ck = load_checkpoint(folder)
    out = {f"model/{k}": v for k, v in ck.model.items()}
    out.update({f"optim/{i}/{k}": v for i, st in ck.optimizer["state"].items()
                for k, v in st.items() if isinstance(v, np.ndarray)})
    return out


def rel(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-300))


def compare(ref: Path, run: Path, steps=range(1, 21)) -> dict[str, float]:
    """Worst relative difference of the logged losses (every one `run` logged) and of every
    checkpointed array at `steps`."""
    la, lb = losses(ref), losses(run)
    assert lb.keys() <= la.keys() and len(lb) >= 4
    worst = {"loss": max(rel(la[k], lb[k]) for k in lb), "state": 0.0}
    for s in steps:
        sa, sb = (state(p / "checkpoints" / f"step-{s:08d}") for p in (ref, run))
        assert sa.keys() == sb.keys()
        worst["state"] = max(worst["state"], *(rel(sa[k], sb[k]) for k in sa))
    return worst


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same 20 steps on 1 rank (one process, no MPI) and on 2 ranks (`--ranks 2`, which
    launches mpiexec)."""
    base = tmp_path_factory.mktemp("dp")
    train_1rank(base / "r1")
    p = subprocess.run([sys.executable, "-m", "minitorch", "train", "--ranks", "2",
                        "--out", str(base / "r2"), *ARGS], env=MPI_ENV,
                       capture_output=True, text=True, timeout=HANG)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "2 ranks x 4 rows" in p.stderr
    return base


def test_distributed_parity_1_vs_2_ranks(runs, record):
    assert losses(runs / "r1").keys() == losses(runs / "r2").keys()
    worst = compare(runs / "r1", runs / "r2")
    record("dp_parity", "train", "1 vs 2 ranks, f64, 20 adam steps", worst["state"],
           max_rel=max(worst.values()), tol=TOL, passed=max(worst.values()) <= TOL)
    assert worst["loss"] <= TOL and worst["state"] <= TOL, worst
    # rank 0 alone wrote: one metrics file with one row per step, and every checkpoint
    assert len([k for k in losses(runs / "r2") if k[0] == "step"]) == 20


@pytest.mark.parametrize("plant", ["unweighted_eval", pytest.param("summed_grads",
                                                                    marks=pytest.mark.slow)])
def test_distributed_parity_catches_planted_fault(runs, tmp_path, plant):
    p = mpirun(2, ["train", "--out", str(tmp_path / "bad"), *ARGS, "--iters", "6"], plant=plant)
    assert p.returncode == 0, p.stderr[-3000:]
    worst = compare(runs / "r1", tmp_path / "bad", steps=range(1, 5))  # before the last eval
    assert max(worst.values()) > 1e3 * TOL, worst


def test_distributed_missing_allreduce_is_drift_naming_the_step(tmp_path):
    with reliability.fault("replicas drift (allreduce skipped, MPI)", "stopped naming the "
                           "step and ranks; no checkpoint", "test_distributed.py"):
        _missing_allreduce(tmp_path)


def _missing_allreduce(tmp_path):
    p = mpirun(2, ["train", "--out", str(tmp_path / "bad"), *ARGS, "--sync_check", "1",
                   "--ckpt_interval", "0", "--iters", "3"], plant="no_allreduce")
    ours = [ln for ln in p.stderr.splitlines() if ln.startswith("minitorch train:")]
    assert p.returncode != 0
    assert len(ours) == 1 and "replicas drifted at step 1:" in ours[0], p.stderr[-3000:]
    assert "rank(s) 1 differ from rank 0's" in ours[0]
    assert not (tmp_path / "bad" / "checkpoint.json").exists()  # no drifted weights saved


def test_distributed_resume_with_other_rank_counts(runs, tmp_path):
    """A 2-rank checkpoint continued on 1 rank, and a 1-rank one on 2 ranks, match the
    uninterrupted runs to 1e-12 (the global batch does not depend on the rank count)."""
    for src, n, ref in (("r2", 1, "r1"), ("r1", 2, "r2")):
        out = tmp_path / f"{src}-on-{n}"
        shutil.copytree(runs / src / "checkpoints" / "step-00000010", out)
        if n == 1:
            assert cli.main(["train", "--resume", "--out", str(out), "--no-tune-allocator"]) == 0
        else:
            p = mpirun(2, ["train", "--resume", "--out", str(out), "--no-tune-allocator"])
            assert p.returncode == 0, p.stderr[-3000:]
        a, b = state(out), state(runs / ref)
        assert load_checkpoint(out).step == 20
        assert max(rel(a[k], b[k]) for k in a) <= TOL
        la, lb = losses(out), losses(runs / ref)
        assert all(rel(la[k], lb[k]) <= TOL for k in la) and len(la) >= 10


def _rank_pid(launcher: psutil.Process, rank: int) -> int | None:
    for child in launcher.children(recursive=True):
        try:
            if child.environ().get("OMPI_COMM_WORLD_RANK") == str(rank):
                return child.pid
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return None


@pytest.mark.parametrize("rank", [1, pytest.param(0, marks=pytest.mark.slow)])
def test_distributed_kill_9_ends_job_and_resumes_bit_identically(runs, tmp_path, rank, record):
    """kill -9 of one rank mid-run: the job exits non-zero naming the rank (no hang), the last
    checkpoint loads, and resuming it on 2 ranks reproduces the uninterrupted 2-rank run's
    weights and optimizer state bit for bit."""
    with reliability.fault("rank killed with kill -9 (MPI)", "job ends non-zero naming the "
                           "rank; checkpoint resumes bit-identically", "test_distributed.py"):
        _kill_and_resume(runs, tmp_path, rank, record)


def _kill_and_resume(runs, tmp_path, rank, record):
    out = tmp_path / "k"
    args = ["train", "--out", str(out), *ARGS, "--iters", "1000000", "--ckpt_interval", "5",
            "--keep_last", "0", "--eval_interval", "1000"]
    # the ranks wait at step 5 (its checkpoint written) until the kill: a known step, not a race
    cmd = [MPIEXEC, "-n", "2", sys.executable, "-m", "verification.mpi_driver", "--plant",
           "hold_at_step_5", *args]
    proc = subprocess.Popen(cmd, env=MPI_ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + HANG
        while not (out / "checkpoint.json").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "no checkpoint written"
            time.sleep(0.02)
        pid = _rank_pid(psutil.Process(proc.pid), rank)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        _, err = proc.communicate(timeout=HANG)  # the whole job ends: no rank hangs
        ended = time.monotonic() - killed  # reported, never asserted
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    record("dp_kill_9", "train", f"rank {rank} of 2", None, passed=True,
           seconds_to_job_end=round(ended, 3))
    assert f"rank {rank} with PID {pid}" in " ".join(err.split())  # Open MPI names the rank
    step = load_checkpoint(out).step  # intact
    assert step == 5
    p = mpirun(2, ["train", "--resume", "--out", str(out), "--iters", str(step + 5),
                   "--no-tune-allocator"])
    assert p.returncode == 0, p.stderr[-3000:]
    a, b = state(out), state(runs / "r2" / "checkpoints" / f"step-{step + 5:08d}")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_distributed_rank_failing_alone_aborts_the_job(tmp_path):
    with reliability.fault("one rank fails alone (MPI)", "its line names the rank; the job "
                           "is aborted, no rank hangs", "test_distributed.py"):
        _fails_alone(tmp_path)


def _fails_alone(tmp_path):
    p = mpirun(2, ["train", "--out", str(tmp_path / "x"), *ARGS, "--ckpt_interval", "0"],
               plant="rank1_fails_alone")
    assert p.returncode != 0
    ours = [ln for ln in p.stderr.splitlines() if ln.startswith("minitorch train:")]
    assert ours == ["minitorch train: error: rank 1: planted: rank 1 cannot read its batch"]


def test_distributed_batch_must_divide(tmp_path, capsys):
    # --ranks checks before launching: one line, exit 2
    code = cli.main(["train", "--ranks", "3", "--batch_size", "8", "--out", str(tmp_path / "a")])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and err == ["minitorch train: error: batch_size 8 (the global batch) does "
                                 "not divide among 3 ranks; use a multiple of 3"]
    # under mpiexec every rank refuses; rank 0 prints the line once
    p = mpirun(2, ["train", "--out", str(tmp_path / "b"), *ARGS, "--batch_size", "7"])
    ours = [ln for ln in p.stderr.splitlines() if ln.startswith("minitorch train:")]
    assert p.returncode == 2 and ours == [
        "minitorch train: error: batch_size 7 (the global batch) does not divide among 2 "
        "ranks; use a multiple of 2"]
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())


def test_distributed_helpers():
    assert [shard(8, r, 2) for r in range(2)] == [(0, 4), (4, 8)]
    assert [shard(10, r, 3) for r in range(3)] == [(0, 3), (3, 6), (6, 10)]
    flat = np.arange(10.0)
    views = [flat[:4].reshape(2, 2), flat[4:7], flat[7:10]]
    span = flat_span(views)
    assert span is not None and np.shares_memory(span, flat) and span.size == 10
    assert flat_span([flat[:4], flat[5:7]]) is None  # a gap: packed instead
    assert flat_span([np.zeros(2), np.zeros(2)]) is None
    a = [np.ones(3), np.zeros(2)]
    b = [np.ones(3), np.zeros(2)]
    assert weights_checksum(a) == weights_checksum(b)
    b[1][0] = np.nextafter(0.0, 1.0)  # one ulp anywhere changes the checksum
    assert weights_checksum(a) != weights_checksum(b)


@pytest.mark.parametrize("argv, line", [
    (["--hostfile", "hosts"], "--hostfile needs --ranks N (or pass it to mpiexec yourself)"),
    (["--ranks", "0"], "--ranks must be >= 1, got 0"),
    (["--ranks", "-1"], "argument --ranks: must be >= 0, got '-1' (see minitorch train --help)"),
    (["--sync_check", "-1"], "sync_check must be a finite number >= 0, got -1"),
])
def test_distributed_cli_errors_are_one_line(tmp_path, capsys, argv, line):
    with reliability.fault("bad distributed invocation", "one line, exit 2",
                           "test_distributed.py"):
        try:
            code = cli.main(["train", "--out", str(tmp_path / "x"), *argv])
        except SystemExit as e:  # argparse's own errors exit from inside parse_known_args
            code = e.code
        assert code == 2
        assert capsys.readouterr().err.splitlines() == [f"minitorch train: error: {line}"]
