"""Reductions along an axis (sum, mean, var, max, argmax, prod), the scans along one (cumsum,
cumprod, argsort) and the stable softmax pair.

Each vjp expands the gradient back to the input's shape over the reduced axes.
"""

from __future__ import annotations

import numpy as np

from .. import kernels as K
from ..registry import Op, register


def normalize_axis(axis, ndim: int):
    """torch's dim rule as a NumPy axis: None (or an empty tuple) reduces everything; an int or
    tuple of ints in [-ndim, ndim) (a 0-d tensor accepts 0 and -1 and reduces nothing), each at
    most once. Returns None or a sorted tuple of non-negative axes."""
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if not axes:
        return None
    n = max(ndim, 1)
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"dim must be an int or a tuple of ints, got {a!r}")
        if not -n <= a < n:
            raise IndexError(f"dim {a} is out of range for a tensor of {ndim} dimension(s) "
                             f"(expected [{-n}, {n - 1}])")
        if ndim and a % n in out:
            raise ValueError(f"dim {a % n} appears more than once in {axis}")
        if ndim:
            out.append(int(a) % n)
    return tuple(sorted(out))


def _expand(g: np.ndarray, shape: tuple, axis, keepdims: bool) -> np.ndarray:
    """Broadcast a reduced gradient back over the reduced axes of `shape` (a read-only view)."""
    if axis is not None and not keepdims:
        g = np.expand_dims(g, axis)
    return np.broadcast_to(g, shape)


def _count(shape: tuple, axis) -> int:
    if axis is None:
        return int(np.prod(shape))
    return int(np.prod([shape[a] for a in axis]))


@register("sum")
class Sum(Op):
    """y = sum(x, axis); grad_x = g broadcast over the reduced axes."""

    @staticmethod
    def forward(ctx, x, axis=None, keepdims=False):
        axis = normalize_axis(axis, x.ndim)
        ctx.shape, ctx.axis, ctx.keepdims = x.shape, axis, keepdims
        return np.sum(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def vjp(ctx, g):
        return (_expand(g, ctx.shape, ctx.axis, ctx.keepdims),)


@register("mean")
class Mean(Op):
    """y = mean(x, axis) = sum/n; grad_x = g/n broadcast over the reduced axes. The mean of no
    elements is nan (as in torch)."""

    @staticmethod
    def forward(ctx, x, axis=None, keepdims=False):
        K.require_float("mean", x)
        axis = normalize_axis(axis, x.ndim)
        ctx.shape, ctx.axis, ctx.keepdims = x.shape, axis, keepdims
        if _count(x.shape, axis) == 0:
            return np.full(np.sum(x, axis=axis, keepdims=keepdims).shape, np.nan, x.dtype)
        return np.mean(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def vjp(ctx, g):
        n = _count(ctx.shape, ctx.axis)
        return (_expand(g / max(n, 1), ctx.shape, ctx.axis, ctx.keepdims),)  # n = 0: empty


@register("var")
class Var(Op):
    """y = sum((x - mean)^2)/max(n - ddof, 0); grad_x = g * 2(x - mean)/(n - ddof).
    As in torch when ddof >= n: y is inf (nan when every term is 0, and for n = 0); over all
    elements grad_x = g * (nan where x = mean, else inf); along given dims the unclamped
    2/(n - ddof) is used (inf at n = ddof, finite and negative beyond)."""

    @staticmethod
    def forward(ctx, x, axis=None, keepdims=False, ddof=0):
        K.require_float("var", x)  # the cast back would truncate
        axis = normalize_axis(axis, x.ndim)
        n = _count(x.shape, axis)
        # in float64 at least, as torch accumulates on the CPU: the float32 mean of values far
        # from 0 is off by a few of their ulps, and every squared deviation carries that error
        wide = np.result_type(x, np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = np.sum(x, axis=axis, keepdims=True, dtype=wide) / n if n == 0 else np.mean(
                x, axis=axis, keepdims=True, dtype=wide)
            centered = np.subtract(x, mean, dtype=wide)
            y = np.sum(centered * centered, axis=axis, keepdims=keepdims) / max(n - ddof, 0)
        ctx.save(centered.astype(x.dtype, copy=False))
        ctx.shape, ctx.axis, ctx.keepdims, ctx.denom = x.shape, axis, keepdims, n - ddof
        ctx.whole = axis is None or x.ndim == 0
        return y.astype(x.dtype, copy=False)

    @staticmethod
    def vjp(ctx, g):
        (centered,) = ctx.saved
        g = _expand(g, ctx.shape, ctx.axis, ctx.keepdims)
        if ctx.denom <= 0 and ctx.whole:
            return (g * np.where(centered == 0, np.nan, np.inf).astype(g.dtype),)
        scale = 2.0 / ctx.denom if ctx.denom else np.inf
        with np.errstate(invalid="ignore"):
            return (g * centered * scale,)


@register("max")
class Max(Op):
    """y = max(x, axis); grad_x = g/k at each of the k positions equal to the max, else 0
    (ties split the gradient equally). As in torch, amax scales by the mask (g*hit/k: a nan g
    reaches every position), while max() over all elements (select=True) selects
    (where(hit, g/k, 0))."""

    @staticmethod
    def forward(ctx, x, axis=None, keepdims=False, select=False):
        axis = normalize_axis(axis, x.ndim)
        y = np.max(x, axis=axis, keepdims=keepdims)
        ctx.save(x, y)
        ctx.axis, ctx.keepdims, ctx.select = axis, keepdims, select
        return y

    @staticmethod
    def vjp(ctx, g):
        x, y = ctx.saved
        hit = x == _expand(y, x.shape, ctx.axis, ctx.keepdims)
        count = np.sum(hit, axis=ctx.axis, keepdims=True, dtype=x.dtype)
        g = _expand(g, x.shape, ctx.axis, ctx.keepdims)
        if ctx.select:
            return (np.where(hit, g / count, 0.0),)
        return (g * hit.astype(x.dtype) / count,)


@register("argmax")
class Argmax(Op):
    """y = index of the maximum along `axis` (int64); not differentiable."""

    differentiable = False

    @staticmethod
    def forward(ctx, x, axis=None, keepdims=False):
        if axis is not None and not isinstance(axis, (int, np.integer)):
            raise TypeError(f"argmax: dim must be an int or None, got {axis!r}")
        axis = normalize_axis(axis, x.ndim)
        if x.ndim == 0 or (axis is None and not keepdims):
            return np.asarray(np.argmax(x), dtype=np.int64)
        if axis is None:  # keepdim over everything: torch gives shape (1, ..., 1)
            return np.argmax(x).astype(np.int64).reshape((1,) * x.ndim)
        return np.argmax(x, axis=axis[0], keepdims=keepdims).astype(np.int64)


def _one_axis(name: str, axis, ndim: int) -> int | None:
    """A single dim as a non-negative axis (None for a 0-d tensor), by torch's dim rule."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{name}: dim must be an int, got {axis!r}")
    axes = normalize_axis(axis, ndim)
    return axes[0] if axes else None


@register("prod")
class Prod(Op):
    """y = prod(x, axis) (all elements, or one axis); grad_x = g*(y/x) when no element of x is
    0 (torch's), else g times the product of the other elements of each slice, from exclusive
    cumulative products from both ends: exact at zeros (one zero: only it gets a gradient;
    two: none does)."""

    @staticmethod
    def forward(ctx, x, axis=None, keepdims=False):
        if axis is not None:
            axis = (_one_axis("prod", axis, x.ndim),) if x.ndim else None
        y = np.prod(x, axis=axis, keepdims=keepdims)
        ctx.save(x, y)
        ctx.axis, ctx.keepdims = axis, keepdims
        return y

    @staticmethod
    def vjp(ctx, g):
        x, y = ctx.saved
        g = _expand(g, x.shape, ctx.axis, ctx.keepdims)
        if np.all(x != 0):
            return (g * (_expand(y, x.shape, ctx.axis, ctx.keepdims) / x),)
        if ctx.axis is None:
            return (g * _others(x.reshape(-1), 0).reshape(x.shape),)
        return (g * _others(x, ctx.axis[0]),)


def _others(x: np.ndarray, axis: int) -> np.ndarray:
    """The product of the other elements along `axis`, at each element (no division)."""
    ones = np.ones_like(np.take(x, [0], axis=axis))
    head = tuple(slice(None, -1) if d == axis else slice(None) for d in range(x.ndim))
    left = np.cumprod(np.concatenate([ones, x[head]], axis=axis), axis=axis)
    flipped = np.flip(x, axis)
    right = np.cumprod(np.concatenate([ones, flipped[head]], axis=axis), axis=axis)
    return left * np.flip(right, axis)


@register("cumsum")
class Cumsum(Op):
    """y = the running sum along axis, y[i] = sum(x[:i+1]) (integers and bools sum in int64, as
    torch); grad_x = the reverse cumulative sum of g along axis."""

    @staticmethod
    def forward(ctx, x, axis):
        axis = _one_axis("cumsum", axis, x.ndim)
        ctx.axis = axis
        out = np.int64 if x.dtype.kind in "biu" else x.dtype
        return x.astype(out) if axis is None else np.cumsum(x, axis=axis, dtype=out)

    @staticmethod
    def vjp(ctx, g):
        if ctx.axis is None:
            return (g,)
        return (np.flip(np.cumsum(np.flip(g, ctx.axis), axis=ctx.axis), ctx.axis),)


@register("cumprod")
class Cumprod(Op):
    """y = the running product along axis, y[i] = prod(x[:i+1]) (integers and bools in int64,
    as torch); grad_x[k] = sum_{j>=k} g[j] * prod_{i<=j, i!=k} x[i], exact at zeros: before a
    slice's first zero it is the reverse cumsum of g*y over x (torch's formula), at the first
    zero the running product with that zero taken as 1, after it 0."""

    @staticmethod
    def forward(ctx, x, axis):
        axis = _one_axis("cumprod", axis, x.ndim)
        out = np.int64 if x.dtype.kind in "biu" else x.dtype
        y = x.astype(out) if axis is None else np.cumprod(x, axis=axis, dtype=out)
        ctx.save(x, y)
        ctx.axis = axis
        return y

    @staticmethod
    def vjp(ctx, g):
        x, y = ctx.saved
        if ctx.axis is None or x.size == 0:
            return (g,)
        xs, ys, gs = (np.moveaxis(a, ctx.axis, -1) for a in (x, y, g))
        n = xs.shape[-1]
        zero = xs == 0
        first = np.where(zero.any(-1), np.argmax(zero, -1), n)[..., None]  # n: no zero
        pos = np.arange(n)
        before = pos < first
        with np.errstate(divide="ignore", invalid="ignore"):
            a = _rcumsum(gs * ys) / np.where(before, xs, 1)
        at_zero = _rcumsum(gs * np.cumprod(np.where(pos == first, 1, xs), axis=-1))
        grad = np.where(before, a, np.where(pos == first, at_zero, 0))
        return (np.moveaxis(grad, -1, ctx.axis),)


def _rcumsum(a: np.ndarray) -> np.ndarray:
    """sum_{j >= i} a[..., j] at each i (the reverse cumulative sum along the last axis)."""
    return np.flip(np.cumsum(np.flip(a, -1), axis=-1), -1)


@register("argsort")
class Argsort(Op):
    """y = the indices that sort x along `axis` (int64), ascending or descending; ties keep
    their order (stable), nan counts as the largest (as torch); not differentiable."""

    differentiable = False

    @staticmethod
    def forward(ctx, x, axis=-1, descending=False):
        axis = _one_axis("argsort", axis, x.ndim)
        if axis is None:
            return np.zeros((), np.int64)
        if not descending:  # NumPy puts nan last, where torch's ascending order has it
            return np.argsort(x, axis=axis, kind="stable").astype(np.int64, copy=False)
        key = -x if x.dtype.kind == "f" else ~x  # ~ flips integers without overflow, and bools
        nan_last = ~np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
        return np.lexsort((key, nan_last), axis=axis).astype(np.int64, copy=False)


def _softmax_axis(axis, ndim: int):
    if not isinstance(axis, (int, np.integer)):
        raise TypeError(f"dim must be an int, got {axis!r}")
    return normalize_axis(axis, ndim)


@register("softmax")
class Softmax(Op):
    """y = exp(x - max) / sum(exp(x - max)) along axis; grad_x = y*(g - sum(g*y, axis))."""

    @staticmethod
    def forward(ctx, x, axis=-1):
        K.require_float("softmax", x)
        axis = _softmax_axis(axis, x.ndim)
        e = np.exp(x - np.max(x, axis=axis, keepdims=True, initial=-np.inf))  # empty axis: ok
        y = e / np.sum(e, axis=axis, keepdims=True)
        ctx.save(y)
        ctx.axis = axis
        return y

    @staticmethod
    def vjp(ctx, g):
        (y,) = ctx.saved
        gy = g * y
        return (gy - y * np.sum(gy, axis=ctx.axis, keepdims=True),)


@register("log_softmax")
class LogSoftmax(Op):
    """y = x - max - log(sum(exp(x - max))) along axis; grad_x = g - exp(y)*sum(g, axis)."""

    @staticmethod
    def forward(ctx, x, axis=-1):
        K.require_float("log_softmax", x)
        axis = _softmax_axis(axis, x.ndim)
        shifted = x - np.max(x, axis=axis, keepdims=True, initial=-np.inf)
        with np.errstate(divide="ignore"):  # an empty axis: log(0) over no elements
            y = shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
        ctx.save(y)
        ctx.axis = axis
        return y

    @staticmethod
    def vjp(ctx, g):
        (y,) = ctx.saved
        return (g - np.exp(y) * np.sum(g, axis=ctx.axis, keepdims=True),)
