"""Property tests for graph.unbroadcast, the one place broadcast gradients are reduced.

unbroadcast(g, s) must be the adjoint of broadcasting: <unbroadcast(g, s), x> equals
<g, broadcast_to(x, g.shape)> for every x of shape s. Shapes come from hypothesis (derandomized).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minitorch.engine.graph import unbroadcast

SETTINGS = settings(deadline=None, derandomize=True, max_examples=150)


@st.composite
def broadcast_case(draw):
    """(input shape s, broadcast result shape r) with s broadcastable to r, ranks 0..4."""
    result = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4))
    shape = draw(hnp.broadcastable_shapes(result, min_dims=0, max_dims=len(result), min_side=1))
    return tuple(shape), np.broadcast_shapes(shape, result)


@SETTINGS
@given(broadcast_case(), st.integers(0, 2**32 - 1))
def test_unbroadcast_is_adjoint_of_broadcast(case, seed):
    shape, result = case
    rng = np.random.default_rng(seed)
    g, x = rng.standard_normal(result), rng.standard_normal(shape)
    reduced = unbroadcast(g, shape)
    assert reduced.shape == shape
    lhs = float(np.sum(reduced * x))
    rhs = float(np.sum(g * np.broadcast_to(x, result)))
    assert np.isclose(lhs, rhs, rtol=1e-12, atol=1e-12)


@SETTINGS
@given(broadcast_case())
def test_unbroadcast_of_ones_counts_copies(case):
    """Each input element receives one unit per copy broadcasting made of it."""
    shape, result = case
    copies = int(np.prod(result)) // max(int(np.prod(shape)), 1)
    assert np.array_equal(unbroadcast(np.ones(result), shape), np.full(shape, float(copies)))


@SETTINGS
@given(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4),
       st.sampled_from([np.float32, np.float64]))
def test_unbroadcast_same_shape_is_identity(shape, dtype):
    g = np.arange(np.prod(shape), dtype=dtype).reshape(shape)
    out = unbroadcast(g, shape)
    assert out.dtype == dtype and np.array_equal(out, g)


@SETTINGS
@given(broadcast_case())
def test_unbroadcast_preserves_float32(case):
    shape, result = case
    assert unbroadcast(np.ones(result, dtype=np.float32), shape).dtype == np.float32


@SETTINGS
@given(broadcast_case())
def test_unbroadcast_does_not_mutate_its_argument(case):
    shape, result = case
    g = np.random.default_rng(0).standard_normal(result)
    before = g.copy()
    unbroadcast(g, shape)
    assert np.array_equal(g, before)


@SETTINGS
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4), st.data())
def test_unbroadcast_never_fakes_an_incompatible_shape(shape, data):
    """A gradient that is not a broadcast of `shape` must not come back with shape `shape`, so
    the engine's shape check reports it instead of silently accepting it."""
    wrong = tuple(n + data.draw(st.integers(1, 2)) for n in shape)  # every side too long
    out = unbroadcast(np.ones(wrong), shape)
    assert out.shape != shape
