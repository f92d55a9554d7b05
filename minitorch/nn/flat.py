"""Flat parameter storage: parameters as views into one contiguous buffer per dtype, and their
gradients as views into one gradient buffer per step, so optimizers and clipping can work on
whole buffers. It lays memory out only: names, order, shapes and values never change.

A parameter stays flat while `p.data` is the view it was given; anything that rebinds `p.data`
takes it out, and every user of this module then takes the per-parameter path for it.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

ALIGN = 64  # bytes: the buffer starts on a cache line


class FlatGroup:
    """The parameters of one dtype packed in order into one 1-D buffer (`data`).

    Each parameter's array is its own ndarray over a raw bytearray, not a view of `data`: the
    engine's saved-array locks (node._Locks) also lock an array's `.base`, and a base shared
    by every parameter would stay locked (and each parameter read-only) after any graph that
    saved one of them was released.

    Args:
        params: Parameters of one dtype, in the order they are laid out.
    """

    def __init__(self, params: list) -> None:
        self.dtype = np.dtype(params[0].dtype)
        item = self.dtype.itemsize
        self.shapes = [p.shape for p in params]
        self.offsets = [0]  # element offset of each parameter; the last is the total size
        for p in params:
            self.offsets.append(self.offsets[-1] + p.data.size)
        self.size = self.offsets[-1]
        self._raw = bytearray(self.size * item + ALIGN)
        pad = -np.frombuffer(self._raw, np.uint8).ctypes.data % ALIGN
        self.data = np.frombuffer(self._raw, self.dtype, self.size, pad)  # (size,)
        self.views: list[np.ndarray] = []
        for i, p in enumerate(params):
            view = np.ndarray(p.shape, self.dtype, buffer=self._raw,
                              offset=pad + item * self.offsets[i])
            view[...] = p.data
            p.data, p._flat = view, _Slot(self, i)
            self.views.append(view)
        self.grad: np.ndarray | None = None  # the current gradient buffer (size,), or None
        self.grad_views: list[np.ndarray | None] = []  # the gradient views handed out from it

    def is_flat(self, i: int, p) -> bool:
        """Whether parameter i's array is still its view into this buffer (a deep copy's
        arrays are not: their base is not this group's bytearray)."""
        return p.data is self.views[i] and self.views[i].base is self._raw

    def slice(self, buf: np.ndarray, i: int) -> np.ndarray:
        """Parameter i's part of a 1-D buffer laid out like `data`, in its shape."""
        return buf[self.offsets[i]:self.offsets[i + 1]].reshape(self.shapes[i])

    def new_grad(self, i: int, data: np.ndarray) -> np.ndarray | None:
        """An uninitialized array for parameter i's first gradient: its view into the current
        gradient buffer (allocated for the whole group by the first gradient after
        drop_grads), or None if the parameter is no longer flat or its view was already handed
        out (a `.grad` someone may still hold is never written again)."""
        if data is not self.views[i]:
            return None
        if self.grad is None:
            self.grad = np.empty(self.size, self.dtype)
            self.grad_views = [None] * len(self.views)
        if self.grad_views[i] is not None:
            return None
        view = self.grad_views[i] = self.slice(self.grad, i)
        return view

    def has_grad(self, i: int, p) -> bool:
        """Whether parameter i's `.grad` is its view into the current gradient buffer."""
        g = self.grad_views[i] if self.grad is not None else None
        return g is not None and p.grad is not None and p.grad.data is g and g.base is self.grad

    def drop_grads(self) -> None:
        """Forget the gradient buffer (zero_grad): the next gradient starts a fresh one."""
        self.grad, self.grad_views = None, []


class _Slot:
    """A parameter's place in its FlatGroup; `Tensor.accumulate_grad` calls `new_grad`."""

    __slots__ = ("group", "index")

    def __init__(self, group: FlatGroup, index: int) -> None:
        self.group, self.index = group, index

    def new_grad(self, data: np.ndarray) -> np.ndarray | None:
        return self.group.new_grad(self.index, data)


def flatten(params: Iterable) -> list[FlatGroup]:
    """Pack `params` into one FlatGroup per dtype, each in the given order."""
    by_dtype: dict[np.dtype, list] = {}
    for p in params:
        by_dtype.setdefault(np.dtype(p.dtype), []).append(p)
    return [FlatGroup(ps) for ps in by_dtype.values()]


def flat_run(params: list, grads: bool = True) -> tuple[FlatGroup, int, int] | None:
    """(group, first, last + 1) slot indices if `params` are consecutive parameters of one
    FlatGroup, in order, all still flat and (grads=True) all with their gradient in its
    current gradient buffer; else None (the caller takes the per-parameter path)."""
    if not params or params[0]._flat is None:
        return None
    group, first = params[0]._flat.group, params[0]._flat.index
    for i, p in enumerate(params, first):
        slot = p._flat
        if slot is None or slot.group is not group or slot.index != i or not group.is_flat(i, p):
            return None
        if grads and not group.has_grad(i, p):
            return None
    return group, first, first + len(params)


def zero_grad(params: Iterable, set_to_none: bool = True) -> None:
    """`p.grad = None` for each parameter (torch's default, set_to_none), and drop the gradient
    buffers of their groups, so the next backward fills fresh ones and never a `.grad` someone
    kept; or, set_to_none=False, fill each existing `.grad` with zeros in place."""
    for p in params:
        if not set_to_none:
            if p.grad is not None:
                p.grad.zero_()
            continue
        p.grad = None
        if p._flat is not None:
            p._flat.group.drop_grads()
