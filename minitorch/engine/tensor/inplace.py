"""In-place updates with torch's semantics: x += y, add_(y, alpha=...), zero_(), fill_, copy_,
the in-place unaries, and the aliasing analysis that says when a write is safe in a graph.
"""

from __future__ import annotations

import sys

import numpy as np

from .. import graph, runtime
from ..node import Context, inplace, saved_holds
from .arithmetic import scaled
from .base import TensorBase
from .indexing import where


class InPlace(TensorBase):
    """Writes into the tensor's own array; a node's output takes the result's node."""

    __slots__ = ()

    def _update(self, name: str, fn, *args, keep_node: bool = False) -> TensorBase:
        """self = fn(self, *args) in place, as torch: the new values are written into self's
        array, so its views and `.numpy()` see them, and a live graph that saved the array
        raises at backward (torch's version counter). While grad is enabled self takes the
        result's node; if that node saved self's old value, self takes the result's array
        instead (nothing else sees self's memory, `_shared` made sure), as torch keeps the
        original for it. keep_node: the old node stays a parent with zero gradient (fill_,
        copy_), as torch's. Refused in one line where minitorch cannot follow: a leaf that
        requires grad while grad is enabled (as torch), a result in a graph on memory other
        tensors share (torch rebases views' gradients, minitorch cannot), and a step being
        captured for replay (the tape sees ops, not writes)."""
        tracked = runtime.local.grad_enabled
        if runtime.local.tape is not None:
            raise RuntimeError(f"{name}: an in-place update cannot be captured for replay; "
                               "write x = x + y in the step function")
        if tracked and self.requires_grad and self._ctx is None:
            raise RuntimeError(f"{name}: a leaf tensor that requires grad cannot change in place "
                               "while grad is enabled (as torch): do it under minitorch.no_grad()")
        held = saved_holds(self.data)[0]
        out = getattr(self, fn)(*args) if isinstance(fn, str) else fn(self, *args)
        if out.shape != self.shape:
            raise RuntimeError(f"{name}: the result's shape {out.shape} is not the tensor's "
                               f"{self.shape} (an in-place op cannot broadcast its target)")
        if not np.can_cast(out.dtype, self.dtype, "same_kind"):
            raise TypeError(f"{name}: a {out.dtype} result cannot be written into a "
                            f"{self.dtype} tensor (as torch): cast the tensor first")
        if tracked:
            if self.requires_grad and (keep_node or out._ctx is None):  # zero grad to the past
                out = where(self._lift(np.zeros(self.shape, bool)), self, out)
            out = out.to(self.dtype)  # the node's output dtype is self's (differentiable cast)
            if out._ctx is not None:
                if _shared(self):
                    raise RuntimeError(f"{name}: this tensor shares memory with another (a view "
                                       "of it, or it is one); minitorch cannot route their "
                                       "gradients through an in-place write: write x = x + y, "
                                       "or clone() first")
                if saved_holds(self.data)[0] > held:  # the new node saved the old value
                    self._data = out._data
                    self._take_node(out._ctx)
                    return self
        try:
            with inplace(self.data) as array:
                np.copyto(array, out.data, casting="same_kind")
        except ValueError as e:  # a read-only array: a broadcast view (expand), say
            raise RuntimeError(f"{name}: cannot write into this tensor in place: {e}") from None
        if tracked:
            self._take_node(out._ctx)
        return self

    def _take_node(self, ctx: Context | None) -> None:
        """After an in-place update: self is ctx's output now (a retained gradient moves with
        it, as torch's)."""
        if self._ctx is not None and self._ctx.retained is not None and ctx is not None:
            ctx.retained, self._ctx.retained = self._ctx.retained, None
        self._ctx, self.requires_grad = ctx, ctx is not None

    def add_(self, other, *, alpha=1):
        return self._update("add_", "add", scaled(self, other, alpha))

    def sub_(self, other, *, alpha=1):
        return self._update("sub_", "sub", scaled(self, other, alpha))

    def mul_(self, other): return self._update("mul_", "mul", other)
    def div_(self, other): return self._update("div_", "_true_divide", other)
    def pow_(self, exponent): return self._update("pow_", "pow", exponent)
    def clamp_(self, min=None, max=None): return self._update("clamp_", "clamp", min, max)
    def exp_(self): return self._update("exp_", "exp")
    def log_(self): return self._update("log_", "log")
    def sqrt_(self): return self._update("sqrt_", "sqrt")
    def neg_(self): return self._update("neg_", "neg")
    def abs_(self): return self._update("abs_", "abs")
    def sigmoid_(self): return self._update("sigmoid_", "sigmoid")
    def tanh_(self): return self._update("tanh_", "tanh")
    def relu_(self): return self._update("relu_", "relu")

    def masked_fill_(self, mask, value):
        return self._update("masked_fill_", "masked_fill", mask, value)

    def zero_(self) -> TensorBase:
        return self.fill_(0)

    def fill_(self, value) -> TensorBase:
        if isinstance(value, TensorBase):  # a 0-d tensor: its gradient flows, as torch's
            if value.ndim:
                raise RuntimeError(f"fill_: the value must be a 0-d tensor, got shape "
                                   f"{value.shape}")
            return self.copy_(value)
        return self._update("fill_", lambda t: self._wrap(np.full(t.shape, value, t.dtype)),
                            keep_node=True)

    def copy_(self, src) -> TensorBase:
        """self = src (broadcast to self's shape, cast to self's dtype; gradient flows to src)."""
        src = src if isinstance(src, TensorBase) else self._lift(src)
        return self._update("copy_", lambda t: src.expand(*t.shape).to(t.dtype), keep_node=True)

    def __iadd__(self, other): return self._update("+=", "add", other)
    def __isub__(self, other): return self._update("-=", "sub", other)
    def __imul__(self, other): return self._update("*=", "mul", other)
    def __itruediv__(self, other): return self._update("/=", "_true_divide", other)
    def __ifloordiv__(self, other): return self._update("//=", "floor_divide", other)
    def __imod__(self, other): return self._update("%=", "remainder", other)
    def __ipow__(self, other): return self._update("**=", "pow", other)
    def __iand__(self, other): return self._update("&=", "bitwise_and", other)
    def __ior__(self, other): return self._update("|=", "bitwise_or", other)
    def __ixor__(self, other): return self._update("^=", "bitwise_xor", other)


def _shared(t: TensorBase) -> bool:
    """Whether t's memory is reachable other than through t: its array is a view, or a view,
    an alias (`.numpy()`) or another tensor holds it. The holds of live graph nodes that saved
    it are not counted: the version counter covers those. Conservative where reference counts
    cannot be trusted (graph._TRUSTED)."""
    a = t.data
    if a.base is not None or not graph._TRUSTED:
        return True
    # t's slot, `a` and the call's argument, and per node that saved `a` itself its saved tuple
    # and lock entry; a saved view of `a` is not excused: its .base counts as a holder
    return sys.getrefcount(a) > 3 + 2 * saved_holds(a)[0]
