"""torch's module-level functions (torch.exp(x), torch.max(x, 1), torch.full_like, torch.linspace,
torch.allclose, torch.enable_grad, ...) side by side with torch: each case is one lambda run with
`L` = torch and `L` = minitorch, on float32, float64 and int64 inputs, and must give the same
dtype, shape and values (float32 to 1e-6 relative, float64 to 1e-12), the same gradients, or
both refuse."""

from __future__ import annotations

import builtins
import threading

import numpy as np
import pytest
import torch

import minitorch as mt

# log/sqrt of negative integers: nan on both sides, compared as equal
pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")

# The functions of the brief: every one must exist on both libraries.
FUNCTIONS = (
    "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh", "sigmoid", "relu",
    "neg", "square", "pow", "clamp", "clip", "maximum", "minimum", "matmul", "mm", "bmm", "mv",
    "dot", "sum", "mean", "var", "std", "amax", "amin", "logsumexp", "softmax", "log_softmax",
    "argmax", "argmin", "max", "min", "isfinite", "gather", "masked_fill", "reshape", "flatten",
    "transpose", "permute", "squeeze", "unsqueeze", "chunk", "split", "flip", "numel",
    "floor_divide", "remainder", "logical_not", "any", "all", "eq", "ne", "lt", "le", "gt", "ge",
    "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "div", "mul", "add", "sub",
    "full_like", "empty_like", "rand_like", "randn_like", "randint_like", "randperm", "linspace",
    "eye", "as_tensor", "outer", "allclose", "isclose", "equal", "enable_grad", "inference_mode",
    "no_grad", "set_grad_enabled", "is_grad_enabled",
)
DTYPES = ("float32", "float64", "int64")
_RNG = np.random.default_rng(7)
# (3, 4) inputs with distinct values (no ties: torch promises no index among equal maxima);
# floats positive so log/sqrt are finite, ints of both signs
DATA = {
    "float32": _RNG.uniform(0.3, 2.5, (3, 4)).astype(np.float32),
    "float64": _RNG.uniform(0.3, 2.5, (3, 4)),
    "int64": (_RNG.permutation(12) - 5).reshape(3, 4).astype(np.int64),
}
RTOL = {"float32": 1e-6, "float64": 1e-12}


def _x(L, dtype, requires_grad=False):
    return L.tensor(DATA[dtype].copy(), requires_grad=requires_grad)


def _same(m, t, where="result"):
    """minitorch's result m equals torch's t: tensors by dtype, shape and values; tuples (and
    (values, indices) pairs) item by item; Python values by type and value."""
    if isinstance(t, torch.Tensor):
        assert isinstance(m, mt.Tensor), f"{where}: {type(m).__name__}, torch gives a Tensor"
        tdtype = str(t.dtype).removeprefix("torch.")
        assert str(m.dtype) == tdtype, f"{where}: dtype {m.dtype}, torch {tdtype}"
        assert m.shape == tuple(t.shape), f"{where}: shape {m.shape}, torch {tuple(t.shape)}"
        if tdtype in RTOL:
            np.testing.assert_allclose(m.detach().numpy(), t.detach().numpy(), atol=0,
                                       rtol=RTOL[tdtype], err_msg=where)
        else:
            np.testing.assert_array_equal(m.numpy(), t.numpy(), err_msg=where)
    elif isinstance(t, tuple):
        assert isinstance(m, tuple) and len(m) == len(t), f"{where}: {m!r} vs {t!r}"
        for i, (a, b) in enumerate(zip(m, t)):
            _same(a, b, f"{where}[{i}]")
        for field in ("values", "indices"):  # torch.return_types.max and minitorch's MaxResult
            if hasattr(t, field):
                _same(getattr(m, field), getattr(t, field), f"{where}.{field}")
    else:
        assert type(m) is type(t) and m == t, f"{where}: {m!r}, torch {t!r}"


# name -> (fn(L, x), dtypes it runs on)
ALL, FLOAT = DTYPES, ("float32", "float64")
SAME = {
    # elementwise
    "abs": (lambda L, x: L.abs(x), ALL),
    "exp": (lambda L, x: L.exp(x), ALL),
    "log": (lambda L, x: L.log(x), ALL),
    "sqrt": (lambda L, x: L.sqrt(x), ALL),
    "rsqrt": (lambda L, x: L.rsqrt(x), ALL),
    "reciprocal": (lambda L, x: L.reciprocal(x), ALL),
    "sin": (lambda L, x: L.sin(x), ALL),
    "cos": (lambda L, x: L.cos(input=x), ALL),
    "tanh": (lambda L, x: L.tanh(x), ALL),
    "sigmoid": (lambda L, x: L.sigmoid(x), ALL),
    "relu": (lambda L, x: L.relu(x - 1), ALL),
    "neg": (lambda L, x: L.neg(x), ALL),
    "square": (lambda L, x: L.square(x), ALL),
    "isfinite": (lambda L, x: L.isfinite(L.log(x - 1)), ALL),
    "logical_not": (lambda L, x: L.logical_not(x - 1), ALL),
    "bitwise_not": (lambda L, x: L.bitwise_not(x), ("int64",)),
    "bitwise_not bool": (lambda L, x: L.bitwise_not(x > 1), ALL),
    "bitwise_and": (lambda L, x: L.bitwise_and(x, 6), ("int64",)),
    "bitwise_or": (lambda L, x: L.bitwise_or(x > 1, x < 0), ALL),
    "bitwise_xor": (lambda L, x: L.bitwise_xor(x, L.tensor([1, 2, 3, 4])), ("int64",)),
    "bitwise_and number first": (lambda L, x: L.bitwise_and(3, x), ("int64",)),
    "pow": (lambda L, x: L.pow(x, 2), ALL),
    "pow float exponent": (lambda L, x: L.pow(x, exponent=0.5), FLOAT),
    "pow tensor exponent": (lambda L, x: L.pow(x, L.tensor([1.0, 2.0, 0.5, 3.0])), ALL),
    "pow number base": (lambda L, x: L.pow(2, x), ALL),
    "pow float base": (lambda L, x: L.pow(1.5, x), ALL),
    "clamp": (lambda L, x: L.clamp(x, 0.5, 1.5), ALL),
    "clamp min kw": (lambda L, x: L.clamp(x, min=1), ALL),
    "clip max kw": (lambda L, x: L.clip(x, max=1.25), ALL),
    "maximum": (lambda L, x: L.maximum(x, L.ones(4, dtype=x.dtype)), ALL),
    "minimum": (lambda L, x: L.minimum(x, other=x.flip([1])), ALL),
    "maximum mixed dtypes": (lambda L, x: L.maximum(x, L.tensor([1.5])), ALL),
    # arithmetic, comparisons
    "add": (lambda L, x: L.add(x, x), ALL),
    "add alpha": (lambda L, x: L.add(x, x, alpha=3), ALL),
    "add number": (lambda L, x: L.add(x, 2.5), ALL),
    "add number first": (lambda L, x: L.add(2, x), ALL),
    "add float first": (lambda L, x: L.add(2.5, x, alpha=2), ALL),
    "add two numbers": (lambda L, x: L.add(2, 3), ("int64",)),
    "sub, mul, div, floor_divide of numbers": (lambda L, x: (L.sub(2.5, 1), L.mul(2, True),
                                                             L.div(6, 4), L.floor_divide(7, 2)),
                                               ("int64",)),
    "sub": (lambda L, x: L.sub(x, 1), ALL),
    "sub alpha": (lambda L, x: L.sub(x, x.flip([0]), alpha=2), ALL),
    "sub number first": (lambda L, x: L.sub(1, x), ALL),
    "mul": (lambda L, x: L.mul(x, x.T.T), ALL),
    "mul number first": (lambda L, x: L.mul(3, x), ALL),
    "mul broadcast": (lambda L, x: L.mul(x, L.tensor([[1.0], [2.0], [3.0]])), ALL),
    "div": (lambda L, x: L.div(x, 3), ALL),
    "div tensor": (lambda L, x: L.div(x, other=x.flip([1])), ALL),
    "div floor": (lambda L, x: L.div(x, 2, rounding_mode="floor"), ALL),
    "div number first": (lambda L, x: L.div(2, x), ALL),
    "div None mode": (lambda L, x: L.div(x, 4, rounding_mode=None), ALL),
    "floor_divide": (lambda L, x: L.floor_divide(x, 2), ALL),
    "floor_divide number first": (lambda L, x: L.floor_divide(7, x), FLOAT),
    "remainder": (lambda L, x: L.remainder(x, 0.75), FLOAT),
    "remainder int": (lambda L, x: L.remainder(x, 4), ALL),
    "remainder number first": (lambda L, x: L.remainder(5, x), FLOAT),
    "eq": (lambda L, x: L.eq(x, x.flip([0])), ALL),
    "ne": (lambda L, x: L.ne(x, 1), ALL),
    "lt": (lambda L, x: L.lt(x, 1), ALL),
    "le": (lambda L, x: L.le(x, other=x.flip([1])), ALL),
    "gt": (lambda L, x: L.gt(x, 1.5), ALL),
    "ge": (lambda L, x: L.ge(x, L.tensor([0.5, 1.0, 1.5, 2.0])), ALL),
    # matrix products
    "matmul": (lambda L, x: L.matmul(x, x.T), ALL),
    "matmul vector": (lambda L, x: L.matmul(x, x[0]), ALL),
    "matmul batched": (lambda L, x: L.matmul(x.reshape(3, 2, 2), x.reshape(3, 2, 2)), ALL),
    "mm": (lambda L, x: L.mm(x.T, x), ALL),
    "bmm": (lambda L, x: L.bmm(x.reshape(3, 2, 2), mat2=x.reshape(3, 2, 2)), ALL),
    "mv": (lambda L, x: L.mv(x, x[1]), ALL),
    "dot": (lambda L, x: L.dot(x[0], x[2]), ALL),
    # reductions
    "sum": (lambda L, x: L.sum(x), ALL),
    "sum dim": (lambda L, x: L.sum(x, 1), ALL),
    "sum dim keepdim positional": (lambda L, x: L.sum(x, 0, True), ALL),
    "sum keywords": (lambda L, x: L.sum(input=x, dim=-1, keepdim=True), ALL),
    "sum dims tuple": (lambda L, x: L.sum(x, (0, 1)), ALL),
    "sum dtype": (lambda L, x: L.sum(x, dtype=L.float64), ALL),
    "sum bool": (lambda L, x: L.sum(x > 1), ALL),
    "mean": (lambda L, x: L.mean(x), FLOAT),
    "mean dim keepdim": (lambda L, x: L.mean(x, 1, True), FLOAT),
    "mean dims keyword": (lambda L, x: L.mean(x, dim=(0, 1), keepdim=True), FLOAT),
    "mean dtype of int": (lambda L, x: L.mean(x, 0, dtype=L.float64), ALL),
    "var": (lambda L, x: L.var(x), FLOAT),
    "var dim": (lambda L, x: L.var(x, 1), FLOAT),
    "var dim unbiased positional": (lambda L, x: L.var(x, 1, False), FLOAT),
    "var dim unbiased keepdim positional": (lambda L, x: L.var(x, 0, True, True), FLOAT),
    "var unbiased only": (lambda L, x: L.var(x, False), FLOAT),
    "var correction": (lambda L, x: L.var(x, dim=1, correction=0, keepdim=True), FLOAT),
    "var unbiased keyword": (lambda L, x: L.var(x, unbiased=False), FLOAT),
    "std": (lambda L, x: L.std(x), FLOAT),
    "std dim unbiased": (lambda L, x: L.std(x, 0, False), FLOAT),
    "std correction": (lambda L, x: L.std(x, -1, correction=2), FLOAT),
    "amax": (lambda L, x: L.amax(x), ALL),
    "amax dim": (lambda L, x: L.amax(x, 1), ALL),
    "amax dims keepdim": (lambda L, x: L.amax(x, (0, 1), True), ALL),
    "amin dim keyword": (lambda L, x: L.amin(x, dim=0, keepdim=True), ALL),
    "argmax": (lambda L, x: L.argmax(x), ALL),
    "argmax dim keepdim": (lambda L, x: L.argmax(x, 1, True), ALL),
    "argmin dim keyword": (lambda L, x: L.argmin(x, dim=0), ALL),
    "max": (lambda L, x: L.max(x), ALL),
    "max dim": (lambda L, x: L.max(x, 1), ALL),
    "max dim keepdim": (lambda L, x: L.max(x, 0, True), ALL),
    "max dim keyword": (lambda L, x: L.max(x, dim=-1, keepdim=True), ALL),
    "max other": (lambda L, x: L.max(x, x.flip([1])), ALL),
    "max other keyword": (lambda L, x: L.max(x, other=x.flip([0])), ALL),
    "min": (lambda L, x: L.min(input=x), ALL),
    "min dim": (lambda L, x: L.min(x, 0), ALL),
    "min dim keepdim keyword": (lambda L, x: L.min(x, dim=1, keepdim=True), ALL),
    "min other": (lambda L, x: L.min(x, x.flip([1])), ALL),
    "logsumexp": (lambda L, x: L.logsumexp(x, 1), ALL),
    "logsumexp dims keepdim": (lambda L, x: L.logsumexp(x, (0, 1), True), FLOAT),
    "softmax": (lambda L, x: L.softmax(x, 1), FLOAT),
    "softmax dim keyword": (lambda L, x: L.softmax(x, dim=0), FLOAT),
    "softmax dtype": (lambda L, x: L.softmax(x, -1, L.float64), FLOAT),
    "log_softmax": (lambda L, x: L.log_softmax(x, -1), FLOAT),
    "log_softmax dtype keyword": (lambda L, x: L.log_softmax(x, 0, dtype=L.float64), FLOAT),
    "any": (lambda L, x: L.any(x > 2), ALL),
    "any dim": (lambda L, x: L.any(x > 2, 1), ALL),
    "all dim keepdim": (lambda L, x: L.all(x > 0, dim=0, keepdim=True), ALL),
    "all of numbers": (lambda L, x: L.all(x), ALL),
    # indexing and shape
    "gather": (lambda L, x: L.gather(x, 1, L.tensor([[0, 3], [2, 2], [1, 0]])), ALL),
    "gather keywords": (lambda L, x: L.gather(x, dim=0, index=L.tensor([[2, 0, 1, 1]])), ALL),
    "masked_fill": (lambda L, x: L.masked_fill(x, x > 1, 0), ALL),
    "masked_fill keywords": (lambda L, x: L.masked_fill(x, mask=x < 1, value=-1.5), FLOAT),
    "reshape": (lambda L, x: L.reshape(x, (2, -1)), ALL),
    "reshape keyword": (lambda L, x: L.reshape(x, shape=(12,)), ALL),
    "flatten": (lambda L, x: L.flatten(x), ALL),
    "flatten dims": (lambda L, x: L.flatten(x.reshape(3, 2, 2), 1), ALL),
    "flatten keywords": (lambda L, x: L.flatten(x.reshape(3, 2, 2), start_dim=0, end_dim=1),
                         ALL),
    "transpose": (lambda L, x: L.transpose(x, 0, 1), ALL),
    "transpose keywords negative": (lambda L, x: L.transpose(x, dim0=-1, dim1=0), ALL),
    "permute": (lambda L, x: L.permute(x.reshape(3, 2, 2), (2, 0, 1)), ALL),
    "permute keyword": (lambda L, x: L.permute(x, dims=[1, 0]), ALL),
    "squeeze": (lambda L, x: L.squeeze(x.reshape(3, 1, 4, 1)), ALL),
    "squeeze dim": (lambda L, x: L.squeeze(x.reshape(3, 1, 4), 1), ALL),
    "squeeze dim not 1": (lambda L, x: L.squeeze(x, dim=0), ALL),
    "unsqueeze": (lambda L, x: L.unsqueeze(x, 0), ALL),
    "unsqueeze negative keyword": (lambda L, x: L.unsqueeze(x, dim=-1), ALL),
    "chunk": (lambda L, x: L.chunk(x, 3, 1), ALL),
    "chunk keywords": (lambda L, x: L.chunk(x, chunks=2, dim=0), ALL),
    "split": (lambda L, x: L.split(x, 3, 1), ALL),
    "split sizes keyword": (lambda L, x: L.split(x, split_size_or_sections=[1, 2], dim=0), ALL),
    "split default dim": (lambda L, x: L.split(x, 2), ALL),
    "flip": (lambda L, x: L.flip(x, (0,)), ALL),
    "flip both keyword": (lambda L, x: L.flip(x, dims=[0, 1]), ALL),
    "numel": (lambda L, x: L.numel(x), ALL),
    "numel 0-d": (lambda L, x: L.numel(x[0, 0]), ALL),
    # 0-d and empty inputs
    "exp 0-d": (lambda L, x: L.exp(x[1, 2]), ALL),
    "max 0-d": (lambda L, x: L.max(x[1, 2]), ALL),
    "sum empty": (lambda L, x: L.sum(x[:0], 0), ALL),
    "matmul empty": (lambda L, x: L.matmul(x[:, :0], x[:0]), ALL),
    # creation
    "full_like": (lambda L, x: L.full_like(x, 2.75), ALL),
    "full_like dtype": (lambda L, x: L.full_like(x, 2, dtype=L.float64), ALL),
    "full_like bool": (lambda L, x: L.full_like(x > 1, 2), ALL),
    "full_like keyword value": (lambda L, x: L.full_like(x, fill_value=True), ALL),
    "full_like requires_grad": (lambda L, x: L.full_like(x, 3, requires_grad=True), FLOAT),
    "full_like cpu": (lambda L, x: L.full_like(x, 1, device="cpu"), ALL),
    "empty_like": (lambda L, x: (tuple(L.empty_like(x).shape), L.empty_like(x).dtype == x.dtype),
                   ALL),
    "empty_like dtype": (lambda L, x: L.empty_like(x, dtype=L.int64).dtype == L.int64, ALL),
    "outer": (lambda L, x: L.outer(x[0], x[1, :3]), ALL),
    "outer mixed dtypes": (lambda L, x: L.outer(x[0], L.arange(3)), ALL),
    "outer keywords": (lambda L, x: L.outer(input=x[0], vec2=x[2]), ALL),
    "allclose": (lambda L, x: L.allclose(x, x * 1), ALL),
    "allclose not": (lambda L, x: L.allclose(x, x + 1), ALL),
    "allclose broadcast": (lambda L, x: L.allclose(x[:1], x[:1].expand(3, 4)), ALL),
    "allclose atol positional": (lambda L, x: L.allclose(x, x + 1, 0.0, 1.0), ALL),
    "allclose nan": (lambda L, x: L.allclose(L.log(x - 2), L.log(x - 2)), ALL),
    "allclose equal_nan": (lambda L, x: L.allclose(L.log(x - 2), L.log(x - 2), equal_nan=True),
                           ALL),
    "isclose": (lambda L, x: L.isclose(x, x * (1 + 2e-5)), FLOAT),
    "isclose rtol": (lambda L, x: L.isclose(x, x + 0.25, rtol=0.2), FLOAT),
    "isclose atol": (lambda L, x: L.isclose(x, x + 1, atol=1), ALL),
    "isclose int rtol": (lambda L, x: L.isclose(x, x + 1, rtol=0.3), ALL),
    "isclose int in float32": (lambda L, x: L.isclose(L.tensor([16777217, 5]),
                                                      L.tensor([16777216, 6]), atol=0.5, rtol=0),
                               ALL),
    "isclose exact": (lambda L, x: L.isclose(x, x.flip([1]), rtol=0, atol=0), ALL),
    "isclose bool": (lambda L, x: L.isclose(x > 1, x > 2, atol=0.5), ALL),
    "isclose inf": (lambda L, x: L.isclose(L.tensor([float("inf"), -float("inf"), 1.0]),
                                           L.tensor([float("inf"), float("inf"), 1.0])), ALL),
    "equal": (lambda L, x: L.equal(x, x.clone()), ALL),
    "equal not": (lambda L, x: L.equal(x, x.flip([0])), ALL),
    "equal shapes differ": (lambda L, x: L.equal(x, x[None]), ALL),
    "equal dtypes differ": (lambda L, x: L.equal(x, x.double()), ALL),
    "equal nan": (lambda L, x: L.equal(L.log(x - 2), L.log(x - 2)), ALL),
    "linspace": (lambda L, x: L.linspace(0, 10, 5), ALL),
    "linspace float32": (lambda L, x: L.linspace(-1.5, 2.3, 17), ALL),
    "linspace float64 keywords": (lambda L, x: L.linspace(start=0.1, end=1.7, steps=9,
                                                          dtype=L.float64), ALL),
    "linspace descending": (lambda L, x: L.linspace(1, 0, 4), ALL),
    "linspace int": (lambda L, x: L.linspace(0, 10, 5, dtype=L.int64), ALL),
    "linspace int negative": (lambda L, x: L.linspace(-3, 8, 7, dtype=L.int64), ALL),
    "linspace int from floats": (lambda L, x: L.linspace(-7.25, 13.5, 100, dtype=L.int64), ALL),
    "linspace int from floats short": (lambda L, x: L.linspace(-1.5, 2.3, 17, dtype=L.int64),
                                       ALL),
    "linspace one": (lambda L, x: L.linspace(2, 5, 1), ALL),
    "linspace none": (lambda L, x: L.linspace(2, 5, 0), ALL),
    "linspace tensors": (lambda L, x: L.linspace(x[0, 0], x[1, 1], 6), ALL),
    "linspace requires_grad": (lambda L, x: L.linspace(0, 1, 3, requires_grad=True), ALL),
    "eye": (lambda L, x: L.eye(3), ALL),
    "eye n m": (lambda L, x: L.eye(2, 4), ALL),
    "eye m keyword dtype": (lambda L, x: L.eye(3, m=2, dtype=L.int64), ALL),
    "eye bool": (lambda L, x: L.eye(2, dtype=L.bool), ALL),
    "eye empty": (lambda L, x: L.eye(0), ALL),
    "randperm": (lambda L, x: L.sort(L.randperm(7))[0] if L is torch else
                 L.tensor(np.sort(L.randperm(7).numpy())), ALL),
    "randperm dtype": (lambda L, x: (L.randperm(3, dtype=L.float64).dtype == L.float64,
                                     L.randperm(0).shape), ALL),
    "as_tensor list": (lambda L, x: L.as_tensor([[1, 2], [3, 4]]), ALL),
    "as_tensor float": (lambda L, x: L.as_tensor(2.5), ALL),
    "as_tensor dtype": (lambda L, x: L.as_tensor(DATA["float64"], dtype=L.float32), ALL),
    "as_tensor of a tensor": (lambda L, x: L.as_tensor(x) is x, ALL),
    "as_tensor of a tensor cast": (lambda L, x: L.as_tensor(x, dtype=L.float64), ALL),
}


def _cases(table):
    return [pytest.param(name, dtype, id=f"{name}-{dtype}")
            for name, (_, dtypes) in table.items() for dtype in dtypes]


@pytest.mark.parametrize(("name", "dtype"), _cases(SAME))
def test_function_as_torch(name, dtype):
    fn = SAME[name][0]
    _same(fn(mt, _x(mt, dtype)), fn(torch, _x(torch, dtype)))


# differentiable function forms: gradients through them, float32 and float64
GRADS = {
    "abs": lambda L, x: L.abs(x - 1), "exp": lambda L, x: L.exp(x), "log": lambda L, x: L.log(x),
    "sqrt": lambda L, x: L.sqrt(x), "rsqrt": lambda L, x: L.rsqrt(x),
    "reciprocal": lambda L, x: L.reciprocal(x), "sin": lambda L, x: L.sin(x),
    "cos": lambda L, x: L.cos(x), "tanh": lambda L, x: L.tanh(x),
    "sigmoid": lambda L, x: L.sigmoid(x), "relu": lambda L, x: L.relu(x - 1),
    "neg": lambda L, x: L.neg(x), "square": lambda L, x: L.square(x),
    "pow": lambda L, x: L.pow(x, 3), "pow tensor exponent": lambda L, x: L.pow(x, x.flip([1])),
    "pow number base": lambda L, x: L.pow(2.0, x), "clamp": lambda L, x: L.clamp(x, 0.5, 1.5),
    "clip": lambda L, x: L.clip(x, max=1.2),
    "maximum": lambda L, x: L.maximum(x, x.flip([1])),
    "minimum": lambda L, x: L.minimum(x, x.flip([0])),
    "add alpha": lambda L, x: L.add(x, x * x, alpha=2.5), "add number first": lambda L, x: L.add(
        1.5, x), "sub alpha": lambda L, x: L.sub(x, x.flip([0]), alpha=3),
    "sub number first": lambda L, x: L.sub(2, x), "mul": lambda L, x: L.mul(x, x.flip([1])),
    "div": lambda L, x: L.div(x, x.flip([1])), "div number first": lambda L, x: L.div(2, x),
    "remainder": lambda L, x: L.remainder(x, 0.7),
    "matmul": lambda L, x: L.matmul(x, x.T), "mm": lambda L, x: L.mm(x, x.T),
    "bmm": lambda L, x: L.bmm(x.reshape(3, 2, 2), x.reshape(3, 2, 2)),
    "mv": lambda L, x: L.mv(x, x[0]), "dot": lambda L, x: L.dot(x[0], x[1]),
    "sum": lambda L, x: L.sum(x, 1, True), "mean": lambda L, x: L.mean(x, dim=0),
    "var": lambda L, x: L.var(x, 1, False), "std": lambda L, x: L.std(x, dim=0, correction=0),
    "amax": lambda L, x: L.amax(x, 1), "amin": lambda L, x: L.amin(x, 0),
    "logsumexp": lambda L, x: L.logsumexp(x, 1), "softmax": lambda L, x: L.softmax(x, 0),
    "log_softmax": lambda L, x: L.log_softmax(x, dim=1), "max": lambda L, x: L.max(x),
    "max dim": lambda L, x: L.max(x, 1)[0], "max dim values": lambda L, x: L.max(x, 0).values,
    "max other": lambda L, x: L.max(x, x.flip([1])), "min": lambda L, x: L.min(x),
    "min dim": lambda L, x: L.min(x, dim=1, keepdim=True).values,
    "gather": lambda L, x: L.gather(x, 1, L.tensor([[0, 0], [3, 1], [2, 2]])),
    "masked_fill": lambda L, x: L.masked_fill(x, x > 1, 0.0),
    "reshape": lambda L, x: L.reshape(x, (4, 3)), "flatten": lambda L, x: L.flatten(x),
    "transpose": lambda L, x: L.transpose(x, 0, 1), "permute": lambda L, x: L.permute(x, (1, 0)),
    "squeeze": lambda L, x: L.squeeze(L.unsqueeze(x, 1), 1),
    "chunk": lambda L, x: L.chunk(x, 2, 1)[1], "split": lambda L, x: L.split(x, [1, 2])[1],
    "flip": lambda L, x: L.flip(x, [1]), "outer": lambda L, x: L.outer(x[0], x[1]),
    "as_tensor cast": lambda L, x: L.as_tensor(x, dtype=L.float64),
}


def _same_grads(m, t, dtype):
    """Outputs as _same; float32 gradients to 1e-6 of their largest element, since an element
    near zero from cancellation (tanh' = 1 - y*y at |y| near 1, var's x - mean) differs in its
    last bits with the order of float32 operations. float64 gradients: elementwise 1e-12."""
    _same(m[0], t[0], "output")
    if dtype == "float64":
        _same(m[1], t[1], "grad")
        return
    assert (str(m[1].dtype), m[1].shape) == (dtype, tuple(t[1].shape))
    ref = t[1].numpy()
    np.testing.assert_allclose(m[1].numpy(), ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max())


def _grad(L, fn, dtype):
    x = _x(L, dtype, requires_grad=True)
    out = fn(L, x)
    weights = L.arange(1, out.numel() + 1).reshape(out.shape).to(out.dtype) / 7
    (out * weights).sum().backward()
    return out, x.grad


@pytest.mark.parametrize("dtype", FLOAT)
@pytest.mark.parametrize("name", list(GRADS))
def test_function_gradient_as_torch(name, dtype):
    _same_grads(_grad(mt, GRADS[name], dtype), _grad(torch, GRADS[name], dtype), dtype)


REFUSED = {
    "exp of a number": lambda L: L.exp(2.0),
    "sum of an array": lambda L: L.sum(np.ones(3)),
    "max of an array": lambda L: L.max(np.ones(3)),
    "reshape of a list": lambda L: L.reshape([1, 2], (2,)),
    "add a list": lambda L: L.add(L.ones(3), [1, 2, 3]),
    "mul an array": lambda L: L.mul(L.ones(3), np.ones(3)),
    "maximum with a number": lambda L: L.maximum(L.ones(3), 2.0),
    "matmul with an array": lambda L: L.matmul(L.ones(2, 2), np.ones((2, 2))),
    "lt number first": lambda L: L.lt(1, L.ones(3)),
    "gather a list index": lambda L: L.gather(L.ones(2, 2), 1, [[0], [1]]),
    "masked_fill an array mask": lambda L: L.masked_fill(L.ones(2), np.array([True, False]), 0),
    "max other and keepdim": lambda L: L.max(L.ones(3), L.ones(3), True),
    "max keepdim alone": lambda L: L.max(L.ones(3), keepdim=True),
    "max of a number": lambda L: L.max(L.ones(3), 2.0),
    "var unbiased and correction": lambda L: L.var(L.ones(3), 0, unbiased=False, correction=0),
    "softmax without dim": lambda L: L.softmax(L.ones(3)),
    "logsumexp without dim": lambda L: L.logsumexp(L.ones(3)),
    "reshape sizes as arguments": lambda L: L.reshape(L.ones(4), 2, 2),
    "permute dims as arguments": lambda L: L.permute(L.ones(2, 3), 1, 0),
    "mm of vectors": lambda L: L.mm(L.ones(3), L.ones(3)),
    "dot with a number": lambda L: L.dot(L.ones(3), 2),
    "clamp without bounds": lambda L: L.clamp(L.ones(3)),
    "rand_like int": lambda L: L.rand_like(L.ones(3, dtype=L.int64)),
    "randn_like bool": lambda L: L.randn_like(L.ones(3) > 0),
    "full_like int requires_grad": lambda L: L.full_like(L.ones(2, dtype=L.int64), 1,
                                                         requires_grad=True),
    "full_like cuda": lambda L: L.full_like(L.ones(2), 1, device="cuda"),
    "randperm negative": lambda L: L.randperm(-1),
    "randperm int requires_grad": lambda L: L.randperm(3, requires_grad=True),
    "linspace negative steps": lambda L: L.linspace(0, 1, -1),
    "linspace float steps": lambda L: L.linspace(0, 1, 2.0),
    "eye negative": lambda L: L.eye(-1),
    "outer of a matrix": lambda L: L.outer(L.ones(2, 1), L.ones(3)),
    "outer of a 0-d": lambda L: L.outer(L.tensor(1.0), L.ones(3)),
    "outer with a number": lambda L: L.outer(L.ones(2), 3),
    "isclose dtypes differ": lambda L: L.isclose(L.ones(2), L.ones(2, dtype=L.float64)),
    "isclose with a number": lambda L: L.isclose(L.ones(2), 1.0),
    "isclose negative rtol": lambda L: L.isclose(L.ones(2), L.ones(2), rtol=-1),
    "allclose shapes": lambda L: L.allclose(L.ones(2, 3), L.ones(4)),
    "allclose int and float": lambda L: L.allclose(L.ones(2, dtype=L.int64), L.ones(2)),
    "equal with a list": lambda L: L.equal(L.ones(2), [1.0, 1.0]),
    "set_grad_enabled bare decorator": lambda L: L.set_grad_enabled(lambda: None),
    "pow of two numbers": lambda L: L.pow(2, 3),
    "remainder of two numbers": lambda L: L.remainder(2, 3),
    "bitwise_xor of two numbers": lambda L: L.bitwise_xor(2, 3),
    "linspace bool": lambda L: L.linspace(0, 1, 3, dtype=L.bool),
    "linspace 1-d start": lambda L: L.linspace(L.tensor([0.0, 1.0]), 1, 3),
    "eye float": lambda L: L.eye(2.0),
    "randint_like low >= high": lambda L: L.randint_like(L.ones(2), 5, 3),
    "sub bools": lambda L: L.sub(L.ones(2) > 0, L.ones(2) > 0),
    "mean of int64": lambda L: L.mean(L.ones(3, dtype=L.int64)),
    "softmax of int64": lambda L: L.softmax(L.ones(3, dtype=L.int64), 0),
}


# Refused by both, but minitorch's error is of another kind, for reasons outside functions.py
KIND_DIFFERS = {
    "clamp without bounds": "Tensor.clamp raises ValueError, torch RuntimeError",
    "full_like int requires_grad": "Tensor.requires_grad_ raises TypeError, torch RuntimeError",
    "randperm int requires_grad": "Tensor.requires_grad_ raises TypeError, torch RuntimeError",
    "full_like cuda": "a CPU-only torch raises AssertionError (not compiled with CUDA)",
    "sub bools": "Tensor.sub raises TypeError, torch RuntimeError",
    "mean of int64": "op mean raises TypeError, torch RuntimeError",
    "softmax of int64": "op softmax raises TypeError, torch NotImplementedError",
}


def _kind(e: BaseException) -> type:
    return next(k for k in (NotImplementedError, TypeError, IndexError, ValueError, RuntimeError,
                            AssertionError) if isinstance(e, k))


@pytest.mark.parametrize("name", list(REFUSED))
def test_function_refused_as_torch(name):
    with pytest.raises(Exception) as t_info:
        REFUSED[name](torch)
    with pytest.raises(Exception) as m_info:
        REFUSED[name](mt)
    if name not in KIND_DIFFERS:
        assert _kind(m_info.value) is _kind(t_info.value), (m_info.value, t_info.value)
    assert "\n" not in str(m_info.value)


def test_every_function_exists_on_both():
    missing = {lib.__name__: [n for n in FUNCTIONS if not hasattr(lib, n)] for lib in (torch, mt)}
    assert missing == {"torch": [], "minitorch": []}


def test_builtin_names_stay_out_of_star_import():
    """abs, max, min, sum, pow, all, any are minitorch attributes, not in __all__, so `from
    minitorch import *` leaves Python's builtins alone (as bool and float)."""
    shadowing = {n for n in FUNCTIONS if hasattr(builtins, n)}
    assert shadowing == {"abs", "all", "any", "max", "min", "pow", "sum"}
    assert not shadowing & set(mt.__all__) and not shadowing & set(mt.engine.__all__)
    namespace: dict = {}
    exec("from minitorch import *", namespace)
    assert not shadowing & set(namespace) and {"exp", "matmul", "linspace"} <= set(namespace)
    assert set(mt.__all__) <= set(dir(mt)) and len(mt.__all__) == len(set(mt.__all__))


# ---- the random *_like functions: torch's dtypes, shapes and flags; minitorch's generator -------
RANDOM = {
    "rand_like": lambda L, x, **kw: L.rand_like(x, **kw),
    "randn_like": lambda L, x, **kw: L.randn_like(x, **kw),
    "randint_like": lambda L, x, **kw: L.randint_like(x, 3, 9, **kw),
    "randint_like high": lambda L, x, **kw: L.randint_like(x, high=4, **kw),
}
RANDOM_KWARGS = [{}, {"dtype": "float64"}, {"requires_grad": True}, {"device": "cpu"}]


@pytest.mark.parametrize("kwargs", RANDOM_KWARGS, ids=str)
@pytest.mark.parametrize("dtype", FLOAT + ("int64",))
@pytest.mark.parametrize("name", list(RANDOM))
def test_random_like_metadata_as_torch(name, dtype, kwargs):
    def run(L):
        kw = {k: getattr(L, v) if k == "dtype" else v for k, v in kwargs.items()}
        try:
            out = RANDOM[name](L, _x(L, dtype), **kw)
        except (TypeError, RuntimeError):  # int requires_grad: see KIND_DIFFERS
            return "refused"
        return str(out.dtype).removeprefix("torch."), tuple(out.shape), out.requires_grad

    assert run(mt) == run(torch)


def test_random_like_reproducible_and_in_range():
    x = mt.zeros(200, 50, dtype=mt.float64)
    mt.manual_seed(5)
    first = [mt.rand_like(x), mt.randn_like(x), mt.randint_like(x, 2, 5), mt.randperm(10)]
    mt.manual_seed(5)
    again = [mt.rand_like(x), mt.randn_like(x), mt.randint_like(x, 2, 5), mt.randperm(10)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    u, n, i, p = (t.numpy() for t in first)
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    assert abs(n.mean()) < 0.02 and abs(n.std() - 1) < 0.02
    assert set(np.unique(i)) == {2.0, 3.0, 4.0} and sorted(p.tolist()) == list(range(10))
    g = mt.Generator(1)
    np.testing.assert_array_equal(mt.rand_like(x, generator=g).numpy(),
                                  mt.rand_like(x, generator=mt.Generator(1)).numpy())


@pytest.mark.parametrize("dtype", FLOAT)
@pytest.mark.parametrize(("start", "end", "steps"), [(-7.25, 13.5, 100), (0.3, 0.7, 1001),
                                                     (1e-3, 1e3, 33), (5.0, -2.5, 64)])
def test_linspace_long_as_torch(start, end, steps, dtype):
    """Long float ranges: torch's vectorized kernel counts each vector of points from the
    vector's first one, so its last bit depends on the CPU's vector width; minitorch counts every
    point from start (first half) or end (second half), as torch's scalar loop. Each point is
    then within 1e-6 (float32) / 1e-12 (float64) of max(|start|, |end|) of torch's: relative to
    the range, since a point near 0 keeps the rounding of the endpoints."""
    t = torch.linspace(start, end, steps, dtype=getattr(torch, dtype)).numpy()
    m = mt.linspace(start, end, steps, dtype=getattr(mt, dtype))
    assert (str(m.dtype), m.shape) == (dtype, t.shape)
    np.testing.assert_allclose(m.numpy(), t, rtol=RTOL[dtype],
                               atol=RTOL[dtype] * max(abs(start), abs(end)))


def test_as_tensor_shares_an_array_as_torch():
    """An ndarray of a minitorch dtype is shared (writes show both ways), as torch.as_tensor;
    a cast copies. minitorch has no int32: such an array is copied to int64 (torch shares it)."""
    for L in (torch, mt):
        a = np.arange(6.0).reshape(2, 3).T  # a strided view: shared too
        t, c = L.as_tensor(a), L.as_tensor(a, dtype=L.float32)
        a[0, 0] = 9
        t[1, 1] = 7
        assert t.tolist() == [[9.0, 3.0], [1.0, 7.0], [2.0, 5.0]] and a[1, 1] == 7
        assert c.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    b = np.arange(3, dtype=np.int32)
    t = mt.as_tensor(b)
    b[0] = 5
    assert t.dtype == np.int64 and t.tolist() == [0, 1, 2]


# ---- grad-mode context managers ---------------------------------------------------------------
@pytest.fixture(autouse=True)
def _grad_mode_restored():
    yield
    assert mt.is_grad_enabled() and torch.is_grad_enabled(), "a test left grad mode off"


def _enable_inside_no_grad(L):
    x = L.ones(2, requires_grad=True)
    with L.no_grad():
        with L.enable_grad():
            y = x * 2
            inner = L.is_grad_enabled()
        z = x * 2
        after = L.is_grad_enabled()
    return y.requires_grad, inner, z.requires_grad, after, L.is_grad_enabled()


def _restored_after_exception(L):
    seen = []
    for make in (L.no_grad, L.enable_grad, L.inference_mode, lambda: L.set_grad_enabled(False)):
        for outer in (True, False):
            with L.set_grad_enabled(outer):
                try:
                    with make():
                        raise KeyError("inside")
                except KeyError:
                    seen.append(L.is_grad_enabled())
    return seen


def _decorators(L):
    def probe():
        return L.is_grad_enabled()

    forms = [L.no_grad(probe), L.no_grad()(probe), L.enable_grad(probe), L.enable_grad()(probe),
             L.inference_mode(probe), L.inference_mode()(probe), L.inference_mode(False)(probe),
             L.inference_mode(mode=True)(probe)]
    free = [f() for f in forms]
    with L.no_grad():
        held = [f() for f in forms]
    set_off = L.set_grad_enabled(False)(probe)
    after_decoration = L.is_grad_enabled()  # decorating does not switch grad mode
    return free, held, set_off(), after_decoration, L.is_grad_enabled(), L.no_grad(
        probe).__name__


def _set_grad_enabled_call(L):
    L.set_grad_enabled(False)  # a plain call switches at once, for the rest of the thread
    off = L.is_grad_enabled(), (L.ones(2, requires_grad=True) * 2).requires_grad
    L.set_grad_enabled(True)
    with L.set_grad_enabled(False):
        inside = L.is_grad_enabled()
    return off, inside, L.is_grad_enabled()


def _reused(L):
    ng, out = L.no_grad(), []
    for _ in range(2):
        with ng:
            out.append(L.is_grad_enabled())
        out.append(L.is_grad_enabled())
    with L.inference_mode():
        x = L.ones(2, requires_grad=True) * 3
        out += [L.is_grad_enabled(), x.requires_grad]
    with L.no_grad(), L.inference_mode(False):
        out.append(L.is_grad_enabled())  # inference_mode(False) turns grad on, as torch's
    return out, L.is_grad_enabled()


def _decorated_method(L):
    class Model:
        @L.no_grad()
        def step(self, x):
            return (x * 2).requires_grad, L.is_grad_enabled()

        @L.enable_grad
        def train(self, x):
            return (x * 2).requires_grad

    m, x = Model(), L.ones(2, requires_grad=True)
    with L.no_grad():
        trained = m.train(x)
    return m.step(x), trained, Model.step.__name__


def _decorated_generator(L):
    @L.no_grad()
    def rows(n):
        for i in range(n):
            got = yield i, L.is_grad_enabled()
            yield got
        return "done"

    @L.enable_grad
    def grads():
        yield L.is_grad_enabled()

    gen, seen = rows(2), []
    seen.append(next(gen))
    seen.append((L.is_grad_enabled(), gen.send("sent")))  # the caller's mode between steps
    seen.append(next(gen))
    with L.no_grad():
        seen.append(list(grads()))
    seen.append(list(gen))
    return seen, rows.__name__


GRAD_MODE = {
    "decorated generator": _decorated_generator,
    "enable_grad inside no_grad": _enable_inside_no_grad,
    "restored after an exception": _restored_after_exception,
    "decorator forms": _decorators,
    "set_grad_enabled as a call": _set_grad_enabled_call,
    "reuse and inference_mode": _reused,
    "decorated methods": _decorated_method,
}


@pytest.mark.parametrize("name", list(GRAD_MODE))
def test_grad_mode_as_torch(name):
    assert GRAD_MODE[name](mt) == GRAD_MODE[name](torch)


def test_grad_mode_is_per_thread_under_a_decorator():
    """A decorated function running in another thread switches only that thread's mode."""
    started, release, seen = threading.Event(), threading.Event(), []

    @mt.no_grad()
    def worker():
        started.set()
        release.wait(5)
        seen.append(mt.is_grad_enabled())

    th = threading.Thread(target=worker)
    th.start()
    started.wait(5)
    seen.append(mt.is_grad_enabled())
    release.set()
    th.join(5)
    assert seen == [True, False]
