"""Divergences from torch found by PyTorch's OpInfo database and other projects' op tests
(issue 32), one test per class: lost gradients of tensor arguments, Python floats rounded through
float32, missing zero gradients, inputs torch refuses, zero-size and 0-d inputs torch accepts,
and the error class of shape errors. Each compares with torch itself, not with a written value.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitorch as mt
from minitorch.nn import functional as F

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _both(fn):
    """fn(lib) in minitorch and torch: (result, None) or (None, exception class)."""
    out = []
    for lib in (mt, torch):
        try:
            out.append((fn(lib), None))
        except Exception as e:  # noqa: BLE001  (the class is what is compared)
            out.append((None, type(e)))
    return out


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.data)


# ---- a tensor argument read as a Python number loses its gradient ----------------------------
@pytest.mark.parametrize("inplace", [False, True])
def test_masked_fill_tensor_value_gets_its_gradient(inplace):
    x = np.arange(6.0).reshape(2, 3)
    mask = np.array([[True, False, True], [False, False, True]])
    grads = []
    for lib in (mt, torch):
        v = lib.tensor(2.0, dtype=lib.float64, requires_grad=True)
        a = lib.tensor(x, requires_grad=True)
        base = a * 1.0
        y = base.masked_fill_(lib.tensor(mask), v) if inplace else \
            base.masked_fill(lib.tensor(mask), v)
        (y * lib.tensor(x + 1.0)).sum().backward()
        grads.append((_np(y), _np(v.grad), _np(a.grad)))
    for m, t in zip(*grads):
        np.testing.assert_array_equal(m, t)


def test_masked_fill_refuses_a_value_with_dims():
    x = np.ones(3)
    (_, e_mt), (_, e_t) = _both(lambda lib: lib.tensor(x).masked_fill(
        lib.tensor(np.array([True, False, True])), lib.tensor([2.0])))
    assert e_t is RuntimeError and e_mt is not None and issubclass(e_mt, RuntimeError)


# ---- a Python float as the first operand keeps float64 precision -----------------------------
@pytest.mark.parametrize("fn", ["add", "sub", "mul", "div", "remainder", "pow", "floor_divide"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_function_form_python_float_is_exact(fn, dtype):
    v = 5.576059452216908
    a = np.random.default_rng(0).uniform(0.5, 2.0, 7).astype(dtype)
    m = getattr(mt, fn)(v, mt.tensor(a))
    t = getattr(torch, fn)(v, torch.tensor(a))
    assert str(m.dtype) == str(t.dtype).removeprefix("torch.")
    if fn == "pow" and dtype == "float32":  # float32 powf kernels differ in the last bit
        np.testing.assert_allclose(_np(m), t.numpy(), rtol=2 * np.finfo(np.float32).eps)
    else:
        np.testing.assert_array_equal(_np(m), t.numpy())


# ---- piecewise-constant results: a zero gradient, not none -----------------------------------
def test_div_floor_has_a_zero_gradient():
    a0, b0 = np.array([1.5, -2.5, 3.0]), np.array([2.0, 0.7, -1.1])
    out = []
    for lib in (mt, torch):
        a = lib.tensor(a0, requires_grad=True)
        b = lib.tensor(b0, requires_grad=True)
        y = lib.div(a, b, rounding_mode="floor")
        assert y.requires_grad
        y.sum().backward()
        out.append((_np(y), _np(a.grad), _np(b.grad)))
    for m, t in zip(*out):
        np.testing.assert_array_equal(m, t)


# ---- inputs torch refuses are refused --------------------------------------------------------
REFUSED = {
    "flip_repeated_dim": lambda lib: lib.ones(3).flip((0, 0)),
    "flip_repeated_negative_dim": lambda lib: lib.ones((2, 3)).flip((1, -1)),
    "arange_step_sign": lambda lib: lib.arange(0, -3, 2),
    "arange_float_step_sign": lambda lib: lib.arange(0.0, -3.0, 2.0),
    "narrow_bool_start": lambda lib: lib.ones(3).narrow(0, True, 1),
    "multinomial_int_weights": lambda lib: lib.multinomial(lib.tensor([1, 2]), 1),
    "multinomial_zero_samples": lambda lib: lib.multinomial(lib.tensor([1.0, 2.0]), 0),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_as_torch(case):
    (_, e_mt), (_, e_t) = _both(REFUSED[case])
    assert e_t is not None, "torch accepts this: the case is stale"
    assert e_mt is not None, f"{case}: minitorch accepts what torch refuses"
    assert issubclass(e_mt, e_t), f"{case}: {e_mt.__name__}, torch raises {e_t.__name__}"


# ---- same values as torch where NumPy's rule differs -----------------------------------------
ACCEPTED = {
    "arange_int64_float_end": lambda lib: lib.arange(3.1, dtype=lib.int64),
    "arange_int64_float_bounds": lambda lib: lib.arange(-0.5, 2.2, dtype=lib.int64),
    "arange_empty": lambda lib: lib.arange(0, 0, 2),
    "flatten_zero_size": lambda lib: lib.zeros((2, 0, 3, 4)).flatten(2),
    "flatten_zero_size_all": lambda lib: lib.zeros((2, 0, 3)).flatten(),
    "logsumexp_empty": lambda lib: lib.zeros(0).logsumexp(0),
    "logsumexp_empty_rows": lambda lib: lib.zeros((2, 0)).logsumexp(1),
    "gather_0d_vector_index": lambda lib: lib.gather(lib.tensor(2.5), 0, lib.tensor([0])),
    "gather_0d_0d_index": lambda lib: lib.gather(lib.tensor(2.5), 0, lib.tensor(0)),
    "repeat_0d_no_sizes": lambda lib: lib.tensor(2.5).repeat(()),
    "flip_0d": lambda lib: lib.tensor(2.5).flip(0),
    "batch_norm_empty": lambda lib: (F if lib is mt else torch.nn.functional).batch_norm(
        lib.zeros(0), None, None, training=True),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_accepted_as_torch(case):
    (m, e_mt), (t, e_t) = _both(ACCEPTED[case])
    assert e_t is None, "torch refuses this: the case is stale"
    assert e_mt is None, f"{case}: minitorch raised {e_mt.__name__}"
    assert m.shape == tuple(t.shape) and str(m.dtype) == str(t.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(_np(m), t.numpy())


def test_logsumexp_empty_rows_gradient():
    x = mt.zeros((2, 0), requires_grad=True)
    with np.errstate(divide="ignore"):
        x.logsumexp(1).sum().backward()
    assert x.grad.shape == (2, 0)


# ---- shape errors: an error that is a RuntimeError (torch's) and a ValueError (torch's for a few,
# and what minitorch raised before): `except RuntimeError` in a ported script catches it ---------
SHAPE_ERRORS = {
    "matmul": lambda lib: lib.ones((2, 3)) @ lib.ones((2, 3)),
    "reshape": lambda lib: lib.ones(6).reshape(4, 2),
    "view": lambda lib: lib.ones(3).view(2, 2),
    "permute_repeated": lambda lib: lib.ones((2, 3)).permute(0, 0),
    "permute_short": lambda lib: lib.ones((2, 3)).permute(0),
    "broadcast": lambda lib: lib.ones(3) + lib.ones(4),
    "cross_entropy_target": lambda lib: (F if lib is mt else torch.nn.functional).cross_entropy(
        lib.ones((2, 3)), lib.tensor([[0, 1], [1, 1]])),
    "cross_entropy_batch": lambda lib: (F if lib is mt else torch.nn.functional).cross_entropy(
        lib.ones((2, 3)), lib.tensor([0, 1, 1])),  # torch: a ValueError
    "item_of_many": lambda lib: lib.ones(2).item(),
    "backward_grad_shape": lambda lib: (lib.ones(3, requires_grad=True) * 2).backward(
        lib.ones(2)),
}


@pytest.mark.parametrize("case", sorted(SHAPE_ERRORS))
def test_shape_errors_are_runtime_errors(case):
    (_, e_mt), (_, e_t) = _both(SHAPE_ERRORS[case])
    assert e_t in (RuntimeError, ValueError), f"torch raises {e_t}: the case is stale"
    assert e_mt is not None and issubclass(e_mt, RuntimeError) and issubclass(e_mt, ValueError), \
        f"{case}: minitorch raises {e_mt}"
