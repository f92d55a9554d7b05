"""Indexing primitives: getitem, index_put (x[index] = v), embedding (a row lookup), where,
masked_fill, scatter_reduce and nonzero.

Indexing vjps scatter-add with np.add.at, so repeated indices accumulate their gradients.
"""

from __future__ import annotations

import math

import numpy as np

from ..pool import empty
from ..registry import Op, register


def _is_basic(index) -> bool:
    """True for an index of ints, slices, None and Ellipsis only (no element is hit twice)."""
    parts = index if isinstance(index, tuple) else (index,)
    return all(p is None or p is Ellipsis or isinstance(p, (int, np.integer, slice)) for p in parts)


def _all_ints(index, ndim: int) -> bool:
    """An index of exactly one integer per dim (NumPy would return a scalar copy)."""
    parts = index if isinstance(index, tuple) else (index,)
    return len(parts) == ndim > 0 and all(isinstance(p, (int, np.integer)) and
                                          not isinstance(p, bool) for p in parts)


def _axes_used(p) -> int:
    """How many dims of x one index part consumes (None, Ellipsis and bools handled by caller)."""
    return p.ndim if isinstance(p, np.ndarray) and p.dtype.kind == "b" else 1


def _check_index(index, shape: tuple) -> None:
    """Reject non-integer indices, and integer indices outside [-n, n) naming axis and range."""
    parts = index if isinstance(index, tuple) else (index,)
    for p in parts:
        if isinstance(p, np.ndarray) and p.dtype.kind not in "iub":
            raise IndexError(f"index arrays must be integer or bool, got dtype {p.dtype}")
        if isinstance(p, float):
            raise IndexError(f"index must be an integer, slice or integer array, got float {p}")
    used = sum(_axes_used(p) for p in parts
               if p is not None and p is not Ellipsis and not isinstance(p, bool))
    axis = 0
    for p in parts:
        if p is Ellipsis:
            axis += len(shape) - used
        elif p is None or isinstance(p, bool):
            continue
        else:
            is_int = isinstance(p, (int, np.integer)) or (
                isinstance(p, np.ndarray) and p.dtype.kind in "iu")
            if is_int and axis < len(shape) and np.size(p):
                n, arr = shape[axis], np.asarray(p)
                bad = arr[(arr < -n) | (arr >= n)]
                if bad.size:
                    raise IndexError(f"index {bad.ravel()[0]} is out of range [-{n}, {n}) for "
                                     f"axis {axis} of size {n}")
            axis += _axes_used(p)


@register("getitem")
class GetItem(Op):
    """y = x[index] (ints, slices, None, Ellipsis, integer or bool arrays);
    grad_x = zeros with g scatter-added at index (repeated indices accumulate)."""

    @staticmethod
    def forward(ctx, x, index):
        _check_index(index, x.shape)
        ctx.shape, ctx.index = x.shape, index
        if _all_ints(index, x.ndim):  # a 0-d view, not a NumPy scalar: x[0, 1] += 5 writes x
            return x[(*index, Ellipsis) if isinstance(index, tuple) else (index, Ellipsis)]
        return x[index]

    @staticmethod
    def vjp(ctx, g):
        grad_x = np.zeros(ctx.shape, dtype=g.dtype)
        if _is_basic(ctx.index):
            grad_x[ctx.index] = g
        else:
            np.add.at(grad_x, ctx.index, g)
        return (grad_x,)


def _at(a: np.ndarray, stages: tuple) -> np.ndarray:
    """a indexed by every stage but the last: views (those stages are basic)."""
    for stage in stages[:-1]:
        a = a[stage]
    return a


@register("index_put")
class IndexPut(Op):
    """y = x with y[index] = v (x[index] = v in torch: v broadcast to x[index]'s shape, cast
    to x's dtype); grad_x = g with zeros at index, grad_v = g[index]. `stages`: the index as
    Tensor.__getitem__ splits it, every stage but the last basic (a view), so the last one's
    write lands in y. Repeated indices: the last write wins, as in NumPy."""

    @staticmethod
    def forward(ctx, x, v, stages):
        ctx.stages, ctx.v_dtype = stages, v.dtype
        y = target = x.copy()
        for stage in stages[:-1]:
            _check_index(stage, target.shape)
            target = target[stage]
        _check_index(stages[-1], target.shape)
        target[stages[-1]] = v
        return y

    @staticmethod
    def vjp(ctx, g):
        grad_x = grad_v = None
        if ctx.needs_grad[1]:
            grad_v = np.array(_at(g, ctx.stages)[ctx.stages[-1]], dtype=ctx.v_dtype)
        if ctx.needs_grad[0]:
            grad_x = g.copy()
            _at(grad_x, ctx.stages)[ctx.stages[-1]] = 0
        return grad_x, grad_v


@register("embedding")
class Embedding(Op):
    """y = weight[ids] (rows gathered; ids are int, any shape); grad_weight = zeros with each
    row of g scatter-added at its id (repeated ids accumulate); ids get no gradient."""

    @staticmethod
    def forward(ctx, ids, weight):
        if weight.ndim != 2:
            raise ValueError(f"embedding weight must be 2-D (num_embeddings, dim), got "
                             f"{weight.shape}")
        if ids.dtype.kind not in "iu":
            raise TypeError(f"embedding ids must be integers, got dtype {ids.dtype}")
        n = weight.shape[0]
        if ids.size and (ids.min() < 0 or ids.max() >= n):
            bad = ids[(ids < 0) | (ids >= n)].ravel()[0]
            raise IndexError(f"embedding id {bad} is out of range [0, {n})")
        ctx.save(ids)
        ctx.shape = weight.shape
        # mode="clip": the ids are checked above, and "raise" would copy through a buffer
        return np.take(weight, ids, axis=0, mode="clip",
                       out=empty(ids.shape + weight.shape[1:], weight.dtype))

    @staticmethod
    def vjp(ctx, g):
        (ids,) = ctx.saved
        grad_weight = np.zeros(ctx.shape, dtype=g.dtype)
        if ids.size:  # rows grouped by id (a stable sort), each group summed by one reduceat:
            flat = ids.ravel()  # several times faster than np.add.at's row-by-row scatter
            order = np.argsort(flat, kind="stable")
            sorted_ids = flat[order]
            starts = np.flatnonzero(np.concatenate(([True], sorted_ids[1:] != sorted_ids[:-1])))
            g2 = g.reshape(ids.size, ctx.shape[-1])
            rows = np.take(g2, order, axis=0, mode="clip", out=empty(g2.shape, g2.dtype))
            grad_weight[sorted_ids[starts]] = np.add.reduceat(rows, starts, axis=0)
        return None, grad_weight


def _check_bool(name: str, mask: np.ndarray) -> None:
    if mask.dtype != np.bool_:
        raise TypeError(f"{name} must be a bool tensor, got dtype {mask.dtype}")


@register("where")
class Where(Op):
    """y = a where cond else b; grad_a = g where cond else 0, grad_b = g where not cond."""

    @staticmethod
    def forward(ctx, cond, a, b):
        _check_bool("condition", cond)
        ctx.save(cond)
        return np.where(cond, a, b)

    @staticmethod
    def vjp(ctx, g):
        (cond,) = ctx.saved
        return ctx.needed(None, np.where(cond, g, 0.0), np.where(cond, 0.0, g))


@register("masked_fill")
class MaskedFill(Op):
    """y = value where mask else x (mask broadcasts; value cast to x's dtype, as torch: 2.5
    fills an int64 tensor with 2, a bool one with True); grad_x = 0 where mask else g."""

    @staticmethod
    def forward(ctx, x, mask, value):
        _check_bool("mask", mask)
        if x.dtype.kind in "iu" and not math.isfinite(value):
            raise RuntimeError(f"masked_fill: value {value} cannot be converted to {x.dtype}")
        ctx.save(mask)
        return np.where(mask, np.asarray(value).astype(x.dtype), x)

    @staticmethod
    def vjp(ctx, g):
        (mask,) = ctx.saved
        return np.where(mask, 0.0, g), None


def _scatter_positions(index: np.ndarray, axis: int, shape: tuple) -> np.ndarray:
    """Flat positions in an array of `shape` that torch's scatter along `axis` writes: the
    element at i of index goes to i with its axis coordinate replaced by index[i]."""
    parts = list(np.ix_(*(np.arange(n) for n in index.shape)))
    parts[axis] = index
    return np.ravel_multi_index(tuple(np.broadcast_arrays(*parts)), shape)


_FILL = {"sum": 0, "mean": 0, "prod": 1}


@register("scatter_reduce")
class ScatterReduce(Op):
    """y = x with src[i] combined into y[j] where j is i with its `axis` coordinate replaced by
    index[i] (src read over index's shape): reduce 'none' (torch's scatter: the element is
    replaced), 'sum', 'prod', 'mean', 'amax', 'amin', x's value included unless
    include_self=False. Gradients (torch's): 'none': grad_x = g off the written elements, 0 on
    them, grad_src = g[j]; 'sum': grad_x = g, grad_src = g[j]; 'mean': both g[j]/n_j (n_j the
    contributors); 'prod': each contributor g[j] times the product of the others (exact at
    zeros); 'amax'/'amin': g[j] split equally among the contributors equal to y[j] (ties).
    Without include_self, x's written elements get 0."""

    @staticmethod
    def forward(ctx, x, src, index, axis, reduce="none", include_self=True):
        pos = _scatter_positions(index, axis, x.shape)
        vals = src[tuple(slice(0, n) for n in index.shape)]
        out = x.copy().ravel()  # (C order: flat positions index it)
        written = np.zeros(out.shape, bool)
        written[pos] = True
        if reduce == "none":
            out[pos] = vals
        else:
            if not include_self:
                out[written] = _FILL.get(reduce, -np.inf if reduce == "amax" else np.inf) if \
                    x.dtype.kind == "f" else _int_fill(reduce, x.dtype)
            ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
                     "amin": np.minimum}[reduce]
            ufunc.at(out, pos, vals)
        count = None
        if reduce == "mean":
            count = np.full(out.shape, int(include_self))
            np.add.at(count, pos, 1)
            count[~written] = 1
            out = out // count if x.dtype.kind in "iub" else out / count.astype(out.dtype)
        ctx.save(x.ravel(), vals, pos, out, written, count)
        ctx.scatter = (reduce, include_self, src.shape, x.shape)
        return out.reshape(x.shape)

    @staticmethod
    def vjp(ctx, g):
        x, vals, pos, out, written, count = ctx.saved
        reduce, include_self, src_shape, x_shape = ctx.scatter
        g = g.ravel()
        take = g[pos]
        if reduce == "none" or (reduce == "sum" and not include_self):
            grad_x, grad_vals = np.where(written, 0.0, g).astype(g.dtype), take
        elif reduce == "sum":
            grad_x, grad_vals = g.copy(), take
        elif reduce == "mean":
            share = g / count
            grad_x, grad_vals = share, share[pos]
        elif reduce == "prod":
            grad_x, grad_vals = _prod_grads(x, vals, pos, out, written, g, include_self)
        else:  # amax, amin: ties split the gradient equally
            self_hit = x == out  # counted even without include_self, as torch's gradient
            hits = self_hit.astype(g.dtype)
            src_hit = vals == out[pos]
            np.add.at(hits, pos, src_hit.astype(g.dtype))
            share = g / np.maximum(hits, 1.0)
            grad_x, grad_vals = np.where(self_hit, share, 0.0), np.where(src_hit, share[pos], 0.0)
        if not include_self and reduce != "none":
            grad_x = np.where(written, 0.0, grad_x)
        grad_src = None
        if ctx.needs_grad[1]:
            grad_src = np.zeros(src_shape, g.dtype)
            grad_src[tuple(slice(0, n) for n in vals.shape)] = grad_vals
        grad_x = grad_x.astype(g.dtype, copy=False).reshape(x_shape) if ctx.needs_grad[0] \
            else None
        return grad_x, grad_src


def _int_fill(reduce: str, dtype) -> int:
    """The identity of reduce in an integer dtype (amax: its smallest value; amin: largest)."""
    if reduce in _FILL:
        return _FILL[reduce]
    info = np.iinfo(dtype) if dtype != np.bool_ else None
    return (info.min if reduce == "amax" else info.max) if info else reduce == "amin"


def _prod_grads(x, vals, pos, out, written, g, include_self):
    """Each contributor's gradient: g times the product of the other contributors of its
    element, exact when zeros take part (out/e where no contributor is 0; the product of the
    nonzero ones for a single 0; 0 otherwise)."""
    zeros = np.zeros(out.shape, np.int64)
    nonzero = np.ones(out.shape, out.dtype)
    own = ~written | include_self  # where x itself is a contributor
    np.add.at(zeros, np.flatnonzero(own & (x == 0)), 1)
    np.multiply.at(nonzero, np.flatnonzero(own), np.where(x == 0, 1, x)[own])
    np.add.at(zeros, pos, (vals == 0).astype(np.int64))
    np.multiply.at(nonzero, pos, np.where(vals == 0, 1, vals))

    def others(e, z, nz, y):
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(z == 0, y / np.where(e == 0, 1, e), np.where((z == 1) & (e == 0), nz,
                                                                          0.0))

    grad_x = g * others(x, zeros, nonzero, out)
    grad_vals = g[pos] * others(vals, zeros[pos], nonzero[pos], out[pos])
    return grad_x, grad_vals


@register("nonzero")
class Nonzero(Op):
    """y = the indices of the non-zero elements of x, one row of x.ndim int64 coordinates each,
    in row-major order: shape (count, ndim) (a 0-d x gives (1, 0) or (0, 0), as torch). nan is
    non-zero; not differentiable."""

    differentiable = False

    @staticmethod
    def forward(ctx, x):
        return np.argwhere(x).astype(np.int64, copy=False)
