"""Named regressions for the engine semantics a ported PyTorch script depends on:
fan-out on 0-d nodes, zero-size and 0-d inputs, torch's indexing and dtype rules, in-place writes
to saved arrays, and the torch API (1-D matmul, tensor exponents, expand, clone, exact GELU, var
with a large correction, cross_entropy's options). Each case runs in minitorch and torch and
compares values, shapes, dtypes and every leaf gradient, in float32 and float64."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import minitorch as mt
from minitorch.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

DTYPES = [np.float32, np.float64]
TOL = {np.float32: (1e-5, 1e-5), np.float64: (1e-12, 1e-12)}


def run_both(fn, *arrays, dtype=np.float64, grad=True):
    """fn(lib, *tensors) in minitorch and torch; returns ((out, grads), (out, grads))."""
    results = []
    for lib in ("mt", "torch"):
        if lib == "mt":
            ts = [mt.tensor(np.asarray(a, dtype=dtype), requires_grad=grad) for a in arrays]
            out = fn(mt, *ts)
            if grad:
                (out.sum() if out.ndim else out).backward()
            results.append((out.data, [None if t.grad is None else t.grad.data for t in ts]))
        else:
            ts = [torch.tensor(np.asarray(a, dtype=dtype), requires_grad=grad) for a in arrays]
            out = fn(torch, *ts)
            if grad:
                (out.sum() if out.ndim else out).backward()
            results.append((out.detach().numpy(),
                            [None if t.grad is None else t.grad.numpy() for t in ts]))
    return results


def assert_same(mine, ref, dtype=np.float64):
    atol, rtol = TOL[dtype]
    (out, grads), (tout, tgrads) = mine, ref
    assert out.shape == tout.shape and out.dtype == tout.dtype, (out.shape, tout.shape)
    np.testing.assert_allclose(out, tout, atol=atol, rtol=rtol, equal_nan=True)
    for g, tg in zip(grads, tgrads):
        assert (g is None) == (tg is None)
        if g is not None:
            assert g.shape == tg.shape and g.dtype == tg.dtype
            np.testing.assert_allclose(g, tg, atol=atol, rtol=rtol, equal_nan=True)


def check(fn, *arrays, dtype=np.float64, grad=True):
    assert_same(*run_both(fn, *arrays, dtype=dtype, grad=grad), dtype=dtype)


# ---- 1. fan-out: a node used k times gets the sum of k contributions ------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (1,), (2, 3)])
@pytest.mark.parametrize("uses", [2, 3, 5])
def test_fan_out_sums_every_use(dtype, shape, uses):
    """The bug: a 0-d intermediate used >= 3 times lost contributions (x.grad 2 instead of 3)."""
    def fn(lib, x):
        z = x * 1.0
        total = z
        for _ in range(uses - 1):
            total = total + z
        return total

    check(fn, np.full(shape, 2.0), dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fan_out_of_a_scalar_loss_and_a_scale_parameter(dtype):
    def fn(lib, x, s):
        h = x * s  # s: a 0-d scale used by several ops
        loss = (h * h).sum()
        return loss + loss * s + (loss / 3.0) + (s * s) * loss
    check(fn, np.linspace(-1, 1, 6).reshape(2, 3), np.array(0.7), dtype=dtype)


# ---- 2. zero-size and 0-d inputs --------------------------------------------------------------
ZERO_CASES = {
    "sum(0) on 0-d": (lambda lib, x: x.sum(0), [np.array(2.0)]),
    "sum(-1, keepdim) on 0-d": (lambda lib, x: x.sum(-1, keepdim=True), [np.array(2.0)]),
    "mean(0) on 0-d": (lambda lib, x: x.mean(0), [np.array(2.0)]),
    "softmax(0) on 0-d": (lambda lib, x: x.softmax(0) * 3.0, [np.array(2.0)]),
    "amax(-1) on 0-d": (lambda lib, x: x.amax(-1), [np.array(2.0)]),
    "transpose(0,-1) on 0-d": (lambda lib, x: x.transpose(0, -1) * 2.0, [np.array(2.0)]),
    "matmul (8,0)@(0,8)": (lambda lib, a, b: a @ b, [np.ones((8, 0)), np.ones((0, 8))]),
    "matmul (2,8,0)@(0,8)": (lambda lib, a, b: a @ b, [np.ones((2, 8, 0)), np.ones((0, 8))]),
    "matmul (2,8,0)@(2,0,8)": (lambda lib, a, b: a @ b, [np.ones((2, 8, 0)), np.ones((2, 0, 8))]),
    "softmax over an empty axis": (lambda lib, x: x.softmax(-1), [np.ones((3, 0))]),
    "log_softmax over an empty axis": (lambda lib, x: x.log_softmax(-1), [np.ones((3, 0))]),
    "softmax with no rows": (lambda lib, x: x.softmax(-1), [np.ones((0, 3))]),
    "mean over nothing is nan": (lambda lib, x: x.mean(-1), [np.ones((3, 0))]),
    "sum over nothing": (lambda lib, x: x.sum(-1) + 1.0, [np.ones((3, 0))]),
    "rms_norm over an empty dim": (
        lambda lib, x, w: (F.rms_norm(x, (0,), w) if lib is mt else TF.rms_norm(x, (0,), w)),
        [np.ones((2, 3, 0)), np.ones((0,))]),
    "layer_norm over an empty dim": (
        lambda lib, x, w, b: (F.layer_norm(x, (0,), w, b) if lib is mt else
                              TF.layer_norm(x, (0,), w, b)),
        [np.ones((2, 3, 0)), np.ones((0,)), np.ones((0,))]),
    "embedding of width 0": (
        lambda lib, w: (F.embedding(np.array([3, 1]), w) if lib is mt else
                        TF.embedding(torch.tensor([3, 1]), w)), [np.zeros((4, 0))]),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(ZERO_CASES))
def test_zero_size_and_0d_inputs(name, dtype):
    fn, arrays = ZERO_CASES[name]
    check(fn, *arrays, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_with_head_size_0_and_no_tokens(dtype):
    for shape in [(2, 5, 0), (2, 0, 12)]:
        qkv = mt.tensor(np.ones(shape, dtype=dtype), requires_grad=True)
        y = F.causal_self_attention(qkv, 2)
        y.sum().backward()
        assert y.shape == shape[:2] + (shape[2] // 3,) and qkv.grad.shape == shape
    q = np.ones((2, 3, 4, 0))
    check(lambda lib, q, k, v: (F.scaled_dot_product_attention(q, k, v, is_causal=True)
                                if lib is mt else
                                TF.scaled_dot_product_attention(q, k, v, is_causal=True)),
          q, q, q, dtype=dtype)


# ---- 3. indexing and dtype rules as torch -----------------------------------------------------
INDEXES = [
    (0, slice(None), [0, 1]), ([0, 1], slice(None), 0), ([0, 1], 0, [0, 1]),
    ([0, 1], None, [0, 1]), (slice(None), [0, 1], None), (Ellipsis, [0, 1], 0),
    (0, Ellipsis, [0, 1]), (slice(None), 0, [[0], [1]]), (slice(1, None), [0, 1], [[0], [1]]),
    ([[0, 1]], slice(None), [0, 1]), ([1, 1, 0],), (0, [2, 0, 2]), (True,), (-1, slice(None, 2)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index", INDEXES, ids=str)
def test_indexing_shapes_and_gradients_follow_torch(index, dtype):
    """Integers select first (torch), so t[0, :, [0, 1]] on (2, 3, 4) is (3, 2), not (2, 3)."""
    x = np.arange(24.0).reshape(2, 3, 4)
    check(lambda lib, t: t[index] * 2.0, x, dtype=dtype)


def test_indexing_0d_integer_tensor_is_an_integer():
    x = mt.zeros(2, 3, 4)
    assert x[mt.tensor(1), :, [0, 1]].shape == (3, 2)
    assert x[mt.tensor([0, 1]), :, mt.tensor(2)].shape == (2, 3)


def test_indexing_too_many_indices_says_so():
    with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 3"):
        mt.zeros(2, 3, 4)[0, 0, 0, 0]


@pytest.mark.parametrize("a_shape,b_shape", [((3,), ()), ((2, 3), ()), ((), ()), ((3,), (3,))])
def test_dtype_promotion_lets_dimensioned_tensors_decide(a_shape, b_shape):
    """torch: float32 (3,) * float64 () is float32; only 0-d meeting 0-d promotes to float64."""
    a32, b64 = np.ones(a_shape, np.float32), np.full(b_shape, 2.0)
    for op in (lambda x, y: x * y, lambda x, y: x + y, lambda x, y: x ** y):
        mine = op(mt.tensor(a32), mt.tensor(b64))
        ref = op(torch.tensor(a32), torch.tensor(b64))
        assert mine.dtype == np.dtype(str(ref.dtype).replace("torch.", ""))


# ---- 4. in-place writes to arrays a live graph saved ------------------------------------------
def test_inplace_write_to_a_saved_leaf_raises_instead_of_a_wrong_gradient():
    x = mt.tensor([1.0, 2.0, 3.0], dtype=mt.float64, requires_grad=True)
    y = (x * x).sum()
    with pytest.raises(ValueError, match="read-only"):
        x.data[...] = 10.0
    y.backward()
    np.testing.assert_array_equal(x.grad.data, [2.0, 4.0, 6.0])
    x.data[...] = 10.0  # the graph is freed: the array is writable again
    assert x.data.flags.writeable


def test_inplace_write_to_a_saved_intermediate_raises():
    x = mt.tensor([1.0, 2.0], dtype=mt.float64, requires_grad=True)
    h = x * 2.0
    y = (h * h).sum()
    with pytest.raises(ValueError, match="read-only"):
        h.data += 1.0
    y.backward()
    np.testing.assert_array_equal(x.grad.data, [8.0, 16.0])


def test_graph_dropped_without_backward_unlocks_its_arrays():
    x = mt.tensor([1.0, 2.0], dtype=mt.float64, requires_grad=True)
    y = (x * x).sum()
    assert not x.data.flags.writeable
    del y
    assert x.data.flags.writeable


def test_optimizer_step_on_a_retained_graph_makes_its_backward_raise_naming_the_op():
    """torch's version counter: the step succeeds; backward through the stale graph raises."""
    w = mt.tensor(np.ones(3), requires_grad=True)
    y = (w * w).sum()
    y.backward(retain_graph=True)
    mt.optim.SGD([w], lr=0.1).step()
    np.testing.assert_allclose(w.data, 0.8)
    with pytest.raises(RuntimeError, match=r"op 'mul'.*modified in place"):
        y.backward()


def test_grad_used_in_a_forward_still_accumulates():
    x = mt.tensor([1.0, 2.0], dtype=mt.float64, requires_grad=True)
    (x * x).sum().backward()
    y = (x.grad * x).sum()  # x.grad.data is now saved by the mul node
    y.backward()  # accumulates into x.grad while a graph (y's, now freed) saved it
    np.testing.assert_array_equal(x.grad.data, [4.0, 8.0])


# ---- 5. API ported scripts use ----------------------------------------------------------------
MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((4, 2, 3), (3,)),
                 ((3,), (4, 3, 2)), ((2, 1, 2, 3), (4, 3, 5)), ((0,), (0,)), ((2, 0), (0,))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_with_1d_operands(shapes, dtype):
    rng = np.random.default_rng(0)
    check(lambda lib, a, b: a @ b, *(rng.standard_normal(s) for s in shapes), dtype=dtype)


def test_matmul_of_0d_is_an_error():
    with pytest.raises(RuntimeError, match="at least 1 dimension"):
        mt.tensor(2.0) @ mt.ones(3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ["tensor exponent", "broadcast", "number base", "negative base",
                                  "zero base", "scalar exponents"])
def test_pow_like_torch(case, dtype):
    rng = np.random.default_rng(1)
    base, exp = rng.uniform(0.2, 2.0, (2, 3)), rng.standard_normal((2, 3))
    cases = {
        "tensor exponent": (lambda lib, a, b: a ** b, [base, exp]),
        "broadcast": (lambda lib, a, b: a.pow(b), [base[:, :1], exp[0]]),
        "number base": (lambda lib, b: 2.0 ** b, [exp]),
        "negative base": (lambda lib, b: (-2.0) ** b, [np.array([-2.0, 0.0, 3.0])]),
        "zero base": (lambda lib, a, b: a ** b, [np.array([0.0, 0.0, 0.0, 2.0]),
                                                 np.array([0.0, 2.0, -1.0, 0.0])]),
        "scalar exponents": (lambda lib, a: a ** 0.5 + a ** -1 + a ** 0 + (-a) ** 2,
                             [np.array([-1.0, 0.0, 4.0])]),
    }
    fn, arrays = cases[case]
    check(fn, *arrays, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_expand_and_clone(dtype):
    x = np.arange(3.0).reshape(3, 1)
    check(lambda lib, t: t.expand(2, 3, 4) * 1.5, x, dtype=dtype)
    check(lambda lib, t: t.expand(-1, 5), x, dtype=dtype)
    check(lambda lib, t: t.clone() * t.clone(), x, dtype=dtype)
    check(lambda lib, t, u: t.expand_as(u) * u, x, np.ones((3, 4)), dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_exact_by_default_and_tanh(approximate, dtype):
    x = np.linspace(-6, 6, 41)
    check(lambda lib, t: (F.gelu(t, approximate=approximate) if lib is mt
                          else TF.gelu(t, approximate=approximate)), x, dtype=dtype)
    check(lambda lib, t: (t.gelu() if lib is mt else TF.gelu(t)), x, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sigmoid_tails_to_the_last_digits(dtype):
    """sigmoid far below 0 is tiny but not 0 (float32: 2.1e-9 at -20): relative agreement with
    torch, value and gradient, where an absolute tolerance could not tell 0 from the right
    value; overflow of exp(-x) gives torch's 0 without a warning."""
    far = 80.0 if dtype == np.float32 else 700.0  # y stays a normal number
    x = np.array([-far, -50.0, -20.0, -10.0, -3.0, 0.0, 3.0, 10.0, 20.0, far])
    (out, (grad,)), (tout, (tgrad,)) = run_both(lambda lib, t: t.sigmoid(), x, dtype=dtype)
    rtol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(out, tout, rtol=rtol, atol=0)
    np.testing.assert_allclose(grad, tgrad, rtol=rtol, atol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(lambda lib, t: t.sigmoid(), np.array([-1e5, -1e4, 1e4, 1e5]), dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_tanh_far_tails(dtype):
    """The tanh GELU is computed as x*sigmoid(2u) (kernels.gelu). Far below 0 exp(-2u)
    overflows to inf: y and the gradient are torch's 0 (not nan, not -0 for the gradient), with
    no warning; at +-inf and nan, torch's inf, nan and nan; huge |x|, where torch's gradient is
    0 or nan, the same. The deliberate difference: between x = -8 and the overflow, y is the
    tiny value it is, where torch's 1 + tanh(u) cancels to 0."""
    x = np.array([-1e4, -300.0, -60.0, -12.0, -5.0, -3.0, 3.0, 12.0, 300.0, 1e4])

    def gelu(lib, t):
        return F.gelu(t, approximate="tanh") if lib is mt else TF.gelu(t, approximate="tanh")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(gelu, x, dtype=dtype)
        (out, (grad,)), (tout, (tgrad,)) = run_both(gelu, np.array([-1e4, -300.0]), dtype=dtype)
        assert not np.signbit(grad).any() and not np.signbit(tgrad).any()  # +0, as torch
    with np.errstate(all="ignore"):
        check(gelu, np.array([-np.inf, np.inf, np.nan]), dtype=dtype)
        huge = [-1e20, -1e14, 1e14, 1e20] if dtype == np.float32 else [-1e150, -1e14, 1e150]
        check(gelu, np.array(huge), dtype=dtype)
    (out, _), (tout, _) = run_both(gelu, np.array([-8.0]), dtype=dtype)
    assert tout[0] == 0.0 and -4e-21 < out[0] < -3e-21  # x sigmoid(2u) = -3.1e-21


@pytest.mark.parametrize("dim", [None, 1])
def test_var_of_float32_far_from_zero_as_torch(dim):
    """torch accumulates a float32 var in float64 on the CPU; so does minitorch. In float32
    the mean of values near 1e6 is off by some of their ulps, and every squared deviation
    carried that error: 1.2 % too high for 1e6 + linspace(-2, 2, 1000)."""
    x = np.float32(1e6) + np.linspace(-2.0, 2.0, 1000).reshape(5, 200).astype(np.float32)
    (out, (grad,)), (tout, _) = run_both(
        lambda lib, t: t.var() if dim is None else t.var(dim), x, dtype=np.float32)
    np.testing.assert_allclose(out, tout, rtol=1e-6, atol=0)
    # the gradient 2 (x - mean)/(n - 1) against float64 (torch's backward takes a float32 mean
    # and is off by up to 10 % along dim 1 here)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=dim, keepdims=True)
    n = x.size if dim is None else x.shape[dim]
    np.testing.assert_allclose(grad, 2 * (x64 - mean) / (n - 1), rtol=1e-6, atol=0)


def test_var_refuses_integers_as_torch_does():
    for x in (np.array([1, 2, 4]), np.array([True, False])):
        with pytest.raises(RuntimeError):
            torch.tensor(x).var()
        for f in ("var", "std"):
            with pytest.raises(TypeError, match="var needs a floating-point input"):
                getattr(mt.tensor(x), f)()


def test_gelu_refuses_integers_as_torch_does():
    for approximate in ("none", "tanh"):
        with pytest.raises(RuntimeError):
            TF.gelu(torch.tensor([1, 2]), approximate=approximate)
        with pytest.raises(TypeError, match="gelu needs a floating-point input, got int64"):
            F.gelu(mt.tensor(np.array([1, 2])), approximate=approximate)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,correction", [(3, 1), (3, 3), (3, 5), (1, 1), (0, 1), (4, 0)])
def test_var_with_any_correction_matches_torch(n, correction, dtype):
    check(lambda lib, t: t.var(correction=correction), np.arange(float(n)) ** 2, dtype=dtype)
    # a negative upstream gradient: -inf where it is +inf above
    check(lambda lib, t: t.var(correction=correction) * -2.0, np.arange(float(n)) ** 2,
          dtype=dtype)


CE_CASES = {
    "mean": ((6, 5), "int", {}), "sum": ((6, 5), "int", {"reduction": "sum"}),
    "none": ((6, 5), "int", {"reduction": "none"}),
    "ignore_index": ((6, 5), "ignored", {}),
    "ignore_index none": ((6, 5), "ignored", {"reduction": "none"}),
    "custom ignore_index": ((6, 5), "int", {"ignore_index": 2}),
    "label_smoothing": ((6, 5), "ignored", {"label_smoothing": 0.1}),
    "label_smoothing sum": ((6, 5), "int", {"label_smoothing": 0.3, "reduction": "sum"}),
    "probabilities": ((6, 5), "probs", {}),
    "probabilities none smoothed": ((6, 5), "probs", {"reduction": "none",
                                                      "label_smoothing": 0.2}),
    "K-dim (N, C, d)": ((2, 5, 3), "int", {}),
    "K-dim none": ((2, 5, 3), "int", {"reduction": "none"}),
    "unbatched (C,)": ((5,), "int", {}),
    "all ignored is nan": ((3, 5), "all ignored", {}),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(CE_CASES))
def test_cross_entropy_options_like_torch(name, dtype):
    shape, kind, kw = CE_CASES[name]
    rng = np.random.default_rng(2)
    logits = rng.standard_normal(shape)
    tshape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    if kind == "probs":
        target = rng.random(shape)
        target /= target.sum(1, keepdims=True)
        target = target.astype(dtype)
    else:
        target = rng.integers(0, shape[1] if len(shape) > 1 else shape[0], tshape)
        if kind == "ignored":
            target.flat[[1, 4]] = -100
        if kind == "all ignored":
            target[:] = -100

    def fn(lib, x):
        if lib is mt:
            return F.cross_entropy(x, target, **kw)
        return TF.cross_entropy(x, torch.tensor(target), **kw)

    check(fn, logits, dtype=dtype)


def test_cross_entropy_classes_last_for_the_gpt_layout():
    """A documented extension: (B, T, V) logits with (B, T) targets (classes last)."""
    rng = np.random.default_rng(3)
    logits, target = rng.standard_normal((2, 4, 5)), rng.integers(0, 5, (2, 4))
    mine = F.cross_entropy(mt.tensor(logits), target).item()
    ref = TF.cross_entropy(torch.tensor(logits).reshape(-1, 5), torch.tensor(target).reshape(-1))
    assert abs(mine - ref.item()) < 1e-12


@pytest.mark.parametrize("bad,match", [
    ({"reduction": "avg"}, "reduction must be"), ({"label_smoothing": 1.5}, "label_smoothing"),
])
def test_cross_entropy_bad_options_are_one_clear_error(bad, match):
    with pytest.raises(ValueError, match=match):
        F.cross_entropy(mt.ones(2, 3), [0, 1], **bad)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,correction", [(3, 3), (3, 5), (4, 1)])
def test_var_along_a_dim_with_any_correction_matches_torch(n, correction, dtype):
    x = (np.arange(float(2 * n)) ** 2).reshape(2, n)
    check(lambda lib, t: t.var(1, correction=correction), x, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_along_a_dim_gives_the_gradient_to_the_first_maximum(keepdim, dtype):
    """torch's max(dim) is an indexed reduction (ties: all to the first); amax splits ties."""
    x = np.array([[0.5, 0.5, -0.5], [1.0, 2.0, 2.0]])
    check(lambda lib, t: t.max(1, keepdim=keepdim).values * 2.0, x, dtype=dtype)
    check(lambda lib, t: t.amax(1, keepdim=keepdim) * 2.0, x, dtype=dtype)
    mine, ref = mt.tensor(x).max(1, keepdim), torch.tensor(x).max(1, keepdim)
    np.testing.assert_array_equal(mine.indices.data, ref.indices.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_of_all_elements_splits_ties_equally(dtype):
    """x.max() without a dim, as torch: the gradient divided among the k equal maxima (the
    per-op samples avoid ties, so only this catches a gradient given whole to each)."""
    x = np.array([[1.0, 3.0, 3.0], [3.0, -1.0, 2.0]])
    check(lambda lib, t: t.max() * 2.0, x, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_over_an_equal_value_gives_the_gradient_to_the_source(dtype):
    """x.scatter(dim, index, src) where src equals the value it overwrites: the written
    position's gradient goes to src alone (x's is 0), as torch, not split as a tie."""
    weights = np.array([1.0, 2.0, 3.0])
    check(lambda lib, x, s: x.scatter(0, lib.tensor(np.array([1])), s) * lib.tensor(weights),
          np.array([1.0, 2.0, 3.0]), np.array([2.0]), dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_of_no_ids_has_a_zero_gradient(dtype):
    """F.embedding of a zero-size batch of ids: an empty output and a zero weight gradient."""
    weight = np.arange(15.0).reshape(5, 3)
    ids = np.zeros((2, 0), dtype=np.int64)
    got = []
    for lib, functional in ((mt, F), (torch, TF)):
        w = lib.tensor(weight.astype(dtype), requires_grad=True)
        out = functional.embedding(lib.tensor(ids), w)
        out.sum().backward()
        got.append((tuple(out.shape), np.asarray(w.grad.detach().numpy() if lib is torch
                                                 else w.grad.data)))
    assert got[0][0] == got[1][0] == (2, 0, 3)
    np.testing.assert_array_equal(got[0][1], got[1][1])
    assert got[0][1].dtype == dtype and not got[0][1].any()


@pytest.mark.parametrize("dtype", DTYPES)
def test_relu_selects_the_gradient_so_an_infinite_one_stays_out(dtype):
    """relu' selects g where y > 0 (torch's threshold_backward): inf upstream at 0 gives 0."""
    check(lambda lib, t: t.relu() ** -1.0, np.array([0.0, -0.5, 1.0]), dtype=dtype)
    check(lambda lib, t: t.relu().sqrt(), np.array([0.0, -0.5, 1.0]), dtype=dtype)


# ---- torch signatures of the functional layer ops ----------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,norm", [((2, 3, 4), (4,)), ((2, 3, 4), (3, 4)), ((5, 4), 4)])
def test_layer_norm_and_rms_norm_take_normalized_shape(shape, norm, dtype):
    rng = np.random.default_rng(4)
    nshape = (norm,) if isinstance(norm, int) else norm
    x, w, b = rng.standard_normal(shape), rng.standard_normal(nshape), rng.standard_normal(nshape)
    mine = norm  # an int is accepted too (as nn.LayerNorm does); torch's F.layer_norm: a tuple
    check(lambda lib, t, u, v: (F.layer_norm(t, mine, u, v) if lib is mt else
                                TF.layer_norm(t, nshape, u, v)), x, w, b, dtype=dtype)
    check(lambda lib, t, u: (F.rms_norm(t, mine, u) if lib is mt else TF.rms_norm(t, nshape, u)),
          x, w, dtype=dtype)
    check(lambda lib, t: (F.layer_norm(t, mine) if lib is mt else TF.layer_norm(t, nshape)), x,
          dtype=dtype)


@pytest.mark.parametrize("call", [
    lambda x: F.layer_norm(x, (2,), mt.ones(2)), lambda x: F.layer_norm(x, (1,), mt.ones(2)),
    lambda x: F.rms_norm(x, (1,), mt.ones(2)), lambda x: F.layer_norm(x, (4, 1)),
])
def test_norm_weight_or_shape_that_does_not_fit_is_an_error(call):
    """torch refuses a weight that is not of normalized_shape; it must not broadcast."""
    with pytest.raises(ValueError, match="normalized_shape"):
        call(mt.ones(3, 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tq,tk", [(3, 3), (2, 4), (4, 2)])
@pytest.mark.parametrize("mode", ["default", "causal", "bool mask", "float mask", "scale"])
def test_scaled_dot_product_attention_like_torch(tq, tk, mode, dtype):
    """torch's defaults: not causal; is_causal aligns top-left (query i sees keys j <= i)."""
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, t, 3)) for t in (tq, tk, tk))
    mask_b = rng.random((tq, tk)) < 0.7
    mask_b[:, 0] = True  # no empty row
    mask_f = rng.standard_normal((tq, tk))
    kw = {"default": {}, "causal": {"is_causal": True}, "scale": {"scale": 0.3},
          "bool mask": {"attn_mask": mask_b}, "float mask": {"attn_mask": mask_f}}[mode]

    def fn(lib, a, b, c):
        if lib is mt:
            return F.scaled_dot_product_attention(a, b, c, **kw)
        tkw = {n: (torch.tensor(m).to(a.dtype) if m.dtype != bool else torch.tensor(m))
               if isinstance(m, np.ndarray) else m for n, m in kw.items()}
        return TF.scaled_dot_product_attention(a, b, c, **tkw)

    check(fn, q, k, v, dtype=dtype)


# ---- deliberate differences (README "Where minitorch differs from PyTorch") -------------------
def test_difference_second_backward_always_needs_retain_graph():
    """torch can traverse a graph twice when no node saved a tensor (x.sum()); minitorch frees
    every node as backward consumes it, so any second backward needs retain_graph=True."""
    x = mt.tensor([0.5, -1.0], dtype=mt.float64, requires_grad=True)
    y = x.sum()
    y.backward()
    with pytest.raises(RuntimeError, match="already freed.*retain_graph=True"):
        y.backward()
    np.testing.assert_array_equal(x.grad.data, [1.0, 1.0])  # the failed call added nothing
    y = x.sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(x.grad.data, [3.0, 3.0])


def test_difference_mixed_float_dtypes_promote_in_matmul_and_layer_ops():
    """torch refuses float32 @ float64 (and F.linear / layer_norm across dtypes); minitorch
    promotes by its dtype rule, so a script that runs in torch runs the same here."""
    a = mt.tensor(np.ones((2, 3)), dtype=mt.float32, requires_grad=True)
    w = mt.tensor(np.ones((4, 3)), dtype=mt.float64)
    for y in (a @ w.T, F.linear(a, w), a @ mt.tensor(np.ones(3), dtype=mt.float64)):
        assert y.dtype == np.float64
    with pytest.raises(RuntimeError):
        torch.ones(2, 3) @ torch.ones(3, 4, dtype=torch.float64)


def test_difference_saved_arrays_are_read_only_while_their_graph_lives():
    """torch lets `x.data[...] = v` through silently (its version counter does not see .data);
    minitorch raises at the write, so a gradient can never be computed from changed values."""
    x = mt.tensor([1.0, 2.0], dtype=mt.float64, requires_grad=True)
    y = (x * x).sum()
    with pytest.raises(ValueError, match="read-only"):
        x.data[0] = 5.0
    xt = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    yt = (xt * xt).sum()
    xt.data[0] = 5.0
    yt.backward()
    y.backward()
    assert xt.grad[0].item() == 10.0 and x.grad.data[0] == 2.0  # torch's is from the new value


@pytest.mark.parametrize("dtype", DTYPES)
def test_selecting_rules_keep_a_nan_upstream_where_torch_does(dtype):
    """Rules that select (torch's max() over all elements, cross_entropy's ignored rows) give 0
    there even when the upstream gradient is nan; amax scales, so nan reaches every element in
    both libraries."""
    nan_var = lambda t: t.var(correction=1, keepdim=True)  # noqa: E731  (var of 1 element: nan)
    x = np.array([0.5, 0.0, 0.0])
    check(lambda lib, t: nan_var(-t.max()) * -0.5, x, dtype=dtype)
    check(lambda lib, t: nan_var(-t.amax()) * -0.5, x, dtype=dtype)
    ignored = np.array([-100])
    check(lambda lib, t: (F.cross_entropy(t, ignored) if lib is mt else
                          TF.cross_entropy(t, torch.tensor(ignored))).tanh().exp() * -0.5,
          np.array([[0.0]]), dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tq,tk", [(2, 2), (3, 2)])
def test_sdpa_fully_masked_row_is_zeros_like_torch(tq, tk, dtype):
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((t, 3)) for t in (tq, tk, tk))
    mask = np.ones((tq, tk), dtype=bool)
    mask[1] = False

    def fn(lib, a, b, c):
        m = mask if lib is mt else torch.tensor(mask)
        return (F if lib is mt else TF).scaled_dot_product_attention(a, b, c, attn_mask=m)

    check(fn, q, k, v, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("where", ["masked key", "fully masked query"])
def test_sdpa_nan_score_under_the_mask_is_nan_like_torch(where, dtype):
    """torch adds -inf where a key is blocked, so a nan score there still makes the row nan, and
    a fully masked row is zeros only when its scores are numbers; writing -inf over the blocked
    scores hid the nan (the program fuzzer's seed 20261138: a nan query, a fully masked row)."""
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((3, 3)) for _ in range(3))
    mask = np.ones((3, 3), dtype=bool)
    if where == "masked key":
        k[1, 0], mask[:, 1] = np.nan, False
    else:
        q[1, 0], mask[1] = np.nan, False

    def fn(lib, a, b, c):
        m = mask if lib is mt else torch.tensor(mask)
        return (F if lib is mt else TF).scaled_dot_product_attention(a, b, c, attn_mask=m)

    check(fn, q, k, v, dtype=dtype)


# ---- more of torch's Tensor API (composed from the registered ops) ---------------------------
API_CASES = {
    "sin cos": lambda lib, t: t.sin() * t.cos(),
    "square reciprocal": lambda lib, t: t.square() + (t + 3.0).reciprocal(),
    "clamp": lambda lib, t: t.clamp(-0.5, 0.5) + t.clamp(min=0.0) + t.clip(max=0.25),
    "clamp at the bounds": lambda lib, t: t.clamp(0.0, 0.5),
    "maximum minimum": lambda lib, t: t.maximum(t.flip(0)) + t.minimum(t * 0.0),
    "amin min": lambda lib, t: t.amin(1).sum() * 2.0 + t.min() + t.min(0).values,
    "std": lambda lib, t: t.std(1) + t.std(),
    "logsumexp": lambda lib, t: t.logsumexp(1) + t.logsumexp(0, keepdim=True).sum(),
    "flatten": lambda lib, t: t.reshape(2, 2, 3).flatten(1) * 2.0 + 0.0,
    "split chunk": lambda lib, t: t.split(1, 0)[1] * 2.0 + t.chunk(2, 1)[0].sum(),
    "mm mv dot": lambda lib, t: t.mm(t.T).sum() + t.mv(t[0]).sum() + t[0].dot(t[1]),
    "bmm": lambda lib, t: t[None].bmm(t.T[None]),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(API_CASES))
def test_more_tensor_api_like_torch(name, dtype):
    x = np.array([[0.0, 0.5, -1.0], [0.5, 0.5, 2.0], [-0.5, 0.25, 0.0], [1.0, -2.0, 0.5]])
    check(API_CASES[name], x, dtype=dtype)


def test_argmin_and_min_indices_like_torch():
    x = np.array([[0.0, -0.5, -0.5], [2.0, 1.0, 3.0]])
    np.testing.assert_array_equal(mt.tensor(x).argmin(1).data, torch.tensor(x).argmin(1).numpy())
    np.testing.assert_array_equal(mt.tensor(x).min(1).indices.data,
                                  torch.tensor(x).min(1).indices.numpy())


def test_inplace_write_to_the_array_behind_a_saved_view_raises():
    """Attention saves q, k, v as views into its input; the input's array is protected too."""
    x = mt.tensor(np.ones((2, 3)), dtype=mt.float64, requires_grad=True)
    h = x * 2.0
    y = (h[:, 1:] * h[:, 1:]).sum()  # getitem's output (a view of h.data) is saved by mul
    with pytest.raises(ValueError, match="read-only"):
        h.data[0, 1] = 7.0
    y.backward()
    np.testing.assert_array_equal(x.grad.data, [[0.0, 8.0, 8.0], [0.0, 8.0, 8.0]])
    assert h.data.flags.writeable  # released with the graph


def test_cross_entropy_probability_targets_keep_torch_sign_of_zero():
    """One class: every log-probability is 0; torch negates the total, giving -0.0 (which a later
    1/x turns into -inf)."""
    x, t = np.array([[0.0], [0.5], [0.0]]), np.array([[1.3], [0.24], [1.77]])
    mine = F.cross_entropy(mt.tensor(x), mt.tensor(t)).item()
    ref = TF.cross_entropy(torch.tensor(x), torch.tensor(t)).item()
    assert np.copysign(1.0, mine) == np.copysign(1.0, ref) == -1.0
