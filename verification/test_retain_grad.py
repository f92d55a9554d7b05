"""retain_grad() as torch's: a non-leaf tensor's .grad filled at backward (accumulating over
backwards, following the tensor through an in-place update), a no-op on a leaf, refused on a
tensor that requires no grad. Each scenario runs on both libraries."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minitorch as mt


def _intermediates(L):
    x = L.tensor([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]], requires_grad=True)
    h = (x * 2).tanh()
    h.retain_grad()
    logits = h @ L.tensor([[1.0], [2.0], [-1.0]])
    logits.retain_grad()
    loss = (logits * logits).mean()
    loss.retain_grad()
    loss.backward()
    return h.grad.numpy(), logits.grad.numpy(), loss.grad.numpy(), h.retains_grad


def _accumulates(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    z = (y * y).sum()
    z.backward(retain_graph=True)
    z.backward()
    return y.grad.numpy()


def _follows_inplace(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y += 1
    (y * y * 3).sum().backward()
    return y.grad.numpy(), y.retains_grad


def _leaf_noop(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    x.retain_grad()
    (x * 3).sum().backward()
    return x.grad.numpy(), x.retains_grad


SCENARIOS = [_intermediates, _accumulates, _follows_inplace, _leaf_noop]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__.lstrip("_"))
def test_retain_grad_as_torch(scenario):
    got, want = scenario(mt), scenario(torch)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want, strict=True):
        if isinstance(w, np.ndarray):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=0)
        else:
            assert g == w


def test_retain_grad_without_grad_refused():
    with pytest.raises(RuntimeError):
        torch.ones(2).retain_grad()
    with pytest.raises(RuntimeError, match="requires_grad=False") as info:
        mt.ones(2).retain_grad()
    assert "\n" not in str(info.value)


def test_retained_grad_survives_a_vjp_that_writes_in_place():
    """A vjp may write over its incoming gradient when nothing else holds it; the retained
    gradient holds it (and is a copy), so it keeps its values."""
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = -x  # neg's vjp negates its incoming gradient in place when nothing else holds it
    y.retain_grad()
    (y * mt.tensor([2.0, 5.0])).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [2.0, 5.0])
    np.testing.assert_array_equal(x.grad.numpy(), [-2.0, -5.0])
