"""Bad input gets a clear error that names what was wrong: the op, the shapes, the valid range.
Also anomaly mode, which names the first op whose forward or backward made NaN/inf."""

from __future__ import annotations

import numpy as np
import pytest

import minitorch as mt
from minitorch.nn import functional as F
from verification.helpers import temp_op_fixture  # noqa: F401  (the temp_op fixture)


def leaf(shape, dtype=np.float64):
    return mt.Tensor(np.ones(shape, dtype=dtype), requires_grad=True)


def test_error_matmul_shape_mismatch_names_op_and_shapes():
    with pytest.raises(ValueError, match=r"'matmul'.*\(2, 3\).*\(4, 5\)"):
        leaf((2, 3)) @ leaf((4, 5))
    with pytest.raises(ValueError, match=r"'matmul'.*\(2, 2, 3\).*\(3, 2, 4\)"):
        leaf((2, 2, 3)) @ leaf((3, 2, 4))  # batch dims 2 vs 3 do not broadcast


def test_error_broadcast_mismatch_names_op_and_shapes():
    with pytest.raises(ValueError, match=r"'add'.*\(2, 3\).*\(4,\)"):
        leaf((2, 3)) + leaf((4,))
    with pytest.raises(ValueError, match=r"'mul'.*\(3, 2\).*\(2, 3\)"):
        leaf((3, 2)) * leaf((2, 3))


@pytest.mark.parametrize("index,pattern", [
    (5, r"'getitem'.*index 5 is out of range \[-3, 3\) for axis 0"),
    ((0, -5), r"index -5 is out of range \[-4, 4\) for axis 1"),
    (np.array([0, 7]), r"index 7 is out of range \[-3, 3\)"),
    ((Ellipsis, 4), r"index 4 is out of range \[-4, 4\) for axis 1"),
])
def test_error_out_of_range_index_names_range(index, pattern):
    with pytest.raises(IndexError, match=pattern):
        leaf((3, 4))[index]


@pytest.mark.parametrize("index", [1.5, np.array([0.0, 1.0]), [0.5], (0, 1.0)])
def test_error_non_integer_index(index):
    with pytest.raises(IndexError, match=r"'getitem'.*(integer|float)"):
        leaf((3, 4))[index]


def test_error_embedding_ids_out_of_range_or_not_integer():
    w = leaf((4, 2))
    with pytest.raises(IndexError, match=r"'embedding'.*id 4 is out of range \[0, 4\)"):
        F.embedding(mt.tensor([0, 4]), w)
    with pytest.raises(IndexError, match=r"id -1 is out of range \[0, 4\)"):
        F.embedding(mt.tensor([-1]), w)
    with pytest.raises(TypeError, match="ids must be integers"):
        F.embedding(mt.tensor([0.0, 1.0]), w)


def test_error_cross_entropy_targets_out_of_range():
    with pytest.raises(IndexError, match=r"out of range \[0, 3\)"):
        F.cross_entropy(leaf((2, 3)), mt.tensor([0, 3]))


def test_error_requires_grad_on_integer_tensor():
    with pytest.raises(TypeError, match="int64"):
        mt.tensor([1, 2], requires_grad=True)


def test_error_backward_on_non_scalar_without_grad():
    with pytest.raises(RuntimeError, match=r"non-scalar tensor of shape \(2, 3\)"):
        (leaf((2, 3)) * 2.0).backward()
    with pytest.raises(ValueError, match=r"grad shape \(3,\) != tensor shape \(2, 3\)"):
        (leaf((2, 3)) * 2.0).backward(np.ones(3))


def test_error_backward_without_graph():
    with pytest.raises(RuntimeError, match="does not require grad"):
        mt.tensor([1.0, 2.0]).sum().backward()


def test_error_wrong_shaped_vjp_names_op_and_both_shapes(temp_op):
    op = temp_op("bad_shape", lambda ctx, x: x.sum(axis=0), lambda ctx, g: (np.ones((5, 2)),),
                 doc="y = sum(x, 0); grad_x = (deliberately wrong shape).")
    with pytest.raises(RuntimeError, match=r"'bad_shape'.*shape \(5, 2\).*shape \(3, 2\)"):
        mt.apply(op, leaf((3, 2))).sum().backward()


def test_error_wrong_dtype_vjp_names_op_and_both_dtypes(temp_op):
    op = temp_op("bad_dtype", lambda ctx, x: x * 2, lambda ctx, g: (g.astype(np.float64) * 2,),
                 doc="y = 2x; grad_x = 2g (deliberately float64).")
    with pytest.raises(RuntimeError, match=r"'bad_dtype'.*float64.*float32"):
        mt.apply(op, leaf((3,), np.float32)).sum().backward()


def test_error_wrong_number_of_grads(temp_op):
    op = temp_op("bad_count", lambda ctx, a, b: a + b, lambda ctx, g: (g,),
                 doc="y = a + b; grad = (only one, deliberately).")
    with pytest.raises(RuntimeError, match=r"'bad_count'.*1 gradients for 2 inputs"):
        mt.apply(op, leaf((2,)), leaf((2,))).sum().backward()


def test_error_missing_vjp_names_op(temp_op):
    op = temp_op("no_rule", lambda ctx, x: x * 3.0, doc="y = 3x; no grad rule (on purpose).")
    with pytest.raises(NotImplementedError, match=r"'no_rule' has no backward rule"):
        mt.apply(op, leaf((2,))).sum().backward()


def test_error_duplicate_registration():
    with pytest.raises(ValueError, match="'mul' is already registered"):
        mt.register("mul")(type("Again", (mt.Op,), {}))
    with pytest.raises(ValueError, match="'linear' is already registered"):
        mt.composite("linear")(lambda x: x)


def test_anomaly_names_first_forward_op_with_nan():
    x = mt.tensor([1.0, -1.0], dtype=mt.float64, requires_grad=True)
    with mt.detect_anomaly(), np.errstate(invalid="ignore"):
        with pytest.raises(FloatingPointError, match=r"forward of op 'log' produced NaN"):
            (x * 2.0).log().exp().sum()
    with np.errstate(invalid="ignore"):
        y = (x * 2.0).log().exp().sum()  # outside anomaly mode NaN flows through silently
    assert np.isnan(y.item())


def test_anomaly_names_first_forward_op_with_inf():
    x = mt.tensor([1.0, 800.0], dtype=mt.float64)
    with mt.detect_anomaly(), np.errstate(over="ignore"):
        with pytest.raises(FloatingPointError, match=r"'exp' produced inf"):
            (x * 1.0).exp().log()


def test_anomaly_names_first_backward_op_with_inf():
    x = mt.tensor([0.0, 4.0], dtype=mt.float64, requires_grad=True)
    with mt.detect_anomaly():
        y = (x.sqrt() * 3.0).sum()  # forward is finite; d sqrt/dx at 0 is inf
        with pytest.raises(FloatingPointError, match=r"backward of op 'sqrt'.*input 0"):
            with np.errstate(divide="ignore"):
                y.backward()


def test_anomaly_allows_requested_inf_in_causal_attention():
    """An inf the caller asked for is no anomaly: masked_fill(value=-inf) (an attribute) and
    sdpa's causal mask (a -inf bias input); softmax turns both into exact zeros."""
    q = mt.randn(1, 3, 4, dtype=mt.float64, requires_grad=True)
    blocked = np.triu(np.ones((3, 3), dtype=bool), k=1)
    with mt.detect_anomaly():
        F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()
        (q @ q.mT).masked_fill(blocked, float("-inf")).softmax(-1).sum().backward()
    assert np.isfinite(q.grad.data).all()


def test_error_vjp_gradient_for_input_that_needs_none(temp_op):
    """STYLE 2: a vjp returns None where ctx.needs_grad is False, so no rule computes (say, a
    GEMM for) a gradient nobody uses; the engine enforces it and names the op."""
    forward = lambda ctx, a, b: (ctx.save(a, b), a * b)[1]  # noqa: E731
    wasteful = temp_op("mul_wasteful", forward,
                       lambda ctx, g: (g * ctx.saved[1], g * ctx.saved[0]), doc="y = a*b.")
    a, b = leaf((2,)), mt.Tensor(np.ones(2))  # b needs no gradient
    with pytest.raises(RuntimeError, match=r"'mul_wasteful'.*input 1, which needs none"):
        mt.apply(wasteful, a, b).sum().backward()
    both = mt.apply(wasteful, leaf((2,)), leaf((2,)))  # when both need one, all is well
    both.sum().backward()


def test_error_numpy_casting_error_keeps_op_and_shapes(temp_op):
    """NumPy's casting errors take the ufunc and dtypes, not a message: the engine's retold
    error is then their built-in kind (TypeError), still naming the op and shapes."""
    op = temp_op("casts", lambda ctx, x: np.add(x, 1.5, out=x.copy()),
                 doc="y = x + 1.5 into an array of x's (integer) dtype: NumPy refuses the cast.")
    with pytest.raises(TypeError, match=r"'casts' on inputs of shape \(2,\): Cannot cast ufunc"):
        mt.apply(op, mt.tensor(np.array([1, 2])))


@pytest.mark.parametrize("call", [
    lambda t: F.gelu(t), lambda t: F.gelu(t, approximate="tanh"), lambda t: t.var(),
    lambda t: t.std(), lambda t: F.softmax(t, dim=-1), lambda t: F.log_softmax(t, dim=-1),
    lambda t: F.cross_entropy(t.reshape(1, 3), mt.tensor(np.array([0]))),
])
def test_error_float_only_ops_refuse_integers_in_one_line(call):
    """torch refuses integer input to these; here too, in one line naming the op and dtype
    (var used to truncate its result to the integer dtype, softmax to overflow)."""
    with pytest.raises(TypeError, match=r"needs a floating-point input, got int64"):
        call(mt.tensor(np.array([1, 2, 4])))
