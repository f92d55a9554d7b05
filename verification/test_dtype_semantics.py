"""Integer and bool tensors as torch's: every operator and method on int64, bool, float32 and
float64 tensors and on Python int, float and bool scalars, run side by side with torch. Where
torch gives a result, minitorch gives the same dtype, shape and values; where torch refuses,
minitorch refuses too, except in the few cases `accepted` names (README, "Where minitorch
differs from PyTorch")."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import minitorch as mt

VALUES = {"int64": [3, -2, 5], "bool": [True, False, True], "float32": [1.5, -2.0, 3.25],
          "float64": [0.5, 4.0, -1.75]}
SCALARS = {"py_int": 2, "py_float": 2.5, "py_bool": True}

UNARY = {
    "exp": lambda x: x.exp(), "log": lambda x: (x * x + 1).log(),
    "sqrt": lambda x: (x * x + 1).sqrt(), "sin": lambda x: x.sin(), "cos": lambda x: x.cos(),
    "tanh": lambda x: x.tanh(), "sigmoid": lambda x: x.sigmoid(),
    "rsqrt": lambda x: (x * x + 1).rsqrt(),
    "reciprocal": lambda x: x.reciprocal(), "neg": lambda x: -x, "abs": lambda x: abs(x),
    "relu": lambda x: x.relu(), "square": lambda x: x.square(), "invert": lambda x: ~x,
    "logical_not": lambda x: x.logical_not(), "any": lambda x: x.any(), "all": lambda x: x.all(),
    "sum": lambda x: x.sum(), "mean": lambda x: x.mean(), "var": lambda x: x.var(),
    "max": lambda x: x.max(), "min": lambda x: x.min(), "amin": lambda x: x.amin(0),
    "min_dim": lambda x: x.min(0)[0], "argmax": lambda x: x.argmax(),
    "argmin": lambda x: x.argmin(),
    "softmax": lambda x: x.softmax(0), "logsumexp": lambda x: x.logsumexp(0),
    "pow_int": lambda x: x**2, "pow_float": lambda x: (x * x + 1) ** 0.5,
    "pow_neg": lambda x: x**-1,
    "float": lambda x: x.float(), "double": lambda x: x.double(), "long": lambda x: x.long(),
    "sign": lambda x: x.sign(), "floor": lambda x: x.floor(), "ceil": lambda x: x.ceil(),
    "round": lambda x: x.round(), "trunc": lambda x: x.trunc(), "log1p": lambda x: x.log1p(),
    "expm1": lambda x: x.expm1(), "log2": lambda x: (x * x + 1).log2(),
    "isnan": lambda x: x.isnan(), "isinf": lambda x: x.isinf(),
    "nan_to_num": lambda x: x.nan_to_num(), "clamp_min_int": lambda x: x.clamp_min(1),
    "clamp_min_float": lambda x: x.clamp_min(0.5), "clamp_max_int": lambda x: x.clamp_max(1),
    "clamp_max_float": lambda x: x.clamp_max(0.5), "cumsum": lambda x: x.cumsum(0),
    "prod": lambda x: x.prod(), "prod_dim": lambda x: x.prod(0),
    "sort": lambda x: x.sort(stable=True).values, "argsort": lambda x: x.argsort(stable=True),
    "bool": lambda x: x.bool(), "type_as": lambda x: x.type_as(x.double()),
    "t": lambda x: x.t(), "repeat": lambda x: x.repeat(2), "narrow": lambda x: x.narrow(0, 1, 2),
    "select": lambda x: x.select(0, 1), "index_select": lambda x: x.index_select(0, x[:2].long()),
    "new_zeros": lambda x: x.new_zeros(2), "new_full": lambda x: x.new_full((2,), 7),
    "new_tensor": lambda x: x.new_tensor([1, 0]), "exp_": lambda x: x.clone().exp_(),
    "neg_": lambda x: x.clone().neg_(), "sqrt_": lambda x: (x * x).sqrt_(),
    "masked_fill_": lambda x: x.clone().masked_fill_(x == x[0], 2.5),
}
BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "pow": lambda a, b: a**b, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b, "ge": lambda a, b: a >= b, "maximum": lambda a, b: a.maximum(b),
    "minimum": lambda a, b: a.minimum(b), "matmul": lambda a, b: a @ b,
    "div_floor": lambda a, b: a.div(b, rounding_mode="floor"),
    "le_method": lambda a, b: a.le(b), "gt_method": lambda a, b: a.gt(b),
    "clamp_min": lambda a, b: a.clamp_min(b), "clamp_max": lambda a, b: a.clamp_max(b),
    "lerp": lambda a, b: a.lerp(b, 0.25), "where": lambda a, b: a.where(a == a, b),
}
REFLECTED = {"radd": lambda a, b: b + a, "rsub": lambda a, b: b - a, "rmul": lambda a, b: b * a,
             "rtruediv": lambda a, b: b / a, "rfloordiv": lambda a, b: b // a,
             "rmod": lambda a, b: b % a, "rpow": lambda a, b: b**a, "rand": lambda a, b: b & a,
             "ror": lambda a, b: b | a}


def _make(lib, kind):
    if kind in SCALARS:
        return SCALARS[kind]
    if lib is torch:
        return torch.tensor(VALUES[kind], dtype=getattr(torch, kind))
    return mt.tensor(VALUES[kind], dtype={"bool": np.bool_}.get(kind, getattr(np, kind)))


def _outcome(lib, fn, kinds):
    """('ok', dtype name, values) or ('error', exception type name, message)."""
    try:
        out = fn(*(_make(lib, k) for k in kinds))
    except Exception as e:  # noqa: BLE001  (any refusal counts here)
        return "error", type(e).__name__, str(e)
    values = out.detach().numpy() if lib is torch else out.numpy()
    return "ok", str(out.dtype).removeprefix("torch."), values


def accepted(name: str, kinds: tuple[str, ...]) -> bool:
    """Calls torch refuses and minitorch runs on purpose: matmul of mixed dtypes (promoted, as
    for mixed floats) or of bools, maximum/minimum with a Python number, and abs, relu, argmax
    and argmin of a bool tensor (each the obvious result)."""
    if name == "matmul":
        return len(set(kinds)) > 1 or "bool" in kinds
    if name in ("maximum", "minimum"):
        return any(k in SCALARS for k in kinds)
    return name in ("abs", "relu", "argmax", "argmin") and kinds == ("bool",)


def cases():
    out = [(n, fn, (k,)) for (n, fn), k in itertools.product(UNARY.items(), VALUES)]
    operands = list(VALUES) + list(SCALARS)
    out += [(n, fn, (a, b)) for (n, fn), a, b in
            itertools.product(BINARY.items(), VALUES, operands)]
    out += [(n, fn, (a, b)) for (n, fn), a, b in
            itertools.product(REFLECTED.items(), VALUES, SCALARS)]
    return [pytest.param(n, fn, kinds, id=f"{n}[{','.join(kinds)}]") for n, fn, kinds in out]


@pytest.mark.parametrize("name,fn,kinds", cases())
def test_dtype_and_values_as_torch(name, fn, kinds):
    want = _outcome(torch, fn, kinds)
    got = _outcome(mt, fn, kinds)
    if want[0] == "error":
        assert got[0] == "error" or accepted(name, kinds), (
            f"torch refuses {name}{kinds} ({want[1]}: {want[2]}); minitorch gives {got[1]}")
        if got[0] == "error":
            assert "\n" not in got[2], f"{name}{kinds}: not one line: {got[2]!r}"
        return
    assert not accepted(name, kinds), f"{name}{kinds} is listed as accepted, but torch runs it"
    assert got[0] == "ok", f"{name}{kinds}: torch gives {want[1]}, minitorch raises {got[1:]}"
    assert got[1] == want[1], f"{name}{kinds}: dtype {got[1]}, torch {want[1]}"
    assert got[2].shape == want[2].shape, f"{name}{kinds}: shape {got[2].shape} != {want[2].shape}"
    if want[2].dtype.kind in "biu":
        np.testing.assert_array_equal(got[2], want[2], err_msg=f"{name}{kinds}")
    else:  # NumPy's float32 exp and sin may differ from torch's in the last bit
        np.testing.assert_allclose(got[2], want[2], rtol=1e-6, atol=0, err_msg=f"{name}{kinds}")


def test_most_negative_integer_min():
    """min of an integer tensor is exact at the most negative int64 (-x would overflow there)."""
    lo = np.iinfo(np.int64).min
    x = mt.tensor([[lo, 7], [0, -1]])
    assert x.min().item() == lo
    np.testing.assert_array_equal(x.amin(0).numpy(), [lo, -1])
    np.testing.assert_array_equal(x.argmin(1).numpy(), [0, 1])


def test_integer_division_by_zero_raises():
    """As torch: integer // 0 and % 0 raise (NumPy would give 0 with a warning), an error that
    is both Python's ZeroDivisionError and the RuntimeError torch raises; float x // 0.0 and
    x % 0.0 give inf and nan as torch's."""
    for fn in (lambda a, b: a // b, lambda a, b: a % b):
        with pytest.raises(RuntimeError, match="integer division by zero") as info:
            fn(mt.tensor([4, 5]), mt.tensor([2, 0]))
        assert isinstance(info.value, ZeroDivisionError)
        a, b = [1.0, -1.0, 0.0], 0.0
        np.testing.assert_array_equal(fn(mt.tensor(a), b).numpy(), fn(torch.tensor(a), b).numpy())


def test_truth_value_and_python_numbers():
    """bool(), float(), int() and indexing with a one-element tensor, as torch."""
    assert bool(mt.tensor([0.0])) is False and bool(mt.tensor(3)) is True
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(mt.tensor([1, 2]))
    assert float(mt.tensor([2.5])) == 2.5 and int(mt.tensor(7)) == 7
    assert [10, 20, 30][mt.tensor(2)] == 30
    with pytest.raises(TypeError, match="integer tensor can be an index"):
        [10, 20][mt.tensor(1.0)]
    x = mt.tensor([2.0])  # == compares values, as torch's
    assert x in [mt.tensor([5.0]), mt.tensor([2.0])] and x not in [mt.tensor([5.0])]
