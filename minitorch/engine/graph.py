"""Reverse-mode traversal: iterative toposort, central unbroadcast, gradient checks, graph release.

This module owns every rule that holds for all ops; no op's vjp repeats them.

Gradients written in place: backward decides, per array, whether nothing but itself holds a
gradient (`exclusive`: reference counts, views' bases, weak references, writeable, contiguous).
Then a later contribution to a node's pending gradient is added into it (`add_pending`), and
the node's vjp is told it may write its result over grad_out (`Context.grad_out_writable`, for
that one call; vjps use `ctx.reuse(g)` as an `out=`). Anything else holding the array turns it
off for that array: a hook or debugger that keeps it, the seed passed to backward(), a view
kept aside, an interpreter whose reference counts are not the ones checked (`_TRUSTED`).
"""

from __future__ import annotations

import sys
import sysconfig
import weakref
from typing import Any

import numpy as np

from . import pool, runtime
from .node import Context

RELEASED_MSG = (
    "backward through a graph that was already freed (node of op '{}'). The graph is released "
    "after .backward(); call .backward(retain_graph=True) the first time to keep it."
)


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum the gradient of a broadcast result down to `shape` (leading dims, then size-1 dims)."""
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra < 0:
        return grad  # not a broadcast of `shape`: the shape check reports it
    if extra:
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad


def toposort(root: Context) -> list[Context]:
    """Nodes reachable from `root`, parents before children (explicit stack, no recursion)."""
    order, visited = [], {id(root)}
    stack = [(root, iter(_parents(root)))]
    while stack:
        node, it = stack[-1]
        for parent in it:
            if isinstance(parent, Context) and id(parent) not in visited:
                visited.add(id(parent))
                stack.append((parent, iter(_parents(parent))))
                break
        else:
            stack.pop()
            order.append(node)
    return order


def _parents(node: Context) -> tuple:
    if node.parents is None:
        raise RuntimeError(RELEASED_MSG.format(node.op.name))
    return node.parents


def backward(root, seed: np.ndarray, retain_graph: bool = False) -> None:
    """Propagate `seed` (d root / d root) to every leaf that requires grad, accumulating `.grad`."""
    if runtime.local.tape is not None:  # a recorded step (minitorch.replay) replays its ops only
        raise RuntimeError("backward() inside a step being captured (minitorch.replay): a "
                           "replay would skip it; return the total loss from fn instead")
    if root._ctx is None:  # a leaf: its gradient is the seed itself
        _accumulate_leaf(root, seed)
        return
    pending = {id(root._ctx): seed}  # node -> summed gradient of its output, until consumed
    order = toposort(root._ctx)
    while order:
        node = order.pop()  # children before parents; dropped as soon as it is processed
        grad_out = pending.pop(id(node), None)
        if grad_out is not None:
            if node.retained is not None and (kept := node.retained()) is not None:
                kept.accumulate_grad(grad_out)  # a copy: the vjp may write over grad_out
            node.grad_out_writable = exclusive(grad_out)
            try:
                _propagate(node, grad_out, pending)
            finally:
                node.grad_out_writable = False  # for this call only (a retained node lives on)
        if not retain_graph:
            node.release()


def _propagate(ctx, grad_out: np.ndarray, pending: dict) -> None:
    """Run one node's vjp and route each input gradient to its parent."""
    op = ctx.op
    ctx.check_saved()
    grads = op.vjp(ctx, grad_out)
    if len(grads) != len(ctx.parents):
        raise RuntimeError(
            f"op '{op.name}': vjp returned {len(grads)} gradients for {len(ctx.parents)} inputs"
        )
    for i, (parent, grad, needed) in enumerate(zip(ctx.parents, grads, ctx.needs_grad)):
        if not needed:
            if grad is not None:  # the rule that keeps vjps from computing unused gradients
                raise RuntimeError(f"op '{op.name}': vjp returned a gradient for input {i}, "
                                   "which needs none (return None where ctx.needs_grad is False)")
            continue
        if grad is None:
            raise RuntimeError(f"op '{op.name}': vjp returned None for input {i}, which needs grad")
        leaf = not isinstance(parent, Context)
        if leaf:
            shape, dtype = parent.shape, parent.dtype
        else:
            shape, dtype = parent.out_shape, parent.out_dtype
        # an array even where NumPy gives a scalar (0-d arithmetic in a vjp, a full sum here)
        grad = np.asarray(unbroadcast(grad, shape))
        if grad.shape != shape or grad.dtype != dtype:
            raise RuntimeError(
                f"op '{op.name}': gradient for input {i} has shape {grad.shape} and dtype "
                f"{grad.dtype}, but the input has shape {shape} and dtype {dtype}"
            )
        if runtime.anomaly_enabled and not np.isfinite(grad).all():
            raise FloatingPointError(
                f"anomaly: backward of op '{op.name}' produced NaN/inf in the gradient of input {i}"
            )
        if runtime.backward_hooks:
            for hook in runtime.backward_hooks:
                hook(op, i, parent, grad)
        if leaf:
            _accumulate_leaf(parent, grad)
        else:
            add_pending(pending, id(parent), grad)


def add_pending(pending: dict, key, grad: np.ndarray) -> None:
    """Sum `grad` into the pending gradient of node `key` (minitorch.replay and the data-parallel
    sink sum the same way, so they stay bit-identical to backward): the first contribution is
    kept as given; a later one is added in place into the pending array when nothing else
    reaches it (`exclusive`), else into a fresh copy. (The style guide's copy-on-second-write
    rule, refined: an array a vjp returned is written only when no one else can see it.)"""
    prev = pending.pop(key, None)
    if prev is None:
        pending[key] = grad
        return
    if exclusive(prev):
        np.add(prev, grad, out=prev)
    else:  # a vjp's array, maybe shared with another input or saved: the sum in a new one
        prev = np.add(prev, grad, out=pool.empty(prev.shape, prev.dtype))
    pending[key] = prev


# What sys.getrefcount reports inside `exclusive` for an array that only its caller's one local
# variable holds (that variable, exclusive's parameter, getrefcount's argument), and for the
# array a view looks into that only the view holds (the view's .base, the loop variable, the
# argument): CPython 3.11-3.13 with the GIL. CPython 3.14 may lend a local to a call without
# counting it (the change that broke NumPy's own temporary elision) and the free-threaded build
# counts references per thread, so elsewhere `exclusive` is off (_TRUSTED): every later
# contribution is summed into a copy and no vjp writes over grad_out.
_ALONE = 3
_VIEWED = 3
_VERSIONS = ((3, 11), (3, 12), (3, 13))
_TRUSTED = True  # until _counts_hold() below has run


def exclusive(a: Any) -> bool:
    """Whether `a` may be written in place: a writeable, contiguous NumPy array whose memory is
    reachable only through the caller's one reference (no other variable, container, graph node,
    hook or view holds it or the arrays it views; no weak reference to any of them; a replay
    pool's own reference does not count: engine/pool.py), owned by NumPy (not a buffer from
    elsewhere). Raw pointers (`a.ctypes.data`) are not seen.
    Conservative: an unknown holder makes it False, which only costs a copy.

    Call it with exactly one local variable of the calling function (`exclusive(x)`, never
    `exclusive(d[k])` or through a wrapper): the counts are those of that call. Used to sum
    into a pending gradient (add_pending) and to let a vjp write its result over grad_out
    (`Context.grad_out_writable`), the way NumPy reuses a temporary only it holds and PyTorch's
    AccumulateGrad takes a gradient as `.grad` without a copy when its use count says so."""
    if (not _TRUSTED or not isinstance(a, np.ndarray)
            or sys.getrefcount(a) > _ALONE + pool.kept(a) or weakref.getweakrefcount(a)
            or not a.flags.writeable or not (a.flags.c_contiguous or a.flags.f_contiguous)):
        return False
    base = a.base
    while base is not None:
        if (not isinstance(base, np.ndarray) or sys.getrefcount(base) > _VIEWED + pool.kept(base)
                or weakref.getweakrefcount(base)):
            return False
        if pool.kept(base):  # memory a replay's pool owns (a slot of its plan)
            return True
        a, base = base, base.base
    return a.flags.owndata


def _counts_hold() -> bool:
    """Whether this interpreter counts references as `exclusive` assumes: a known CPython, on
    which a lone array and a lone view read exclusive and an array with a second name does not."""
    if (sys.implementation.name != "cpython" or sys.version_info[:2] not in _VERSIONS
            or sysconfig.get_config_var("Py_GIL_DISABLED")):
        return False
    a = np.ones(2)
    alone = exclusive(a)
    b = a
    shared = exclusive(a)
    del b
    view = a.reshape(2, 1)
    del a
    return alone and not shared and exclusive(view)


_TRUSTED = _counts_hold()


def _accumulate_leaf(leaf, grad: np.ndarray) -> None:
    """Hand a leaf its gradient; the leaf (duck-typed: anything with `requires_grad` and
    `accumulate_grad`) decides how to add it, so this module never imports Tensor. Inside
    `runtime.grads_into(sink)` (a data-parallel worker) the thread's sink takes it instead."""
    if leaf.requires_grad:
        sink = runtime.local.grad_sink
        if sink is None:
            leaf.accumulate_grad(grad)
        else:
            sink.accumulate(leaf, grad)
