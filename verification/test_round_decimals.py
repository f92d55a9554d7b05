"""round(decimals=d) against torch's on values at and near the ties (issue 32): half to even at
the d-th decimal, computed as torch's kernel does in the tensor's dtype, so float32 and float64
round the same elements the same way; integers refused as torch."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch as mt

torch = pytest.importorskip("torch")


def _values(dtype, rng):
    x = rng.standard_normal(20000) * 1000
    ties = np.round(x[:5000], 2) + 0.005  # at the 3rd decimal's halves (d = 2)
    halves = np.round(x[5000:8000], -1) + 5.0  # at the tens' halves (d = -1)
    return np.concatenate([x, ties, halves, [0.5, 1.5, 2.5, -0.5, -2.5, 0.125, 0.375]]).astype(
        dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("decimals", [1, 2, 3, 6, -1, -2, -3])
def test_round_decimals_equals_torch(dtype, decimals):
    x = _values(dtype, np.random.default_rng(abs(decimals)))
    got = mt.tensor(x).round(decimals=decimals)
    want = torch.round(torch.from_numpy(x), decimals=decimals).numpy()
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got.data, want)


def test_round_decimals_gradient_is_zero_and_integers_are_refused():
    x = mt.tensor([0.125, 1.5, -2.25], requires_grad=True)
    x.round(decimals=2).sum().backward()
    assert not x.grad.data.any()
    with pytest.raises(TypeError, match="decimals=1 is not defined on int64"):
        mt.tensor([1, 2]).round(decimals=1)
    with pytest.raises(TypeError, match="'decimals' must be int"):
        mt.tensor([1.0]).round(decimals=1.5)
