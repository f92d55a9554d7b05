"""Reductions along an axis (sum, mean, var, max, argmax) and the stable softmax pair.

Each vjp expands the gradient back to the input's shape over the reduced axes.
"""

from __future__ import annotations

import numpy as np

from ..registry import Op, register


def _expand(g: np.ndarray, shape: tuple, axis, keepdims: bool) -> np.ndarray:
    """Broadcast a reduced gradient back over the reduced axes of `shape` (a read-only view)."""
    if axis is not None and not keepdims:
        g = np.expand_dims(g, axis)
    return np.broadcast_to(g, shape)


def _count(shape: tuple, axis) -> int:
    if axis is None:
        return int(np.prod(shape))
    axes = (axis,) if isinstance(axis, int) else axis
    return int(np.prod([shape[a] for a in axes]))


@register("sum")
class Sum(Op):
    """y = sum(x, axis); grad_x = g broadcast over the reduced axes."""

    @staticmethod
    def forward(ctx, x, axis=None, keepdims=False):
        ctx.shape, ctx.axis, ctx.keepdims = x.shape, axis, keepdims
        return np.sum(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def vjp(ctx, g):
        return (_expand(g, ctx.shape, ctx.axis, ctx.keepdims),)


@register("mean")
class Mean(Op):
    """y = mean(x, axis) = sum/n; grad_x = g/n broadcast over the reduced axes."""

    @staticmethod
    def forward(ctx, x, axis=None, keepdims=False):
        ctx.shape, ctx.axis, ctx.keepdims = x.shape, axis, keepdims
        return np.mean(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def vjp(ctx, g):
        n = _count(ctx.shape, ctx.axis)
        return (_expand(g / n, ctx.shape, ctx.axis, ctx.keepdims),)


@register("var")
class Var(Op):
    """y = sum((x - mean)^2)/(n - ddof); grad_x = g * 2(x - mean)/(n - ddof)."""

    @staticmethod
    def forward(ctx, x, axis=None, keepdims=False, ddof=0):
        n = _count(x.shape, axis)
        if n - ddof <= 0:
            raise ValueError(f"var over {n} element(s) with correction={ddof} is undefined")
        ctx.save(x - np.mean(x, axis=axis, keepdims=True))
        ctx.shape, ctx.axis, ctx.keepdims, ctx.denom = x.shape, axis, keepdims, n - ddof
        return np.var(x, axis=axis, keepdims=keepdims, ddof=ddof)

    @staticmethod
    def vjp(ctx, g):
        (centered,) = ctx.saved
        g = _expand(g, ctx.shape, ctx.axis, ctx.keepdims)
        return (g * centered * (2.0 / ctx.denom),)


@register("max")
class Max(Op):
    """y = max(x, axis); grad_x = g/k at each of the k positions equal to the max, else 0
    (ties split the gradient equally)."""

    @staticmethod
    def forward(ctx, x, axis=None, keepdims=False):
        y = np.max(x, axis=axis, keepdims=keepdims)
        ctx.save(x, y)
        ctx.axis, ctx.keepdims = axis, keepdims
        return y

    @staticmethod
    def vjp(ctx, g):
        x, y = ctx.saved
        hit = (x == _expand(y, x.shape, ctx.axis, ctx.keepdims)).astype(x.dtype)
        count = np.sum(hit, axis=ctx.axis, keepdims=True)
        g = _expand(g, x.shape, ctx.axis, ctx.keepdims)
        return (g * hit / count,)


@register("argmax")
class Argmax(Op):
    """y = index of the maximum along `axis` (int64); not differentiable."""

    differentiable = False

    @staticmethod
    def forward(ctx, x, axis=None, keepdims=False):
        return np.argmax(x, axis=axis, keepdims=keepdims).astype(np.int64)


@register("softmax")
class Softmax(Op):
    """y = exp(x - max) / sum(exp(x - max)) along axis; grad_x = y*(g - sum(g*y, axis))."""

    @staticmethod
    def forward(ctx, x, axis=-1):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
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
        shifted = x - np.max(x, axis=axis, keepdims=True)
        y = shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
        ctx.save(y)
        ctx.axis = axis
        return y

    @staticmethod
    def vjp(ctx, g):
        (y,) = ctx.saved
        return (g - np.exp(y) * np.sum(g, axis=ctx.axis, keepdims=True),)
