"""Ranks started differently are stopped before the first step: two real MPI ranks (one mpiexec
job with two app contexts) given a different --seed, --iters or --batch_size, the same --data
path holding different text, or a different minitorch, each end with exit 2 and one line naming
the key and both ranks' values; nothing is trained. (Without the check a different --seed or
--batch_size trained on with exit 0 and a different --iters corrupted the heap.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from verification import reliability

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
MPIEXEC = shutil.which("mpiexec", path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
MPI_ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_mpi_yield_when_idle": "1",
           "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
ARGS = ["--n_layer", "1", "--n_embd", "16", "--n_hidden", "32", "--block_size", "16",
        "--batch_size", "4", "--iters", "4", "--eval_iters", "1", "--sample_tokens", "4",
        "--plot", "False", "--no-tune-allocator"]
HANG = 180  # seconds: only a hung job takes this long
# rank 1 runs a minitorch whose source differs (its code hash patched before the CLI runs)
OTHER_CODE = ("import sys; from minitorch.train import consensus; "
              "consensus.code_version = lambda: 'another-minitorch'; from minitorch import cli; "
              "sys.exit(cli.main(sys.argv[1:]))")

pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="needs mpiexec (requirements/lock.txt)")


@pytest.fixture(scope="module", autouse=True)
def _publish():
    yield
    reliability.publish()


def _two_ranks(rank0: list[str], rank1: list[str], wdirs: tuple[Path, Path],
               code1: list[str] | None = None) -> subprocess.CompletedProcess:
    """One mpiexec job: rank 0 runs `minitorch train rank0` in wdirs[0], rank 1 `minitorch
    train rank1` in wdirs[1] (the test's own folders: never the repository)."""
    py0 = [sys.executable, "-m", "minitorch"]
    py1 = code1 or py0
    cmd = [MPIEXEC, "-n", "1", "--wdir", str(wdirs[0]), *py0, "train", *rank0, ":",
           "-n", "1", "--wdir", str(wdirs[1]), *py1, "train", *rank1]
    return subprocess.run(cmd, env=MPI_ENV, capture_output=True, text=True,
                          timeout=HANG)


def _ours(p: subprocess.CompletedProcess) -> list[str]:
    return [ln for ln in p.stderr.splitlines() if ln.startswith("minitorch train:")]


@pytest.mark.parametrize("flag, a, b", [("--seed", "1", "2"), ("--iters", "4", "6"),
                                        ("--batch_size", "4", "8")])
def test_ranks_with_different_flags_are_stopped_naming_the_key(tmp_path, flag, a, b):
    out = str(tmp_path / "run")
    with reliability.fault("MPI ranks started with different settings", "every rank stops "
                           "before the first step; one line names the key and the ranks",
                           "test_mpi_agree.py"):
        p = _two_ranks([*ARGS, "--out", out, flag, a], [*ARGS, "--out", out, flag, b],
                       (tmp_path, tmp_path))
        assert p.returncode == 2, p.stderr[-2000:]
        assert _ours(p) == [f"minitorch train: error: the ranks disagree on {flag}: rank 0: "
                            f"{int(a)!r}; rank 1: {int(b)!r}; start every rank with the same "
                            "command line and minitorch"]
        assert not (tmp_path / "run" / "checkpoint.json").exists()


def test_ranks_reading_different_data_are_stopped(tmp_path):
    """The same relative --data path, a different file on each rank (as on two machines)."""
    dirs = [tmp_path / "m0", tmp_path / "m1"]
    for d, text in zip(dirs, ("to be or not to be, " * 200, "that is the question. " * 200)):
        d.mkdir()
        (d / "corpus.txt").write_text(text)
    out = str(tmp_path / "run")
    args = [*ARGS, "--out", out, "--data", "corpus.txt"]
    with reliability.fault("MPI ranks reading different data", "every rank stops naming the "
                           "corpus checksum and the ranks", "test_mpi_agree.py"):
        p = _two_ranks(args, args, wdirs=dirs)
        assert p.returncode == 2, p.stderr[-2000:]
        lines = _ours(p)
        assert len(lines) == 1 and lines[0].startswith(
            "minitorch train: error: the ranks disagree on the corpus (sha256): rank 0: '")
        assert "; rank 1: '" in lines[0] and lines[0].endswith(
            "every rank must read the same --data (corpus.txt)")


def test_ranks_running_different_minitorch_code_are_stopped(tmp_path):
    args = [*ARGS, "--out", str(tmp_path / "run")]
    with reliability.fault("MPI ranks running different code", "every rank stops naming the "
                           "code version and the ranks", "test_mpi_agree.py"):
        p = _two_ranks(args, args, (tmp_path, tmp_path),
                       code1=[sys.executable, "-c", OTHER_CODE])
        assert p.returncode == 2, p.stderr[-2000:]
        lines = _ours(p)
        assert len(lines) == 1 and lines[0].startswith(
            "minitorch train: error: the ranks disagree on the minitorch code (sha256 of its "
            "source): rank 0: '")
        assert "rank 1: 'another-minitorch'" in lines[0]


def test_ranks_started_alike_train(tmp_path):
    """The check passes ranks started alike (the positive control of the tests above)."""
    args = [*ARGS, "--out", str(tmp_path / "run")]
    p = _two_ranks(args, args, (tmp_path, tmp_path))
    assert p.returncode == 0, p.stderr[-2000:]
    assert (tmp_path / "run" / "checkpoint.json").exists()
