"""Engine semantics the per-op suite cannot see: fan-out and pending-gradient accumulation (0-d,
zero-size and ordinary nodes), topological order, unbroadcast inside backward, leaf accumulation
across calls, graph release, retain_graph, no_grad islands, apply's needs_grad and dtype rule.

Each test kills engine mutants (verification/mutate_engine.py) and states a real property,
checked against torch in float64 or against exact hand-computed values.
"""

from __future__ import annotations

import weakref

import numpy as np
import pytest

import minitorch as mt
from minitorch.engine import graph
from minitorch.engine.registry import COMPOSITES, REGISTRY, Context, composite, register
from verification.helpers import temp_op_fixture  # noqa: F401  (the temp_op fixture)

torch = pytest.importorskip("torch")


def leaf(values, dtype=np.float64):
    return mt.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def against_torch(fn, *arrays, seed=None):
    """Run fn(x, y, ...) in minitorch and torch (float64 leaves); the outputs and every leaf
    gradient must agree to 1e-12. `seed` is the output gradient (default: ones, scalar outputs)."""
    ours = [leaf(a) for a in arrays]
    theirs = [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    out, ref = fn(*ours), fn(*theirs)
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = np.ones(ref.shape) if seed is None else np.asarray(seed, dtype=np.float64)
    out.backward(g)
    ref.backward(torch.tensor(g))
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if b.grad is None:
            assert a.grad is None, f"input {i}: torch gives no gradient"
            continue
        assert a.grad is not None, f"input {i}: no gradient"
        assert a.grad.shape == tuple(b.grad.shape) and a.grad.dtype == np.float64
        np.testing.assert_allclose(a.grad.data, b.grad.numpy(), rtol=1e-12, atol=1e-12,
                                   err_msg=f"gradient of input {i}")
    return ours


# ---- fan-out: pending gradients summed over every use --------------------------------------------
def shape_id(shape) -> str:
    return "(" + ",".join(map(str, shape)) + ")"


@pytest.mark.parametrize("shape", [(), (1,), (3,), (2, 3)], ids=shape_id)
@pytest.mark.parametrize("uses", [2, 3, 4, 7])
def test_semantics_fanout_sums_every_use(shape, uses):
    """An intermediate used k times receives the sum of k contributions, at every rank (a 0-d
    node used three times lost one: the pending sum was a NumPy scalar, not an array)."""
    x = np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape)

    def fn(x):
        z = x * 1.5  # an intermediate (non-leaf) node
        total = z
        for k in range(1, uses):
            total = total + z * float(k + 1)  # distinct weights: a lost or doubled use shows
        return total.sum()

    against_torch(fn, x)


def test_semantics_fanout_0d_three_uses_exact():
    """The issue's reproducer: x = 2, z = x * 1, (z + z + z)' = 3."""
    x = mt.tensor(2.0, dtype=mt.float64, requires_grad=True)
    z = x * 1.0
    (z + z + z).backward()
    assert x.grad.item() == 3.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_semantics_fanout_keeps_dtype(dtype):
    """Summing contributions keeps the node's dtype: float32 stays float32 on the leaf."""
    x = leaf([1.0, 2.0], dtype)
    z = x * 2.0
    (z * z + z + z.exp()).sum().backward()
    assert x.grad.dtype == dtype
    expect = 2.0 * (2 * (2 * x.data) + 1 + np.exp(2 * x.data))
    np.testing.assert_allclose(x.grad.data, expect, rtol=1e-6 if dtype == np.float32 else 1e-14)


def test_semantics_fanout_mixed_leaf_and_node_uses():
    """A leaf used directly and through a node, and a node feeding both sides of one op."""
    def fn(x, w):
        h = x * w  # node used 3 times, one of them by mul with itself
        return (h * h + h * x + w * h).sum()

    against_torch(fn, [0.3, -1.2, 2.0], [1.5, 0.5, -0.7])


def test_semantics_shared_vjp_array_summed_without_mutation():
    """add's vjp returns one array for both inputs: the engine must add copies, not write into
    that array (a node fed by h + h, then used again)."""
    def fn(x):
        h = x * 2.0
        s = h + h  # both of add's input gradients are the same array object
        return (s * h).sum() + (s + s).sum()

    against_torch(fn, [1.0, -3.0, 0.25])


# ---- gradients written in place: only where nothing else sees them (graph.exclusive) ------------
def test_semantics_exclusive_only_when_nothing_else_reaches_the_array():
    """exclusive(a): a writeable, contiguous, NumPy-owned array that only the caller's one
    reference reaches, directly or through the arrays it views."""
    a = np.ones(4)
    assert graph.exclusive(a)
    other = a
    assert not graph.exclusive(a)  # a second name
    del other
    view = a.reshape(2, 2)
    assert not graph.exclusive(a) and not graph.exclusive(view)  # each reaches the other
    del a
    assert graph.exclusive(view)  # the view alone reaches its base
    assert graph.exclusive(view.T) is False  # view still reaches the memory of view.T
    column_major = np.ones((3, 4)).T  # F-contiguous: written elementwise like a C one
    assert graph.exclusive(column_major)
    held = [np.ones(3)]
    first = held[0]
    assert not graph.exclusive(first)  # the list and `first`
    assert graph.exclusive(np.asarray(2.0))  # 0-d
    frozen = np.ones(3)
    frozen.setflags(write=False)  # e.g. saved by a live graph
    assert not graph.exclusive(frozen)
    assert not graph.exclusive(np.frombuffer(bytearray(16)))  # memory NumPy does not own
    strided = np.ones((4, 4))[:, ::2]
    assert not graph.exclusive(strided)  # not contiguous (its base is free, but it may overlap)
    assert not graph.exclusive(2.0) and not graph.exclusive([1.0])
    watched = np.ones(3)
    ref = weakref.ref(watched)  # a weak holder (a cache keyed by weak references)
    assert not graph.exclusive(watched)
    del ref
    assert graph.exclusive(watched)


def test_semantics_exclusive_only_where_reference_counts_are_known(monkeypatch):
    """On this interpreter the counts hold (CPython 3.11-3.13); on any other, exclusive is
    always False (every gradient copied, as before in-place gradients existed)."""
    assert graph._counts_hold() and graph._TRUSTED
    with monkeypatch.context() as m:  # an interpreter that undercounts: everything "exclusive"
        m.setattr(graph, "exclusive", lambda a: True)
        assert graph._counts_hold() is False
    monkeypatch.setattr(graph, "_VERSIONS", ())
    assert graph._counts_hold() is False
    monkeypatch.setattr(graph, "_TRUSTED", False)
    fresh = np.ones(3)
    assert graph.exclusive(fresh) is False


def test_semantics_writable_flag_is_for_one_call(monkeypatch):
    """A node kept by retain_graph does not keep grad_out_writable: a later direct call of its
    vjp with the caller's array must not write over it."""
    seen = _record_writable(monkeypatch, "exp")
    x = leaf([0.5, 1.0])
    y = (x * 2.0).exp()
    (y * 3.0).sum().backward(retain_graph=True)  # exp's grad_out: mul's fresh array
    assert seen == [True] and y._ctx.grad_out_writable is False
    mine = np.array([1.0, 2.0])
    y._ctx.op.vjp(y._ctx, mine)
    np.testing.assert_array_equal(mine, [1.0, 2.0])


# Each op whose vjp may write over grad_out: (the same call in both libraries on input a and
# weight w, the op's registry name when the call runs it once, so its flag can be recorded).
WRITERS = {
    "relu": (lambda F, a, w: F.relu(a), "relu"),
    "gelu": (lambda F, a, w: F.gelu(a), "gelu"),
    "gelu_tanh": (lambda F, a, w: F.gelu(a, approximate="tanh"), "gelu"),
    "layer_norm": (lambda F, a, w: F.layer_norm(a, (4,), w, w * 0.5), "layer_norm"),
    "layer_norm_bare": (lambda F, a, w: F.layer_norm(a, (4,)), "layer_norm"),
    "rms_norm": (lambda F, a, w: F.rms_norm(a, (4,), w), "rms_norm"),
    "rms_norm_bare": (lambda F, a, w: F.rms_norm(a, (4,)), "rms_norm"),
    "exp": (lambda F, a, w: a.exp(), "exp"),
    "log": (lambda F, a, w: (a * a + 1.0).log(), "log"),
    "sqrt": (lambda F, a, w: (a * a + 1.0).sqrt(), "sqrt"),
    "sin": (lambda F, a, w: a.sin(), "sin"),
    "cos": (lambda F, a, w: a.cos(), "cos"),
    "tanh": (lambda F, a, w: a.tanh(), "tanh"),
    "sigmoid": (lambda F, a, w: a.sigmoid(), "sigmoid"),
    "neg": (lambda F, a, w: -a, "neg"),
    "mul": (lambda F, a, w: a * w, "mul"),  # both inputs need grad; mul also runs around it
    "div": (lambda F, a, w: a / w, "div"),
}


def _functional(t):
    return torch.nn.functional if isinstance(t, torch.Tensor) else mt.nn.functional


def _record_writable(monkeypatch, name) -> list:
    """ctx.grad_out_writable as each vjp of REGISTRY[name] sees it."""
    op, seen = REGISTRY[name], []
    vjp = op.vjp

    def recording(ctx, g):
        seen.append(ctx.grad_out_writable)
        return vjp(ctx, g)

    monkeypatch.setattr(op, "vjp", staticmethod(recording))
    return seen


A = np.linspace(-2.0, 2.5, 24).reshape(2, 3, 4)
W = np.array([0.5, -1.5, 2.0, 0.25])  # never 0: a / w
C = np.cos(np.arange(24.0)).reshape(2, 3, 4)  # a varied output gradient


@pytest.mark.parametrize("name", WRITERS)
def test_semantics_vjp_writes_over_an_exclusive_grad_out(name, monkeypatch):
    """In a chain, grad_out reaches the vjp alone (the flag is set) and the gradients written
    over it match torch's, weight gradients included (they are read from g first)."""
    f, op = WRITERS[name]
    seen = _record_writable(monkeypatch, op)

    def fn(a, w, c):
        return (f(_functional(a), a * 1.5, w) * c).sum()

    against_torch(fn, A, W, C)
    assert seen == [True] or (op == "mul" and True in seen), seen


@pytest.mark.parametrize("name", WRITERS)
def test_semantics_shared_grad_out_is_not_written_over(name, monkeypatch):
    """add's vjp hands one array to both inputs: the first f to run backward must leave it
    intact for the second (h = f(a) + f(b)); the flag is off for the first and on for the
    second, which by then holds the array alone."""
    f, op = WRITERS[name]
    seen = _record_writable(monkeypatch, op)

    def fn(a, b, w, c):
        F = _functional(a)
        return ((f(F, a * 1.0, w) + f(F, b * 2.0, w)) * c).sum()

    against_torch(fn, A, A[::-1] * 0.7, W, C)
    assert seen == [False, True] or (op == "mul" and {False, True} <= set(seen)), seen


def test_semantics_control_writing_over_a_shared_grad_out_is_caught(monkeypatch):
    """Negative control: an engine that lets every vjp write over a writeable grad_out gives
    h = relu(a) + relu(b) a wrong gradient, which the test above sees."""
    monkeypatch.setattr(graph, "exclusive", lambda a: isinstance(a, np.ndarray)
                        and a.flags.writeable)

    def fn(a, b, w, c):
        F = _functional(a)
        return ((F.relu(a * 1.0) + F.relu(b * 2.0)) * w * c).sum()

    with pytest.raises(AssertionError, match="gradient of input"):
        against_torch(fn, A, A[::-1] * 0.7, W, C)


def test_semantics_arrays_the_caller_holds_are_never_written():
    """The seed passed to backward() and the gradients a backward hook keeps stay as they were."""
    from minitorch.engine import runtime

    x = leaf(A)
    seed = C.copy()
    kept = []
    runtime.backward_hooks.append(lambda op, i, parent, grad: kept.append((grad, grad.copy())))
    try:
        y = mt.nn.functional.relu(x * 1.0)
        y.backward(seed)
    finally:
        runtime.backward_hooks.pop()
    np.testing.assert_array_equal(seed, C)
    assert len(kept) == 2 and all(np.array_equal(g, snap) for g, snap in kept)
    np.testing.assert_array_equal(x.grad.data, C * (A > 0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("layout", ["contiguous", "strided", "small"])
@pytest.mark.parametrize("over_g", [False, True], ids=["new", "over_g"])
def test_semantics_relu_grad_in_pieces_equals_one_pass(dtype, layout, over_g):
    """kernels.relu_grad (g * (y > 0) in BLOCK-element pieces, into g or a new array) gives
    bit for bit what one pass gives, inf and nan included, for sizes that are not a multiple
    of BLOCK and for arrays it must not split (strided, small)."""
    from minitorch.engine import kernels as K

    n = {"contiguous": 2 * K.BLOCK + 7, "strided": 2 * K.BLOCK + 7, "small": 5}[layout]
    rng = np.random.default_rng(0)
    y = np.maximum(rng.standard_normal(n), 0).astype(dtype)
    g = rng.standard_normal(2 * n if layout == "strided" else n).astype(dtype)
    if layout == "strided":
        g = g[::2]
    g[:3] = [np.inf, -np.inf, np.nan]
    y[:3] = 0.0
    with np.errstate(invalid="ignore"):  # inf * 0
        expect = g * (y > 0)
        got = K.relu_grad(g, y, out=g if over_g else None)
    assert got.dtype == dtype and (got is g) == over_g
    np.testing.assert_array_equal(got, expect)  # nan where g*0 is nan, as one pass gives


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64], ids=["f32", "f64", "i64"])
@pytest.mark.parametrize("layout", ["contiguous", "strided", "small", "0-d"])
def test_semantics_relu_in_pieces_equals_one_pass(dtype, layout):
    """kernels.relu (max(x, 0) against BLOCK zeros, piece by piece) gives bit for bit what
    np.maximum(x, 0) gives, -0.0, inf and nan included, in x's dtype (integers stay integers,
    as torch's), for sizes that are not a multiple of BLOCK and for arrays it must not split."""
    from minitorch.engine import kernels as K

    n = {"contiguous": 2 * K.BLOCK + 7, "strided": 2 * K.BLOCK + 7, "small": 5, "0-d": 1}[layout]
    x = np.random.default_rng(0).standard_normal(2 * n + 4) * 4
    if dtype != np.int64:
        x[:4] = [-0.0, np.inf, -np.inf, np.nan]
    x = x.astype(dtype)
    x = x[::2] if layout == "strided" else x[:n]
    if layout == "0-d":
        x = x.reshape(())
    expect = np.maximum(x, x.dtype.type(0))
    got = K.relu(x)
    assert got.shape == x.shape and got.dtype == expect.dtype == x.dtype
    np.testing.assert_array_equal(got, expect)
    assert np.array_equal(np.signbit(got), np.signbit(expect))  # -0.0 gives what NumPy gives


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("inverse", [False, True], ids=["rotate", "inverse"])
@pytest.mark.parametrize("shape", [(2, 4, 5, 16), (2, 1, 1, 6), (3, 0, 2)], ids=str)
def test_semantics_rope_whole_width_equals_halves(dtype, inverse, shape):
    """kernels.rotate, computed over the whole width (x*[c, c] + [x2, x1]*[-s, s]), gives bit
    for bit the rotate-half formula (x1 c - x2 s, x2 c + x1 s), also on a strided view (q of
    the packed projection) and with float64 tables on float32 input (promoted alike)."""
    from minitorch.engine import kernels as K

    rng = np.random.default_rng(5)
    packed = rng.standard_normal(shape[:-1] + (3 * shape[-1],)).astype(dtype)
    x = packed[..., shape[-1]:2 * shape[-1]]  # a view, as split_heads gives
    cos, sin = K.rope_tables(shape[-2], shape[-1], dtype=np.float64)
    half, s = shape[-1] // 2, -sin if inverse else sin
    x1, x2 = x[..., :half], x[..., half:]
    expect = np.concatenate([x1 * cos - x2 * s, x2 * cos + x1 * s], axis=-1)
    got = K.rotate(x, cos, sin, inverse=inverse)
    assert got.dtype == expect.dtype and got.shape == x.shape
    np.testing.assert_array_equal(got, expect)


def test_semantics_relu_backward_selects_over_large_arrays(monkeypatch):
    """relu's vjp gives 0 (torch), not nan, where an infinite grad_out meets y = 0, also when
    its mask is made in pieces and written over grad_out."""
    from minitorch.engine import kernels as K

    n = 3 * K.BLOCK
    x = leaf(np.where(np.arange(n) % 3 == 0, -1.0, 0.5))
    seed = np.full(n, np.inf)
    seen = _record_writable(monkeypatch, "relu")
    with np.errstate(invalid="ignore"):  # inf * 0, before the select
        (mt.nn.functional.relu(x * 1.0) * 1.0).backward(seed)  # relu's grad_out: mul's array
    assert seen == [True]
    expect = np.where(np.arange(n) % 3 == 0, 0.0, np.inf)
    np.testing.assert_array_equal(x.grad.data, expect)


# ---- topological order --------------------------------------------------------------------------
def test_semantics_ladder_graph_order():
    """h[i+1] = h[i] * w + h[i-1]: every node feeds two later nodes, so a node processed before
    all its consumers (a wrong toposort) loses gradient."""
    def fn(x, w):
        prev, h = x, x * w
        for _ in range(12):
            prev, h = h, h * w + prev
        return h.sum()

    against_torch(fn, [0.9, -0.4], [0.8, 1.1])


def test_semantics_diamond_with_shortcut():
    """Two paths of different length from x to the output (x -> a -> b -> out and x -> out)."""
    def fn(x):
        a = x.tanh()
        b = (a * a).exp()
        c = b * a + x
        return (c * b).sum() + a.sum()

    against_torch(fn, [0.1, -0.6, 1.3])


def test_semantics_toposort_parents_before_children():
    x = leaf([1.0, 2.0])
    a = x * 2.0
    b = a.exp()
    c = a * b
    d = c + b
    order = graph.toposort(d._ctx)
    pos = {id(n): i for i, n in enumerate(order)}
    nodes = [a._ctx, b._ctx, c._ctx, d._ctx]
    assert len(order) == 4 and all(id(n) in pos for n in nodes)
    assert pos[id(a._ctx)] < pos[id(b._ctx)] < pos[id(c._ctx)] < pos[id(d._ctx)]
    assert order[-1] is d._ctx  # the root comes last: backward pops it first


# ---- unbroadcast inside backward ----------------------------------------------------------------
@pytest.mark.parametrize("sa,sb", [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (2, 3)),
                                   ((2, 1, 3), (4, 1)), ((1,), (2, 2)), ((5, 1, 1), (1, 1))],
                         ids=lambda s: shape_id(s))
def test_semantics_broadcast_gradients_reduced(sa, sb):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    against_torch(lambda a, b: (a * b + a - b).exp().sum(), a, b)


# ---- zero-size tensors --------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0), (2, 0, 3)], ids=shape_id)
def test_semantics_zero_size_gradients(shape):
    """Gradients of zero-size tensors are zero-size arrays of the leaf's shape and dtype."""
    x = np.ones(shape)

    def fn(x):
        return ((x * 2.0).exp() + x).sum()

    ours = against_torch(fn, x)
    assert ours[0].grad.shape == shape


def test_semantics_zero_size_broadcast():
    """A (1, 3) input broadcast against (0, 3) gets a zero gradient of shape (1, 3)."""
    against_torch(lambda a, b: (a * b).sum(), np.ones((0, 3)), np.full((1, 3), 2.0))


# ---- leaf accumulation --------------------------------------------------------------------------
def test_semantics_grad_accumulates_in_place_across_calls():
    """backward() adds into .grad (torch: the same tensor, updated in place) and zero_grad
    resets it."""
    x = leaf([1.0, -2.0])
    (x * x).sum().backward()
    first, first_data = x.grad, x.grad.data
    (x * 3.0).sum().backward()
    (x.exp()).sum().backward()
    assert x.grad is first and x.grad.data is first_data  # in place, as torch does
    np.testing.assert_array_equal(x.grad.data, 2 * x.data + 3.0 + np.exp(x.data))
    x.zero_grad()
    (x * 5.0).sum().backward()
    np.testing.assert_array_equal(x.grad.data, [5.0, 5.0])


def test_semantics_leaf_grads_do_not_alias():
    """add hands both leaves the same array; each leaf's .grad must own a copy, or a later
    accumulation into one leaf would change the other."""
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (a + b).sum().backward()
    assert a.grad.data is not b.grad.data and not np.shares_memory(a.grad.data, b.grad.data)
    (a * 3.0).sum().backward()
    np.testing.assert_array_equal(a.grad.data, [4.0, 4.0])
    np.testing.assert_array_equal(b.grad.data, [1.0, 1.0])


def test_semantics_flat_leaf_gets_its_first_gradient_in_its_slot():
    """A leaf with a flat-storage slot (nn/flat.py: `_flat.new_grad(data)` gives an array or
    None) gets its first gradient copied into that array and later ones added there in place;
    a slot that gives None leaves the leaf its own copy, as for any leaf."""

    class Slot:
        def __init__(self, out):
            self.out, self.asked = out, []

        def new_grad(self, data):
            self.asked.append(data)
            return self.out

    class Leaf(mt.Tensor):  # a subclass has a __dict__ (as Parameter does) to hold `_flat`
        pass

    x, buf = Leaf(np.array([1.0, 2.0]), requires_grad=True), np.full(2, np.nan)
    x._flat = Slot(buf)
    (x * 3.0).sum().backward()
    assert x.grad.data is buf and len(x._flat.asked) == 1 and x._flat.asked[0] is x.data
    (x * 2.0).sum().backward()
    assert x.grad.data is buf and len(x._flat.asked) == 1
    np.testing.assert_array_equal(buf, [5.0, 5.0])
    y = Leaf(np.array([1.0, 2.0]), requires_grad=True)
    y._flat = Slot(None)
    (y * 4.0).sum().backward()
    assert y.grad.data.flags.owndata
    np.testing.assert_array_equal(y.grad.data, [4.0, 4.0])


def test_semantics_leaf_grad_dtype_is_the_leaf_dtype():
    """A float32 leaf fed a float64 seed through a leaf-root backward keeps a float32 .grad."""
    x = leaf([1.0, 2.0], np.float32)
    x.backward(np.array([0.5, 0.25], dtype=np.float64))
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.data, np.float32([0.5, 0.25]))
    x.backward(mt.tensor(np.array([1.0, 1.0])))  # a Tensor seed works too, and accumulates
    np.testing.assert_array_equal(x.grad.data, np.float32([1.5, 1.25]))


def test_semantics_only_leaves_that_require_grad_get_grad():
    x, c = leaf([1.0, 2.0]), mt.tensor(np.array([3.0, 4.0]))
    h = x * c
    (h * h).sum().backward()
    assert c.grad is None and h.grad is None
    np.testing.assert_array_equal(x.grad.data, 2 * x.data * c.data**2)


def test_semantics_seed_scales_the_gradient():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    seed = np.array([[1.0, -2.0], [0.5, 3.0]])
    against_torch(lambda x: x.exp() * 2.0, x.data, seed=seed)
    y = leaf([1.0, 2.0])
    (y * 3.0).backward([1.0, -1.0])  # any array-like seed of the right shape
    np.testing.assert_array_equal(y.grad.data, [3.0, -3.0])
    z = leaf([1.0, 2.0], np.float32)
    (z * 3.0).backward(np.array([1.0, -1.0]))  # a float64 seed is cast to the output's dtype
    assert z.grad.dtype == np.float32
    np.testing.assert_array_equal(z.grad.data, np.float32([3.0, -3.0]))


def test_semantics_backward_argument_errors():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        mt.tensor(np.array([1.0])).backward()
    with pytest.raises(ValueError, match="grad shape"):
        (x * 2.0).backward(np.ones(3))
    with pytest.raises(RuntimeError, match="non-scalar"):
        (x * 2.0).backward()
    y = leaf([2.0])
    (y * 4.0).backward()  # a one-element (not 0-d) output needs no explicit grad
    assert y.grad.item() == 4.0


# ---- graph release and retain_graph -------------------------------------------------------------
def test_semantics_graph_released_after_backward():
    x = leaf([1.0, 2.0])
    h = x.exp()
    loss = (h * x).sum()
    nodes = [h._ctx, loss._ctx]
    loss.backward()
    assert all(n.parents is None and n.saved == () for n in nodes)
    with pytest.raises(RuntimeError, match="already freed"):
        loss.backward()


def test_semantics_retain_graph_double_backward_matches_torch():
    """retain_graph=True keeps every node; the second backward adds the same gradient again."""
    def build(lib_x):
        h = lib_x.tanh()
        return (h * h * lib_x + h).sum()

    x = leaf([0.3, -0.8])
    tx = torch.tensor([0.3, -0.8], dtype=torch.float64, requires_grad=True)
    ours, theirs = build(x), build(tx)
    ours.backward(retain_graph=True)
    theirs.backward(retain_graph=True)
    kept = ours._ctx
    assert kept.parents is not None and kept.saved is not None
    ours.backward(retain_graph=True)
    theirs.backward(retain_graph=True)
    ours.backward()
    theirs.backward()
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy(), rtol=1e-12, atol=0)
    assert kept.parents is None


def test_semantics_backward_from_intermediate_then_root():
    """Backward from an intermediate with retain_graph, then from the root through it."""
    def run(lib_x, retain):
        h = lib_x * 3.0
        y = (h * h).sum()
        h.sum().backward(retain_graph=retain)
        y.backward()

    x = leaf([1.0, 2.0])
    tx = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    run(x, True)
    run(tx, True)
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy(), rtol=1e-14)


# ---- no_grad ------------------------------------------------------------------------------------
def test_semantics_no_grad_island_is_a_constant():
    """Values computed under no_grad are constants for the gradient, as in torch."""
    def fn(x, torch_like):
        y = x * 2.0
        with (torch.no_grad() if torch_like else mt.no_grad()):
            c = y * y + 1.0
            assert not c.requires_grad
        return (y * c).sum()

    x = leaf([0.5, -1.5])
    tx = torch.tensor([0.5, -1.5], dtype=torch.float64, requires_grad=True)
    fn(x, False).backward()
    fn(tx, True).backward()
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy(), rtol=1e-14)


def test_semantics_grad_mode_restored():
    assert mt.is_grad_enabled()
    with mt.no_grad():
        assert not mt.is_grad_enabled()
        with mt.set_grad_enabled(True):
            assert mt.is_grad_enabled()
            assert (leaf([1.0]) * 2.0).requires_grad  # an island with grad inside no_grad
        assert not mt.is_grad_enabled()
    assert mt.is_grad_enabled()
    with pytest.raises(KeyError):  # an exception inside the block still restores the mode
        with mt.no_grad():
            raise KeyError
    assert mt.is_grad_enabled() and (leaf([1.0]) * 2.0).requires_grad


# ---- apply: needs_grad, recording, dtype ---------------------------------------------------------
def test_semantics_apply_records_only_what_needs_grad():
    x, c = leaf([1.0, 2.0]), mt.tensor(np.array([3.0, 4.0]))
    y = x * c
    assert y.requires_grad and y.grad_fn == "mul" and not y.is_leaf
    assert y._ctx.needs_grad == (True, False) and y._ctx.parents[1] is None
    assert y._ctx.parents[0] is x  # a leaf is its own graph node
    assert y._ctx.out_shape == (2,) and y._ctx.out_dtype == np.float64
    z = y * y
    assert z._ctx.parents == (y._ctx, y._ctx)  # an intermediate's node is its producer's Context
    free = c * 2.0
    assert not free.requires_grad and free._ctx is None
    assert not (x > 1.0).requires_grad  # a non-differentiable op records nothing


def test_semantics_dtype_promotion_mixed_precision():
    """float32 meeting float64 computes in float64; each leaf's gradient keeps its own dtype and
    equals torch's (torch promotes the same way)."""
    a32 = np.array([0.5, -1.25], dtype=np.float32)
    b64 = np.array([2.0, 3.0])
    x, w = mt.tensor(a32, requires_grad=True), leaf(b64)
    tx = torch.tensor(a32, requires_grad=True)
    tw = torch.tensor(b64, requires_grad=True)
    y, ty = (x * w).exp() + x, (tx * tw).exp() + tx
    assert y.dtype == np.float64 and ty.dtype == torch.float64
    y.sum().backward()
    ty.sum().backward()
    assert x.grad.dtype == np.float32 and w.grad.dtype == np.float64
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(w.grad.data, tw.grad.numpy(), rtol=1e-12)


def test_semantics_dtype_rule_table():
    x32, x64 = leaf([1.0], np.float32), leaf([2.0], np.float64)
    ints, flags = mt.tensor(np.array([2])), mt.tensor(np.array([True]))
    assert (x32 * x64).dtype == (x64 * x32).dtype == np.float64
    assert (ints * x32).dtype == np.float32 and (x64 - ints).dtype == np.float64
    assert mt.cat([x32, ints, x64]).dtype == np.float64
    assert (ints + flags).dtype == np.int64 and (flags + ints).dtype == np.int64
    assert ints.dtype == np.int64 and (x32 * ints).dtype == np.float32
    assert (x32 + 1).dtype == np.float32 and (1.5 - x32).dtype == np.float32
    assert (2.0 / x32).item() == 2.0 and (x32 - 3.0).item() == -2.0  # reflected operand order
    assert mt.tensor(1.5).dtype == mt.get_default_dtype() == np.float32
    assert mt.tensor(np.float64(1.5)).dtype == np.float64
    assert mt.tensor(np.float16(1.5)).dtype == np.float32
    assert mt.tensor(np.array([1], dtype=np.int32)).dtype == np.int64
    assert mt.tensor([True]).dtype == np.bool_
    assert mt.tensor(mt.tensor([1.0, 2.0])).shape == (2,)
    assert mt.tensor([1, 2], dtype=np.float64).dtype == np.float64
    with pytest.raises(TypeError):
        mt.tensor(np.array(["a"]))


def test_semantics_to_is_identity_for_same_dtype():
    x = leaf([1.0])
    assert x.to(np.float64) is x and x.double() is x
    y = x.float()
    assert y.dtype == np.float32 and y.grad_fn == "astype"
    y.sum().backward()
    assert x.grad.dtype == np.float64 and x.grad.item() == 1.0


def test_semantics_cat_promotes_and_routes_gradients():
    a, b = leaf([1.0], np.float32), leaf([2.0, 3.0])
    y = mt.cat([a, b]) * mt.tensor(np.array([1.0, 2.0, 3.0]))
    y.sum().backward()
    assert a.grad.dtype == np.float32 and a.grad.item() == 1.0
    np.testing.assert_array_equal(b.grad.data, [2.0, 3.0])
    with pytest.raises(ValueError, match="non-empty"):
        mt.stack([])


def test_semantics_requires_grad_flag():
    x = mt.tensor(np.array([1.0]))
    assert not x.requires_grad
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad_(False)
    assert not x.requires_grad
    with pytest.raises(TypeError, match="float32/float64"):
        mt.tensor(np.array([1])).requires_grad_()
    mt.tensor(np.array([1])).requires_grad_(False)  # turning it off is always allowed
    d = (leaf([1.0]) * 2.0).detach()
    assert d.is_leaf and not d.requires_grad and d.grad is None


# ---- registry ----------------------------------------------------------------------------------
def test_semantics_register_names_and_rejects_duplicates():
    name = "semantics_probe_op"
    try:
        cls = register(name)(type("Probe", (mt.Op,), {"__doc__": "y = x."}))
        assert REGISTRY[name] is cls and cls.name == name
        with pytest.raises(ValueError, match="already registered"):
            register(name)(type("Probe2", (mt.Op,), {}))
        with pytest.raises(ValueError, match="already registered"):
            composite(name)(lambda x: x)
        fn = composite(name + "_c")(lambda x: x)
        assert COMPOSITES[name + "_c"] is fn
        with pytest.raises(ValueError, match="already registered"):
            composite(name + "_c")(lambda x: x)
        with pytest.raises(ValueError, match="already registered"):
            register(name + "_c")(type("Probe3", (mt.Op,), {}))
    finally:
        REGISTRY.pop(name, None)
        COMPOSITES.pop(name + "_c", None)


def test_semantics_context_needed_and_release():
    ctx = Context(REGISTRY["mul"], (None, None), (False, True))
    assert ctx.needed(1, 2) == (None, 2) and not ctx.needs_grad[0]
    ctx.save(np.ones(2))
    assert len(ctx.saved) == 1 and ctx.recording
    ctx.release()
    assert ctx.parents is None and ctx.saved == () and ctx.op is REGISTRY["mul"]
    idle = Context(REGISTRY["mul"], (None, None), (False, False))
    idle.save(np.ones(2))
    assert idle.saved == () and not idle.recording


# ---- more engine contracts -----------------------------------------------------------------------
def test_semantics_unbroadcast_rank_deficient_gradient_is_reported(temp_op):
    """A rule returning a gradient with fewer dims than its input is a shape error the engine
    reports (naming the op), not an IndexError from inside unbroadcast."""
    assert graph.unbroadcast(np.ones(3), (3, 1)).shape == (3,)
    assert graph.unbroadcast(np.ones((2, 3)), (4, 2, 3)).shape == (2, 3)
    op = temp_op("rank_drop", lambda ctx, x: x * 2.0, lambda ctx, g: (g[..., 0] * 2.0,),
                 doc="y = 2x; returns a gradient of the wrong rank.")
    x = leaf(np.ones((3, 1)))
    with pytest.raises(RuntimeError, match=r"'rank_drop'.*shape \(3,\)"):
        mt.apply(op, x).sum().backward()


def test_semantics_leaf_that_stops_requiring_grad_gets_none():
    """As in torch: a leaf switched to requires_grad=False after the forward gets no .grad."""
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    y = (x * w).sum()
    x.requires_grad_(False)
    y.backward()
    assert x.grad is None
    np.testing.assert_array_equal(w.grad.data, [1.0, 2.0])


def test_semantics_python_scalars_do_not_promote():
    """A Python number takes the tensor's dtype (torch's rule), whatever the default dtype; an
    integer tensor meeting a Python float becomes floating."""
    prev = mt.get_default_dtype()
    try:
        mt.set_default_dtype(mt.float64)
        x32 = leaf([1.0, 2.0], np.float32)
        for y in (x32 * 2.5, 2.5 * x32, x32 + True, x32 - 1):
            assert y.dtype == np.float32
        assert mt.tensor(1.5).dtype == np.float64
    finally:
        mt.set_default_dtype(prev)
    with pytest.raises(TypeError, match="float32 or float64"):
        mt.set_default_dtype(np.float16)
    assert mt.get_default_dtype() == prev
    ints = mt.tensor(np.array([2, 3]))
    assert (ints * 1.5).dtype == np.float32 and np.array_equal((ints * 1.5).data, [3.0, 4.5])
    assert (ints + ints).dtype == np.int64


def test_semantics_array_operands_promote_like_tensors():
    """An ndarray or list operand is a tensor for the dtype rule (only Python numbers take the
    tensor's dtype): float32 (2,) * float64 ndarray (2,) is float64, as with two tensors."""
    x32 = leaf([1.0, 2.0], np.float32)
    assert (x32 * np.array([0.5, 0.25])).dtype == np.float64
    assert (x32 + np.array([1, 2])).dtype == np.float32
    y = x32 * np.array([0.1, 0.2])
    np.testing.assert_array_equal(y.data, np.float32([1.0, 2.0]) * np.array([0.1, 0.2]))


def test_semantics_arrays_of_supported_dtype_are_not_copied():
    """Making a tensor from an ndarray of a supported dtype wraps it (as torch.as_tensor)."""
    for a in (np.arange(3), np.ones(2), np.ones(2, dtype=np.float32), np.array([True])):
        assert mt.Tensor(a).data is a


def test_semantics_cat_accepts_arrays():
    x = leaf([1.0, 2.0])
    y = mt.cat([x, np.array([5.0])])
    assert y.shape == (3,) and y.dtype == np.float64
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.data, [2.0, 4.0])


def test_semantics_forward_hook_times_the_op():
    """Forward hooks receive the op's own (non-negative, bounded) duration."""
    import time

    from minitorch.engine import runtime

    seen = []
    runtime.forward_hooks.append(lambda op, inputs, out, secs: seen.append((op.name, secs)))
    try:
        start = time.perf_counter()
        leaf([1.0, 2.0]).exp()
        wall = time.perf_counter() - start
    finally:
        runtime.forward_hooks.pop()
    assert [name for name, _ in seen] == ["exp"] and 0.0 <= seen[0][1] <= wall


def test_semantics_op_base_class_raises(temp_op):
    with pytest.raises(NotImplementedError):
        mt.Op.forward(None)
    op = temp_op("no_rule", lambda ctx, x: x * 2.0, doc="y = 2x; no vjp on purpose.")
    with pytest.raises(NotImplementedError, match="'no_rule' has no backward rule"):
        mt.apply(op, leaf([1.0])).sum().backward()


def test_semantics_released_node_keeps_only_its_op():
    """release() drops everything but the op (the graph's memory goes with it)."""
    x = leaf(np.ones((2, 3)))
    y = x.sum(1)
    node = y._ctx
    y.sum().backward()
    assert node.parents is None and node.saved == () and node.locks is None
    assert set(vars(node)) == {"op", "parents", "saved", "locks"}  # op attributes dropped too
    assert not hasattr(node, "needs_grad") and node.out_shape == () and node.out_dtype is None


# ---- saved arrays: read-only while a graph holds them, versions for the engine's writers ---------
def test_semantics_saved_array_locked_until_its_last_node_is_released():
    """Two live nodes saved x: releasing one keeps x read-only; releasing both frees it. A
    second graph locks it again (the lock table forgot the first)."""
    x, w, v = leaf([1.0, 2.0]), leaf([3.0, 4.0]), leaf([5.0, 6.0])
    h1, h2 = x * w, x * v
    h1.sum().backward()
    assert not x.data.flags.writeable  # h2's node still holds x
    with pytest.raises(ValueError, match="read-only"):
        x.data[0] = 0.0
    h2.sum().backward()
    assert x.data.flags.writeable and w.data.flags.writeable
    np.testing.assert_array_equal(x.grad.data, [8.0, 10.0])
    y = (x * x).sum()
    assert not x.data.flags.writeable  # locked again by the new graph
    del y
    assert x.data.flags.writeable  # a graph dropped without backward unlocks too


def test_semantics_user_read_only_array_stays_read_only():
    """Locking never makes an array writable that was read-only before the graph used it."""
    a = np.array([1.0, 2.0])
    a.flags.writeable = False
    x = mt.tensor(a, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    assert not a.flags.writeable
    np.testing.assert_array_equal(x.grad.data, [2.0, 4.0])


def test_semantics_inplace_leaves_an_array_writable_once_its_graph_is_gone():
    """A graph freed while the engine writes into an array it saved (inplace) unlocks that
    array; inplace must not lock it again on leaving, or it stays read-only for good."""
    from minitorch.engine.node import inplace

    w = leaf([1.0, 2.0])
    y = (w * w).sum()  # saves w.data
    with inplace(w.data) as arr:
        arr -= 0.5
        del y  # the graph is freed inside the block (reference counting)
    assert w.data.flags.writeable
    w.data[0] = 7.0  # a plain write works


def test_semantics_inplace_bumps_the_version_and_relocks():
    """The engine's writers (inplace) may write a saved array; the array is read-only again
    afterwards, and the retained graph's backward raises naming the op. An array no graph
    saved is written plainly and stays writable."""
    from minitorch.engine.node import inplace

    w = leaf([1.0, 2.0])
    y = (w * w).sum()
    y.backward(retain_graph=True)
    with inplace(w.data) as arr:
        arr -= 0.5
    assert not w.data.flags.writeable
    np.testing.assert_array_equal(w.data, [0.5, 1.5])
    with pytest.raises(RuntimeError, match=r"op 'mul'.*modified in place"):
        y.backward()
    v = leaf([1.0, 2.0])
    first = (v * v).sum()  # saved v at its current version
    with inplace(v.data) as arr:
        arr += 1.0
    second = (v * 3.0).sum() + (v * v).sum()  # saved v at the bumped version
    with inplace(v.data) as arr:
        arr += 1.0  # every write bumps the version again
    for stale in (second, first):
        with pytest.raises(RuntimeError, match="modified in place"):
            stale.backward()
    free = np.zeros(2)
    with inplace(free) as arr:
        arr += 1.0
    assert free.flags.writeable and np.array_equal(free, [1.0, 1.0])


def test_semantics_unmodified_retained_graph_backward_twice():
    """No write, no error: a retained graph whose arrays were not written runs again."""
    w = leaf([1.0, 2.0])
    y = (w * w).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(w.grad.data, [4.0, 8.0])


def test_semantics_grad_saved_by_a_graph_still_accumulates():
    """.grad used in a forward is read-only while that graph lives; accumulating into it then
    gives a new array with the sum (the graph's saved copy is left alone)."""
    x = leaf([1.0, 2.0])
    (x * x).sum().backward()
    saved = x.grad.data
    y = (x.grad * x).sum()  # the mul node saves x.grad.data
    (x * 3.0).sum().backward()  # accumulates while y's graph holds the old .grad array
    np.testing.assert_array_equal(x.grad.data, [5.0, 7.0])
    np.testing.assert_array_equal(saved, [2.0, 4.0])
    y.backward()
    np.testing.assert_array_equal(x.grad.data, [7.0, 11.0])


def test_semantics_vjp_returning_none_for_a_needed_input_is_named(temp_op):
    lazy = temp_op("lazy_grad", lambda ctx, x: x * 2.0, lambda ctx, g: (None,),
                   doc="y = 2x; returns no gradient on purpose.")
    with pytest.raises(RuntimeError, match=r"'lazy_grad': vjp returned None for input 0"):
        mt.apply(lazy, leaf([1.0, 2.0])).sum().backward()


def test_semantics_wrong_gradient_shape_or_dtype_is_an_error(temp_op):
    wide = temp_op("wide_grad", lambda ctx, x: x * 2.0,
                   lambda ctx, g: (np.concatenate([g, g]),), doc="y = 2x; a too-long gradient.")
    cast = temp_op("f32_grad", lambda ctx, x: x * 2.0,
                   lambda ctx, g: ((g * 2.0).astype(np.float32),), doc="y = 2x; float32 grad.")
    with pytest.raises(RuntimeError, match=r"'wide_grad'.*shape \(4,\)"):
        mt.apply(wide, leaf([1.0, 2.0])).sum().backward()
    with pytest.raises(RuntimeError, match=r"'f32_grad'.*dtype float32.*float64"):
        mt.apply(cast, leaf([1.0, 2.0])).sum().backward()


def test_semantics_backward_hooks_see_arrays():
    """Every gradient the engine routes is an ndarray, even where NumPy arithmetic on 0-d
    arrays gave a scalar (the contract of runtime.backward_hooks)."""
    from minitorch.engine import runtime

    seen = []
    runtime.backward_hooks.append(lambda op, i, parent, grad: seen.append(grad))
    try:
        x = mt.tensor(2.0, dtype=mt.float64, requires_grad=True)
        z = x * 3.0
        (z * z * x).backward()
    finally:
        runtime.backward_hooks.pop()
    assert len(seen) == 5 and all(type(g) is np.ndarray and g.shape == () for g in seen)
    assert x.grad.item() == 27.0 * 4.0  # d(9x^3)/dx = 27 x^2


@pytest.mark.parametrize("shapes", [((3,), ()), ((), (3,)), ((), ()), ((3,), (3,))],
                         ids=lambda s: "x".join(map(shape_id, s)))
def test_semantics_promotion_follows_torch(shapes):
    """torch's rule: dimensioned tensors decide the dtype; a 0-d one only when it is of a
    higher category (bool < integer < floating). Checked for every pair of dtypes."""
    dtypes = {np.float32: torch.float32, np.float64: torch.float64, np.int64: torch.int64,
              np.bool_: torch.bool}
    for da, ta in dtypes.items():
        for db, tb in dtypes.items():
            a, b = np.ones(shapes[0], da), np.ones(shapes[1], db)
            ours = (mt.tensor(a) + mt.tensor(b)).dtype
            theirs = (torch.tensor(a, dtype=ta) + torch.tensor(b, dtype=tb)).dtype
            assert dtypes[ours.type] == theirs, (da, db, shapes)


def test_semantics_promotion_same_category_0d_does_not_widen():
    """A 0-d operand of the same category never widens a dimensioned one (torch): int32 (3,)
    + int64 () stays int32, float32 (3,) + float64 () stays float32."""
    for small, big, tsmall in ((np.int32, np.int64, torch.int32),
                               (np.float32, np.float64, torch.float32)):
        a, b = np.ones(3, small), np.array(2, big)
        ours = (mt.tensor(a, dtype=small) + mt.tensor(b, dtype=big)).dtype
        assert ours == small and (torch.tensor(a) + torch.tensor(b)).dtype == tsmall
