"""Movement primitives: the same values in another shape or order (reshape, broadcast_to,
permute, copy) and joined (concatenate, stack). Their vjps move the gradient back.
"""

from __future__ import annotations

import numpy as np

from ..registry import Op, register


@register("reshape")
class Reshape(Op):
    """y = x viewed with a new shape (same number of elements); grad_x = g reshaped back."""

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return x.reshape(shape)

    @staticmethod
    def vjp(ctx, g):
        return (g.reshape(ctx.in_shape),)


@register("broadcast_to")
class BroadcastTo(Op):
    """y = x broadcast to `shape` (new leading dims, size-1 dims repeated; a read-only view);
    grad_x = g, which the engine sums back over the broadcast dims."""

    @staticmethod
    def forward(ctx, x, shape):
        return np.broadcast_to(x, shape)

    @staticmethod
    def vjp(ctx, g):
        return (g,)


@register("copy")
class Copy(Op):
    """y = a copy of x (torch's clone); grad_x = g."""

    @staticmethod
    def forward(ctx, x):
        return np.array(x, copy=True)

    @staticmethod
    def vjp(ctx, g):
        return (g,)


@register("permute")
class Permute(Op):
    """y = x with axes permuted (numpy.transpose); grad_x = g permuted by the inverse."""

    @staticmethod
    def forward(ctx, x, axes):
        if sorted(a % max(x.ndim, 1) for a in axes) != list(range(x.ndim)):
            raise ValueError(f"axes {axes} are not a permutation of {x.ndim} dimensions")
        ctx.axes = axes
        return np.transpose(x, axes)

    @staticmethod
    def vjp(ctx, g):
        return (np.transpose(g, np.argsort([a % g.ndim for a in ctx.axes])),)


@register("concatenate")
class Concatenate(Op):
    """y = concatenate(xs, axis); grad_xs = g split back into the pieces along axis. As torch's
    legacy rule, a 1-D empty input (shape (0,)) is left out of the join whatever the others'
    shapes; it stays an input, and its gradient is empty."""

    @staticmethod
    def forward(ctx, *xs, axis=0):
        kept = [i for i, x in enumerate(xs) if x.shape != (0,)] or [0]
        ctx.axis, ctx.kept, ctx.n = axis, kept, len(xs)
        ctx.splits = np.cumsum([xs[i].shape[axis] for i in kept])[:-1]
        return np.concatenate([xs[i] for i in kept], axis=axis)

    @staticmethod
    def vjp(ctx, g):
        grads = [np.zeros((0,), g.dtype)] * ctx.n
        for i, piece in zip(ctx.kept, np.split(g, ctx.splits, axis=ctx.axis)):
            grads[i] = piece
        return ctx.needed(*grads)


@register("stack")
class Stack(Op):
    """y = stack(xs, axis) (a new axis); grad_xs[i] = g taken at position i of that axis."""

    @staticmethod
    def forward(ctx, *xs, axis=0):
        ctx.axis = axis
        return np.stack(xs, axis=axis)

    @staticmethod
    def vjp(ctx, g):
        g = np.moveaxis(g, ctx.axis, 0)
        return ctx.needed(*(g[i] for i in range(g.shape[0])))
