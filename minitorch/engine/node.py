"""A graph node (Context: what an op's output remembers for backward) and the table that keeps
the arrays nodes saved read-only while they live (`inplace` is the one way the engine writes into
such an array: it bumps the array's version, as torch's version counter)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from .pool import empty

# Arrays saved for backward are read-only while a live graph holds them (PyTorch's guarantee that
# saved tensors are not modified in place, enforced with NumPy's writeable flag): a user's write to
# `t.data` raises at once instead of silently corrupting a gradient. The engine's own in-place
# writers (optimizers) go through `inplace()`, which bumps the array's version so a retained graph
# that saved it raises at backward, naming the op, as torch's version counter does. (Backward
# also writes gradients in place, but only arrays graph.exclusive clears: never a locked one.)
_locks: dict[int, list[int]] = {}  # id(array) -> [live holds, version, holds through a view]
# guards _locks: graphs in several threads may save one parameter. Re-entrant: a collection
# that frees a graph (_Locks.__del__ -> unlock) may run inside a thread's own critical section
_table = threading.RLock()


class Context:
    """One node of the graph: what an op's output remembers between forward and backward.

    `parents[i]` is the node input i came from: the Context that produced it, the leaf Tensor
    itself, or None when input i needs no gradient. Nodes never hold intermediate Tensors, so
    an op's output array is freed as soon as nothing else uses it, even while its graph lives.
    `needs_grad[i]` says whether input i wants a gradient, `saved` holds the raw arrays the vjp
    needs, `out_shape`/`out_dtype` describe the output. Ops may also set small attributes
    (axis, shape).
    `release()` drops all of it, so the graph is freed by reference counting alone.
    `grad_out_writable` is set by backward just before the vjp: True when nothing else reaches
    grad_out (graph.exclusive), so the vjp may write its result into it instead of a new array.
    """

    grad_out_writable = False
    retained = None  # a weak reference to the output Tensor whose .grad backward fills
    #                  (Tensor.retain_grad), else None

    # defaults a node changes only when it records (set on the instance then)
    saved: tuple = ()
    out_shape: tuple[int, ...] = ()
    out_dtype: Any = None
    locks: _Locks | None = None  # the arrays this node keeps read-only

    def __init__(self, op: type, parents: tuple, needs_grad: tuple[bool, ...]):
        self.op = op
        self.parents: tuple | None = parents
        self.needs_grad = needs_grad
        self.recording = True in needs_grad

    def save(self, *arrays: Any) -> None:
        """Keep raw arrays for the vjp; a no-op when no input needs a gradient (no_grad).
        Each saved array is read-only until this node is released (see `_locks`)."""
        if not self.recording:
            return
        self.saved = arrays
        self.locks = _Locks(arrays)

    def check_saved(self) -> None:
        """Raise if an array saved by this node was written in place since (engine writers)."""
        if self.locks is not None:
            self.locks.check(self.op.name)

    def reuse(self, grad_out: np.ndarray) -> np.ndarray:
        """The `out=` of the ufunc from which on the vjp no longer reads grad_out's old values:
        grad_out itself when the vjp may write over it (grad_out_writable), else a new array of
        its shape and dtype (engine/pool.empty)."""
        return grad_out if self.grad_out_writable else empty(grad_out.shape, grad_out.dtype)

    def needed(self, *grads: Any) -> tuple:
        """The gradients, with None where an input needs none (for rules whose gradients cost
        nothing to form; expensive rules test ctx.needs_grad before computing)."""
        if len(grads) != len(self.needs_grad):
            raise RuntimeError(f"op '{self.op.name}': vjp gave ctx.needed {len(grads)} "
                               f"gradients for {len(self.needs_grad)} inputs")
        return tuple(g if n else None for g, n in zip(grads, self.needs_grad))

    def release(self) -> None:
        """Drop parents, saved arrays and op attributes; keep only the op for error messages
        (and `retained`: the tensor still retains its gradient, as torch's says)."""
        if self.locks is not None:
            self.locks.unlock()
        op, retained = self.op, self.retained
        self.__dict__.clear()
        self.op, self.parents, self.saved, self.locks = op, None, (), None
        if retained is not None:
            self.retained = retained


class _Locks:
    """The saved arrays one node keeps read-only, with their versions at save time. A separate
    object (never part of a reference cycle), so a graph dropped without backward unlocks its
    arrays through `__del__` as soon as it is freed."""

    __slots__ = ("held",)

    def __init__(self, arrays: tuple) -> None:
        self.held: list = []  # (array, version at save, held as the base of a saved view)
        with _table:
            for a in arrays:
                if isinstance(a, np.ndarray):
                    self._hold(a)
                    if isinstance(a.base, np.ndarray):  # a view: the array it looks into too (a
                        self._hold(a.base, through_view=True)  # .data reshaped or sliced)

    def _hold(self, a: np.ndarray, through_view: bool = False) -> None:
        lock = _locks.get(id(a))
        if lock is None:
            if not a.flags.writeable:
                return  # read-only already (a broadcast view, a user's frozen array)
            a.setflags(write=False)
            lock = _locks[id(a)] = [0, 0, 0]
        lock[0] += 1
        lock[2] += through_view
        self.held.append((a, lock[1], through_view))

    def check(self, op_name: str) -> None:
        for a, version, _ in self.held:
            now = _locks[id(a)][1]
            if now != version:
                raise RuntimeError(
                    f"op '{op_name}': an array it saved for backward (shape {a.shape}) was "
                    f"modified in place after the forward (version {version} -> {now}); "
                    "compute the gradient before changing it, or change a copy")

    def unlock(self) -> None:
        with _table:
            for a, _, through_view in self.held:
                lock = _locks[id(a)]
                lock[0] -= 1
                lock[2] -= through_view
                if lock[0] == 0:
                    del _locks[id(a)]
                    try:
                        a.setflags(write=True)
                    except ValueError:  # a view whose base became read-only meanwhile
                        pass
            self.held = []

    def __del__(self) -> None:
        self.unlock()


def saved_holds(array: np.ndarray) -> tuple[int, int]:
    """(holds of live graph nodes that saved `array` itself, holds through a saved view of it)."""
    with _table:
        lock = _locks.get(id(array))
        return (0, 0) if lock is None else (lock[0] - lock[2], lock[2])


@contextmanager
def inplace(array: np.ndarray) -> Iterator[np.ndarray]:
    """Write into `array` in place even while a live graph saved it (the optimizers' path): the
    write is allowed and the array's version bumped, so that graph's backward raises. A view
    bumps the array it looks into too (a graph may have saved that one: the write lands in it)."""
    with _table:
        lock = _locks.get(id(array))
        if lock is not None:
            lock[1] += 1
            array.setflags(write=True)
        base = _locks.get(id(array.base)) if isinstance(array.base, np.ndarray) else None
        if base is not None:
            base[1] += 1
    if lock is None:
        yield array
        return
    try:
        yield array
    finally:
        with _table:
            if id(array) in _locks:  # still saved by some graph
                array.setflags(write=False)
