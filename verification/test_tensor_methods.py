"""Tensor methods a ported PyTorch script uses (sign ... lerp, lt ... relu_, t ... bool, cumsum
... argsort), each run side by side on torch and minitorch: values, dtypes, shapes, gradients,
and error-or-not, on float32/float64 (int64 and bool in test_dtype_semantics.py), 0-d and
empty inputs, negative dims."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minitorch as mt

NAN, INF = float("nan"), float("inf")
TOL = {np.float64: 1e-12, np.float32: 1e-6}


def _lib_tensor(L, a, requires_grad):
    a = np.asarray(a)
    if L is torch:
        return torch.tensor(a, requires_grad=requires_grad)
    return mt.tensor(a, requires_grad=requires_grad)


def _arrays(out):
    outs = out if isinstance(out, tuple) else (out,)
    return [o.detach().numpy() if isinstance(o, torch.Tensor) else o.detach().numpy()
            for o in outs]


def _check(a, b, what, scaled: bool = False):
    """Exact for integers and bools; floats within TOL relative (atol 0, so tiny values such as
    log1p(1e-10) count). scaled: float32 gradients may also differ by TOL times their largest
    magnitude: one ulp of a saved float32 output (NumPy's tanh vs torch's) is amplified by the
    cancellation in 1 - y^2 near saturation."""
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch {b.shape}"
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != torch {b.dtype}"
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b, err_msg=what)
    else:
        tol = TOL[a.dtype.type]
        finite = np.abs(b[np.isfinite(b)])
        atol = tol * finite.max() if scaled and a.dtype == np.float32 and finite.size else 0.0
        np.testing.assert_allclose(a, b, rtol=tol, atol=atol, equal_nan=True, err_msg=what)


def same(fn, *inputs, dtype=np.float64, grad=True, seed=0):
    """fn(L, *tensors) on torch and minitorch: the same outputs (values, dtype, shape) and, for
    float inputs when grad, the same gradients of <v, outputs> for one seeded v."""
    results = []
    for L in (torch, mt):
        arrays = [np.asarray(a, dtype=dtype) if np.asarray(a).dtype.kind == "f" else np.asarray(a)
                  for a in inputs]
        ts = [_lib_tensor(L, a, grad and a.dtype.kind == "f") for a in arrays]
        out = fn(L, *ts)
        outs = out if isinstance(out, tuple) else (out,)
        grads = []
        floats = [o for o in outs if o.dtype in (torch.float32, torch.float64, np.float32,
                                                 np.float64) and o.requires_grad]
        if grad and floats:
            rng = np.random.default_rng(seed)
            total = None
            for o in floats:
                v = rng.standard_normal(tuple(o.shape)).astype(_arrays(o)[0].dtype)
                term = (o * _lib_tensor(L, v, False)).sum()
                total = term if total is None else total + term
            total.backward()
            grads = [t.grad for t in ts if t.requires_grad]
            grads = [None if g is None else _arrays(g)[0] for g in grads]
        results.append((_arrays(out), grads))
    (want, want_g), (got, got_g) = results
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        _check(a, b, f"output {i}")
    assert len(got_g) == len(want_g)
    for i, (a, b) in enumerate(zip(got_g, want_g)):
        assert (a is None) == (b is None), f"grad {i}: {a} vs torch {b}"
        if a is not None:
            _check(a, b, f"grad {i}", scaled=True)


ERRORS = (RuntimeError, TypeError, IndexError, ValueError, NotImplementedError)


def both_raise(fn, *inputs):
    """torch and minitorch both refuse fn; minitorch's message is one line."""
    with pytest.raises(ERRORS):
        fn(torch, *[_lib_tensor(torch, a, False) for a in inputs])
    with pytest.raises(ERRORS) as info:
        fn(mt, *[_lib_tensor(mt, a, False) for a in inputs])
    assert "\n" not in str(info.value), str(info.value)


SPECIAL = [1.5, -2.5, 0.5, 2.5, -0.5, 0.0, -0.0, 3.7, -3.7, NAN, INF, -INF]
FLOATS = [np.float32, np.float64]


# ---- A. elementwise math ----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "round", "trunc", "isnan", "isinf",
                                  "nan_to_num"])
def test_unary_special_values(name, dtype):
    """Half-integers (round: half to even), +-0, nan and +-inf; 0-d and empty inputs."""
    same(lambda L, x: getattr(x, name)(), SPECIAL, dtype=dtype, grad=False)
    same(lambda L, x: getattr(x, name)(), 2.5, dtype=dtype, grad=False)
    same(lambda L, x: getattr(x, name)(), np.zeros((0, 3)), dtype=dtype, grad=False)


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "round", "trunc"])
def test_step_gradient_is_zeros(name, dtype):
    """torch's gradient of a piecewise-constant op is zeros (not None), also at the jumps."""
    same(lambda L, x: getattr(x, name)(), [[1.5, -2.5, 0.5], [2.0, 0.0, -0.3]], dtype=dtype)
    same(lambda L, x: getattr(x, name)(), 0.0, dtype=dtype)
    x = mt.tensor([1.5, 0.0], requires_grad=True)
    getattr(x, name)().sum().backward()
    assert x.grad is not None and not x.grad.numpy().any()


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("name", ["log1p", "expm1", "log2"])
def test_log_exp_family(name, dtype):
    values = [[0.5, 2.0, 1e-3], [3.0, 0.25, 7.5]]
    same(lambda L, x: getattr(x, name)(), values, dtype=dtype)
    same(lambda L, x: getattr(x, name)(), 0.75, dtype=dtype)
    same(lambda L, x: getattr(x, name)(), np.zeros((2, 0)), dtype=dtype)
    same(lambda L, x: getattr(x, name)(), [-1.0, -2.0, 0.0, INF, NAN], dtype=dtype, grad=False)


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
def test_log1p_expm1_accurate_near_zero(dtype):
    """np.log1p/np.expm1, not log(1 + x) (which gives 0 at 1e-10 in float32)."""
    tiny = [1e-10, -3e-9, 1e-20]
    same(lambda L, x: x.log1p(), tiny, dtype=dtype)
    same(lambda L, x: x.expm1(), tiny, dtype=dtype)
    assert mt.tensor(tiny, dtype=dtype).log1p().numpy()[0] != 0


def test_log1p_at_minus_one():
    """y = -inf, gradient inf, as torch."""
    same(lambda L, x: x.log1p(), [-1.0, 1.0])


def test_saved_for_backward_as_torch():
    """expm1 keeps its output (its input may change in place afterwards), log1p its input (a
    change makes backward raise), as torch."""
    for L in (torch, mt):
        x = L.tensor([0.5, 1.0], requires_grad=True)
        h = x * 1.0
        y = h.expm1()
        h += 1.0
        y.sum().backward()
        np.testing.assert_allclose(_arrays(x.grad)[0], np.exp([0.5, 1.0]), rtol=1e-6)
        h = x * 1.0
        z = h.log1p()
        h += 1.0
        with pytest.raises(RuntimeError):
            z.sum().backward()


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
def test_nan_to_num_values_and_gradient(dtype):
    vals = [NAN, INF, -INF, 1.5, -2.0]
    same(lambda L, x: x.nan_to_num(), vals, dtype=dtype)
    same(lambda L, x: x.nan_to_num(nan=2.0, posinf=3.0), vals, dtype=dtype)
    same(lambda L, x: x.nan_to_num(1.0, 2.0, -5.0), vals, dtype=dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
def test_clamp_min_max(dtype):
    x = [[1.0, 2.0, 3.0], [NAN, -1.0, 2.5]]
    same(lambda L, x: x.clamp_min(2.0), x, dtype=dtype)  # tie at 2: the gradient passes
    same(lambda L, x: x.clamp_max(2.0), x, dtype=dtype)
    same(lambda L, x: x.clamp_min(1), 0.5, dtype=dtype)
    bound = [2.0, NAN, 2.5]
    same(lambda L, x, m: x.clamp_min(m), x, bound, dtype=dtype)  # tensor bound, broadcast
    same(lambda L, x, m: x.clamp_max(m), x, bound, dtype=dtype)
    same(lambda L, x: x.clamp_min(0.5), np.zeros(0), dtype=dtype)


def test_clamp_integer_with_float_bound_is_float():
    same(lambda L, x: x.clamp_min(0.5), np.array([3, -2, 0]))
    same(lambda L, x: x.clamp(0.5, 2.5), np.array([3, -2, 0]))
    same(lambda L, x: x.clamp_max(1), np.array([True, False]))


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
def test_lerp(dtype):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 1)), rng.standard_normal((1, 4))
    same(lambda L, a, b: a.lerp(b, 0.3), a, b, dtype=dtype)
    same(lambda L, a, b: a.lerp(b, 0.8), a, b, dtype=dtype)  # torch's other branch
    w = rng.uniform(-1.0, 1.5, (2, 1, 4))
    same(lambda L, a, b, w: a.lerp(b, w), a, b, w, dtype=dtype)
    same(lambda L, a, b, w: a.lerp(b, w), 1.0, 3.0, 0.75, dtype=dtype)


def test_lerp_refusals_as_torch():
    both_raise(lambda L, a, b: a.lerp(b.double(), 0.5), np.ones(3, np.float32),
               np.zeros(3, np.float32))
    both_raise(lambda L, a: a.lerp(2.0, 0.5), np.ones(3, np.float32))
    both_raise(lambda L, a, b: a.lerp(b, 0.5), np.ones(3, np.int64), np.zeros(3, np.int64))
    both_raise(lambda L, a, b, w: a.lerp(b, w), np.ones(3, np.float32), np.ones(3, np.float32),
               np.ones(3, np.float64))
    same(lambda L, a, b, w: a.lerp(b, w), np.ones(3, np.float32), np.zeros(3, np.float32),
         np.array(0.25))  # a 0-d weight of another dtype is cast


def test_round_decimals_as_torch():
    same(lambda L, x: x.round(decimals=1), [1.25, 1.35, -2.25, 0.05])  # half to even
    same(lambda L, x: x.round(decimals=-1), [15.0, 25.0, -35.0, 4.0])
    same(lambda L, x: x.round(decimals=0), [0.5, 1.5, -2.5])
    both_raise(lambda L, x: x.round(decimals=1), np.array([1, 2]))  # integers: torch refuses


# ---- B. comparisons, where, in place ----------------------------------------------------------
@pytest.mark.parametrize("name", ["lt", "le", "gt", "ge"])
def test_comparison_methods(name):
    same(lambda L, a, b: getattr(a, name)(b), [[1.0, 2.0, 3.0]], [[2.0], [1.0]], grad=False)
    same(lambda L, a: getattr(a, name)(2), [1.0, 2.0, 3.0], grad=False)
    same(lambda L, a: getattr(a, name)(2.5), np.array([1, 2, 3]), grad=False)


def test_where_method():
    x, y = [[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]], [10.0, 20.0, 30.0]
    same(lambda L, x, y: x.where(x > 0, y), x, y)
    same(lambda L, x: x.where(x > 0, 7), x)
    same(lambda L, x: x.where(x > 0, 7.5), np.array([3, -2, 0]))
    both_raise(lambda L, x: x.where(x, 0.0), x)  # the condition must be bool


def test_masked_fill_in_place():
    mask = [[True, False, True], [False, False, True]]
    same(lambda L, x, m: (x * 2).masked_fill_(m, -1.5), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], mask)
    same(lambda L, x, m: (x * 2).masked_fill_(m, 0.0), [[1.0, 2.0, 3.0]] * 2, [True, False, True])
    same(lambda L, x, m: x.masked_fill_(m, 2.5), np.array([3, -2, 0]), [True, False, True])
    same(lambda L, x, m: x.masked_fill_(m, 2.5), np.array([True, False, False]),
         [False, True, False])
    both_raise(lambda L, x, m: x.masked_fill_(m, 1.0), np.zeros(3), [[True, False, True]] * 2)
    both_raise(lambda L, x, m: x.masked_fill_(m, 1.0), np.zeros(3), np.array([1, 0, 1]))
    both_raise(lambda L, x, m: x.masked_fill(m, INF), np.array([1, 2]), [True, False])
    for L in (torch, mt):  # in place: the same tensor, its views see the write
        x = L.zeros(3)
        view = x.numpy()
        assert x.masked_fill_(L.tensor([True, False, True]), 1.0) is x
        np.testing.assert_array_equal(view, [1.0, 0.0, 1.0])


INPLACE = ["exp_", "log_", "sqrt_", "neg_", "abs_", "sigmoid_", "tanh_", "relu_"]


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("name", INPLACE)
def test_inplace_unary(name, dtype):
    x = [[0.5, 1.5, -0.25], [2.0, -3.0, 0.75]]
    pos = np.abs(x)
    arg = pos if name in ("log_", "sqrt_") else x
    same(lambda L, x: getattr(x * 1.5, name)(), arg, dtype=dtype)  # on a graph node
    same(lambda L, x: getattr(x.detach().clone(), name)(), arg, dtype=dtype, grad=False)
    for L in (torch, mt):  # a leaf that requires grad is refused; the result is self
        t = _lib_tensor(L, np.asarray(arg, dtype), True)
        with pytest.raises(RuntimeError):
            getattr(t, name)()
        u = _lib_tensor(L, np.asarray(arg, dtype), False)
        assert getattr(u, name)() is u


@pytest.mark.parametrize("name", ["exp_", "sqrt_", "sigmoid_", "neg_"])
def test_inplace_unary_integer(name):
    """exp_ of int64 is refused (a float result cannot be written), neg_ of int64 runs."""
    def fn(L, x):
        return getattr(x, name)()

    if name == "neg_":
        same(fn, np.array([3, -2, 0]))
        both_raise(fn, np.array([True, False]))
    else:
        both_raise(fn, np.array([3, 2, 0]))


# ---- C. shape and indexing ---------------------------------------------------------------------
def test_t():
    for shape in [(), (3,), (2, 3), (1, 4)]:
        same(lambda L, x: x.t(), np.arange(np.prod(shape), dtype=float).reshape(shape))
    both_raise(lambda L, x: x.t(), np.zeros((2, 2, 2)))


def test_view_as_and_type_as():
    same(lambda L, x, y: x.view_as(y), np.arange(6.0), np.zeros((3, 2)))
    same(lambda L, x, y: x.type_as(y), np.arange(6.0).reshape(2, 3), np.zeros(1, np.float32))
    same(lambda L, x, y: x.type_as(y), np.array([1, 0, 2]), np.zeros(1, np.bool_))


@pytest.mark.parametrize("sizes", [(2, 1, 2), (1, 2), (3, 1), (2, 2, 1, 3), (0, 2)])
def test_repeat(sizes):
    same(lambda L, x: x.repeat(*sizes), np.arange(6.0).reshape(2, 3))
    same(lambda L, x: x.repeat(sizes), np.arange(6.0).reshape(2, 3))


def test_repeat_0d_and_refusals():
    same(lambda L, x: x.repeat(3), 5.0)
    same(lambda L, x: x.repeat(2, 2), 5.0)
    same(lambda L, x: x.repeat(2, 1), np.array([1, 2]))
    both_raise(lambda L, x: x.repeat(2), np.zeros((2, 3)))
    both_raise(lambda L, x: x.repeat(-1, 1), np.zeros((2, 3)))


@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_unbind(dim):
    same(lambda L, x: x.unbind(dim), np.arange(6.0).reshape(2, 3))
    same(lambda L, x: x.unbind(dim), np.arange(24.0).reshape(2, 3, 4))


def test_unbind_edges():
    assert mt.zeros(0, 3).unbind(0) == () == torch.zeros(0, 3).unbind(0)
    both_raise(lambda L, x: x.unbind(), 1.0)
    both_raise(lambda L, x: x.unbind(2), np.zeros((2, 3)))


@pytest.mark.parametrize("dim,start,length", [(1, 1, 2), (1, -2, 2), (0, 0, 1), (-1, 3, 0),
                                              (1, -3, 3)])
def test_narrow(dim, start, length):
    same(lambda L, x: x.narrow(dim, start, length), np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("dim,start,length", [(1, 2, 2), (1, -4, 1), (1, 0, -1), (2, 0, 1)])
def test_narrow_refusals(dim, start, length):
    both_raise(lambda L, x: x.narrow(dim, start, length), np.arange(6.0).reshape(2, 3))


def test_narrow_0d_refused_and_tensor_start():
    both_raise(lambda L, x: x.narrow(0, 0, 1), 1.0)
    same(lambda L, x: x.narrow(1, L.tensor(1), 2), np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("dim,index", [(0, 1), (1, -1), (-1, 0), (-2, -2)])
def test_select(dim, index):
    same(lambda L, x: x.select(dim, index), np.arange(6.0).reshape(2, 3))
    same(lambda L, x: x.select(dim, index), np.arange(24.0).reshape(2, 3, 4))


def test_select_refusals():
    both_raise(lambda L, x: x.select(1, 3), np.zeros((2, 3)))
    both_raise(lambda L, x: x.select(2, 0), np.zeros((2, 3)))
    both_raise(lambda L, x: x.select(0, 0), 1.0)


@pytest.mark.parametrize("dim,index", [(1, [2, 0, 2]), (0, [1, 1, 1, 0]), (-1, [0]),
                                       (1, 1), (0, np.zeros(0, np.int64))])
def test_index_select(dim, index):
    """Repeated indices accumulate their gradients; a 0-d index keeps the dim (size 1)."""
    same(lambda L, x, i: x.index_select(dim, i), np.arange(6.0).reshape(2, 3),
         np.asarray(index, np.int64))


def test_index_select_0d_and_refusals():
    same(lambda L, x, i: x.index_select(0, i), 5.0, np.array([0]))
    same(lambda L, x, i: x.index_select(0, i), 5.0, np.array(0))
    x = np.zeros((2, 3))
    both_raise(lambda L, x, i: x.index_select(1, i), x, np.array([3]))
    both_raise(lambda L, x, i: x.index_select(1, i), x, np.array([-1]))
    both_raise(lambda L, x, i: x.index_select(1, i), x, np.array([[1]]))
    both_raise(lambda L, x, i: x.index_select(1, i), x, np.array([1.0]))
    both_raise(lambda L, x: x.index_select(1, [1]), x)
    both_raise(lambda L, x, i: x.index_select(2, i), x, np.array([0]))


@pytest.mark.parametrize("kind", ["float32", "float64", "int64", "bool"])
def test_new_factories(kind):
    x = np.array([1, 0, 2]).astype(kind)
    same(lambda L, x: x.new_zeros(2, 3), x, grad=False)
    same(lambda L, x: x.new_zeros((2, 3)), x, grad=False)
    same(lambda L, x: x.new_ones([2]), x, grad=False)
    same(lambda L, x: x.new_zeros(()), x, grad=False)
    same(lambda L, x: x.new_full((2,), 2.7), x, grad=False)
    same(lambda L, x: x.new_tensor([1.5, 0, 2]), x, grad=False)
    same(lambda L, x: x.new_tensor(3), x, grad=False)
    dt = {torch: torch.int64, mt: mt.int64}
    same(lambda L, x: x.new_ones(2, dtype=dt[L]), x, grad=False)
    both_raise(lambda L, x: x.new_full(2, 1.0), x)


def test_new_tensor_copies_and_requires_grad():
    x = mt.zeros(2)
    src = mt.tensor([1.0, 2.0], requires_grad=True)
    y = x.new_tensor(src)
    assert not y.requires_grad and y.is_leaf
    y.data[0] = 9.0  # a copy: the source is untouched
    assert src.data[0] == 1.0
    assert x.new_zeros(2, requires_grad=True).requires_grad


def test_bool_and_int():
    same(lambda L, x: x.bool(), [0.0, -1.5, NAN], grad=False)
    same(lambda L, x: x.bool(), np.array([0, 3]), grad=False)
    with pytest.raises(TypeError, match="no int32"):  # minitorch has int64 only
        mt.tensor([1.5]).int()


# ---- D. reductions -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("dim", [0, 1, -1, -3])
def test_cumsum(dim, dtype):
    same(lambda L, x: x.cumsum(dim), np.random.default_rng(2).standard_normal((3, 4, 2)),
         dtype=dtype)


def test_cumsum_edges():
    same(lambda L, x: x.cumsum(0), 5.0)
    same(lambda L, x: x.cumsum(-1), 5.0)
    same(lambda L, x: x.cumsum(dim=1), np.zeros((2, 0)))
    same(lambda L, x: x.cumsum(0), np.array([3, -2, 5]))
    same(lambda L, x: x.cumsum(0), np.array([True, True, False]))
    both_raise(lambda L, x: x.cumsum(2), np.zeros((2, 3)))
    both_raise(lambda L, x: x.cumsum(), np.zeros((2, 3)))


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), (-1, False)])
def test_prod_with_zeros(dim, keepdim, dtype):
    """torch's gradient is exact where elements are 0: one zero in a slice gets the product of
    the others, two zeros give no gradient at all."""
    x = [[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.0, -2.0, 3.0]]
    kw = {} if dim is None else {"dim": dim, "keepdim": keepdim}
    same(lambda L, x: x.prod(**kw), x, dtype=dtype)
    same(lambda L, x: x.prod(**kw), [[1.5, -2.0, 3.0], [0.5, 1.25, 4.0]], dtype=dtype)
    same(lambda L, x: x.prod(**kw), [[2.0, 0.0, 3.0], [1.0, 5.0, 4.0]], dtype=dtype)


def test_prod_one_zero_exact_gradient():
    x = mt.tensor([2.0, 0.0, 3.0], requires_grad=True)
    x.prod().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 6.0, 0.0])


def test_prod_edges():
    same(lambda L, x: x.prod(), 5.0)
    same(lambda L, x: x.prod(0), 5.0)
    same(lambda L, x: x.prod(0), np.zeros((0, 3)))
    same(lambda L, x: x.prod(), np.zeros((0, 3)))
    same(lambda L, x: x.prod(0, True), np.array([[1, 2], [3, 4]]))
    same(lambda L, x: x.prod(), np.array([True, False]))
    both_raise(lambda L, x: x.prod((0, 1)), np.ones((2, 3)))
    both_raise(lambda L, x: x.prod(keepdim=True), np.ones((2, 3)))
    both_raise(lambda L, x: x.prod(2), np.ones((2, 3)))


@pytest.mark.parametrize("dtype", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("dim,descending", [(-1, False), (0, True), (1, False), (-2, True)])
def test_sort_distinct(dim, descending, dtype):
    """Distinct values: torch guarantees the order (ties only with stable=True)."""
    x = np.random.default_rng(3).permutation(24).reshape(2, 3, 4) * 0.5 - 3.0
    same(lambda L, x: x.sort(dim, descending), x, dtype=dtype)
    same(lambda L, x: x.sort(dim=dim, descending=descending).values, x, dtype=dtype)
    same(lambda L, x: x.argsort(dim, descending), x, dtype=dtype, grad=False)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable_ties_and_nan(descending):
    ties = [[1.0, 2.0, 1.0, 2.0, 1.0], [0.0, -1.0, 0.0, -1.0, 0.0]]
    same(lambda L, x: x.sort(descending=descending, stable=True), ties)
    same(lambda L, x: x.argsort(descending=descending, stable=True), ties, grad=False)
    same(lambda L, x: x.sort(descending=descending, stable=True),
         np.array([1, 2, 1, 2, 1]))
    same(lambda L, x: x.sort(descending=descending, stable=True), np.array([True, False, True]))
    same(lambda L, x: x.sort(descending=descending), [3.0, NAN, 1.0, 2.0, -INF])


def test_sort_edges():
    same(lambda L, x: x.sort(), 5.0)
    same(lambda L, x: x.argsort(), 5.0, grad=False)
    same(lambda L, x: x.sort(), np.zeros(0))
    r = mt.tensor([2.0, 1.0]).sort()
    assert r.values.tolist() == [1.0, 2.0] and r.indices.tolist() == [1, 0]
    values, indices = r
    assert indices.dtype == np.int64
    both_raise(lambda L, x: x.sort(2), np.zeros((2, 3)))


@pytest.mark.parametrize("args", [(1,), (-2,), (7,), ((1,),), (1, 0), (-1, -1), (5, 1),
                                  ((1, 2), (0, 2)), ((2, -1), (1, 1)), (0, 0)])
def test_roll(args):
    same(lambda L, x: x.roll(*args), np.arange(24.0).reshape(2, 3, 4))
    same(lambda L, x: L.roll(x, *args), np.arange(24.0).reshape(2, 3, 4))


def test_roll_0d_empty_and_refusals():
    same(lambda L, x: x.roll(3), 5.0)
    same(lambda L, x: x.roll(2, 0), np.zeros((0, 3)))
    both_raise(lambda L, x: x.roll((1, 2), 0), np.zeros((2, 3)))
    both_raise(lambda L, x: x.roll(1, 2), np.zeros((2, 3)))
