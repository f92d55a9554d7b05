"""PyTorch's own multi-process data parallelism as a benchmark peer: DistributedDataParallel over
gloo, one intra-op thread per rank, each rank on its share of the same global batch.

The harness times rank 0 (`make_step`, a benchmarks.measure factory); ranks 1.. are child
processes (`python -m benchmarks.torch_ddp ...`) stepping in lockstep with it through DDP's
gradient allreduce, and their CPU time is counted as the measured work's, not as outside load
(machine.COMPANIONS). They exit when rank 0 does.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys

from . import harness as H
from . import machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _step(preset: str, dtype: str, B: int, T: int, rank: int, world: int):
    """This rank's DDP training step on rows [rank*B/world, (rank+1)*B/world) of the batch."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from .peers import TORCH_ADAM, TORCH_ADAM_KW, torch_reference

    torch.set_num_threads(1)
    cfg = H.config(preset)
    model = torch_reference().TorchGPT(__import__("dataclasses").asdict(cfg))
    model = model.to(getattr(torch, dtype))
    torch_reference().load_named_arrays(model, H.named_arrays(cfg, dtype))
    ddp = DistributedDataParallel(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=H.LR, **TORCH_ADAM_KW[TORCH_ADAM])
    idx, targets = H.batch(cfg.vocab_size, B, T)
    lo, hi = rank * B // world, (rank + 1) * B // world
    idx_t, tgt_t = torch.from_numpy(idx[lo:hi]), torch.from_numpy(targets[lo:hi])
    calls = [0]

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        _, loss = ddp(idx_t, tgt_t)
        loss.backward()  # DDP averages the gradients over the ranks here
        opt.step()
        calls[0] += 1
        if calls[0] == 1:  # the first step's global loss, for the harness's same-model check
            total = loss.detach().clone()
            dist.all_reduce(total)
            return float(total.item()) / world
        return float(loss.item())

    return step


def make_step(preset: str, dtype: str, B: int, T: int, ranks: int = 2):
    """Rank 0's step (a benchmarks.measure factory); starts ranks 1..ranks-1 as children."""
    import torch.distributed as dist

    if B % ranks:
        raise ValueError(f"torch DDP: batch {B} does not divide among {ranks} ranks")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    children = []
    for rank in range(1, ranks):
        spec = json.dumps([preset, dtype, B, T, rank, ranks])
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1"}
        children.append(subprocess.Popen([sys.executable, "-m", "benchmarks.torch_ddp", spec],
                                          env=env, stdout=subprocess.DEVNULL))
    atexit.register(lambda: [c.kill() for c in children])
    machine.COMPANIONS.extend(c.pid for c in children)
    dist.init_process_group("gloo", rank=0, world_size=ranks)
    H.fix_threads(1)
    return _step(preset, dtype, B, T, 0, ranks)


def _child(spec: list) -> int:
    import torch.distributed as dist

    preset, dtype, B, T, rank, world = spec
    dist.init_process_group("gloo", rank=rank, world_size=world)
    H.fix_threads(1)
    step = _step(preset, dtype, B, T, rank, world)
    try:
        while True:
            step()
    except (RuntimeError, ConnectionError):  # rank 0 is gone: the run is over
        return 0


if __name__ == "__main__":
    sys.exit(_child(json.loads(sys.argv[1])))
