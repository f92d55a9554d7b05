"""Every torch.distributed collective on fixed inputs (test code): run by torchrun (gloo) and by
`minitorch run --nproc 2` alike, each rank saving what it got to OUT/rank<R>.npz.

    python collectives.py OUT
"""

import os
import sys

import numpy as np
import torch
import torch.distributed as dist

dist.init_process_group(backend="gloo")
rank, world = dist.get_rank(), dist.get_world_size()
out = {"world": np.array(world), "rank": np.array(rank),
       "backend": np.array(str(dist.get_backend()))}


def inputs(dtype, shape=(3, 4)):
    """The same values under both libraries: drawn by NumPy, seeded by rank."""
    rng = np.random.default_rng(100 + rank)
    a = rng.normal(size=shape) if dtype != "int64" else rng.integers(-9, 9, size=shape)
    return torch.from_numpy(a.astype(dtype))


for dtype in ("float64", "float32", "int64"):
    ops = ["SUM", "PRODUCT", "MIN", "MAX"] + (["AVG"] if dtype != "int64" else
                                              ["BAND", "BOR", "BXOR"])
    for op in ops:
        t = inputs(dtype)
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        out[f"all_reduce/{dtype}/{op}"] = t.numpy()
    t = inputs(dtype)
    dist.broadcast(t, src=world - 1)
    out[f"broadcast/{dtype}"] = t.numpy()
    parts = [torch.zeros(3, 4, dtype=getattr(torch, dtype)) for _ in range(world)]
    dist.all_gather(parts, inputs(dtype))
    out[f"all_gather/{dtype}"] = np.stack([p.numpy() for p in parts])
    o = torch.zeros(3 * world, 4, dtype=getattr(torch, dtype))
    dist.all_gather_into_tensor(o, inputs(dtype))
    out[f"all_gather_into_tensor/{dtype}"] = o.numpy()
    for op in ("SUM", "MAX") + (("AVG",) if dtype != "int64" else ()):
        o = torch.zeros(2, 4, dtype=getattr(torch, dtype))
        dist.reduce_scatter_tensor(o, inputs(dtype, (2 * world, 4)), op=getattr(dist.ReduceOp, op))
        out[f"reduce_scatter_tensor/{dtype}/{op}"] = o.numpy()
    g = [torch.zeros(3, 4, dtype=getattr(torch, dtype)) for _ in range(world)] if rank == 0 \
        else None
    dist.gather(inputs(dtype), g, dst=0)
    if rank == 0:
        out[f"gather/{dtype}"] = np.stack([p.numpy() for p in g])
    s = torch.zeros(3, 4, dtype=getattr(torch, dtype))
    src = [inputs(dtype) * (i + 2) for i in range(world)] if rank == world - 1 else None
    dist.scatter(s, src, src=world - 1)
    out[f"scatter/{dtype}"] = s.numpy()
objs = [None] * world
dist.all_gather_object(objs, {"rank": rank, "word": "abc"[rank % 3]})
out["all_gather_object"] = np.array(repr(objs))
lst = [rank, f"from {rank}"]
dist.broadcast_object_list(lst, src=world - 1)
out["broadcast_object_list"] = np.array(repr(lst))
dist.barrier()
np.savez(os.path.join(sys.argv[1], f"rank{rank}.npz"), **out)
dist.destroy_process_group()
