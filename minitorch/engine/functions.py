"""torch.* functions: each is the Tensor method of the same name, and then those with no method
(cat, stack, tril, triu, topk, outer, isclose, allclose, equal; einsum is contraction.py's,
var_mean/std_mean the reduce mixin's module's).

Each checks its tensor arguments (a NumPy array or list where torch wants a Tensor is refused, as
torch refuses it: `torch.sum(np.ones(3))` must not run NumPy's sum) and calls the method; none
computes anything itself. The few with more than one line follow torch's overloads (max/min,
var/std's `unbiased`, a Python number as the first operand of add, mul, pow, ...).
"""

from __future__ import annotations

import builtins
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .contraction import einsum as _einsum
from .dtypes import get_default_dtype, is_float, promote
from .kernels import ArgumentError
from .registry import REGISTRY
from .tensor import MaxResult, Tensor, apply, numpy_aliases, where
from .tensor.reduce import std_mean as _std_mean
from .tensor.reduce import var_mean as _var_mean

_NUMBER = (builtins.bool, builtins.int, builtins.float)


def _t(x: Any, fn: str, arg: str = "input") -> Tensor:
    """x, which must be a Tensor (torch's rule for this argument)."""
    if isinstance(x, Tensor):
        return x
    raise TypeError(f"{fn}(): argument '{arg}' must be Tensor, not {type(x).__name__}")


def _operand(x: Any, fn: str, arg: str = "other") -> Any:
    """x, a Tensor or a Python number (lists and arrays are refused, as torch)."""
    if isinstance(x, (Tensor, *_NUMBER)):
        return x
    raise TypeError(f"{fn}(): argument '{arg}' must be Tensor or a number, not {type(x).__name__}")


def _first(x: Any, fn: str, other: Any, two_numbers: builtins.bool = True) -> Tensor:
    """The first operand of add, mul, pow, ...: a Tensor, or a Python number as a 0-d tensor (it
    then promotes as a scalar does, as torch's wrapped numbers). two_numbers: whether torch also
    takes a number for `other` then (add(2, 3) runs, pow(2, 3) does not)."""
    if isinstance(x, Tensor):
        return x
    if not two_numbers and not isinstance(other, Tensor):
        raise TypeError(f"{fn}(): needs a Tensor argument, got {type(x).__name__} and "
                        f"{type(other).__name__}")
    x = _operand(x, fn, "input")
    if isinstance(other, Tensor) and is_float(other.dtype) and not isinstance(x, builtins.bool):
        return Tensor(x, dtype=other.dtype)  # as the operator form: never through float32
    return Tensor(x)


def _cast(x: Tensor, dtype: Any) -> Tensor:
    """x converted to `dtype` first, as the reductions' dtype= argument does."""
    return x if dtype is None else x.to(dtype)


# ---- elementwise ----------------------------------------------------------------------------
def abs(input): return _t(input, "abs").abs()  # noqa: A001
def exp(input): return _t(input, "exp").exp()
def log(input): return _t(input, "log").log()
def sqrt(input): return _t(input, "sqrt").sqrt()
def rsqrt(input): return _t(input, "rsqrt").rsqrt()
def reciprocal(input): return _t(input, "reciprocal").reciprocal()
def sin(input): return _t(input, "sin").sin()
def cos(input): return _t(input, "cos").cos()
def tanh(input): return _t(input, "tanh").tanh()
def sigmoid(input): return _t(input, "sigmoid").sigmoid()
def relu(input): return _t(input, "relu").relu()
def neg(input): return _t(input, "neg").neg()
def square(input): return _t(input, "square").square()
def isfinite(input): return _t(input, "isfinite").isfinite()
def logical_not(input): return _t(input, "logical_not").logical_not()
def bitwise_not(input): return _t(input, "bitwise_not").bitwise_not()
def clamp(input, min=None, max=None): return _t(input, "clamp").clamp(min, max)  # noqa: A002
def clip(input, min=None, max=None): return _t(input, "clip").clip(min, max)  # noqa: A002
def clamp_min(input, min): return _t(input, "clamp_min").clamp_min(min)  # noqa: A002
def clamp_max(input, max): return _t(input, "clamp_max").clamp_max(max)  # noqa: A002
def log1p(input): return _t(input, "log1p").log1p()
def expm1(input): return _t(input, "expm1").expm1()
def log2(input): return _t(input, "log2").log2()
def log10(input): return _t(input, "log10").log10()
def is_tensor(obj): return isinstance(obj, Tensor)
def tan(input): return _t(input, "tan").tan()
def asin(input): return _t(input, "asin").asin()
def acos(input): return _t(input, "acos").acos()
def atan(input): return _t(input, "atan").atan()
def sinh(input): return _t(input, "sinh").sinh()
def cosh(input): return _t(input, "cosh").cosh()
def asinh(input): return _t(input, "asinh").asinh()
def acosh(input): return _t(input, "acosh").acosh()
def atanh(input): return _t(input, "atanh").atanh()
def erf(input): return _t(input, "erf").erf()
def exp2(input): return _t(input, "exp2").exp2()
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh


def atan2(input, other): return _t(input, "atan2").atan2(_t(other, "atan2", "other"))
def copysign(input, other): return _t(input, "copysign").copysign(_operand(other, "copysign"))
def logaddexp(input, other): return _t(input, "logaddexp").logaddexp(_t(other, "logaddexp"))
def fmod(input, other): return _t(input, "fmod").fmod(_operand(other, "fmod"))
arctan2 = atan2


_MATMUL_PRECISION = ["highest"]


def set_float32_matmul_precision(precision: str) -> None:
    """Accepted and remembered as torch's ('highest', 'high', 'medium'); computes nothing
    differently: NumPy's float32 GEMMs always run in full float32 precision."""
    if precision not in ("highest", "high", "medium"):  # torch warns and carries on
        warnings.warn(f"set_float32_matmul_precision: {precision!r} is not one of 'highest', "
                      "'high' or 'medium'; the call has no effect", stacklevel=2)
        return
    _MATMUL_PRECISION[0] = precision


def get_float32_matmul_precision() -> str:
    return _MATMUL_PRECISION[0]
def is_floating_point(input): return _t(input, "is_floating_point").is_floating_point()
def sign(input): return _t(input, "sign").sign()
def floor(input): return _t(input, "floor").floor()
def ceil(input): return _t(input, "ceil").ceil()
def trunc(input): return _t(input, "trunc").trunc()
def round(input, *, decimals=0): return _t(input, "round").round(decimals=decimals)  # noqa: A001
def isnan(input): return _t(input, "isnan").isnan()
def isinf(input): return _t(input, "isinf").isinf()


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    return _t(input, "nan_to_num").nan_to_num(nan, posinf, neginf)


def lerp(input, end, weight):
    return _t(input, "lerp").lerp(_t(end, "lerp", "end"), weight)


def pow(input, exponent):  # noqa: A001
    """input ** exponent; either may be a Python number (not both), as torch.pow."""
    return _first(input, "pow", exponent, False).pow(_operand(exponent, "pow", "exponent"))


def add(input, other, *, alpha=1):
    return _first(input, "add", other).add(_operand(other, "add"), alpha=alpha)


def sub(input, other, *, alpha=1):
    return _first(input, "sub", other).sub(_operand(other, "sub"), alpha=alpha)


def mul(input, other): return _first(input, "mul", other).mul(_operand(other, "mul"))


def div(input, other, *, rounding_mode=None):
    return _first(input, "div", other).div(_operand(other, "div"), rounding_mode=rounding_mode)


def floor_divide(input, other):
    return _first(input, "floor_divide", other).floor_divide(_operand(other, "floor_divide"))


def remainder(input, other):
    return _first(input, "remainder", other, False).remainder(_operand(other, "remainder"))


def bitwise_and(input, other):
    return _first(input, "bitwise_and", other, False).bitwise_and(_operand(other, "bitwise_and"))


def bitwise_or(input, other):
    return _first(input, "bitwise_or", other, False).bitwise_or(_operand(other, "bitwise_or"))


def bitwise_xor(input, other):
    return _first(input, "bitwise_xor", other, False).bitwise_xor(_operand(other, "bitwise_xor"))


def maximum(input, other):
    return _t(input, "maximum").maximum(_t(other, "maximum", "other"))


def minimum(input, other):
    return _t(input, "minimum").minimum(_t(other, "minimum", "other"))


# ---- comparisons (torch.lt etc. are the operators <, <=, >, >=) ------------------------------
def eq(input, other): return _t(input, "eq").eq(_operand(other, "eq"))
def ne(input, other): return _t(input, "ne").ne(_operand(other, "ne"))
def lt(input, other): return _t(input, "lt") < _operand(other, "lt")
def le(input, other): return _t(input, "le") <= _operand(other, "le")
def gt(input, other): return _t(input, "gt") > _operand(other, "gt")
def ge(input, other): return _t(input, "ge") >= _operand(other, "ge")


# ---- matrix products --------------------------------------------------------------------------
def matmul(input, other): return _t(input, "matmul").matmul(_t(other, "matmul", "other"))
def mm(input, mat2): return _t(input, "mm").mm(_t(mat2, "mm", "mat2"))
def bmm(input, mat2): return _t(input, "bmm").bmm(_t(mat2, "bmm", "mat2"))
def mv(input, vec): return _t(input, "mv").mv(_t(vec, "mv", "vec"))
def dot(input, tensor): return _t(input, "dot").dot(_t(tensor, "dot", "tensor"))


# ---- reductions ---------------------------------------------------------------------------------
@numpy_aliases
def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001
    return _cast(_t(input, "sum"), dtype).sum(dim, keepdim)


@numpy_aliases
def mean(input, dim=None, keepdim=False, *, dtype=None):
    return _cast(_t(input, "mean"), dtype).mean(dim, keepdim)


@numpy_aliases
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _t(input, "var").var(dim, unbiased, keepdim, correction=correction)


@numpy_aliases
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _t(input, "std").std(dim, unbiased, keepdim, correction=correction)


@numpy_aliases
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var_mean(_t(input, "var_mean"), dim, unbiased, keepdim, correction=correction)


@numpy_aliases
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _std_mean(_t(input, "std_mean"), dim, unbiased, keepdim, correction=correction)


@numpy_aliases
def amax(input, dim=None, keepdim=False): return _t(input, "amax").amax(dim, keepdim)
@numpy_aliases
def amin(input, dim=None, keepdim=False): return _t(input, "amin").amin(dim, keepdim)
@numpy_aliases
def argmax(input, dim=None, keepdim=False): return _t(input, "argmax").argmax(dim, keepdim)
@numpy_aliases
def argmin(input, dim=None, keepdim=False): return _t(input, "argmin").argmin(dim, keepdim)
@numpy_aliases
def any(input, dim=None, keepdim=False): return _t(input, "any").any(dim, keepdim)  # noqa: A001
@numpy_aliases
def all(input, dim=None, keepdim=False): return _t(input, "all").all(dim, keepdim)  # noqa: A001


@numpy_aliases
def logsumexp(input, dim, keepdim=False):
    return _t(input, "logsumexp").logsumexp(dim, keepdim)


def _max_or_min(fn: str, input, dim, keepdim, other):
    """torch.max/min's overloads: (input) -> 0-d; (input, dim, keepdim=False) -> (values,
    indices); (input, other: Tensor) -> maximum/minimum."""
    x = _t(input, fn)
    if isinstance(dim, Tensor) or other is not None:
        if keepdim or (other is not None and dim is not None):
            raise TypeError(f"{fn}(): with a tensor `other` it takes no dim or keepdim")
        other = _t(dim if other is None else other, fn, "other")
        return x.maximum(other) if fn == "max" else x.minimum(other)
    if dim is None and keepdim:
        raise TypeError(f"{fn}(): keepdim needs a dim")
    return x.max(dim, keepdim) if fn == "max" else x.min(dim, keepdim)


@numpy_aliases
def max(input, dim=None, keepdim=False, *, other=None):  # noqa: A001
    """torch.max: over all elements (0-d), (values, indices) along dim, or maximum(input, other)
    for a tensor second argument."""
    return _max_or_min("max", input, dim, keepdim, other)


@numpy_aliases
def min(input, dim=None, keepdim=False, *, other=None):  # noqa: A001
    """torch.min: as max."""
    return _max_or_min("min", input, dim, keepdim, other)


@numpy_aliases
def softmax(input, dim, dtype=None):
    return _cast(_t(input, "softmax"), dtype).softmax(dim)


@numpy_aliases
def log_softmax(input, dim, dtype=None):
    return _cast(_t(input, "log_softmax"), dtype).log_softmax(dim)


# ---- indexing and shape -------------------------------------------------------------------------
def gather(input, dim, index):
    return _t(input, "gather").gather(dim, _t(index, "gather", "index"))


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    return _t(input, "scatter").scatter(dim, _t(index, "scatter", "index"), src, value=value,
                                        reduce=reduce)


def scatter_add(input, dim, index, src):
    return _t(input, "scatter_add").scatter_add(dim, _t(index, "scatter_add", "index"), src)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    return _t(input, "scatter_reduce").scatter_reduce(
        dim, _t(index, "scatter_reduce", "index"), src, reduce, include_self=include_self)


def masked_fill(input, mask, value):
    return _t(input, "masked_fill").masked_fill(_t(mask, "masked_fill", "mask"), value)


def numel(input): return _t(input, "numel").numel()
def reshape(input, shape): return _t(input, "reshape").reshape(shape)
def permute(input, dims): return _t(input, "permute").permute(dims)
def transpose(input, dim0, dim1): return _t(input, "transpose").transpose(dim0, dim1)
@numpy_aliases
def squeeze(input, dim=None): return _t(input, "squeeze").squeeze(dim)
@numpy_aliases
def unsqueeze(input, dim): return _t(input, "unsqueeze").unsqueeze(dim)
def flip(input, dims): return _t(input, "flip").flip(dims)
def chunk(input, chunks, dim=0): return _t(input, "chunk").chunk(chunks, dim)


def flatten(input, start_dim=0, end_dim=-1):
    return _t(input, "flatten").flatten(start_dim, end_dim)


def split(tensor, split_size_or_sections, dim=0):
    return _t(tensor, "split", "tensor").split(split_size_or_sections, dim)


def t(input): return _t(input, "t").t()
def narrow(input, dim, start, length): return _t(input, "narrow").narrow(dim, start, length)
def select(input, dim, index): return _t(input, "select").select(dim, index)
def unbind(input, dim=0): return _t(input, "unbind").unbind(dim)


def index_select(input, dim, index):
    return _t(input, "index_select").index_select(dim, _t(index, "index_select", "index"))


@numpy_aliases
def cumsum(input, dim, *, dtype=None): return _t(input, "cumsum").cumsum(dim, dtype=dtype)


@numpy_aliases
def cumprod(input, dim, *, dtype=None): return _t(input, "cumprod").cumprod(dim, dtype=dtype)


@numpy_aliases
def cummax(input, dim): return _t(input, "cummax").cummax(dim)


@numpy_aliases
def cummin(input, dim): return _t(input, "cummin").cummin(dim)


@numpy_aliases
def prod(input, dim=None, keepdim=False, *, dtype=None):
    return _t(input, "prod").prod(dim, keepdim, dtype=dtype)


def sort(input, dim=-1, descending=False, *, stable=False):
    return _t(input, "sort").sort(dim, descending, stable=stable)


def argsort(input, dim=-1, descending=False, *, stable=False):
    return _t(input, "argsort").argsort(dim, descending, stable=stable)


def roll(input, shifts, dims=None):
    return _t(input, "roll").roll(shifts, dims)


def einsum(equation, *operands): return _einsum(equation, *operands)
def diag(input, diagonal=0): return _t(input, "diag").diag(diagonal)


def nonzero(input, *, as_tuple=False):
    return _t(input, "nonzero").nonzero(as_tuple=as_tuple)


# ---- functions that join, choose or compare whole tensors (no method of their own) ----

def _join(name: str, tensors: Sequence[Tensor], dim: int) -> Tensor:
    """cat or stack: the tensors promoted to one dtype, joined along `dim`."""
    if not tensors:
        raise ArgumentError(f"{name}: expected a non-empty sequence of tensors")
    tensors = promote(*(t if isinstance(t, Tensor) else Tensor(t) for t in tensors))
    return apply(REGISTRY[name], *tensors, axis=dim)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    return _join("concatenate", tensors, dim)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    return _join("stack", tensors, dim)


def _triangle(name: str, x: Tensor, diagonal: int, lower: bool) -> Tensor:
    if x.ndim < 2:
        raise RuntimeError(f"{name}: needs a tensor of at least 2 dims, got shape {x.shape}")
    keep = np.tri(*x.shape[-2:], k=diagonal, dtype=bool)  # on and below the diagonal
    keep = keep if lower else ~np.tri(*x.shape[-2:], k=diagonal - 1, dtype=bool)
    return where(Tensor(keep), x, Tensor(np.zeros((), x.dtype)))


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """x with the elements above the `diagonal`-th diagonal of the last two dims zeroed
    (gradient 0 there)."""
    return _triangle("tril", x, diagonal, lower=True)


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """x with the elements below the `diagonal`-th diagonal of the last two dims zeroed."""
    return _triangle("triu", x, diagonal, lower=False)


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    """The k largest (or smallest) elements along `dim`, largest (smallest) first; nan counts
    as the largest, as torch; ties keep the earlier index (torch promises no order). The
    gradient goes to the positions taken (values are gathered there, as max(dim)).

    Args:
        x: a Tensor (..., n, ...); dim: the axis of size n; k: 0 <= k <= n.
    Returns:
        (values, indices), both of x's shape with n replaced by k; indices int64.
    """
    if not -builtins.max(x.ndim, 1) <= dim < builtins.max(x.ndim, 1):
        raise IndexError(f"topk: dim {dim} is out of range for a tensor of {x.ndim} dims")
    n = x.shape[dim] if x.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"topk: k = {k} is out of range for dim {dim} of size {n}")
    a = x.data
    if largest:  # nan counts as the largest, as in torch; ~a flips integers without overflow
        key = -a if a.dtype.kind == "f" else ~a
        nan_last = ~np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool)
        order = np.lexsort((key, nan_last), axis=dim) if x.ndim else np.zeros((), np.int64)
    else:  # argsort puts nan last, where torch's smallest-first order has it
        order = np.argsort(a, axis=dim, kind="stable") if x.ndim else np.zeros((), np.int64)
    indices = np.take(order, np.arange(k), axis=dim) if x.ndim else order
    values = x.gather(dim, Tensor(indices)) if x.ndim else x.clone()
    return MaxResult(values, Tensor(indices.astype(np.int64)))


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """torch.outer: out[i, j] = input[i] * vec2[j] (differentiable in both).

    Args:
        input: (n,); vec2: (m,).
    Returns:
        (n, m), in the promoted dtype.
    """
    for name, v in (("input", input), ("vec2", vec2)):
        if not isinstance(v, Tensor):
            raise TypeError(f"outer(): argument '{name}' must be Tensor, not {type(v).__name__}")
        if v.ndim != 1:
            raise RuntimeError(f"outer: expected 1-D argument {name}, got shape {v.shape}")
    return input.unsqueeze(1).mul(vec2)


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """torch.isclose: |input - other| <= atol + rtol * |other| elementwise (broadcast), or
    equal (so equal infinities are close), or both nan when equal_nan. Both tensors must have
    one dtype; integers and bools are compared in the default float dtype, as torch.

    Returns:
        A bool Tensor of the broadcast shape.
    """
    for name, v in (("input", input), ("other", other)):
        if not isinstance(v, Tensor):
            raise TypeError(f"isclose(): argument '{name}' must be Tensor, not {type(v).__name__}")
    if input.dtype != other.dtype:
        raise RuntimeError(f"isclose: dtypes differ ({input.dtype} and {other.dtype}), as torch "
                           "refuses; convert one first")
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"isclose: rtol and atol must be >= 0, got {rtol} and {atol}")
    a, b = input.data, other.data
    try:
        close = a == b
    except ValueError:
        raise RuntimeError(f"isclose: shapes {input.shape} and {other.shape} do not "
                           "broadcast") from None
    if equal_nan and is_float(a.dtype):
        close = close | (np.isnan(a) & np.isnan(b))
    if rtol or atol:
        if not is_float(a.dtype):
            a, b = a.astype(get_default_dtype()), b.astype(get_default_dtype())
        allowed = atol + rtol * np.abs(b)
        with np.errstate(invalid="ignore"):  # inf - inf: nan, not close (equality decides)
            close = close | (np.isfinite(allowed) & (np.abs(a - b) <= allowed))
    return Tensor(np.asarray(close))


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """torch.allclose: whether isclose holds everywhere (a Python bool)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).data.all())


def equal(input: Tensor, other: Tensor) -> bool:
    """torch.equal: same shape and same values (compared in the promoted dtype; nan is never
    equal), as a Python bool."""
    for name, v in (("input", input), ("other", other)):
        if not isinstance(v, Tensor):
            raise TypeError(f"equal(): argument '{name}' must be Tensor, not {type(v).__name__}")
    if input.shape != other.shape:
        return False
    a, b = promote(input.detach(), other.detach())
    return bool(np.array_equal(a.data, b.data))


# `from minitorch import *`: every function here but those named like Python builtins (abs,
# all, any, max, min, pow, round, sum), which are attributes of minitorch only
__all__ = sorted(name for name, f in list(globals().items())
                 if callable(f) and getattr(f, "__module__", None) == __name__
                 and not name.startswith("_") and not hasattr(builtins, name))
