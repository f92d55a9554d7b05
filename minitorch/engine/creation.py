"""Making tensors: the seedable Generator, factories (tensor, zeros, ones, full, randn, rand,
randint, arange, ...) and the functions that join, choose or pick from tensors (cat, stack,
where, tril, triu, topk, multinomial)."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import hooks
from .dtypes import get_default_dtype, promote
from .registry import REGISTRY
from .tensor import MaxResult, Tensor, apply, as_shape, where  # noqa: F401  (where: public here)


class Generator:
    """A seedable random source (wraps np.random.Generator)."""

    def __init__(self, seed: int = 0):
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> Generator:
        self.rng = np.random.default_rng(seed)
        return self

    def get_state(self) -> dict:
        return self.rng.bit_generator.state

    def set_state(self, state: dict) -> None:
        self.rng.bit_generator.state = state


default_generator = Generator(0)


def manual_seed(seed: int) -> Generator:
    """Seed the default generator used by randn and the nn initializers."""
    return default_generator.manual_seed(seed)


def tensor(data: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor holding a copy of data, as torch.tensor (from_numpy shares instead). While a
    step is captured for replay it shares an array instead, so the tape can follow fn's input
    (in-place writes, which the copy guards against, are refused there)."""
    data = data.data if isinstance(data, Tensor) else data
    if not isinstance(data, (list, tuple, int, float, bool)) and hooks.local.tape is None:
        data = np.array(data, copy=True)  # arrays and buffers; Python data makes a new one
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def zeros(*shape, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return Tensor(np.zeros(as_shape(shape), dtype=dtype or get_default_dtype()), requires_grad)


def ones(*shape, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return Tensor(np.ones(as_shape(shape), dtype=dtype or get_default_dtype()), requires_grad)


def zeros_like(t: Tensor, requires_grad: bool = False) -> Tensor:
    return Tensor(np.zeros_like(t.data), requires_grad)


def ones_like(t: Tensor, requires_grad: bool = False) -> Tensor:
    return Tensor(np.ones_like(t.data), requires_grad)


def randn(*shape, dtype: Any = None, generator: Generator | None = None,
          requires_grad: bool = False) -> Tensor:
    rng = (generator or default_generator).rng
    data = rng.standard_normal(as_shape(shape)).astype(dtype or get_default_dtype())
    return Tensor(data, requires_grad)


def full(size, fill_value, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.full: a tensor of shape `size` filled with fill_value.

    Args:
        size: the shape, a sequence of ints (an int for 1-D).
        fill_value: the value; without dtype, a bool gives bool, an integer int64, a float the
            default float dtype (as torch).
    Returns:
        A Tensor of shape `size`.
    """
    if dtype is None:
        dtype = (np.bool_ if isinstance(fill_value, (bool, np.bool_)) else
                 np.int64 if isinstance(fill_value, numbers.Integral) else get_default_dtype())
    return Tensor(np.full(as_shape((size,) if np.ndim(size) == 0 else size), fill_value, dtype),
                  requires_grad)


def empty(*shape, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.empty; here filled with zeros (never uninitialized memory)."""
    return zeros(*shape, dtype=dtype, requires_grad=requires_grad)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing `array`'s memory, as torch.from_numpy (writes show on both sides)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected an np.ndarray, got {type(array).__name__}")
    if array.dtype not in (np.float32, np.float64, np.int64, np.bool_):
        raise TypeError(f"from_numpy: dtype {array.dtype} is not one of float32, float64, "
                        "int64, bool")
    return Tensor._make(array, None)


def rand(*shape, dtype: Any = None, generator: Generator | None = None,
         requires_grad: bool = False) -> Tensor:
    """Draws uniform on [0, 1) from `generator` (default: minitorch's default_generator).

    Args:
        *shape: the shape, as ints or one sequence.
        dtype: float32 or float64 (default: the default dtype).
    Returns:
        A Tensor of that shape.
    """
    rng = (generator or default_generator).rng
    return Tensor(rng.random(as_shape(shape)).astype(dtype or get_default_dtype()),
                  requires_grad)


def randint(low: int, high=None, size=(), generator: Generator | None = None,
            dtype: Any = None) -> Tensor:
    """Integers drawn uniform on [low, high); randint(high, size) as torch's.

    Args:
        low, high: the bounds (high excluded).
        size: the shape (a sequence of ints).
    Returns:
        An int64 Tensor (or `dtype`) of shape `size`.
    """
    if high is None or isinstance(high, (tuple, list)):  # randint(high) or randint(high, size)
        low, high, size = 0, low, size if high is None else high
    rng = (generator or default_generator).rng
    return Tensor(rng.integers(low, high, as_shape(size)).astype(dtype or np.int64))


def arange(start, end=None, step=1, dtype: Any = None) -> Tensor:
    """torch.arange: int64 for integer arguments, else the default float dtype."""
    if end is None:
        start, end = 0, start
    if dtype is None and not all(_is_integer(a) for a in (start, end, step)):
        dtype = get_default_dtype()
    start, end, step = (a.item() if isinstance(a, Tensor) else a for a in (start, end, step))
    return Tensor(np.arange(start, end, step, dtype=dtype or np.int64))


def _join(name: str, tensors: Sequence[Tensor], dim: int) -> Tensor:
    """cat or stack: the tensors promoted to one dtype, joined along `dim`."""
    if not tensors:
        raise ValueError(f"{name}: expected a non-empty sequence of tensors")
    tensors = promote(*(t if isinstance(t, Tensor) else Tensor(t) for t in tensors))
    return apply(REGISTRY[name], *tensors, axis=dim)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    return _join("concatenate", tensors, dim)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    return _join("stack", tensors, dim)


def _is_integer(a) -> bool:
    """An integer number: Python's, NumPy's or a one-element integer tensor (torch's rule)."""
    if isinstance(a, Tensor):
        return a.dtype.kind in "iu"
    return isinstance(a, numbers.Integral) and not isinstance(a, (bool, np.bool_))


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
    if not -max(x.ndim, 1) <= dim < max(x.ndim, 1):
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


def multinomial(input: Tensor, num_samples: int, replacement: bool = False,
                generator: Generator | None = None) -> Tensor:
    """Indices drawn with probability proportional to each row of weights (from `generator`,
    default minitorch's default_generator); without replacement an index is drawn at most
    once per row, as torch.

    Args:
        input: (n,) or (rows, n) finite non-negative weights, each row with a positive sum.
        num_samples: draws per row (at most n without replacement).
    Returns:
        int64 indices of shape (num_samples,) or (rows, num_samples).
    """
    p = np.asarray(input.data, dtype=np.float64)
    if p.ndim not in (1, 2) or (p < 0).any() or not np.isfinite(p).all():
        raise RuntimeError(f"multinomial: expected a 1-D or 2-D tensor of finite non-negative "
                           f"weights, got shape {input.shape}")
    rows = p.reshape(-1, p.shape[-1])
    if (rows.sum(-1) <= 0).any():
        raise RuntimeError("multinomial: a row of weights sums to 0")
    if not replacement and num_samples > rows.shape[-1]:
        raise RuntimeError(f"multinomial: cannot draw {num_samples} samples without "
                           f"replacement from {rows.shape[-1]} categories")
    rng = (generator or default_generator).rng
    out = np.stack([rng.choice(len(r), num_samples, replace=replacement, p=r / r.sum())
                    for r in rows]).astype(np.int64)
    return Tensor(out.reshape(*p.shape[:-1], num_samples))
