"""NumPy meeting a Tensor, as in a ported script: np.asarray(t), an array or NumPy number on
the left of an operator, NumPy ufuncs, and the update through `.data` that tutorials write
(`p.data += -lr * p.grad`, `p.data = p.data - lr * p.grad`). Before, np.asarray(t) was an
object array of 0-d tensors, and both updates silently replaced p's array with a Tensor."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minitorch as mt


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
def test_asarray_gives_the_values(dtype):
    values = np.array([[0, 1, 2], [3, 4, 5]]).astype(dtype)
    for got, want in [(np.asarray(mt.tensor(values)), np.asarray(torch.tensor(values))),
                      (np.array(mt.tensor(values), dtype=np.float64),
                       np.array(torch.tensor(values), dtype=np.float64))]:
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_asarray_of_a_tensor_requiring_grad_is_refused_as_torch():
    with pytest.raises(RuntimeError):
        np.asarray(torch.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError, match="detach") as info:
        np.asarray(mt.ones(2, requires_grad=True))
    assert "\n" not in str(info.value)


def test_asarray_copy_flag():
    t = mt.tensor([1.0, 2.0])
    assert np.shares_memory(np.asarray(t), t.data)
    assert not np.shares_memory(np.array(t, copy=True), t.data)


LEFT = [np.array([[1.5, -2.0, 3.0]]), np.float64(2.5), np.float32(-0.5), np.int64(3)]
OPERATORS = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide,
             "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
             "==": np.equal, "!=": np.not_equal}


@pytest.mark.parametrize("left", LEFT, ids=lambda a: f"{type(a).__name__}")
@pytest.mark.parametrize("symbol", list(OPERATORS))
def test_numpy_on_the_left_is_the_tensor_operation(symbol, left):
    """`a <op> t` is the Tensor operation `t <reflected op> a`: a Tensor, the values NumPy gives
    on the arrays, and a gradient through t."""
    x = mt.tensor([[0.5, 2.0, -1.0]], requires_grad=True)
    y = eval(f"left {symbol} x")  # noqa: S307  (the operator under test, spelled as written)
    assert isinstance(y, mt.Tensor)
    want = OPERATORS[symbol](left, x.detach().numpy())
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-6)
    if y.requires_grad:
        y.sum().backward()
        assert x.grad is not None and x.grad.shape == x.shape


def test_array_times_tensor_gradient():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    (np.array([3.0, 5.0]) * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 5.0])


def test_ufunc_of_a_tensor_is_a_tensor_as_torch():
    values = np.array([0.5, 1.5], dtype=np.float32)
    got, want = np.exp(mt.tensor(values)), np.exp(torch.tensor(values))
    assert isinstance(got, mt.Tensor) and isinstance(want, torch.Tensor)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def _sgd_through_data(L, step):
    w = L.tensor([1.0, -2.0], requires_grad=True)
    for _ in range(3):
        w.grad = None
        (w * w * L.tensor([1.0, 3.0])).sum().backward()
        step(w)
    return w.detach().numpy()


@pytest.mark.parametrize("name,step", [
    ("in place", lambda w: w.data.__iadd__(-0.1 * w.grad)),
    ("rebound", lambda w: setattr(w, "data", w.data - 0.1 * w.grad)),
])
def test_update_through_data_as_torch(name, step):
    got = _sgd_through_data(mt, step)
    want = _sgd_through_data(torch, step)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_update_through_data_reaches_a_flat_parameter_and_its_optimizer():
    """`p.data += ...` writes p's array in place, so a parameter in flat storage stays flat and
    an optimizer step afterwards starts from the updated values."""
    model = mt.nn.Linear(3, 2)
    opt = mt.optim.SGD(model.parameters(), lr=0.5)
    before = model.weight.data
    model.weight.data += 1.0
    assert model.weight.data is before
    model(mt.ones(1, 3)).sum().backward()
    expected = before.copy() - 0.5 * model.weight.grad.numpy()
    opt.step()
    np.testing.assert_allclose(model.weight.data, expected, rtol=1e-6)


def test_data_assignment_of_a_numpy_scalar_on_a_0d_parameter():
    """Arithmetic on a 0-d array gives a NumPy scalar: `p.data = p.data * 0.5` (a logit scale
    clipped by hand, say) must still update p, as torch's."""
    for L in (mt, torch):
        p = L.tensor(2.0, requires_grad=True)
        p.data = p.data * 0.5 if L is mt else p.data * 0.5
        assert float(p) == 1.0 and p.requires_grad
    p = mt.tensor(2.0, requires_grad=True)
    p.data = p.data.clip(0, 1.5)
    assert isinstance(p.data, np.ndarray) and p.data.shape == () and float(p) == 1.5


def test_data_assignment_of_something_else_is_one_clear_error():
    w = mt.ones(2)
    with pytest.raises(TypeError, match="Tensor.data must be a NumPy array or a Tensor, got list"):
        w.data = [1.0, 2.0]
