"""torch.distributed over MPI (issue 33): every collective of ddp_scripts/collectives.py gives,
on 2 ranks, bit for bit what torch's gloo backend gives under torchrun (float64, float32, int64;
each ReduceOp); the one-process API and its errors as torch's; DistributedSampler's index
streams equal torch's where the order is deterministic, and its shares follow torch's rules
(disjoint, padded by repeating, drop_last, set_epoch) where the permutation is minitorch's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import minitorch as mt
import minitorch.distributed as mdist
from minitorch.utils.data import DistributedSampler

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
       "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_mpi_yield_when_idle": "1",
       "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
SCRIPT = ROOT / "verification" / "ddp_scripts" / "collectives.py"


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.skipif(shutil.which("mpiexec", path=str(BIN)) is None, reason="no mpiexec")
def test_collectives_equal_torch_gloo(tmp_path):
    (tmp_path / "mt").mkdir()
    (tmp_path / "torch").mkdir()
    runs = [[sys.executable, "-m", "minitorch", "run", "--nproc", "2", str(SCRIPT),
             str(tmp_path / "mt")],
            [str(BIN / "torchrun"), "--standalone", "--nproc-per-node", "2", str(SCRIPT),
             str(tmp_path / "torch")]]
    for cmd in runs:
        p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=240)
        assert p.returncode == 0, p.stderr[-3000:]
        assert "`torch.distributed.all_gather_into_tensor` is deprecated" in p.stderr
    compared = 0
    for r in (0, 1):
        with np.load(tmp_path / "mt" / f"rank{r}.npz") as a, \
                np.load(tmp_path / "torch" / f"rank{r}.npz") as b:
            assert sorted(a.files) == sorted(b.files)
            for k in a.files:
                assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
                np.testing.assert_array_equal(a[k], b[k], err_msg=k)
                compared += 1
    assert compared >= 2 * 40


@pytest.fixture
def one_process(monkeypatch):
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(k, raising=False)
    yield
    if mdist.is_initialized():
        mdist.destroy_process_group()


def test_one_process_group_as_torch(one_process):
    """World of one: rank 0, size 1, the backend named, every collective the identity."""
    assert not mdist.is_initialized() and mdist.group.WORLD is None
    mdist.init_process_group(backend="gloo")
    assert mdist.is_initialized() and mdist.group.WORLD is not None
    assert (mdist.get_rank(), mdist.get_world_size(), mdist.get_backend()) == (0, 1, "gloo")
    t = mt.tensor([1.5, -2.0], dtype=mt.float64)
    for op in (mdist.ReduceOp.SUM, mdist.ReduceOp.AVG, mdist.ReduceOp.MAX):
        assert mdist.all_reduce(t, op=op, group=mdist.group.WORLD) is None
    assert t.tolist() == [1.5, -2.0]
    assert mdist.all_reduce(t, async_op=True).wait()
    parts = [mt.zeros(2, dtype=mt.float64)]
    mdist.all_gather(parts, t)
    assert parts[0].tolist() == [1.5, -2.0]
    with pytest.raises(ValueError, match="list of 1 tensors"):
        mdist.all_gather([], t)
    with pytest.raises(ValueError, match="trying to initialize the default process group twice"):
        mdist.init_process_group("gloo")
    mdist.barrier()
    mdist.destroy_process_group()
    assert not mdist.is_initialized()


def test_errors_before_init_as_torch(one_process):
    with pytest.raises(ValueError) as theirs:
        torch.distributed.get_rank()
    with pytest.raises(ValueError) as ours:
        mdist.get_rank()
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(AttributeError, match="torch.distributed.new_subgroups: minitorch does not"):
        mdist.new_subgroups  # noqa: B018


def test_nccl_refused_and_a_world_without_mpi(one_process, monkeypatch):
    with pytest.raises(RuntimeError, match="NCCL needs CUDA GPUs") as e:
        mdist.init_process_group(backend="nccl")
    assert "\n" not in str(e.value)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(RuntimeError, match="minitorch run --nproc 2"):
        mdist.init_process_group(backend="gloo")
    assert not mdist.is_initialized()


@pytest.mark.parametrize("n", [1, 5, 7, 8, 13])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_stream_equals_torch(n, replicas, drop_last):
    """shuffle=False: every rank's indices and length equal torch's (padding and cut too)."""
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = torch.utils.data.DistributedSampler(range(n), replicas, rank, shuffle=False,
                                                     drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


@pytest.mark.parametrize("n, replicas, drop_last", [(10, 3, False), (10, 3, True), (2, 5, False),
                                                     (9, 2, False)])
def test_distributed_sampler_shuffled_shares(n, replicas, drop_last):
    """shuffle=True: one permutation per (seed, epoch), split as torch splits it."""
    def shares(epoch, seed=0):
        out = []
        for r in range(replicas):
            s = DistributedSampler(range(n), replicas, r, shuffle=True, seed=seed,
                                   drop_last=drop_last)
            s.set_epoch(epoch)
            out.append(list(s))
        return out

    per = shares(0)
    t = torch.utils.data.DistributedSampler(range(n), replicas, 0, drop_last=drop_last)
    assert all(len(s) == len(t) for s in per)
    merged = [per[i % replicas][i // replicas] for i in range(len(t) * replicas)]
    if drop_last:
        assert len(set(merged)) == len(merged)  # a cut permutation: nothing repeats
    else:
        assert sorted(set(merged)) == list(range(n))  # all indices, the padding repeats the start
        assert merged[n:] == (merged[:n] * len(merged))[:len(merged) - n]
    assert shares(0) == per
    if n > 5:  # (two of 2 indices' orders can coincide)
        assert shares(1) != per and shares(0, seed=1) != per
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2"):
        DistributedSampler(range(n), 3, 3)
