"""What an op keeps for backward, as torch: a value used, then changed in place, and then
differentiated through. torch keeps only what each requested gradient reads (`d * 2` keeps
the 2, not d; `1 / d` keeps the result), so such a program runs there exactly when the use
never needed d's old value, and raises otherwise. Each use below runs on both libraries; the
outcome (the gradient, or an error at backward) must be the same, except for the documented
uses where minitorch keeps less than torch and gives the gradient torch refuses."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import minitorch as mt
from minitorch.nn import functional as MF

X = np.array([[0.6, 1.3, 0.9], [1.7, 0.8, 1.1]])
C = np.array([[1.5, 0.7, 1.2], [0.9, 1.4, 0.6]])


def _F(L):
    return MF if L is mt else TF


# use(L, d, c, w): d = x * 1 (a graph node, later written by d += 1), c a constant, w a
# parameter; each returns what backward runs through
USES = {
    "exp": lambda L, d, c, w: d.exp(), "log": lambda L, d, c, w: d.log(),
    "sqrt": lambda L, d, c, w: d.sqrt(), "sin": lambda L, d, c, w: d.sin(),
    "tanh": lambda L, d, c, w: d.tanh(), "sigmoid": lambda L, d, c, w: d.sigmoid(),
    "relu": lambda L, d, c, w: d.relu(), "abs": lambda L, d, c, w: d.abs(),
    "neg": lambda L, d, c, w: -d, "square": lambda L, d, c, w: d.square(),
    "rsqrt": lambda L, d, c, w: d.rsqrt(), "reciprocal": lambda L, d, c, w: d.reciprocal(),
    "gelu": lambda L, d, c, w: _F(L).gelu(d, approximate="tanh"),
    "softmax": lambda L, d, c, w: d.softmax(-1),
    "log_softmax": lambda L, d, c, w: d.log_softmax(-1),
    "sum": lambda L, d, c, w: d.sum(), "mean": lambda L, d, c, w: d.mean(1),
    "amax": lambda L, d, c, w: d.amax(1), "max": lambda L, d, c, w: d.max(),
    "pow": lambda L, d, c, w: d**2, "add": lambda L, d, c, w: d + c,
    "sub": lambda L, d, c, w: c - d, "mul_constant": lambda L, d, c, w: d * c,
    "number_times": lambda L, d, c, w: 3 * d, "div_by_constant": lambda L, d, c, w: d / c,
    "constant_div": lambda L, d, c, w: c / d, "number_div": lambda L, d, c, w: 10.0 / d,
    "power": lambda L, d, c, w: d**c, "constant_power": lambda L, d, c, w: c**d,
    "number_power": lambda L, d, c, w: 2.0**d, "remainder": lambda L, d, c, w: d % c,
    "constant_remainder": lambda L, d, c, w: c % d,
    "matmul_constant": lambda L, d, c, w: d @ c.T, "constant_matmul": lambda L, d, c, w: c.T @ d,
    "linear_constant": lambda L, d, c, w: _F(L).linear(d, c),
    "mul_parameter": lambda L, d, c, w: d * w, "matmul_parameter": lambda L, d, c, w: d @ w.T,
    "parameter_div": lambda L, d, c, w: w / d,
    "linear_parameter": lambda L, d, c, w: _F(L).linear(d, w),
    "where": lambda L, d, c, w: L.where(c > 1, d, c),
    "masked_fill": lambda L, d, c, w: d.masked_fill(c > 1, 0.0),
    "transpose": lambda L, d, c, w: d.T * 1,
    "cross_entropy": lambda L, d, c, w: _F(L).cross_entropy(d, L.tensor([0, 2])),
    # minitorch keeps less than torch for these (README, "Where minitorch differs")
    "var": lambda L, d, c, w: d.var(1), "logsumexp": lambda L, d, c, w: d.logsumexp(1),
    "clamp": lambda L, d, c, w: d.clamp(0.8, 1.5), "maximum": lambda L, d, c, w: d.maximum(c),
    "minimum": lambda L, d, c, w: d.minimum(c),
    "layer_norm": lambda L, d, c, w: _F(L).layer_norm(d, (3,), weight=w[0]),
}
KEEPS_LESS = {"var", "logsumexp", "clamp", "maximum", "minimum", "layer_norm"}


def _run(L, use, write: bool):
    x = L.tensor(X, requires_grad=True)
    w = L.tensor(C[::-1].copy(), requires_grad=True)
    d = x * 1
    y = USES[use](L, d, L.tensor(C), w)
    if write:
        d += 1
    (y * L.tensor(np.arange(1.0, 1 + y.numel()).reshape(y.shape))).sum().backward()
    return x.grad.numpy()


def _outcome(L, use):
    try:
        return _run(L, use, write=True)
    except RuntimeError as e:
        return str(e)


@pytest.mark.parametrize("use", [u for u in USES if u not in KEEPS_LESS])
def test_use_then_write_as_torch(use):
    want, got = _outcome(torch, use), _outcome(mt, use)
    if isinstance(want, str):
        assert isinstance(got, str), f"torch refuses ({want[:60]}...), minitorch ran"
        assert "modified in place" in got and "\n" not in got
    else:
        assert not isinstance(got, str), f"torch runs, minitorch raised: {got}"
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("use", sorted(KEEPS_LESS))
def test_difference_keeps_less_than_torch(use):
    """torch refuses; minitorch never read d's old value, so its gradient is the one of the
    values the use saw (the same program without the write, in torch)."""
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _run(torch, use, write=True)
    np.testing.assert_allclose(_run(mt, use, write=True), _run(torch, use, write=False),
                               rtol=1e-12, atol=1e-12)


def test_number_over_tensor_is_its_reciprocal_times_the_number():
    """torch's `2.0 / t` is t.reciprocal() * 2.0 (the same bits, and 1/t is what it keeps)."""
    t = np.linspace(0.3, 7.0, 101).astype(np.float32)
    np.testing.assert_array_equal((3.3 / mt.tensor(t)).numpy(), (3.3 / torch.tensor(t)).numpy())
