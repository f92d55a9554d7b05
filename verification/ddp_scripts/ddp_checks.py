"""DistributedDataParallel's semantics on 2 ranks, asserted in the script (test code; run by
`minitorch run --nproc 2`): construction broadcast, no_sync accumulation, the synced average of
accumulated gradients, find_unused_parameters, the misuse errors. Prints "ddp checks: N ok".
"""

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DataParallel
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
assert world == 2, world
checks = 0


def gathered(a: np.ndarray) -> list[np.ndarray]:
    parts = [torch.zeros(a.shape, dtype=torch.float64) for _ in range(world)]
    dist.all_gather(parts, torch.from_numpy(np.ascontiguousarray(a)))
    return [p.numpy() for p in parts]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 4)
        self.b = nn.Linear(4, 2)
        self.side = nn.Linear(3, 2)  # used by some forwards only
        self.register_buffer("scale", torch.full((2,), float(rank + 1)))

    def forward(self, x, use_side=False):
        y = self.b(self.a(x).tanh()) * self.scale
        return y + self.side(x) if use_side else y


torch.manual_seed(rank)  # different weights per rank: DDP must replace them with rank 0's
net = Net().double()
model = DDP(net, device_ids=[0], output_device=0, find_unused_parameters=True)
for name, v in [*net.named_parameters(), *net.named_buffers()]:
    got = gathered(np.asarray(v.detach().numpy(), dtype=np.float64))
    assert np.array_equal(got[0], got[1]), f"{name} differs after construction"
checks += 1
assert model.module is net and isinstance(DataParallel(net).module, Net)
assert np.array_equal(DataParallel(net)(torch.ones(1, 3, dtype=torch.float64)).detach().numpy(),
                      net(torch.ones(1, 3, dtype=torch.float64)).detach().numpy())
checks += 1

rng = np.random.default_rng(5 + rank)
xs = [torch.from_numpy(rng.normal(size=(5, 3))) for _ in range(3)]
# Two micro-steps without sync, then one synced: every rank ends with the average over ranks
# of its own accumulated gradient.
with model.no_sync():
    for x in xs[:2]:
        model(x).pow(2).sum().backward()
local = {n: p.grad.numpy().copy() for n, p in net.named_parameters() if p.grad is not None}
a0, a1 = gathered(local["a.weight"])
assert not np.allclose(a0, a1), "no_sync communicated"
checks += 1
out = model(xs[2]).pow(2).sum()
mid = net.a.weight.grad.numpy().copy()  # the accumulated local value, before backward
out.backward()
for n, p in net.named_parameters():
    if n.startswith("side"):
        assert p.grad is None, f"{n}: unused on every rank, yet it has a gradient"
        continue
    g = gathered(p.grad.numpy())
    assert np.array_equal(g[0], g[1]), f"{n}: ranks hold different gradients"
assert not np.array_equal(mid, net.a.weight.grad.numpy())
checks += 1
# The synced value is the mean of (accumulated + last) over ranks: recompute it by hand.
net.zero_grad()
with model.no_sync():
    for x in xs:
        model(x).pow(2).sum().backward()
want = {n: np.mean(gathered(p.grad.numpy()), axis=0) for n, p in net.named_parameters()
        if p.grad is not None}
net.zero_grad()
with model.no_sync():
    for x in xs[:2]:
        model(x).pow(2).sum().backward()
model.require_backward_grad_sync = True
model(xs[2]).pow(2).sum().backward()
params = dict(net.named_parameters())
for n, g in want.items():
    got = params[n].grad.numpy()
    assert np.max(np.abs(got - g)) <= 1e-13 * max(1.0, np.max(np.abs(g))), n
checks += 1

# find_unused_parameters: `side` used on rank 0 only: its gradient is rank 0's / world.
net.zero_grad()
mine = model(xs[0], use_side=rank == 0).sum()
mine.backward()
g = gathered(net.side.weight.grad.numpy())
assert np.array_equal(g[0], g[1]) and np.any(g[0] != 0)
checks += 1

# Without find_unused_parameters, an unused parameter is an error naming it.
strict = DDP(Net().double())
try:
    strict(xs[0])
    raise AssertionError("an unused parameter passed")
except RuntimeError as e:
    assert "side.weight" in str(e) and "find_unused_parameters=True" in str(e), e
checks += 1
# A parameter used again outside the DDP forward: an error, never a silent wrong gradient.
other = Net().double()
d2 = DDP(other, find_unused_parameters=True)
try:
    (d2(xs[0]).sum() + other.b.weight.sum()).backward()
    raise AssertionError("a gradient after the reduction passed")
except RuntimeError as e:
    assert "after its bucket was reduced" in str(e), e
checks += 1
dist.barrier()
if rank == 0:
    print(f"ddp checks: {checks} ok")
dist.destroy_process_group()
