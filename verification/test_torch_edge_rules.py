"""torch's rules at the edges the OpInfo tier found (issue 32), compared with torch: cat leaves
1-D empty tensors out (its legacy rule), embedding takes a 0-d or 1-D index, and normalize takes
torch.norm's p <= 0 (0: the count of non-zeros; negative; -inf: the smallest |x|), zeros too."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch as mt
from minitorch.nn import functional as F

torch = pytest.importorskip("torch")


def _both(arrays, requires_grad=True):
    return ([torch.tensor(a, requires_grad=requires_grad) for a in arrays],
            [mt.tensor(a, requires_grad=requires_grad) for a in arrays])


def _compare(t_out, m_out, t_in, m_in, seed=0):
    assert tuple(t_out.shape) == m_out.shape and str(t_out.dtype)[6:] == str(m_out.dtype)
    np.testing.assert_allclose(m_out.data, t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    if not t_out.requires_grad:
        return
    c = np.random.default_rng(seed).standard_normal(t_out.shape)
    (t_out * torch.tensor(c)).sum().backward()
    (m_out * mt.tensor(c)).sum().backward()
    for t, m in zip(t_in, m_in):
        want = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
        got = np.zeros(m.shape) if m.grad is None else m.grad.data
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shapes,dim", [
    ([(0,), (2, 3)], 0), ([(2, 3), (0,), (2, 3)], 1), ([(2, 3), (0,)], -1), ([(0,), (0,)], 0),
    ([(0,), (3,)], 0), ([(0,), (2, 0, 4), (2, 1, 4)], 1), ([(0,), (2, 3)], 1)])
def test_cat_leaves_out_1d_empty_tensors(shapes, dim):
    rng = np.random.default_rng(len(shapes))
    t_in, m_in = _both([rng.standard_normal(s) for s in shapes])
    _compare(torch.cat(t_in, dim), mt.cat(m_in, dim), t_in, m_in)


def test_cat_still_refuses_other_empty_shapes():
    with pytest.raises(RuntimeError):
        torch.cat([torch.zeros(0, 3), torch.zeros(2, 4)])
    with pytest.raises(RuntimeError):
        mt.cat([mt.zeros(0, 3), mt.zeros(2, 4)])


@pytest.mark.parametrize("index", [3, [4], [1, 1, 0], [[0, 2], [2, 9]]])
def test_embedding_takes_any_index_rank(index):
    weight = np.random.default_rng(0).standard_normal((10, 5))
    (tw,), (mw,) = _both([weight])
    _compare(torch.nn.functional.embedding(torch.tensor(index), tw),
             F.embedding(mt.tensor(index), mw), [tw], [mw])


@pytest.mark.parametrize("p", [0, 0.0, -1.0, -2.5, -np.inf])
@pytest.mark.parametrize("dim", [1, -1, (1, 2)])
def test_normalize_p_at_most_zero(p, dim):
    x = np.random.default_rng(1).standard_normal((3, 4, 5))
    x[0, 0, 0] = x[1, :, 2] = 0.0  # a zero, and an all-zero slice along dim 1
    t_in, m_in = _both([x])
    _compare(torch.nn.functional.normalize(t_in[0], p=p, dim=dim),
             F.normalize(m_in[0], p=p, dim=dim), t_in, m_in)


def test_normalize_refuses_a_p_that_is_not_a_number():
    with pytest.raises(ValueError, match="p must be a number"):
        F.normalize(mt.ones(2, 3), p="2")


def test_cat_keeps_a_left_out_empty_tensor_in_the_graph():
    """torch's legacy rule leaves a (0,) tensor out of the join, not out of the graph: it
    still gets a gradient, an empty one (the program fuzzer found it None here)."""
    grads = []
    for L in (torch, mt):
        empty = L.tensor(np.zeros(0), requires_grad=True)
        x = L.tensor(np.array([0.5]), requires_grad=True)
        out = L.cat([x, empty, x], dim=0)
        (out * L.tensor(np.array([2.0, -0.5]))).sum().backward()
        grads.append((tuple(empty.grad.shape), float(x.grad.sum())))
    assert grads[0] == grads[1] == ((0,), 1.5)
