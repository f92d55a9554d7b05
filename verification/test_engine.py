"""Named semantic tests of the engine: reuse, accumulation, deep graphs, graph release, no_grad,
pending-gradient lifetime and the dtype rule. Each targets one failure seen in the anchors."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import minitorch as mt
from minitorch.engine import runtime
from minitorch.nn import functional as F
from verification.helpers import temp_op_fixture  # noqa: F401  (the temp_op fixture)


def leaf(values, dtype=np.float64):
    return mt.Tensor(np.asarray(values, dtype=dtype), requires_grad=True)


@pytest.fixture
def no_gc():
    """Run with the cyclic collector off, so only reference counting can free the graph."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def test_engine_a_plus_a():
    a = leaf([1.0, -2.0, 3.0])
    (a + a).sum().backward()
    assert np.array_equal(a.grad.data, [2.0, 2.0, 2.0])


def test_engine_diamond_graph():
    """a feeds two branches that meet again: d = (2a) * exp(a); dd/da = 2 exp(a) (1 + a)."""
    a = leaf([0.5, -1.0])
    b, c = a * 2.0, a.exp()
    (b * c).sum().backward()
    assert np.allclose(a.grad.data, 2 * np.exp(a.data) * (1 + a.data), rtol=1e-14, atol=0)


@pytest.mark.slow
def test_engine_chain_100k_deep_is_iterative():
    """A 100,000-node chain backpropagates with the recursion limit far below its depth."""
    x = leaf(1.0)
    y, n, c = x, 100_000, 0.99999
    for _ in range(n):
        y = y * c
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # any recursive traversal would fail immediately
    try:
        y.backward()
    finally:
        sys.setrecursionlimit(limit)
    assert x.grad.item() == pytest.approx(c**n, rel=1e-9)


def test_engine_delete_unbackwarded_100k_graph_does_not_crash():
    """Dropping the last reference to a deep graph must not overflow the C stack (own process)."""
    code = textwrap.dedent("""
        import gc, numpy as np, minitorch as mt
        gc.disable()
        x = mt.Tensor(np.ones(2), requires_grad=True)
        y = x
        for _ in range(100_000):
            y = y * 1.0
        del y
        print("deleted")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "deleted" in proc.stdout, proc.stderr[-2000:]


def test_engine_accumulates_over_two_backward_calls():
    x = leaf([1.0, 2.0])
    (x * x).sum().backward()
    once = x.grad.data.copy()
    (x * x).sum().backward()
    assert np.array_equal(x.grad.data, 2 * once)


def test_engine_zero_grad_resets():
    x = leaf([1.0, 2.0])
    (x * 3.0).sum().backward()
    x.zero_grad()
    assert x.grad is None
    (x * 3.0).sum().backward()
    assert np.array_equal(x.grad.data, [3.0, 3.0])


def test_engine_no_grad_builds_no_graph_and_saves_nothing(temp_op):
    contexts = []

    def forward(ctx, x):
        ctx.save(x)
        contexts.append(ctx)
        return x * 2.0

    op = temp_op("probe_save", forward, lambda ctx, g: (g * 2.0,), doc="y = 2x; grad_x = 2g.")
    x = leaf([1.0, 2.0])
    with mt.no_grad():
        y = mt.apply(op, x)
        with mt.no_grad():
            pass
        z = y * x  # still inside: nested blocks restore the outer state
    assert not y.requires_grad and y.grad_fn is None and z.grad_fn is None
    assert contexts[-1].saved == ()
    w = mt.apply(op, x)  # outside again: graph building resumes
    assert w.grad_fn == "probe_save" and len(contexts[-1].saved) == 1


def test_engine_needed_refuses_a_gradient_count_that_is_not_the_inputs(temp_op):
    """ctx.needed pairs gradients with inputs: one too many (a vjp's miscounted optional input)
    is an error naming the op, not silently cut off."""
    op = temp_op("probe_needed", lambda ctx, x: x * 2.0,
                 lambda ctx, g: ctx.needed(g * 2.0, g), doc="y = 2x; grad_x = 2g.")
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="op 'probe_needed': vjp gave ctx.needed 2 gradients "
                                           "for 1 inputs"):
        mt.apply(op, x).sum().backward()


def test_engine_unused_input_gets_no_grad():
    x, unused = leaf([1.0, 2.0]), leaf([5.0])
    (x * 2.0).sum().backward()
    assert unused.grad is None and np.array_equal(x.grad.data, [2.0, 2.0])


def test_engine_non_leaf_keeps_no_grad():
    x = leaf([1.0, 2.0])
    h = x.exp()
    h.sum().backward()
    assert h.grad is None and x.grad is not None


def test_engine_non_scalar_output_with_explicit_grad():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = x * 3.0
    with pytest.raises(RuntimeError, match="non-scalar"):
        y.backward()
    y = x * 3.0
    y.backward(np.array([[1.0, 0.0], [0.0, 2.0]]))
    assert np.array_equal(x.grad.data, [[3.0, 0.0], [0.0, 6.0]])


def test_engine_retain_graph_allows_second_backward():
    x = leaf([1.0, 2.0])
    loss = (x * x).sum()
    loss.backward(retain_graph=True)
    loss.backward()  # the graph is still there; this call releases it
    assert np.array_equal(x.grad.data, 4 * x.data)
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        loss.backward()


def test_engine_backward_through_released_graph_raises():
    x = leaf([1.0, 2.0])
    h = x.exp()
    loss = h.sum()
    loss.backward()
    with pytest.raises(RuntimeError, match=r"already freed.*'sum'.*retain_graph=True"):
        loss.backward()
    with pytest.raises(RuntimeError, match="already freed"):  # a new graph on a freed node
        (h * 2.0).sum().backward()


def test_engine_graph_freed_by_refcount_after_backward(no_gc):
    """With gc off, graph nodes die right after backward and nothing is left for gc. The graph
    holds nodes (Contexts), never the intermediate Tensors: those die as soon as the user drops
    them, while their nodes (and what the vjps saved) live until backward."""
    x = leaf(np.linspace(-1, 1, 6).reshape(2, 3))
    w = leaf(np.ones((3, 2)))
    h1 = x @ w
    h2 = h1.tanh()
    h3 = h2.softmax(-1)
    loss = (h3 * h2).sum()
    tensors = [weakref.ref(t) for t in (h1, h2, h3)]
    nodes = [weakref.ref(t._ctx) for t in (h1, h2, h3)]
    del h1, h2, h3
    assert [r() for r in tensors] == [None, None, None]  # the graph does not keep Tensors
    assert all(r() is not None for r in nodes)  # alive: the graph holds them
    loss.backward()
    assert [r() for r in nodes] == [None, None, None]
    del loss
    assert gc.collect() == 0  # no reference cycles anywhere
    assert x.grad is not None and w.grad is not None


def test_engine_retained_graph_freed_on_del(no_gc):
    """A retained (never released) graph still has no cycles: deleting the root frees it."""
    x = leaf([1.0, 2.0])
    h = x.exp()
    ref = weakref.ref(h._ctx)
    loss = (h * h).sum()
    del h
    loss.backward(retain_graph=True)
    assert ref() is not None
    del loss
    assert ref() is None and gc.collect() == 0


def test_engine_pending_gradients_dropped_as_consumed():
    """During backward of a chain, at most the gradient being consumed and the one just made are
    alive; an engine that kept every pending gradient would hold the whole chain's. (The hook's
    weak references keep each vjp from writing over its grad_out, so each is a new array.)"""
    x = leaf(np.ones(1000))
    y = x
    for _ in range(20):
        y = y.tanh()
    loss = y.sum()
    refs: list[weakref.ref] = []
    most_alive = []

    def hook(op, i, parent, grad):
        if not isinstance(parent, mt.Tensor):  # an intermediate node (a Context), not a leaf
            refs.append(weakref.ref(grad))
        most_alive.append(sum(r() is not None for r in refs))

    runtime.backward_hooks.append(hook)
    try:
        loss.backward()
    finally:
        runtime.backward_hooks.remove(hook)
    assert len(refs) == 20 and max(most_alive) <= 2, most_alive


def test_engine_never_mutates_a_gradient_it_was_given():
    """Summing contributions must not write into the caller's seed or a vjp's returned array."""
    x = leaf([1.0, 2.0])
    h = x * 1.0
    y = h + h  # add's vjp returns the same array for both inputs
    seed = np.array([1.0, 1.0])
    y.backward(seed)
    assert np.array_equal(seed, [1.0, 1.0]) and np.array_equal(x.grad.data, [2.0, 2.0])
    z = leaf([3.0])
    seed = np.array([1.0])
    z.backward(seed)
    seed[0] = 99.0  # the leaf's gradient is its own copy
    assert z.grad.item() == 1.0


def test_engine_detach_cuts_the_graph():
    x = leaf([1.0, 2.0])
    y = (x * 2.0).detach()
    assert y.grad_fn is None and not y.requires_grad
    (x * y).sum().backward()
    assert np.array_equal(x.grad.data, y.data)


def test_engine_dtype_rule():
    x32, x64 = leaf([1.0, 2.0], np.float32), leaf([3.0, 4.0], np.float64)
    assert (x32 * 2.0).dtype == np.float32 and (2.0 * x32).dtype == np.float32
    assert (x32.exp() / 3).dtype == np.float32
    mixed = x32 * x64
    assert mixed.dtype == np.float64
    mixed.sum().backward()
    assert x32.grad.dtype == np.float32 and x64.grad.dtype == np.float64
    assert np.array_equal(x32.grad.data, np.float32([3.0, 4.0]))


def test_engine_dtype_rule_for_cat_stack_and_fused_ops():
    """The same rule holds for the variadic ops and the fused entry points: no truncation of a
    float to int, float32 meeting float64 gives float64, and each input's grad keeps its dtype."""
    ints, floats = mt.tensor([1, 2]), mt.tensor(np.array([0.7, 0.2]))
    assert np.array_equal(mt.cat([ints, floats]).data, [1.0, 2.0, 0.7, 0.2])
    x32, x64 = leaf([1.0, 2.0], np.float32), leaf([3.0, 4.0], np.float64)
    for joined in (mt.cat([x32, x64]), mt.stack([x32, x64])):
        assert joined.dtype == np.float64
        joined.sum().backward()
    assert x32.grad.dtype == np.float32 and x64.grad.dtype == np.float64
    x = leaf(np.ones((2, 3)), np.float32)
    w, b = leaf(np.ones((4, 3)), np.float64), leaf(np.ones(3), np.float64)
    for y in (F.linear(x, w), F.layer_norm(x, (3,), None, b), F.rms_norm(x, (3,), b)):
        assert y.dtype == np.float64
        y.sum().backward()
    assert x.grad.dtype == np.float32


def test_engine_integer_outputs_never_require_grad():
    """Casting a float that requires grad to int gives a plain int tensor, usable as ids."""
    x = leaf([0.0, 2.0])
    ids = x.long()
    assert ids.dtype == np.int64 and not ids.requires_grad and ids.grad_fn is None
    w = leaf(np.ones((3, 2)))
    F.embedding(ids, w).sum().backward()
    assert np.array_equal(w.grad.data, [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]])


def test_engine_integer_tensors_cannot_require_grad():
    with pytest.raises(TypeError, match="int64"):
        mt.Tensor(np.arange(3), requires_grad=True)
    with pytest.raises(TypeError, match="float32/float64"):
        mt.arange(3).requires_grad_()
    assert not mt.arange(3).requires_grad


def test_engine_outputs_are_ndarrays():
    """Full reductions and integer indexing return 0-d arrays, never NumPy scalars."""
    x = leaf([1.0, 2.0, 3.0])
    for y in (x.sum(), x[1], x.amax(), x.argmax()):
        assert isinstance(y.data, np.ndarray) and y.shape == ()
