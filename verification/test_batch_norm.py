"""nn.BatchNorm1d/2d and F.batch_norm as torch's: outputs, every gradient, the running
statistics (momentum, and momentum=None's cumulative average) and num_batches_tracked over
training steps, eval mode on the running statistics, and track_running_stats=False. Each
scenario runs on both libraries with the same inputs, in float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minitorch as mt

RNG = np.random.default_rng(0)
BATCHES = {2: [RNG.normal(2.0, 3.0, (6, 4)) for _ in range(3)],
           3: [RNG.normal(-1.0, 0.5, (5, 4, 3)) for _ in range(3)],
           4: [RNG.normal(0.5, 2.0, (3, 4, 2, 2)) for _ in range(3)]}


def _run(L, rank, **options):
    module = (L.nn.BatchNorm2d if rank == 4 else L.nn.BatchNorm1d)(4, **options).double()
    if module.weight is not None:
        with L.no_grad():
            module.weight.copy_(L.tensor(np.linspace(0.5, 2.0, 4)))
    if module.bias is not None:
        with L.no_grad():
            module.bias.copy_(L.tensor(np.linspace(-1.0, 1.0, 4)))
    out = []
    for data in BATCHES[rank]:
        x = L.tensor(data, requires_grad=True)
        y = module(x)
        (y * L.tensor(np.cos(np.arange(y.numel())).reshape(y.shape))).sum().backward()
        out += [y.detach().numpy(), x.grad.numpy()]
    out += [p.grad.numpy() for p in module.parameters()]
    if module.running_mean is not None:
        out += [module.running_mean.numpy(), module.running_var.numpy(),
                int(module.num_batches_tracked)]
    module.eval()
    with L.no_grad():
        out.append(module(L.tensor(BATCHES[rank][0])).numpy())
    return out


@pytest.mark.parametrize("rank", [2, 3, 4])
@pytest.mark.parametrize("options", [{}, {"momentum": None}, {"momentum": 0.3, "eps": 1e-3},
                                     {"affine": False}, {"bias": False},
                                     {"track_running_stats": False}],
                         ids=["default", "cumulative", "momentum-eps", "no-affine", "no-bias",
                              "no-stats"])
def test_batch_norm_module_as_torch(rank, options):
    for got, want in zip(_run(mt, rank, **options), _run(torch, rank, **options), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_repr_and_bad_input_as_torch():
    assert repr(mt.nn.BatchNorm1d(3, momentum=None)) == repr(torch.nn.BatchNorm1d(3,
                                                                                 momentum=None))
    for L in (torch, mt):
        with pytest.raises(ValueError):
            L.nn.BatchNorm1d(3)(L.ones(2, 3, 2, 2))  # a 4-D input to the 1-D norm
        with pytest.raises(ValueError):
            L.nn.BatchNorm1d(3)(L.ones(1, 3))  # one value per channel while training
